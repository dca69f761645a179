//! The templates of an `http` entry: `{name}` filled from a call's arguments (percent-
//! encoded in a URL), `${context:NAME}` from its run, `${VAR}` from the environment.

use serde_json::{Map, Value};

use toolgate_tool::ToolError;

/// Replaces `${context:NAME}` with the call's run context (tenant, user, run_id,
/// conversation_id), and `${VAR}` with the environment variable.
pub fn expand_context(
    template: &str,
    context: &toolgate_tool::RunContext,
) -> Result<String, ToolError> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("${context:") {
        out.push_str(&expand_env(&rest[..start])?);
        let after = &rest[start + "${context:".len()..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let name = &after[..end];
        let value = context.get(name).ok_or_else(|| {
            ToolError::Execution(format!(
                "'${{context:{name}}}' names nothing; use one of: {}",
                toolgate_tool::RunContext::NAMES.join(", ")
            ))
        })?;
        out.push_str(value);
        rest = &after[end + 1..];
    }
    out.push_str(&expand_env(rest)?);
    Ok(out)
}

/// Fills `${VAR}`, `${VAR:-default}` and `${env:VAR}` from the environment (see
/// [`toolgate_tool::vars`]).
pub fn expand_env(template: &str) -> Result<String, ToolError> {
    toolgate_tool::vars::expand(template).map_err(|e| ToolError::Execution(e.to_string()))
}

/// The parameters a `{name}` template refers to.
pub(super) fn placeholders(template: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        let Some(end) = after.find('}') else { break };
        let name = &after[..end];
        if !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_') {
            names.push(name);
        }
        rest = &after[end + 1..];
    }
    names
}

pub(super) fn arg_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Fills `{name}` from `args`; `encode` percent-encodes values (for URL paths).
/// `None` when a referenced parameter is absent.
pub(super) fn fill(template: &str, args: &Map<String, Value>, encode: bool) -> Option<String> {
    let mut out = template.to_string();
    for name in placeholders(template) {
        let value = arg_text(args.get(name)?);
        let value = if encode {
            percent_encode(&value)
        } else {
            value
        };
        out = out.replace(&format!("{{{name}}}"), &value);
    }
    Some(out)
}

/// Percent-encodes everything but RFC 3986 unreserved characters (a path segment or
/// a value placed in a URL).
pub(crate) fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
