//! Guardrail hooks: `before_call` (may allow, deny, hold for a person, or rewrite the
//! arguments) and `after_result` (may replace the result the model sees), each a
//! command (JSON on stdin, JSON on stdout) or an HTTP endpoint (a POST signed like the
//! notifications). A hook that fails, times out or answers nonsense is an error here;
//! the loop fails closed on it.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::LazyLock;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::deadline::duration_of;

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
            Target::Command(c) => format!("command:{c:?}"),
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
        for (k, v) in map {
            match k.as_str() {
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
                        format!("unknown key '{other}' (use command or url, timeout, on_error)"),
                    ));
                }
            }
        }
        let both = map.contains_key("command") && map.contains_key("url");
        match target {
            Some(target) if !both => Ok(Hook {
                target,
                timeout,
                on_error,
                folder: folder.to_path_buf(),
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
        let text = match tokio::time::timeout(self.timeout, self.send(request.hook, body)).await {
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

    async fn send(&self, hook: &'static str, body: Vec<u8>) -> Result<Vec<u8>, String> {
        match &self.target {
            Target::Command(command) => self.run_command(command, body).await,
            Target::Url(url) => post(url, hook, body).await,
        }
    }

    async fn run_command(&self, command: &[String], body: Vec<u8>) -> Result<Vec<u8>, String> {
        let program = Path::new(&command[0]);
        let program = if program.is_relative() && command[0].contains('/') {
            self.folder.join(program)
        } else {
            program.to_path_buf()
        };
        let mut child = tokio::process::Command::new(&program)
            .args(&command[1..])
            .current_dir(&self.folder)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("could not start {}: {e}", program.display()))?;
        if let Some(mut stdin) = child.stdin.take() {
            // A hook that does not read its input may close it: not an error by itself.
            let _ = stdin.write_all(&body).await;
        }
        let mut stdout = Vec::new();
        let mut stderr = Vec::new();
        let (out, err) = (child.stdout.take(), child.stderr.take());
        let read_out = async {
            if let Some(o) = out {
                let _ = o.take(MAX_ANSWER as u64).read_to_end(&mut stdout).await;
            }
        };
        let read_err = async {
            if let Some(e) = err {
                let _ = e.take(4096).read_to_end(&mut stderr).await;
            }
        };
        tokio::join!(read_out, read_err);
        let status = child
            .wait()
            .await
            .map_err(|e| format!("could not be waited for: {e}"))?;
        if !status.success() {
            let said = String::from_utf8_lossy(&stderr);
            let said = said.trim();
            return Err(format!(
                "exited with {status}{}",
                if said.is_empty() {
                    String::new()
                } else {
                    format!(": {}", said.lines().last().unwrap_or_default())
                }
            ));
        }
        Ok(stdout)
    }
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
    }
}
