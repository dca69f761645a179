//! Sealing the secrets inside stored JSON: every occurrence of a secret value in any
//! string (a call's arguments, the text an xml-mode model wrote, a tool's echo of it)
//! becomes a token in one pass; a secret that is a number or a boolean in a call's
//! arguments becomes `{"$tgsecret": TOKEN}`; opening turns both back into the values,
//! types kept.

use std::borrow::Cow;

use serde_json::Value;

use super::{Keyring, MASK, SecretError, TOKEN_END, TOKEN_START};

/// The key of the object a sealed number or boolean becomes.
pub const SEALED_VALUE: &str = "$tgsecret";

/// The keys under which calls' arguments sit in stored runs and messages.
const ARGUMENT_KEYS: [&str; 2] = ["arguments", "edited"];

/// Replaces every occurrence of each of `secrets` in the strings of `value` with a
/// sealed token, and every number or boolean equal to one of them in a call's
/// arguments (under `arguments` or `edited`) with `{"$tgsecret": TOKEN}`.
pub fn seal_json(value: &mut Value, secrets: &[String], ring: &Keyring) -> Result<(), SecretError> {
    seal_in(value, secrets, ring, false)
}

/// [`seal_json`] for a value that is a call's arguments itself.
pub fn seal_arguments(
    value: &mut Value,
    secrets: &[String],
    ring: &Keyring,
) -> Result<(), SecretError> {
    seal_in(value, secrets, ring, true)
}

fn seal_in(
    value: &mut Value,
    secrets: &[String],
    ring: &Keyring,
    arguments: bool,
) -> Result<(), SecretError> {
    // Strings first: the tokens the scalars become are not to be searched again.
    seal_strings(value, secrets, ring)?;
    let mut failure = None;
    scalars_mut(value, arguments, &mut |v| {
        let text = v.to_string();
        if failure.is_some() || !secrets.contains(&text) {
            return;
        }
        match ring.seal(&text) {
            Ok(token) => *v = serde_json::json!({ SEALED_VALUE: token }),
            Err(e) => failure = Some(e),
        }
    });
    failure.map_or(Ok(()), Err)
}

/// Calls `f` on every number and boolean inside calls' arguments.
fn scalars_mut(value: &mut Value, arguments: bool, f: &mut dyn FnMut(&mut Value)) {
    match value {
        Value::Number(_) | Value::Bool(_) if arguments => f(value),
        Value::Array(a) => a.iter_mut().for_each(|v| scalars_mut(v, arguments, f)),
        Value::Object(o) => o
            .iter_mut()
            .for_each(|(k, v)| scalars_mut(v, arguments || ARGUMENT_KEYS.contains(&k.as_str()), f)),
        _ => {}
    }
}

/// `{"$tgsecret": X}`: what [`seal_json`] made of a number or a boolean.
fn sealed_value(value: &Value) -> Option<&str> {
    match value {
        Value::Object(o) if o.len() == 1 => o.get(SEALED_VALUE).and_then(Value::as_str),
        _ => None,
    }
}

/// Replaces every object [`sealed_value`] recognises by what `f` makes of its text.
fn sealed_values_mut(
    value: &mut Value,
    f: &mut dyn FnMut(&str) -> Result<Value, SecretError>,
) -> Result<(), SecretError> {
    if let Some(text) = sealed_value(value) {
        *value = f(text)?;
        return Ok(());
    }
    match value {
        Value::Array(a) => a.iter_mut().try_for_each(|v| sealed_values_mut(v, f)),
        Value::Object(o) => o.values_mut().try_for_each(|v| sealed_values_mut(v, f)),
        _ => Ok(()),
    }
}

/// Stored JSON text as people may see it: every token `[secret]`, every sealed number
/// or boolean the string `"[secret]"`.
pub fn mask_stored(text: &str) -> Cow<'_, str> {
    let masked = mask_tokens(text);
    if !masked.contains(SEALED_VALUE) {
        return masked;
    }
    let Ok(mut json) = serde_json::from_str::<Value>(&masked) else {
        return masked;
    };
    let _ = sealed_values_mut(&mut json, &mut |_| Ok(Value::String(MASK.into())));
    Cow::Owned(json.to_string())
}

