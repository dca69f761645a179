//! Running an external program for a tool: arguments on stdin, stdout and stderr read
//! with a size cap, a timeout that kills the program and everything it started.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

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

async fn read_capped(mut from: impl AsyncRead + Unpin, cap: usize) -> std::io::Result<Captured> {
    let mut out = Captured::default();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = from.read(&mut buf).await?;
        if n == 0 {
            return Ok(out);
        }
        out.total += n;
        let room = cap.saturating_sub(out.bytes.len());
        out.bytes.extend_from_slice(&buf[..n.min(room)]);
    }
}

/// Runs `cmd` with `stdin` written to it; kills it (and its process group) after
/// `timeout`. Each output stream keeps at most `cap` bytes.
pub async fn run(
    mut cmd: Command,
    stdin: &[u8],
    timeout: Duration,
    cap: usize,
) -> Result<Finished, ToolError> {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    cmd.process_group(0);
    let program = format!("{:?}", cmd.as_std().get_program());
    let mut child = cmd
        .spawn()
        .map_err(|e| ToolError::Execution(format!("cannot start {program}: {e}")))?;
    let pid = child.id();
    let mut input = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
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
                Some(s) => read_capped(s, cap).await,
                None => Ok(Captured::default()),
            }
        };
        let err = async {
            match stderr {
                Some(s) => read_capped(s, cap).await,
                None => Ok(Captured::default()),
            }
        };
        let (_, out, err, status) = tokio::join!(write, out, err, child.wait());
        Ok::<_, std::io::Error>((out?, err?, status?))
    };
    match tokio::time::timeout(timeout, work).await {
        Ok(Ok((stdout, stderr, status))) => Ok(Finished {
            code: status.code(),
            stdout,
            stderr,
        }),
        Ok(Err(e)) => Err(ToolError::Execution(format!("{program} failed: {e}"))),
        Err(_) => {
            kill_group(pid);
            Err(ToolError::Timeout(timeout))
        }
    }
}

/// Ends a timed-out program and whatever it started (they share its process group).
fn kill_group(pid: Option<u32>) {
    #[cfg(unix)]
    if let Some(pid) = pid {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", "--", &format!("-{pid}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    #[cfg(not(unix))]
    let _ = pid;
}
