//! Gemma 4: `<|tool_call>call:NAME{key:<|"|>text<|"|>,n:42,flag:true}<tool_call|>`.
//!
//! The chat template's `format_argument` writes the arguments: top-level keys bare,
//! strings between `<|"|>` quote tokens (raw: no escapes, so a string ends only at the
//! next `<|"|>`), booleans and numbers bare, `null`, objects `{k:v,...}` and arrays
//! `[v,...]`. Nested keys are bare or quoted. Checked against the Gemma 4 chat
//! template and vLLM's `gemma4_tool_parser.py`. The block scan skips quoted strings
//! the same way (framed.rs), so a `<tool_call|>` inside a string is content.

use serde_json::{Map, Number, Value};

use super::block::{BlockOutcome, RawCall, coerce_json_args};
use super::options::ParseOptions;
use super::tag_lex::is_tool_name;
use super::types::{Problem, ProblemKind};

pub(crate) const GEMMA_CALL: &[u8] = b"<|tool_call>";
pub(crate) const GEMMA_CALL_END: &[u8] = b"<tool_call|>";
/// The string quote token.
pub(crate) const GEMMA_QUOTE: &str = "<|\"|>";

/// Reads the body of one call (after `<|tool_call>`, without `<tool_call|>`).
pub(crate) fn gemma(body: &str, at: usize, opts: &ParseOptions, out: &mut BlockOutcome) {
    let head = body.trim_start();
    let Some(rest) = head.strip_prefix("call:") else {
        out.problem(
            ProblemKind::MissingName,
            at,
            "a Gemma 4 tool call without call:NAME; kept as text",
        );
        return;
    };
    let name_len = rest.find('{').unwrap_or(rest.len());
    let name = rest[..name_len].trim();
    if !is_tool_name(name) {
        out.problem(
            ProblemKind::MissingName,
            at,
            format!(
                "'{}' does not name a tool; kept as text",
                super::block::short(name)
            ),
        );
        return;
    }
    let mut r = Reader {
        s: &rest[name_len..],
        pos: 0,
    };
    let args = match r.object() {
        Some(Value::Object(m)) if r.s[r.pos..].trim().is_empty() => m,
        _ => {
            let mut p = Problem::new(
                ProblemKind::InvalidJson,
                at,
                format!("the arguments of '{name}' are not Gemma 4 arguments; kept as text"),
            );
            p.tool = Some(name.to_string());
            out.problems.push(p);
            return;
        }
    };
    let arguments = coerce_json_args(args, opts.schema(name), at, &mut out.problems);
    out.call = Some(RawCall {
        id: None,
        name: name.to_string(),
        arguments,
    });
}

/// A cursor over the argument text; every reader returns `None` on malformed input.
struct Reader<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Reader<'a> {
    fn rest(&self) -> &'a str {
        &self.s[self.pos..]
    }

    fn blank(&mut self) {
        let r = self.rest();
        self.pos += r.len() - r.trim_start().len();
    }

    fn eat(&mut self, c: char) -> bool {
        self.blank();
        if self.rest().starts_with(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    /// `{k:v,...}`.
    fn object(&mut self) -> Option<Value> {
        if !self.eat('{') {
            return None;
        }
        let mut map = Map::new();
        if self.eat('}') {
            return Some(Value::Object(map));
        }
        loop {
            let key = self.key()?;
            if !self.eat(':') {
                return None;
            }
            let value = self.value()?;
            map.insert(key, value);
            if self.eat(',') {
                continue;
            }
            return self.eat('}').then_some(Value::Object(map));
        }
    }

    fn key(&mut self) -> Option<String> {
        self.blank();
        if let Some(s) = self.quoted() {
            return Some(s);
        }
        let r = self.rest();
        let len = r.find([':', ',', '{', '}', '[', ']'])?;
        let key = r[..len].trim();
        if key.is_empty() {
            return None;
        }
        self.pos += len;
        Some(key.to_string())
    }

    /// A `<|"|>`-quoted string: raw up to the next quote token.
    fn quoted(&mut self) -> Option<String> {
        let r = self.rest().strip_prefix(GEMMA_QUOTE)?;
        let end = r.find(GEMMA_QUOTE)?;
        let s = r[..end].to_string();
        self.pos += GEMMA_QUOTE.len() * 2 + end;
        Some(s)
    }

    fn value(&mut self) -> Option<Value> {
        self.blank();
        let r = self.rest();
        if r.starts_with(GEMMA_QUOTE) {
            return self.quoted().map(Value::String);
        }
        match r.chars().next()? {
            '{' => self.object(),
            '[' => self.array(),
            _ => {
                let len = r.find([',', '}', ']']).unwrap_or(r.len());
                let word = r[..len].trim();
                if word.is_empty() {
                    return None;
                }
                self.pos += len;
                Some(bare(word))
            }
        }
    }

    fn array(&mut self) -> Option<Value> {
        if !self.eat('[') {
            return None;
        }
        let mut items = Vec::new();
        if self.eat(']') {
            return Some(Value::Array(items));
        }
        loop {
            items.push(self.value()?);
            if self.eat(',') {
                continue;
            }
            return self.eat(']').then_some(Value::Array(items));
        }
    }
}

/// A bare value: `true`, `false`, `null`, a number, else the text itself.
fn bare(word: &str) -> Value {
    match word {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        "null" | "None" => Value::Null,
        _ => match serde_json::from_str::<Number>(word) {
            Ok(n) => Value::Number(n),
            Err(_) => Value::String(word.to_string()),
        },
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn read(body: &str) -> BlockOutcome {
        let mut out = BlockOutcome::default();
        gemma(body, 0, &ParseOptions::default(), &mut out);
        out
    }

    #[test]
    fn reads_the_template_forms() {
        let out = read(
            r#"call:f{a:<|"|>x, y}<|"|>,n:-4.5,b:false,z:null,o:{<|"|>k<|"|>:[1,<|"|>]<|"|>,{q:true}]}}"#,
        );
        let call = out.call.unwrap();
        assert_eq!(call.name, "f");
        assert_eq!(
            Value::Object(call.arguments),
            serde_json::json!({"a": "x, y}", "n": -4.5, "b": false, "z": null,
                "o": {"k": [1, "]", {"q": true}]}})
        );
    }

    #[test]
    fn malformed_arguments_are_no_call() {
        for body in [
            "call:f{a:<|\"|>x}",
            "call:f{a:1",
            "call:f{:1}",
            "call:{a:1}",
            "f{a:1}",
        ] {
            let out = read(body);
            assert!(out.call.is_none(), "{body}");
            assert_eq!(out.problems.len(), 1, "{body}");
        }
    }
}