fn seal_strings(value: &mut Value, secrets: &[String], ring: &Keyring) -> Result<(), SecretError> {
    let mut secrets: Vec<&str> = secrets
        .iter()
        .map(String::as_str)
        .filter(|s| !s.is_empty() && *s != MASK)
        .collect();
    if secrets.is_empty() {
        return Ok(());
    }
    // Longest first, so that a secret containing another is sealed whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    secrets.dedup();
    let pattern = secrets
        .iter()
        .map(|s| regex::escape(s))
        .collect::<Vec<_>>()
        .join("|");
    let re = regex::Regex::new(&pattern)
        .map_err(|e| SecretError::Key(format!("cannot match the secrets: {e}")))?;
    let mut tokens: std::collections::HashMap<String, String> = Default::default();
    let mut failure = None;
    strings_mut(value, &mut |s| {
        if failure.is_some() || !re.is_match(s) {
            return;
        }
        let sealed = re.replace_all(s, |c: &regex::Captures<'_>| {
            let plain = &c[0];
            if let Some(t) = tokens.get(plain) {
                return t.clone();
            }
            match ring.seal(plain) {
                Ok(t) => {
                    tokens.insert(plain.to_string(), t.clone());
                    t
                }
                Err(e) => {
                    failure = Some(e);
                    MASK.to_string()
                }
            }
        });
        *s = sealed.into_owned();
    });
    failure.map_or(Ok(()), Err)
}

/// Opens every token in the strings of `value`, and every sealed number or boolean.
pub fn unseal_json(value: &mut Value, ring: &Keyring) -> Result<(), SecretError> {
    let mut failure = None;
    strings_mut(value, &mut |s| {
        if failure.is_some() || !s.contains(TOKEN_START) {
            return;
        }
        match replace_tokens(s, |body| ring.open(body)) {
            Ok(open) => *s = open,
            Err(e) => failure = Some(e),
        }
    });
    if let Some(e) = failure {
        return Err(e);
    }
    sealed_values_mut(value, &mut |text| {
        serde_json::from_str(text)
            .map_err(|e| SecretError::Key(format!("a sealed value is not JSON once opened: {e}")))
    })
}

/// `out` with every occurrence of `secrets` in its strings (text, JSON values, links)
/// shown as `[secret]`.
pub fn mask_output(out: crate::ToolOutput, secrets: &[String]) -> crate::ToolOutput {
    fn mask(v: &mut Value, secrets: &[String]) {
        match v {
            Value::String(s) => {
                if let Cow::Owned(m) = mask_values(s, secrets) {
                    *s = m;
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| mask(x, secrets)),
            Value::Object(o) => o.values_mut().for_each(|x| mask(x, secrets)),
            _ => {}
        }
    }
    if secrets.is_empty() {
        return out;
    }
    let Ok(mut json) = serde_json::to_value(&out) else {
        return out;
    };
    mask(&mut json, secrets);
    serde_json::from_value(json).unwrap_or(out)
}

/// `text` with every occurrence of each of `secrets` shown as `[secret]`.
pub fn mask_values<'a>(text: &'a str, secrets: &[String]) -> Cow<'a, str> {
    let mut secrets: Vec<&str> = secrets
        .iter()
        .map(String::as_str)
        .filter(|s| !s.is_empty() && *s != MASK && text.contains(*s))
        .collect();
    if secrets.is_empty() {
        return Cow::Borrowed(text);
    }
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    let pattern = secrets
        .iter()
        .map(|s| regex::escape(s))
        .collect::<Vec<_>>()
        .join("|");
    match regex::Regex::new(&pattern) {
        Ok(re) => Cow::Owned(re.replace_all(text, MASK).into_owned()),
        // Too many or too long to match at once: mask one by one.
        Err(_) => {
            let mut out = text.to_string();
            for s in secrets {
                out = out.replace(s, MASK);
            }
            Cow::Owned(out)
        }
    }
}

