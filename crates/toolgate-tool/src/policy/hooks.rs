//! Guardrail hooks: `before_call` (may allow, deny, hold for a person, or rewrite the
//! arguments) and `after_result` (may replace the result the model sees), each a
//! command (JSON on stdin, JSON on stdout) or an HTTP endpoint (a POST signed like the
//! notifications). A hook that fails, times out or answers nonsense is an error here;
//! the loop fails closed on it.
//!
//! A hook receives the call (`tool`, `arguments` with secrets as `[secret]`, `call_id`)
//! and for whom it runs: `agent`, `tenant`, `user` (null when nobody is named),
//! `run_id` and `conversation_id` ([`HookRequest`]).
//!
//! A command hook runs in the same sandbox as command tools (`toolgate_sandbox`:
//! Landlock, seccomp, `nobody` as root, rlimits, an environment built from nothing,
//! its own process group killed on a timeout or when toolgate dies), with its own
//! settings: `sandbox:` on the hook, written as in a tool file (`fs`, `read`, `write`,
//! `network`, `limits`, or `off`). Its folder (the folder of the file naming it, where
//! it starts) it may read but never write; it writes its own temporary `HOME` and the
//! `write:` folders its settings name (`fs: workspace-read` makes those read-only too;
//! `fs: off` lifts the file-system rules, its folder then lent as a tool's workspace),
//! nothing else. No network unless `network: true`; `sandbox: off` runs it as
//! toolgate's own user, unconfined, as hooks ran before. Its environment holds
//! `TOOLGATE_HOOK`, `TOOLGATE_TENANT`, `TOOLGATE_USER`, `TOOLGATE_RUN_ID`,
//! `TOOLGATE_CONVERSATION_ID` and `TOOLGATE_CALL_ID` besides the sandbox's own.
//!
//! ```yaml
//! hooks:
//!   before_call:
//!     command: [./guard.py]
//!     timeout: 2s
//!     sandbox: {write: [/var/log/guard], limits: {memory: 512M}}
//! ```

use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::deadline::duration_of;
use toolgate_sandbox::{self as sandbox, Fs, SandboxPolicy};

/// A hook's timeout when its file gives none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
/// Bytes of a hook's answer read at most.
const MAX_ANSWER: usize = 1 << 20;
/// The key URL hooks are signed with (else the notifications' key).
pub const SECRET_ENV: &str = "TOOLGATE_HOOK_SECRET";

/// Where a hook goes.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// A program and its arguments, started in the folder of the file naming it.
    Command(Vec<String>),
    Url(url::Url),
}

/// What a `before_call` hook that fails does to the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnError {
    /// Refused, the model told why (the default).
    #[default]
    Deny,
    /// Held for a person, the failure as the item's reason.
    Confirm,
}

/// One hook as configured.
#[derive(Debug, Clone, PartialEq)]
pub struct Hook {
    pub target: Target,
    pub timeout: Duration,
    pub on_error: OnError,
    /// The folder of the file that names it: where a command starts.
    pub folder: PathBuf,
    /// The sandbox a command runs in (see the module's documentation).
    pub sandbox: SandboxPolicy,
}

/// How a command hook is launched under `policy`: the rules the sandbox applies, and
/// the folder given to it as the workspace. The hook's own `folder` (where it starts)
/// is only ever read; what it may write is its `write:` folders (the first stands as
/// the sandbox's workspace, the rest stay `write:`), or, without any, nothing but its
/// temporary `HOME` (the folder then lent read-only, as `fs: workspace-read`). With
/// `fs: off` the folder is the workspace, as a tool's.
fn launch_policy(policy: &SandboxPolicy, folder: &Path) -> (SandboxPolicy, PathBuf) {
    let SandboxPolicy::On(rules) = policy else {
        return (SandboxPolicy::Off, folder.to_path_buf());
    };
    let mut rules = rules.clone();
    if rules.fs == Fs::Off {
        return (SandboxPolicy::On(rules), folder.to_path_buf());
    }
    rules.read.push(folder.to_path_buf());
    if rules.fs == Fs::WorkspaceWrite && !rules.write.is_empty() {
        let workspace = rules.write.remove(0);
        return (SandboxPolicy::On(rules), workspace);
    }
    rules.fs = Fs::WorkspaceRead;
    (SandboxPolicy::On(rules), folder.to_path_buf())
}

