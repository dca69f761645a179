//! A `toolgate serve` process for tests: the built binary on a free loopback port, a
//! fresh database, an agents folder with scripted models, and a reqwest client.

pub mod identity;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

/// The replies of the `assistant` agent: an AUTO call, then a CONFIRM and a client
/// call in one turn, then the answer.
pub const ASSISTANT_REPLIES: &str = r#"replies:
  - content: Let me work that out first.
    tool_calls:
      - {id: call_calc, name: calculator, arguments: {expression: "2+3*4"}}
  - content: I will save it, and I need your favourite colour.
    tool_calls:
      - {id: call_write, name: write_file, arguments: {path: result.txt, content: "14\n"}}
      - {id: call_ask, name: ask_user, arguments: {question: What is your favourite colour?}}
  - content: Done. 2+3*4 is 14.
"#;

/// A folder with agents, tools and a workspace, shared by the servers started on it.
pub struct Site {
    pub dir: TempDir,
    /// The database its servers and commands use, when not the SQLite file in `dir`.
    database: Option<String>,
}

impl Default for Site {
    fn default() -> Site {
        Site::new()
    }
}

impl Site {
    /// `assistant` (calculator auto, write_file confirm, ask_user client), `slow` (one
    /// call of a command tool that sleeps `SLOW_SECONDS`, then an answer), and `plain`
    /// (answers without tools).
    pub fn new() -> Site {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for d in ["agents", "tools", "ws"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        let write = |p: &str, text: &str| std::fs::write(root.join(p), text).unwrap();
        write(
            "agents/assistant.yaml",
            "name: assistant\nmodel: scripted:assistant.replies.yaml\ninstructions: Help.\ntools: [calculator, write_file, ask_user]\nmax_iterations: 6\n",
        );
        write("agents/assistant.replies.yaml", ASSISTANT_REPLIES);
        write(
            "agents/slow.yaml",
            "name: slow\nmodel: scripted:slow.replies.yaml\ninstructions: Wait.\ntools: [nap]\n",
        );
        write(
            "agents/slow.replies.yaml",
            "replies:\n  - content: Napping.\n    tool_calls: [{id: call_nap, name: nap, arguments: {}}]\n  - content: Rested.\n",
        );
        write(
            "agents/plain.yaml",
            "name: plain\nmodel: scripted:plain.replies.yaml\ninstructions: Talk.\ntools: []\n",
        );
        write(
            "agents/plain.replies.yaml",
            "replies:\n  - content: Hello there.\n  - content: Hello again.\n  - content: And again.\n",
        );
        write(
            "tools/ask_user.yaml",
            "name: ask_user\ndescription: Ask the user a question.\nparameters:\n  type: object\n  properties:\n    question: {type: string}\n  required: [question]\nentry: {type: client}\n",
        );
        write(
            "tools/nap.yaml",
            "name: nap\ndescription: Sleeps a while.\npermission: auto\ntimeout: 60\nentry:\n  type: command\n  command: sh\n  args: [-c, \"sleep ${SLOW_SECONDS}; echo rested\"]\n  env: {SLOW_SECONDS: \"${SLOW_SECONDS:-0}\"}\n",
        );
        Site {
            dir,
            database: None,
        }
    }

    /// [`Site::new`], on the database `url` (a PostgreSQL one that several sites share,
    /// as workers deployed in folders of their own do).
    pub fn on_database(url: &str) -> Site {
        Site {
            database: Some(url.to_string()),
            ..Site::new()
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn db(&self) -> PathBuf {
        match &self.database {
            Some(url) => PathBuf::from(url),
            None => self.path().join("toolgate.db"),
        }
    }

    /// Adds an agent `name` with these tools and scripted replies (the YAML list under
    /// `replies:`).
    pub fn agent(&self, name: &str, tools: &str, replies: &str) {
        let root = self.path();
        std::fs::write(
            root.join(format!("agents/{name}.yaml")),
            format!("name: {name}\nmodel: scripted:{name}.replies.yaml\ninstructions: Go.\ntools: {tools}\n"),
        )
        .unwrap();
        std::fs::write(
            root.join(format!("agents/{name}.replies.yaml")),
            format!("replies:\n{replies}"),
        )
        .unwrap();
    }

    /// Adds `finance`: one call of the command tool `transfer` (5000 to `int:acme`),
    /// held by the rule `confirm_if: args.amount > 1000`, with `extra` agent settings
    /// (an `approval_timeout`, say), then an answer.
    pub fn finance(&self, extra: &str) {
        let root = self.path();
        std::fs::write(
            root.join("tools/transfer.yaml"),
            "name: transfer\ndescription: Moves money.\nparameters:\n  type: object\n  properties:\n    to: {type: string}\n    amount: {type: number}\n  required: [to, amount]\nentry: {type: command, command: sh, args: [-c, \"cat; echo\"]}\n",
        )
        .unwrap();
        std::fs::write(
            root.join("agents/finance.yaml"),
            format!("name: finance\nmodel: scripted:finance.replies.yaml\ninstructions: Pay.\ntools: [transfer]\npermissions:\n  transfer:\n    deny_if: \"args.to.startsWith('ext:') && args.amount > 10000\"\n    confirm_if: \"args.amount > 1000\"\n    otherwise: auto\n{extra}"),
        )
        .unwrap();
        std::fs::write(
            root.join("agents/finance.replies.yaml"),
            "replies:\n  - content: Paying.\n    tool_calls: [{id: call_pay, name: transfer, arguments: {to: \"int:acme\", amount: 5000}}]\n  - content: Paid.\n",
        )
        .unwrap();
    }

    /// A server on this site; `key` turns auth on.
    pub fn serve(&self, key: Option<&str>) -> Server {
        Server::start(self, key, &[])
    }
}

/// Starts a prepared `toolgate serve` command with its stdout piped here, and returns
/// the process and the address it says it listens on (waiting at most 30 s for it).
pub fn listen(cmd: &mut Command) -> (Child, String) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .spawn()
        .expect("toolgate serve starts");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("toolgate serve says where it listens within 30 s");
    let base = line
        .trim()
        .rsplit(' ')
        .next()
        .filter(|u| u.starts_with("http://") || u.starts_with("https://"))
        .unwrap_or_else(|| panic!("serve did not say where it listens: {line:?}"))
        .to_string();
    (child, base)
}

/// A running `toolgate serve`; killed when dropped.
pub struct Server {
    pub child: Child,
    pub base: String,
    pub client: reqwest::Client,
    pub key: Option<String>,
}

/// The built binary ([`crate::bin`]).
pub fn bin() -> &'static str {
    crate::bin()
}

/// `toolgate --db DB ARGS...` run in `dir`, with no stdin and none of the environment
/// that would point it elsewhere.
pub fn toolgate_in(dir: &Path, db: &Path, args: &[&str]) -> std::process::Output {
    crate::toolgate(dir)
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .unwrap()
}

impl Server {
    pub fn start(site: &Site, key: Option<&str>, extra: &[&str]) -> Server {
        Server::start_env(site, key, extra, &[])
    }

