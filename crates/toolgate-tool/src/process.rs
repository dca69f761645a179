//! Running an external program for a tool: arguments on stdin, stdout and stderr read
//! with a size cap (stdout's complete lines also handed out as they come), in a process
//! group of its own that is killed whole on a timeout, a cancel, any other drop of the
//! call before the program is done, or toolgate's own death (a guard process per
//! program, `Guard`).

use std::collections::BTreeSet;
use std::process::Stdio;
use std::sync::Mutex;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};

use super::output::ToolError;

/// What a finished program left.
#[derive(Debug)]
pub struct Finished {
    /// The exit code; `None` when a signal ended it.
    pub code: Option<i32>,
    pub stdout: Captured,
    pub stderr: Captured,
}

/// One output stream, kept up to the cap.
#[derive(Debug, Default)]
pub struct Captured {
    pub bytes: Vec<u8>,
    /// The full size written, which may exceed what was kept.
    pub total: usize,
}

impl Captured {
    pub fn truncated(&self) -> bool {
        self.total > self.bytes.len()
    }

    /// The kept text, with a note when the program wrote more.
    pub fn text(&self) -> String {
        let mut s = String::from_utf8_lossy(&self.bytes).into_owned();
        if self.truncated() {
            s.push_str(&format!(
                "\n[output truncated: {} of {} bytes shown]",
                self.bytes.len(),
                self.total
            ));
        }
        s
    }
}

/// The longest line handed to a line callback whole; a longer one goes out in pieces
/// of this size (each a whole part).
pub const LINE_MAX: usize = 64 * 1024;

/// Called with each complete line of stdout (without its newline) while the program runs.
pub type OnLine<'a> = &'a (dyn Fn(String) + Send + Sync);

/// Splits a byte stream into lines: complete lines out, the unfinished rest kept.
#[derive(Default)]
struct Lines {
    partial: Vec<u8>,
}

impl Lines {
    fn feed(&mut self, bytes: &[u8], on_line: OnLine<'_>) {
        for &b in bytes {
            if b == b'\n' {
                self.flush(on_line);
            } else {
                self.partial.push(b);
                if self.partial.len() >= LINE_MAX {
                    self.flush(on_line);
                }
            }
        }
    }

    fn flush(&mut self, on_line: OnLine<'_>) {
        let mut line = std::mem::take(&mut self.partial);
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        on_line(String::from_utf8_lossy(&line).into_owned());
    }

    /// The program closed its stdout: a last line without a newline still counts.
    fn finish(mut self, on_line: OnLine<'_>) {
        if !self.partial.is_empty() {
            self.flush(on_line);
        }
    }
}

async fn read_capped(
    mut from: impl AsyncRead + Unpin,
    cap: usize,
    on_line: Option<OnLine<'_>>,
) -> std::io::Result<Captured> {
    let mut out = Captured::default();
    let mut lines = Lines::default();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = from.read(&mut buf).await?;
        if n == 0 {
            if let Some(f) = on_line {
                lines.finish(f);
            }
            return Ok(out);
        }
        out.total += n;
        let room = cap.saturating_sub(out.bytes.len());
        out.bytes.extend_from_slice(&buf[..n.min(room)]);
        // Lines go out up to the cap, like what is kept.
        if let Some(f) = on_line
            && room > 0
        {
            lines.feed(&buf[..n.min(room)], f);
        }
    }
}

/// Runs `cmd` with `stdin` written to it, in a process group of its own. Each output
/// stream keeps at most `cap` bytes.
///
/// The program and everything it started are killed (SIGKILL to the whole group) when
/// `timeout` passes, and also when this future is dropped before the program is done:
/// a cancelled call, a tool timeout, a lost lease or a shutdown all drop it. A program
/// that finishes normally is not touched, and neither is what it started in the
/// background with its output redirected (a deliberate daemon); a child that leaves
/// the group itself (`setsid`) is out of reach.
pub async fn run(
    cmd: Command,
    stdin: &[u8],
    timeout: Duration,
    cap: usize,
) -> Result<Finished, ToolError> {
    run_streaming(cmd, stdin, timeout, cap, None).await
}