/// The hooks of an agent or a tool.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Hooks {
    pub before_call: Option<Hook>,
    pub after_result: Option<Hook>,
}

/// What a hook receives.
#[derive(Debug, Clone, Serialize)]
pub struct HookRequest<'a> {
    /// `before_call` or `after_result`.
    pub hook: &'static str,
    pub tool: &'a str,
    pub arguments: &'a Map<String, Value>,
    pub agent: &'a str,
    /// The run's tenant (`default` when it names none).
    pub tenant: &'a str,
    /// Who started the run; null when nobody is named.
    pub user: Option<&'a str>,
    pub run_id: &'a str,
    pub call_id: &'a str,
    pub conversation_id: &'a str,
    /// The tool's result as text (`after_result` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<&'a str>,
}

/// A `before_call` answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Before {
    Allow,
    Deny(Option<String>),
    Confirm(Option<String>),
}

/// A `before_call` answer with the arguments it rewrote, if any.
#[derive(Debug, Clone, PartialEq)]
pub struct BeforeAnswer {
    pub decision: Before,
    pub arguments: Option<Map<String, Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBefore {
    decision: String,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    arguments: Option<Map<String, Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAfter {
    #[serde(default)]
    result: Option<Value>,
}

/// Why a hook gave no usable answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("the {hook} hook {message}")]
pub struct HookError {
    pub hook: &'static str,
    pub message: String,
}

impl Hooks {
    /// Reads `hooks: {before_call: HOOK, after_result: HOOK}`; `folder` is where the
    /// file sits. An error names the key at fault.
    pub fn parse(value: &Value, folder: &Path) -> Result<Hooks, (Vec<String>, String)> {
        let Value::Object(map) = value else {
            return Err((
                vec![],
                "hooks: a map of before_call and after_result".into(),
            ));
        };
        let mut hooks = Hooks::default();
        for (key, v) in map {
            let slot = match key.as_str() {
                "before_call" => &mut hooks.before_call,
                "after_result" => &mut hooks.after_result,
                other => {
                    return Err((
                        vec![other.to_string()],
                        format!("hooks: unknown hook '{other}' (use before_call, after_result)"),
                    ));
                }
            };
            *slot = Some(Hook::parse(v, folder).map_err(|(k, m)| {
                let mut keys = vec![key.clone()];
                keys.extend(k);
                (keys, format!("hooks: {key}: {m}"))
            })?);
        }
        Ok(hooks)
    }

    pub fn is_empty(&self) -> bool {
        self.before_call.is_none() && self.after_result.is_none()
    }

    /// The hooks as one line of text, for a fingerprint of the policy.
    pub fn describe(&self) -> String {
        let one = |h: &Hook| match &h.target {
            Target::Command(c) => format!("command:{c:?} sandbox:{:?}", h.sandbox),
            Target::Url(u) => format!("url:{u}"),
        };
        let mut out = String::new();
        if let Some(h) = &self.before_call {
            out.push_str(&format!("before_call={};", one(h)));
        }
        if let Some(h) = &self.after_result {
            out.push_str(&format!("after_result={};", one(h)));
        }
        out
    }
}

impl Hook {
    fn parse(value: &Value, folder: &Path) -> Result<Hook, (Vec<String>, String)> {
        let Value::Object(map) = value else {
            return Err((
                vec![],
                "a hook is {command: [PROGRAM, ARGS...]} or {url: URL}".into(),
            ));
        };
        let key_err = |k: &str, m: String| (vec![k.to_string()], m);
        let mut target = None;
        let mut timeout = DEFAULT_TIMEOUT;
        let mut on_error = OnError::Deny;
        let mut sandbox = SandboxPolicy::default();
        for (k, v) in map {
            match k.as_str() {
                "sandbox" => {
                    sandbox = SandboxPolicy::parse(v, folder)
                        .map_err(|(_, m)| key_err(k, format!("sandbox: {m}")))?;
                }
                "command" => {
                    let parts: Option<Vec<String>> = match v {
                        Value::Array(a) => a.iter().map(|x| x.as_str().map(String::from)).collect(),
                        _ => None,
                    };
                    match parts {
                        Some(p) if !p.is_empty() && !p[0].trim().is_empty() => {
                            target = Some(Target::Command(p));
                        }
                        _ => {
                            return Err(key_err(
                                k,
                                "command is a list of strings: [PROGRAM, ARGS...]".into(),
                            ));
                        }
                    }
                }
                "url" => {
                    let url = v
                        .as_str()
                        .and_then(|s| url::Url::parse(s).ok())
                        .filter(|u| matches!(u.scheme(), "http" | "https"))
                        .ok_or_else(|| key_err(k, format!("url: {v} is not an http(s) URL")))?;
                    target = Some(Target::Url(url));
                }
                "timeout" => {
                    timeout = duration_of(v).map_err(|m| key_err(k, format!("timeout: {m}")))?;
                    if timeout.is_zero() {
                        return Err(key_err(k, "timeout must be more than 0".into()));
                    }
                }
                "on_error" => {
                    on_error = match v.as_str() {
                        Some("deny") => OnError::Deny,
                        Some("confirm") => OnError::Confirm,
                        _ => {
                            return Err(key_err(
                                k,
                                format!("on_error: {v} is not deny or confirm"),
                            ));
                        }
                    };
                }
                other => {
                    return Err(key_err(
                        other,
                        format!(
                            "unknown key '{other}' (use command or url, timeout, on_error, sandbox)"
                        ),
                    ));
                }
            }
        }
        let both = map.contains_key("command") && map.contains_key("url");
        if map.contains_key("sandbox") && map.contains_key("url") {
            return Err(key_err(
                "sandbox",
                "sandbox: only a command hook runs a program".into(),
            ));
        }
        match target {
            Some(target) if !both => Ok(Hook {
                target,
                timeout,
                on_error,
                folder: folder.to_path_buf(),
                sandbox,
            }),
            _ => Err((vec![], "give a command or a url (one of them)".into())),
        }
    }

    /// Asks a `before_call` hook.
    pub async fn before(&self, request: &HookRequest<'_>) -> Result<BeforeAnswer, HookError> {
        let fail = |message: String| HookError {
            hook: "before_call",
            message,
        };
        let answer = self.ask(request).await.map_err(fail)?;
        let raw: RawBefore =
            serde_json::from_value(answer).map_err(|e| fail(format!("answered nonsense: {e}")))?;
        let decision = match raw.decision.as_str() {
            "allow" => Before::Allow,
            "deny" => Before::Deny(raw.reason),
            "confirm" => Before::Confirm(raw.reason),
            other => {
                return Err(fail(format!(
                    "answered nonsense: decision '{other}' is not allow, deny or confirm"
                )));
            }
        };
        Ok(BeforeAnswer {
            decision,
            arguments: raw.arguments,
        })
    }

    /// Asks an `after_result` hook: the replacement result, or `None` to pass it on.
    pub async fn after(&self, request: &HookRequest<'_>) -> Result<Option<String>, HookError> {
        let fail = |message: String| HookError {
            hook: "after_result",
            message,
        };
        let answer = self.ask(request).await.map_err(fail)?;
        let raw: RawAfter =
            serde_json::from_value(answer).map_err(|e| fail(format!("answered nonsense: {e}")))?;
        Ok(match raw.result {
            None => None,
            Some(Value::String(s)) => Some(s),
            Some(other) => Some(other.to_string()),
        })
    }

    /// Sends the request, within the timeout; the answer must be a JSON object.
    async fn ask(&self, request: &HookRequest<'_>) -> Result<Value, String> {
        let body = serde_json::to_vec(request).map_err(|e| format!("could not be asked: {e}"))?;
        let text = match tokio::time::timeout(self.timeout, self.send(request, body)).await {
            Ok(r) => r?,
            Err(_) => {
                return Err(format!(
                    "did not answer within {}",
                    super::deadline::shown(self.timeout)
                ));
            }
        };
        match serde_json::from_slice::<Value>(&text) {
            Ok(v @ Value::Object(_)) => Ok(v),
            Ok(other) => Err(format!("answered nonsense: {other} is not a JSON object")),
            Err(e) => Err(format!(
                "answered nonsense: not JSON ({e}): {}",
                String::from_utf8_lossy(&text[..text.len().min(200)])
            )),
        }
    }

    async fn send(&self, request: &HookRequest<'_>, body: Vec<u8>) -> Result<Vec<u8>, String> {
        match &self.target {
            Target::Command(command) => self.run_command(command, request, body).await,
            Target::Url(url) => post(url, request.hook, body).await,
        }
    }

    /// Runs the command in the hook's sandbox, `body` on its stdin; its stdout is the
    /// answer. Killed whole (its process group) when the wait is given up.
    async fn run_command(
        &self,
        command: &[String],
        request: &HookRequest<'_>,
        body: Vec<u8>,
    ) -> Result<Vec<u8>, String> {
        let program = Path::new(&command[0]);
        let program = if program.is_relative() && command[0].contains('/') {
            self.folder.join(program)
        } else {
            program.to_path_buf()
        };
        let mut cmd = tokio::process::Command::new(&program);
        cmd.args(&command[1..]);
        let env = hook_env(request);
        let who = format!("the {} hook", request.hook);
        let shown = program.to_string_lossy();
        // Arguments naming files of its folder (`hooks/guard.sh`), as absolute paths:
        // the sandbox finds the program's own files from them.
        let files: Vec<String> = command[1..]
            .iter()
            .map(|a| match self.folder.join(a) {
                p if Path::new(a).is_relative() && p.exists() => p.to_string_lossy().into_owned(),
                _ => a.clone(),
            })
            .collect();
        let (policy, workspace) = launch_policy(&self.sandbox, &self.folder);
        let launch = sandbox::Launch {
            who: &who,
            workspace: &workspace,
            program: Some((&shown, &files)),
            env: &env,
        };
        // Kept until the program has ended: its temporary folder goes with it.
        let _confined = sandbox::confine(&mut cmd, &policy, &launch)
            .map_err(|e| format!("could not be sandboxed: {e}"))?;
        // It starts in its own folder (readable to it), whatever the sandbox lent.
        cmd.current_dir(&self.folder);
        // The caller's own timeout gives up first; this one is a backstop.
        let done = crate::process::run(
            cmd,
            &body,
            self.timeout + Duration::from_secs(1),
            MAX_ANSWER,
        )
        .await
        .map_err(|e| match e {
            crate::ToolError::Execution(m) => format!("could not start {}: {m}", program.display()),
            other => other.to_string(),
        })?;
        match done.code {
            Some(0) => Ok(done.stdout.bytes),
            code => {
                let said = String::from_utf8_lossy(&done.stderr.bytes);
                let last = said.trim().lines().last().unwrap_or_default().to_string();
                let status = match code {
                    Some(c) => format!("exited with status {c}"),
                    None => "was killed by a signal".to_string(),
                };
                Err(if last.is_empty() {
                    status
                } else {
                    format!("{status}: {last}")
                })
            }
        }
    }
}

/// The variables a command hook gets: which hook, and for whom the call runs.
fn hook_env(request: &HookRequest<'_>) -> Vec<(String, String)> {
    let mut env = vec![
        ("TOOLGATE_HOOK".to_string(), request.hook.to_string()),
        ("TOOLGATE_TENANT".to_string(), request.tenant.to_string()),
        ("TOOLGATE_RUN_ID".to_string(), request.run_id.to_string()),
        (
            "TOOLGATE_CONVERSATION_ID".to_string(),
            request.conversation_id.to_string(),
        ),
        ("TOOLGATE_CALL_ID".to_string(), request.call_id.to_string()),
    ];
    if let Some(user) = request.user {
        env.push(("TOOLGATE_USER".to_string(), user.to_string()));
    }
    env
}

/// The client URL hooks are posted with: no redirects (the signed body goes where it
/// was configured to, nowhere else).
static CLIENT: LazyLock<Result<reqwest::Client, String>> = LazyLock::new(|| {
    reqwest::Client::builder()
        .user_agent(concat!("toolgate/", env!("CARGO_PKG_VERSION")))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())
});

async fn post(url: &url::Url, hook: &'static str, body: Vec<u8>) -> Result<Vec<u8>, String> {
    let client = CLIENT
        .as_ref()
        .map_err(|e| format!("could not be asked: {e}"))?;
    let mut request = client
        .post(url.clone())
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(
            toolgate_protocol::webhook::EVENT_HEADER,
            format!("hook.{hook}"),
        );
    let secret = std::env::var(SECRET_ENV)
        .or_else(|_| std::env::var(toolgate_protocol::webhook::SECRET_ENV))
        .ok()
        .filter(|s| !s.trim().is_empty());
    if let Some(secret) = secret {
        let timestamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let delivery = uuid::Uuid::new_v4().to_string();
        if let Some(sig) =
            toolgate_protocol::webhook::signature(&secret, timestamp, &delivery, &body)
        {
            request = request
                .header(toolgate_protocol::webhook::SIGNATURE_HEADER, sig)
                .header(
                    toolgate_protocol::webhook::TIMESTAMP_HEADER,
                    timestamp.to_string(),
                )
                .header(toolgate_protocol::webhook::DELIVERY_HEADER, delivery);
        }
    }
    let response = request
        .body(body)
        .send()
        .await
        .map_err(|e| format!("could not be reached: {e}"))?;
    if !response.status().is_success() {
        return Err(format!("answered HTTP {}", response.status()));
    }
    let bytes = response
        .bytes()
        .await
        .map_err(|e| format!("answer could not be read: {e}"))?;
    Ok(bytes[..bytes.len().min(MAX_ANSWER)].to_vec())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn hooks_read_commands_urls_and_refuse_the_rest() {
        let h = Hooks::parse(
            &json!({"before_call": {"command": ["./guard.sh", "-v"], "timeout": "2s", "on_error": "confirm"},
                     "after_result": {"url": "http://127.0.0.1:9/h"}}),
            Path::new("/srv"),
        )
        .unwrap();
        let b = h.before_call.unwrap();
        assert_eq!(b.timeout, Duration::from_secs(2));
        assert_eq!(b.on_error, OnError::Confirm);
        assert_eq!(h.after_result.unwrap().timeout, DEFAULT_TIMEOUT);
        let bad = |v: Value| Hooks::parse(&v, Path::new("/")).unwrap_err();
        assert_eq!(bad(json!({"before": {}})).0, ["before"]);
        assert_eq!(
            bad(json!({"before_call": {"command": "x"}})).0,
            ["before_call", "command"]
        );
        assert!(
            bad(json!({"before_call": {"timeout": "1s"}}))
                .1
                .contains("command or a url")
        );
        assert_eq!(
            bad(json!({"after_result": {"url": "ftp://x"}})).0,
            ["after_result", "url"]
        );
        assert_eq!(
            bad(json!({"before_call": {"url": "http://h", "sandbox": "off"}})).0,
            ["before_call", "sandbox"]
        );
    }

    #[test]
    fn a_hook_reads_its_folder_and_writes_only_its_write_folders() {
        let folder = Path::new("/srv/agents");
        let hook = |sandbox: Value| {
            Hooks::parse(
                &json!({"before_call": {"command": ["./g.sh"], "sandbox": sandbox}}),
                folder,
            )
            .unwrap()
            .before_call
            .unwrap()
        };
        let rules = |p: &SandboxPolicy| match p {
            SandboxPolicy::On(r) => r.clone(),
            SandboxPolicy::Off => panic!("off"),
        };
        // By default: its folder lent read-only, nothing written but its HOME.
        let default = Hooks::parse(&json!({"before_call": {"command": ["./g.sh"]}}), folder)
            .unwrap()
            .before_call
            .unwrap();
        let (p, ws) = launch_policy(&default.sandbox, folder);
        assert_eq!((rules(&p).fs, ws.as_path()), (Fs::WorkspaceRead, folder));
        // With write folders: those are what it writes; its folder is read.
        let (p, ws) = launch_policy(
            &hook(json!({"write": ["/var/log/g", "/tmp/g"]})).sandbox,
            folder,
        );
        let r = rules(&p);
        assert_eq!(ws, Path::new("/var/log/g"));
        assert_eq!(r.write, [PathBuf::from("/tmp/g")]);
        assert!(r.read.contains(&folder.to_path_buf()) && r.fs == Fs::WorkspaceWrite);
        // workspace-read keeps even those read-only; off is off.
        let (p, ws) = launch_policy(
            &hook(json!({"fs": "workspace-read", "write": ["/var/log/g"]})).sandbox,
            folder,
        );
        assert_eq!((rules(&p).fs, ws.as_path()), (Fs::WorkspaceRead, folder));
        assert_eq!(
            launch_policy(&hook(json!("off")).sandbox, folder).0,
            SandboxPolicy::Off
        );
    }
}