    /// As [`Server::start`], with more environment variables for the process.
    pub fn start_env(
        site: &Site,
        key: Option<&str>,
        extra: &[&str],
        envs: &[(&str, &str)],
    ) -> Server {
        let mut cmd = serve_command(site, Command::new(bin()), extra);
        cmd.envs(envs.iter().copied());
        Server::started(&mut cmd, key)
    }

    /// Starts `cmd` (made by [`serve_command`]) with `key` as its API key, if any.
    pub fn started(cmd: &mut Command, key: Option<&str>) -> Server {
        match key {
            Some(k) => cmd.env("TOOLGATE_API_KEY", k),
            None => cmd.env_remove("TOOLGATE_API_KEY"),
        };
        let (child, base) = listen(cmd);
        Server {
            child,
            base,
            client: reqwest::Client::new(),
            key: key.map(str::to_string),
        }
    }

    /// Starts `agent` with `input` as `cred`'s caller, expects it to complete, and
    /// returns its calls as `GET /v1/calls` lists them (with the same credential).
    pub async fn completed_calls(&self, cred: &str, agent: &str, input: &str) -> Vec<Value> {
        let started = self
            .client
            .post(self.url("/v1/runs"))
            .bearer_auth(cred)
            .json(&serde_json::json!({"agent": agent, "input": input}))
            .send()
            .await
            .unwrap();
        assert_eq!(started.status().as_u16(), 200);
        let run: Value = started.json().await.unwrap();
        assert_eq!(run["status"], "completed", "{run}");
        let id = run["id"].as_str().unwrap();
        let calls: Value = self
            .client
            .get(self.url(&format!("/v1/calls?run_id={id}")))
            .bearer_auth(cred)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        calls["calls"].as_array().unwrap().clone()
    }

