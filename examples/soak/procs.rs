//! The processes the soak starts and kills: one `toolgate` command at a time (killed
//! with SIGKILL after a delay, or left to finish), and `toolgate serve` with HTTP
//! requests to it on 127.0.0.1 (the server killed mid-request).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};
use tokio::process::{Child, Command};

/// How long any one process or request may take before the soak gives up on it.
const PATIENCE: Duration = Duration::from_secs(60);

/// The release binary and the database it works on.
#[derive(Clone)]
pub struct Toolgate {
    pub bin: PathBuf,
    pub db: PathBuf,
}

/// How a command ended.
#[derive(Debug)]
pub struct Ended {
    /// The soak killed it (SIGKILL) before it exited.
    pub killed: bool,
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

fn drain(from: impl AsyncRead + Unpin + Send + 'static) -> tokio::task::JoinHandle<String> {
    tokio::spawn(async move {
        let mut buf = Vec::new();
        let _ = BufReader::new(from).read_to_end(&mut buf).await;
        String::from_utf8_lossy(&buf).into_owned()
    })
}

async fn joined(h: tokio::task::JoinHandle<String>) -> String {
    match tokio::time::timeout(Duration::from_secs(5), h).await {
        Ok(Ok(s)) => s,
        _ => String::new(),
    }
}

impl Toolgate {
    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.arg("--db")
            .arg(&self.db)
            .env_remove("RUST_LOG")
            .env_remove("TOOLGATE_DB")
            .env_remove("TOOLGATE_LOG_FORMAT")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd
    }

    /// Runs `toolgate ARGS`; kills it with SIGKILL after `kill_after` if it is still
    /// running then.
    pub async fn cli(
        &self,
        args: &[OsString],
        kill_after: Option<Duration>,
    ) -> std::io::Result<Ended> {
        let mut child = self.command().args(args).spawn()?;
        let out = drain(child.stdout.take().expect("piped"));
        let err = drain(child.stderr.take().expect("piped"));
        let deadline = kill_after.unwrap_or(PATIENCE);
        let (killed, code) = tokio::select! {
            status = child.wait() => (false, status?.code()),
            _ = tokio::time::sleep(deadline) => {
                // SIGKILL, then reaped: its pid is gone before the next process looks.
                child.kill().await?;
                if kill_after.is_none() {
                    return Err(std::io::Error::other(format!(
                        "toolgate {args:?} took more than {PATIENCE:?}"
                    )));
                }
                (true, None)
            }
        };
        Ok(Ended {
            killed,
            code,
            stdout: joined(out).await,
            stderr: joined(err).await,
        })
    }

    /// Starts `toolgate serve` on a free loopback port and waits for its address.
    pub async fn serve(
        &self,
        agents: &Path,
        tools: &Path,
        workspace: &Path,
    ) -> std::io::Result<Serve> {
        let mut child = self
            .command()
            .arg("serve")
            .arg("--addr")
            .arg("127.0.0.1:0")
            .arg("--agents")
            .arg(agents)
            .arg("--tools")
            .arg(tools)
            .arg("--workspace")
            .arg(workspace)
            .env_remove("TOOLGATE_API_KEY")
            .env_remove("TOOLGATE_ADDR")
            .spawn()?;
        let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
        let err = drain(child.stderr.take().expect("piped"));
        let first = tokio::time::timeout(Duration::from_secs(20), lines.next_line()).await;
        let base = match first {
            Ok(Ok(Some(line))) => line
                .split_once("listening on ")
                .map(|(_, addr)| addr.trim().to_string()),
            _ => None,
        };
        let Some(base) = base else {
            let _ = child.kill().await;
            let stderr = joined(err).await;
            return Err(std::io::Error::other(format!(
                "toolgate serve did not start: {}",
                stderr.trim()
            )));
        };
        // Keep its stdout drained; stderr is read when it ends.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(Serve {
            child,
            base,
            stderr: Some(err),
        })
    }
}

/// A running `toolgate serve`.
pub struct Serve {
    child: Child,
    base: String,
    stderr: Option<tokio::task::JoinHandle<String>>,
}

/// What one HTTP request came to.
#[derive(Debug)]
pub enum Http {
    /// The server answered: status and JSON body.
    Answer(u16, Value),
    /// The soak killed the server before it answered.
    Killed,
    /// No answer, and the soak did not kill it.
    Failed(String),
}

impl Serve {
    /// SIGKILL, reaped; returns what it wrote on stderr.
    pub async fn kill(mut self) -> String {
        let _ = self.child.kill().await;
        match self.stderr.take() {
            Some(h) => joined(h).await,
            None => String::new(),
        }
    }

    /// Sends a request; when `kill_after` passes first, kills the server (the caller
    /// then drops this `Serve`).
    pub async fn request(
        &mut self,
        client: &reqwest::Client,
        post: Option<Value>,
        path: &str,
        kill_after: Option<Duration>,
    ) -> Http {
        let url = format!("{}{path}", self.base);
        let send = async {
            let req = match &post {
                Some(body) => client.post(&url).json(body),
                None => client.get(&url),
            };
            let resp = req.send().await.map_err(|e| e.to_string())?;
            let status = resp.status().as_u16();
            let body = resp.bytes().await.map_err(|e| e.to_string())?;
            let json = serde_json::from_slice(&body)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
            Ok::<_, String>((status, json))
        };
        let timer = async {
            match kill_after {
                Some(d) => tokio::time::sleep(d).await,
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            r = send => match r {
                Ok((status, json)) => Http::Answer(status, json),
                Err(e) => Http::Failed(e),
            },
            _ = timer => {
                let _ = self.child.kill().await;
                Http::Killed
            }
        }
    }
}