/// `text` with every token shown as `[secret]`.
pub fn mask_tokens(text: &str) -> Cow<'_, str> {
    if !text.contains(TOKEN_START) {
        return Cow::Borrowed(text);
    }
    replace_tokens(text, |_| Ok::<_, SecretError>(MASK.to_string()))
        .map_or(Cow::Borrowed(text), Cow::Owned)
}

fn replace_tokens<E>(
    text: &str,
    mut open: impl FnMut(&str) -> Result<String, E>,
) -> Result<String, E> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(TOKEN_START) {
        out.push_str(&rest[..at]);
        let after = &rest[at + TOKEN_START.len()..];
        match after.find(TOKEN_END) {
            Some(end) => {
                out.push_str(&open(&after[..end])?);
                rest = &after[end + TOKEN_END.len()..];
            }
            None => {
                out.push_str(&rest[at..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

fn strings_mut(value: &mut Value, f: &mut dyn FnMut(&mut String)) {
    match value {
        Value::String(s) => f(s),
        Value::Array(a) => a.iter_mut().for_each(|v| strings_mut(v, f)),
        Value::Object(o) => o.values_mut().for_each(|v| strings_mut(v, f)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;

    #[test]
    fn secrets_are_sealed_wherever_they_appear_and_open_again() {
        let dir = tempfile::tempdir().unwrap();
        let ring = Keyring::for_database(&dir.path().join("t.db"));
        let original = json!({
            "content": "<tool_call><name>login</name><params><pw><![CDATA[s3cr3t-pw]]></pw></params></tool_call>",
            "tool_calls": [{"arguments": {"pw": "s3cr3t-pw", "user": "ann"}}],
            "echo": "you said s3cr3t-pw and s3cr3t"
        });
        let mut v = original.clone();
        seal_json(&mut v, &["s3cr3t".into(), "s3cr3t-pw".into()], &ring).unwrap();
        let text = v.to_string();
        assert!(!text.contains("s3cr3t"), "{text}");
        assert_eq!(v["tool_calls"][0]["arguments"]["user"], "ann");
        assert_eq!(
            mask_tokens(v["echo"].as_str().unwrap()),
            "you said [secret] and [secret]"
        );
        unseal_json(&mut v, &ring).unwrap();
        assert_eq!(v, original);
    }

    #[test]
    fn numbers_and_booleans_in_arguments_are_sealed_and_keep_their_type() {
        let dir = tempfile::tempdir().unwrap();
        let ring = Keyring::for_database(&dir.path().join("t.db"));
        let original = json!({
            "messages": [{"tool_calls": [{"arguments": {"pin": 4921, "ok": true, "deep": {"codes": [4921, 7.5]}}}]}],
            "turn": [{"edited": {"pin": 4921}}],
            "usage": {"total_tokens": 4921},
            "echo": "pin was 4921"
        });
        let mut v = original.clone();
        let secrets = ["4921".to_string(), "7.5".to_string()];
        seal_json(&mut v, &secrets, &ring).unwrap();
        let text = v.to_string();
        assert_eq!(
            v["usage"]["total_tokens"], 4921,
            "bookkeeping outside arguments is left alone"
        );
        assert_eq!(v["messages"][0]["tool_calls"][0]["arguments"]["ok"], true);
        assert!(!v["turn"][0]["edited"]["pin"].is_number());
        assert!(!v["messages"][0]["tool_calls"][0]["arguments"]["deep"]["codes"][1].is_number());
        let masked: Value = serde_json::from_str(&mask_stored(&text)).unwrap();
        assert_eq!(masked["turn"][0]["edited"]["pin"], MASK);
        assert_eq!(masked["echo"], "pin was [secret]");
        unseal_json(&mut v, &ring).unwrap();
        assert_eq!(v, original);

        let mut args = json!({"pin": 4921});
        seal_arguments(&mut args, &secrets, &ring).unwrap();
        assert!(!args.to_string().contains("4921"));
        unseal_json(&mut args, &ring).unwrap();
        assert_eq!(args, json!({"pin": 4921}));
    }
}