    /// The `/v1/runs` answer of a new `assistant` run, paused on its two items.
    pub async fn paused_assistant(&self) -> Value {
        let (status, run) = self
            .post(
                "/v1/runs",
                serde_json::json!({"agent": "assistant", "input": "Work out 2+3*4"}),
            )
            .await;
        assert_eq!(status, 200, "{run}");
        assert_eq!(run["status"], "requires_action", "{run}");
        run
    }
}

/// `program` (the binary, or a wrapper that runs it) given `serve` on `site` with a
/// fresh loopback port, its folders and database, and `extra`.
pub fn serve_command(site: &Site, mut cmd: Command, extra: &[&str]) -> Command {
    let root = site.path();
    cmd.current_dir(root)
        .arg("--db")
        .arg(site.db())
        .args(["serve", "--addr", "127.0.0.1:0", "--agents"])
        .arg(root.join("agents"))
        .arg("--tools")
        .arg(root.join("tools"))
        .arg("--workspace")
        .arg(root.join("ws"))
        .args(extra)
        .env("SLOW_SECONDS", "2")
        .env_remove("TOOLGATE_DB")
        .env_remove("TOOLGATE_TOOLS")
        .env_remove("TOOLGATE_ADDR")
        .env_remove("TOOLGATE_AGENTS")
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    cmd
}

/// `toolgate --db SITE_DB ARGS...` on `site`'s database.
pub fn cli(site: &Site, args: &[&str]) -> std::process::Output {
    toolgate_in(site.path(), &site.db(), args)
}

impl Server {
    /// METHOD (GET, POST, DELETE or PATCH) with `key` as the bearer token and an optional JSON
    /// body, returning the status and the JSON body (null when there is none).
    pub async fn send_as(
        &self,
        key: &str,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let url = self.url(path);
        let mut r = match method {
            "GET" => self.client.get(url),
            "POST" => self.client.post(url),
            "DELETE" => self.client.delete(url),
            "PATCH" => self.client.patch(url),
            m => panic!("send_as: no method {m}"),
        };
        r = r.bearer_auth(key);
        if let Some(b) = body {
            r = r.json(&b);
        }
        let resp = r.send().await.unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn auth(&self, r: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.key {
            Some(k) => r.bearer_auth(k),
            None => r,
        }
    }

    /// GET, returning the status and the JSON body.
    pub async fn get(&self, path: &str) -> (u16, Value) {
        let r = self
            .auth(self.client.get(self.url(path)))
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    /// POST a JSON body, returning the status and the JSON body.
    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let r = self
            .auth(self.client.post(self.url(path)).json(&body))
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    /// POST a JSON body and read the whole SSE answer as (event, data) pairs.
    pub async fn post_sse(&self, path: &str, body: Value) -> Vec<(String, Value)> {
        let r = self
            .auth(self.client.post(self.url(path)).json(&body))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200);
        let ct = r.headers()["content-type"].to_str().unwrap().to_string();
        assert!(ct.starts_with("text/event-stream"), "{ct}");
        parse_sse(&r.text().await.unwrap())
    }

    /// GET an SSE stream and read it to its end.
    pub async fn get_sse(&self, path: &str) -> Vec<(String, Value)> {
        let r = self
            .auth(self.client.get(self.url(path)))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200);
        parse_sse(&r.text().await.unwrap())
    }