/// [`run`], handing each complete line of stdout to `on_line` as the program writes it
/// (what is kept, and so the result, is the same).
pub async fn run_streaming(
    mut cmd: Command,
    stdin: &[u8],
    timeout: Duration,
    cap: usize,
    on_line: Option<OnLine<'_>>,
) -> Result<Finished, ToolError> {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    cmd.process_group(0);
    let program = format!("{:?}", cmd.as_std().get_program());
    let child = cmd
        .spawn()
        .map_err(|e| ToolError::Execution(format!("cannot start {program}: {e}")))?;
    let mut running = Running::new(child);
    let mut input = running.child.stdin.take();
    let stdout = running.child.stdout.take();
    let stderr = running.child.stderr.take();
    let work = async {
        let write = async {
            if let Some(mut w) = input.take() {
                // A program that does not read its input is fine.
                let _ = w.write_all(stdin).await;
                let _ = w.shutdown().await;
            }
            Ok::<(), std::io::Error>(())
        };
        let out = async {
            match stdout {
                Some(s) => read_capped(s, cap, on_line).await,
                None => Ok(Captured::default()),
            }
        };
        let err = async {
            match stderr {
                Some(s) => read_capped(s, cap, None).await,
                None => Ok(Captured::default()),
            }
        };
        let (_, out, err, status) = tokio::join!(write, out, err, running.child.wait());
        Ok::<_, std::io::Error>((out?, err?, status?))
    };
    let result = tokio::time::timeout(timeout, work).await;
    match result {
        Ok(Ok((stdout, stderr, status))) => {
            running.finished();
            Ok(Finished {
                code: status.code(),
                stdout,
                stderr,
            })
        }
        // `running` drops here, still armed: the group is killed.
        Ok(Err(e)) => Err(ToolError::Execution(format!("{program} failed: {e}"))),
        Err(_) => Err(ToolError::Timeout(timeout)),
    }
}

/// A started program and its process group (the group's id is the program's pid).
/// Dropped while armed, it kills the whole group before the child handle goes (so the
/// group id cannot have been reused yet: the leader is not reaped before the kill).
struct Running {
    child: Child,
    group: Option<u32>,
    guard: Option<Guard>,
}

impl Running {
    fn new(child: Child) -> Self {
        let group = child.id();
        if let Some(id) = group {
            live_groups().insert(id);
        }
        let guard = group.and_then(Guard::start);
        Self {
            child,
            group,
            guard,
        }
    }

