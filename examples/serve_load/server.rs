//! The servers under load: `toolgate serve` processes started on a free port (pinned to
//! their cores with `taskset` when asked), stopped by SIGTERM, and what `/proc` says of
//! them (CPU time, peak RSS) and of a local PostgreSQL's processes.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::Res;

/// The server, stopped (SIGTERM, then kill) when dropped.
pub struct Server {
    child: Child,
    pub base: String,
    pub log: PathBuf,
}

impl Server {
    /// Starts `bin serve` on `db` (a file or a `postgres://` URL) with the folder's
    /// agents, tools and workspace; pinned to `cores` when given.
    pub fn start(
        bin: &Path,
        dir: &Path,
        db: &str,
        n: usize,
        cores: Option<&[usize]>,
    ) -> Res<Server> {
        let log_path = dir.join(format!("server-{n}.log"));
        let log = std::fs::File::create(&log_path).map_err(|e| e.to_string())?;
        let mut cmd = match cores {
            Some(cores) => {
                let list: Vec<String> = cores.iter().map(usize::to_string).collect();
                let mut c = Command::new("taskset");
                c.args(["-c", &list.join(",")]).arg(bin);
                c
            }
            None => Command::new(bin),
        };
        let mut child = cmd
            .args(["--db", db, "serve", "--addr", "127.0.0.1:0"])
            .arg("--agents")
            .arg(dir.join("agents"))
            .arg("--tools")
            .arg(dir.join("tools"))
            .arg("--workspace")
            .arg(dir.join("workspace"))
            .env_remove("TOOLGATE_API_KEY")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
        // The server prints `toolgate serve: listening on http://ADDR` once bound.
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(url) = line.split("listening on ").nth(1) {
                    let _ = tx.send(url.trim().to_string());
                }
            }
        });
        let mut server = Server {
            child,
            base: String::new(),
            log: log_path,
        };
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(url) => server.base = url,
            Err(_) => {
                return Err(format!(
                    "the server did not start in 30 s; see {}",
                    server.log.display()
                ));
            }
        }
        Ok(server)
    }

    /// The server's own process (`taskset` execs it, so the pid is the same).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM and wait: the server stops accepting and exits 0.
    pub fn stop(&mut self) -> Res<()> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) if status.success() => return Ok(()),
                Ok(Some(status)) => return Err(format!("the server exited with {status}")),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                Ok(None) => {
                    let _ = self.child.kill();
                    return Err("the server did not stop within 30 s of SIGTERM".into());
                }
                Err(e) => return Err(e.to_string()),
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A field of /proc/PID/status, in kB.
pub fn proc_kb(pid: u32, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// Linux reports CPU times in clock ticks of 1/100 s (`USER_HZ`, fixed by its ABI).
const TICK: Duration = Duration::from_millis(10);

/// `/proc/PID/stat`'s fields after the command name, and the name.
fn stat(pid: &str) -> Option<(String, Vec<u64>)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let name = text.get(open + 1..close)?.to_string();
    let fields = text
        .get(close + 1..)?
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    Some((name, fields))
}

/// User plus system CPU time the process `pid` (all its threads) has used so far.
pub fn cpu_time(pid: u32) -> Duration {
    // utime and stime are the 14th and 15th fields, the 12th and 13th after the name.
    stat(&pid.to_string()).map_or(Duration::ZERO, |(_, f)| {
        TICK * (f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0)) as u32
    })
}

/// CPU time of every `postgres` process on this machine so far, with what they reaped
/// (a backend that ended counts in its parent's `cutime`/`cstime`): a local
/// PostgreSQL's whole cost.
pub fn postgres_cpu_time() -> Duration {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Duration::ZERO;
    };
    let ticks: u64 = dir
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| name.bytes().all(|b| b.is_ascii_digit()))
        .filter_map(|pid| stat(&pid))
        .filter(|(name, _)| name == "postgres")
        .map(|(_, f)| f.iter().skip(11).take(4).sum::<u64>())
        .sum();
    TICK * ticks as u32
}

/// The CPUs this process may run on, in order.
pub fn allowed_cpus() -> Vec<usize> {
    match rustix::thread::sched_getaffinity(None) {
        Ok(set) => (0..rustix::thread::CpuSet::MAX_CPU)
            .filter(|&i| set.is_set(i))
            .collect(),
        Err(_) => (0..std::thread::available_parallelism().map_or(1, usize::from)).collect(),
    }
}

/// Pins this process (and the threads it starts from now on) to `cpus`.
pub fn pin_self(cpus: &[usize]) -> Res<()> {
    let mut set = rustix::thread::CpuSet::new();
    for &c in cpus {
        set.set(c);
    }
    rustix::thread::sched_setaffinity(None, &set).map_err(|e| format!("cannot pin the client: {e}"))
}
