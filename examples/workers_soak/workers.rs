//! The soak's processes: a throwaway PostgreSQL server (tests/postgres/server.sh), and
//! `toolgate serve` workers, each in a folder of its own (its agents, tools and
//! workspace), that can be killed (SIGKILL), stopped (SIGTERM) and started again.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::Res;

/// The agent every run uses: one CONFIRM call that changes the world, then the answer.
const AGENT: &str = "\
name: soak
model: scripted:soak.replies.yaml
mode: native
instructions: You deploy what you are asked to.
tools: [deploy]
max_iterations: 4
";

const REPLIES: &str = r#"replies:
  - content: I will deploy it once you approve.
    tool_calls:
      - {id: call_deploy, name: deploy, arguments: {what: "the build"}}
  - content: Deployed.
"#;

/// The side-effecting tool: every execution appends `RUN CALL` to effects.log in the
/// worker's workspace (the soak counts those lines, not the records).
const DEPLOY: &str = r#"name: deploy
description: Deploy a build (changes the world, so it waits for approval).
permission: confirm
timeout: 20
parameters:
  type: object
  properties:
    what: {type: string}
  required: [what]
entry:
  type: command
  command: bash
  args: ["-c", "echo \"$TOOLGATE_RUN_ID $TOOLGATE_CALL_ID\" >> effects.log; sleep 0.02; echo deployed"]
"#;

/// The file each execution of the tool appends to, in a worker's workspace.
pub const EFFECTS: &str = "effects.log";

/// A PostgreSQL server for this process's lifetime; its URL.
pub fn postgres(root: &Path, statements: bool) -> Res<String> {
    if let Ok(url) = std::env::var("TOOLGATE_TEST_POSTGRES_URL")
        && !url.trim().is_empty()
    {
        return Ok(url.trim().to_string());
    }
    let script = root.join("tests/postgres/server.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg(std::process::id().to_string())
        .env("TOOLGATE_PG_DURABLE", "1")
        .env("TOOLGATE_PG_STATEMENTS", if statements { "1" } else { "0" })
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    if !out.status.success() {
        return Err("tests/postgres/server.sh could not start PostgreSQL".into());
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .map(str::to_string)
        .ok_or_else(|| "tests/postgres/server.sh printed no URL".into())
}

/// `TOOLGATE_BIN` when set, else the `toolgate` binary of this example's profile.
pub fn toolgate_binary() -> Res<PathBuf> {
    if let Some(bin) = std::env::var_os("TOOLGATE_BIN") {
        return Ok(PathBuf::from(bin));
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .ok_or("cannot find the target folder")?
        .join("toolgate");
    if !bin.is_file() {
        return Err(format!(
            "{} is missing: build it first with `cargo build --release`",
            bin.display()
        ));
    }
    Ok(bin)
}

/// Writes a worker's folder: agents, tools, workspace.
pub fn folder(dir: &Path) -> Res<()> {
    let write = |rel: &str, text: &str| {
        let p = dir.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))
    };
    write("agents/soak.yaml", AGENT)?;
    write("agents/soak.replies.yaml", REPLIES)?;
    write("tools/deploy.yaml", DEPLOY)?;
    std::fs::create_dir_all(dir.join("workspace")).map_err(|e| e.to_string())
}

/// One `toolgate serve` process.
pub struct Worker {
    child: Child,
    pub base: String,
    /// Which start of which worker this is (`w1#2`: worker 1, second start).
    pub name: String,
}

impl Worker {
    /// Starts a worker on `db` from `dir`, on a free port; waits until it listens.
    pub fn start(bin: &Path, db: &str, dir: &Path, name: String) -> Res<Worker> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("server.log"))
            .map_err(|e| e.to_string())?;
        let mut child = Command::new(bin)
            .args(["--db", db, "serve", "--addr", "127.0.0.1:0"])
            .arg("--agents")
            .arg(dir.join("agents"))
            .arg("--tools")
            .arg(dir.join("tools"))
            .arg("--workspace")
            .arg(dir.join("workspace"))
            .env_remove("TOOLGATE_API_KEY")
            .env("TOOLGATE_SECRET_KEY", "11".repeat(32))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(url) = line.split("listening on ").nth(1) {
                    let _ = tx.send(url.trim().to_string());
                }
            }
        });
        let mut worker = Worker {
            child,
            base: String::new(),
            name,
        };
        worker.base = rx.recv_timeout(Duration::from_secs(60)).map_err(|_| {
            format!(
                "worker {} did not start in 60 s; see {}",
                worker.name,
                dir.join("server.log").display()
            )
        })?;
        Ok(worker)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL, and reap it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, and wait (up to 60 s) for it to exit; its exit status.
    pub fn terminate(&mut self) -> Res<std::process::ExitStatus> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Ok(status),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Ok(None) => {
                    self.kill();
                    return Err(format!(
                        "worker {} did not stop within 60 s of SIGTERM",
                        self.name
                    ));
                }
                Err(e) => return Err(e.to_string()),
            }
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.kill();
        }
    }
}