    /// The program ended on its own: nothing to kill now. What it left running in its
    /// group (a daemon, on purpose) lives on, but not past toolgate: its guard stays.
    fn finished(&mut self) {
        if let Some(id) = self.group.take() {
            live_groups().remove(&id);
            if let Some(guard) = self.guard.take() {
                linger(id, guard);
            }
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(id) = self.group.take() {
            kill_group(id);
            live_groups().remove(&id);
        }
        // Killed here already: the guard stands down (a kill of its own, later, could
        // find the group's id reused once the leader is reaped).
        if let Some(guard) = self.guard.take() {
            guard.stand_down();
        }
        // Then `child` drops: tokio kills the leader (already dead) and reaps it.
    }
}

/// A process that kills a program's group when toolgate dies without a word, `kill -9`
/// included (no drop runs then, and a parent-death signal reaches only the direct
/// child, not what it started): it reads a pipe whose only writer is toolgate; end of
/// file without `done` (toolgate gone, or the call dropped) kills the group.
struct Guard {
    pipe: std::fs::File,
    // Dropped unwaited: tokio reaps it once it exits.
    _process: Child,
}

/// The guard's program: the group id is `$1` (dash's `kill` takes no `--`).
const GUARD: &str = r#"read -r said; [ "$said" = done ] || kill -KILL "-$1" 2>/dev/null"#;

impl Guard {
    /// A guard for process group `group`, or none (with a warning) when no shell starts.
    fn start(group: u32) -> Option<Guard> {
        let mut cmd = Command::new("/bin/sh");
        cmd.args(["-c", GUARD, "toolgate-guard", &group.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // Its own group: a Ctrl-C to the terminal's group must not end the guard first.
        #[cfg(unix)]
        cmd.process_group(0);
        match cmd.spawn() {
            Ok(mut process) => Some(Guard {
                pipe: std::fs::File::from(process.stdin.take()?.into_owned_fd().ok()?),
                _process: process,
            }),
            Err(e) => {
                tracing::warn!(error = %e, "no guard for a tool program: it may outlive a killed toolgate");
                None
            }
        }
    }

    /// The program is done: the guard leaves without killing anything.
    fn stand_down(mut self) {
        // Five bytes into an empty pipe never block; a gone guard is fine.
        let _ = std::io::Write::write_all(&mut self.pipe, b"done\n");
    }
}

/// The guards of groups a finished program left processes in: each kills its group
/// when toolgate dies. A guard whose group is gone stands down (looked at whenever
/// another is added), so that a group id freed and reused is not killed later.
fn linger(group: u32, guard: Guard) {
    static LINGERING: Mutex<Vec<(u32, Guard)>> = Mutex::new(Vec::new());
    let mut all = LINGERING.lock().unwrap_or_else(|p| p.into_inner());
    let (live, gone): (Vec<_>, Vec<_>) = std::mem::take(&mut *all)
        .into_iter()
        .chain(std::iter::once((group, guard)))
        .partition(|(id, _)| group_alive(*id));
    *all = live;
    drop(all);
    for (_, guard) in gone {
        guard.stand_down();
    }
}

/// Whether process group `id` still has a process (signal 0 tests without sending).
fn group_alive(id: u32) -> bool {
    i32::try_from(id)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .is_some_and(|pid| {
            rustix::process::test_kill_process_group(pid) != Err(rustix::io::Errno::SRCH)
        })
}

/// A long-lived program's process group (a stdio MCP server's): killed whole when this
/// drops, and by a [`Guard`] when toolgate dies first, `kill -9` included.
pub struct GroupKeeper {
    group: u32,
    guard: Option<Guard>,
}

impl GroupKeeper {
    /// Keeps process group `group` (the program was started as its leader).
    pub fn new(group: u32) -> GroupKeeper {
        live_groups().insert(group);
        GroupKeeper {
            group,
            guard: Guard::start(group),
        }
    }
}

impl Drop for GroupKeeper {
    fn drop(&mut self) {
        kill_group(self.group);
        live_groups().remove(&self.group);
        if let Some(guard) = self.guard.take() {
            guard.stand_down();
        }
    }
}

/// Process groups of programs still running, for [`kill_all`].
fn live_groups() -> std::sync::MutexGuard<'static, BTreeSet<u32>> {
    static LIVE: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());
    // A panic while holding this lock leaves a set that is still right.
    LIVE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Kills every tool program still running, with everything it started: for a process
/// about to exit without unwinding (`std::process::exit` on a second Ctrl-C), where no
/// drop runs.
pub fn kill_all() {
    let groups: Vec<u32> = std::mem::take(&mut *live_groups()).into_iter().collect();
    for id in groups {
        kill_group(id);
    }
}

/// SIGKILL to process group `id`. A group that is already gone is fine.
fn kill_group(id: u32) {
    #[cfg(unix)]
    if let Some(pid) = i32::try_from(id)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
    #[cfg(not(unix))]
    let _ = id;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(chunks: &[&[u8]]) -> Vec<String> {
        let seen = Mutex::new(Vec::new());
        let push = |l: String| seen.lock().unwrap_or_else(|p| p.into_inner()).push(l);
        let mut lines = Lines::default();
        for c in chunks {
            lines.feed(c, &push);
        }
        lines.finish(&push);
        seen.into_inner().unwrap_or_else(|p| p.into_inner())
    }

    #[test]
    fn lines_come_whole_whatever_the_chunks() {
        let whole = split(&[b"one\r\ntwo\n\nthree"]);
        assert_eq!(whole, ["one", "two", "", "three"]);
        let bytes = b"one\r\ntwo\n\nthree";
        for cut in 0..bytes.len() {
            assert_eq!(
                split(&[&bytes[..cut], &bytes[cut..]]),
                whole,
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn a_very_long_line_goes_out_in_whole_pieces() {
        let long = vec![b'x'; LINE_MAX + 10];
        let out = split(&[&long, b"\n"]);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].len(), LINE_MAX);
        assert_eq!(out[1].len(), 10);
    }
}