    /// Sends SIGTERM and waits for the exit (at most `limit`).
    pub fn terminate(&mut self, limit: Duration) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(start.elapsed() < limit, "serve did not stop after SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// SSE text as (event, data) pairs; comments (keep-alives) are skipped.
pub fn parse_sse(text: &str) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for block in text.split("\n\n") {
        let mut event = String::from("message");
        let mut data = String::new();
        for line in block.lines() {
            if let Some(e) = line.strip_prefix("event:") {
                event = e.trim().to_string();
            } else if let Some(d) = line.strip_prefix("data:") {
                data.push_str(d.strip_prefix(' ').unwrap_or(d));
            }
        }
        if !data.is_empty() {
            out.push((
                event,
                serde_json::from_str(&data).unwrap_or(Value::String(data)),
            ));
        }
    }
    out
}

/// What the project's own install script `script` (idempotent) made: the path it
/// prints last, which must exist; `who` names the test in the failure.
fn installed(script: &str, who: &str, needs: &str) -> PathBuf {
    let root = crate::workspace_root().to_path_buf();
    let out = Command::new("bash")
        .arg(root.join(script))
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("bash must be there to run {script}: {e}"));
    assert!(
        out.status.success(),
        "{script} failed ({}): {who} needs {needs}",
        out.status
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let made = PathBuf::from(stdout.lines().last().unwrap_or_default().trim());
    assert!(
        made.exists(),
        "{script} did not name what it made: {stdout:?}"
    );
    made
}

/// The venv's python with the cross-language test clients (tests/py/setup.sh).
pub fn python(who: &str) -> PathBuf {
    installed(
        "tests/py/setup.sh",
        who,
        "Python 3 with venv and PyPI access",
    )
}

/// The folder of Node 22 and the npm test clients, its `node_modules` inside
/// (tests/node/setup.sh).
pub fn node_tools(who: &str) -> PathBuf {
    installed(
        "tests/node/setup.sh",
        who,
        "Node 22 and the npm test clients",
    )
}

/// The stdout of a finished command, which must have succeeded (else both its outputs
/// in the failure).
pub fn ran(what: &str, out: std::process::Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what} failed ({}):\nstdout: {stdout}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Everything a server's `/v1/events` streamed, with when it came: (time, event, data).
pub type Streamed = std::sync::Arc<std::sync::Mutex<Vec<(std::time::Instant, String, Value)>>>;

/// Follows `server`'s `/v1/events` from now on, on a task of its own.
pub async fn stream_events(server: &Server) -> Streamed {
    use futures_util::StreamExt;
    let events = server
        .client
        .get(server.url("/v1/events"))
        .send()
        .await
        .unwrap();
    let all = Streamed::default();
    let sink = std::sync::Arc::clone(&all);
    tokio::spawn(async move {
        let mut body = events.bytes_stream();
        let mut text = String::new();
        while let Some(Ok(chunk)) = body.next().await {
            text.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = text.find("\n\n") {
                let frame: String = text.drain(..end + 2).collect();
                for (event, data) in parse_sse(&frame) {
                    sink.lock()
                        .unwrap()
                        .push((std::time::Instant::now(), event, data));
                }
            }
        }
    });
    all
}

/// When the first streamed event `matches` came, waiting for it at most `limit`.
pub async fn first_streamed(
    all: &Streamed,
    limit: std::time::Duration,
    matches: impl Fn(&str, &Value) -> bool,
) -> std::time::Instant {
    let deadline = std::time::Instant::now() + limit;
    loop {
        let found = all
            .lock()
            .unwrap()
            .iter()
            .find_map(|(at, event, data)| matches(event, data).then_some(*at));
        if let Some(at) = found {
            return at;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "/v1/events never carried it: {:?}",
            all.lock().unwrap()
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}
