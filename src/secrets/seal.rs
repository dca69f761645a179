//! Sealing the secrets inside stored JSON: every occurrence of a secret value in any
//! string (a call's arguments, the text an xml-mode model wrote, a tool's echo of it)
//! becomes a token in one pass; opening turns tokens back into the values.

use std::borrow::Cow;

use serde_json::Value;

use super::{Keyring, MASK, SecretError, TOKEN_END, TOKEN_START};

/// Replaces every occurrence of each of `secrets` in the strings of `value` with a
/// sealed token.
pub fn seal_json(value: &mut Value, secrets: &[String], ring: &Keyring) -> Result<(), SecretError> {
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

/// Opens every token in the strings of `value`.
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
    failure.map_or(Ok(()), Err)
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
}
