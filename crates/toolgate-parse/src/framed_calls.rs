//! The framed dialects' blocks read into calls: Kimi K2 (`functions.NAME:IDX`), DeepSeek
//! V3 / V3.1 (a fenced or bare JSON body after the name), DeepSeek V3.2's DSML
//! (`invoke` and `parameter` elements) and gpt-oss Harmony (`to=functions.NAME`).

use serde_json::Value;

use super::block::{BlockOutcome, RawCall, coerce_param, group_args};
use super::coerce::property;
use super::framed::{DS_SEP, HARMONY_MESSAGE, KIMI_ARGS, json_call};
use super::options::ParseOptions;
use super::tag_lex::{attribute, is_tool_name};
use super::types::ProblemKind;

pub(super) fn kimi(body: &str, at: usize, opts: &ParseOptions, out: &mut BlockOutcome) {
    let Some((head, args)) = body.split_once(KIMI_ARGS) else {
        out.problem(
            ProblemKind::MissingName,
            at,
            "a Kimi tool call without <|tool_call_argument_begin|>; kept as text",
        );
        return;
    };
    let id = head.trim();
    // `functions.NAME:IDX`: the name between the prefix and the index; a bare `IDX`
    // (a counter without a name) names the one tool its arguments fit.
    let bare = id.strip_prefix("functions.").unwrap_or(id);
    let name = match bare.rsplit_once(':') {
        Some((n, idx)) if is_index(idx) => n.to_string(),
        _ if is_index(bare) => match kimi_infer(args, opts) {
            Some(n) => n,
            None => {
                out.problem(
                    ProblemKind::MissingName,
                    at,
                    format!("a Kimi tool call id '{id}' names no tool and its arguments fit no single known tool; kept as text"),
                );
                return;
            }
        },
        _ => {
            out.problem(
                ProblemKind::MissingName,
                at,
                format!(
                    "a Kimi tool call id '{}' is not functions.NAME:INDEX; kept as text",
                    super::block::short(id)
                ),
            );
            return;
        }
    };
    out.call = json_call(
        &name,
        Some(id.to_string()).filter(|s| !s.is_empty()),
        args,
        at,
        opts,
        out,
    );
}

fn is_index(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit())
}

/// The one known tool whose schema has every key of `args` (a JSON object).
fn kimi_infer(args: &str, opts: &ParseOptions) -> Option<String> {
    let Ok(Value::Object(map)) = serde_json::from_str::<Value>(args.trim()) else {
        return None;
    };
    let mut fits = opts
        .schemas
        .iter()
        .filter(|(_, schema)| map.keys().all(|k| property(Some(schema), k).is_some()));
    match (fits.next(), fits.next()) {
        (Some((name, _)), None) => Some(name.clone()),
        _ => None,
    }
}

pub(super) fn deepseek(body: &str, at: usize, opts: &ParseOptions, out: &mut BlockOutcome) {
    let Some((left, right)) = body.split_once(DS_SEP) else {
        out.problem(
            ProblemKind::MissingName,
            at,
            "a DeepSeek tool call without <｜tool▁sep｜>; kept as text",
        );
        return;
    };
    let (name, args) = if left.trim() == "function" {
        // V3: NAME on the first line, then the arguments in a ```json fence.
        let (name, rest) = right.split_once('\n').unwrap_or((right, ""));
        let rest = rest.trim();
        let rest = rest
            .strip_prefix("```json")
            .or_else(|| rest.strip_prefix("```"))
            .unwrap_or(rest);
        let rest = rest.trim_end();
        (name, rest.strip_suffix("```").unwrap_or(rest))
    } else {
        (left, right)
    };
    out.call = json_call(name, None, args, at, opts, out);
}

/// A DSML invoke; `tokens` are its parameter tag's start and closer (V3.2 / V4, or
/// V4.1's spaced ones). A value ends only at its own closer: markers inside it are
/// content (the block scan skipped them the same way).
pub(super) fn dsml(
    body: &str,
    at: usize,
    tokens: (&str, &str),
    opts: &ParseOptions,
    out: &mut BlockOutcome,
) {
    let (param_open, param_close) = tokens;
    let Some(gt) = body.find('>') else {
        out.problem(
            ProblemKind::MissingName,
            at,
            "a DSML invoke without '>'; kept as text",
        );
        return;
    };
    let Some(name) = attribute(&body[..gt], "name").filter(|n| is_tool_name(n)) else {
        out.problem(
            ProblemKind::MissingName,
            at,
            "a DSML invoke without a valid name=\"...\"; kept as text",
        );
        return;
    };
    let schema = opts.schema(&name);
    let mut rest = &body[gt + 1..];
    let mut pairs = Vec::new();
    while let Some(p) = rest.find(param_open) {
        let after = &rest[p + param_open.len()..];
        let Some(gt) = after.find('>') else { break };
        let attrs = &after[..gt];
        let value_start = &after[gt + 1..];
        let (value, next) = match value_start.find(param_close) {
            Some(e) => (&value_start[..e], &value_start[e + param_close.len()..]),
            None => {
                out.problem(
                    ProblemKind::ImplicitClose,
                    at,
                    "a DSML parameter was never closed",
                );
                (value_start, "")
            }
        };
        rest = next;
        let Some(key) = attribute(attrs, "name") else {
            continue;
        };
        let is_string = attribute(attrs, "string").as_deref() == Some("true");
        let prop = property(schema, &key);
        // With a schema the schema decides the type, whatever `string=` says (as the
        // peers do); without one, `string="true"` is text and the rest is JSON.
        let v = if prop.is_some() {
            coerce_param(&key, value.to_string(), prop, at, out)
        } else if is_string {
            Value::String(value.to_string())
        } else {
            match serde_json::from_str::<Value>(value.trim()) {
                Ok(v) => match super::coerce::coerce_json(v, property(schema, &key)) {
                    Ok(v) => v,
                    Err(m) => m.kept,
                },
                Err(_) => coerce_param(&key, value.to_string(), property(schema, &key), at, out),
            }
        };
        pairs.push((key, v));
    }
    let arguments = group_args(pairs, schema, at, out);
    out.call = Some(RawCall {
        id: None,
        name,
        arguments,
    });
}

/// A Harmony message: the recipient is read from the header, after the channel
/// (`commentary to=functions.NAME <|constrain|>json`) or before it (a role header
/// `assistant to=functions.NAME<|channel|>commentary json`). A message without a
/// recipient is no call; one constrained to JSON is reported, since it looks like a
/// call whose recipient was lost.
pub(super) fn harmony(body: &str, at: usize, opts: &ParseOptions, out: &mut BlockOutcome) {
    let Some((header, message)) = body.split_once(HARMONY_MESSAGE) else {
        return;
    };
    let recipient = header
        .split_whitespace()
        .find_map(|w| w.strip_prefix("to="))
        .map(|to| to.split("<|").next().unwrap_or(to));
    let Some(to) = recipient.filter(|to| !to.is_empty()) else {
        if header.contains("<|constrain|>json") {
            out.problem(
                ProblemKind::MissingName,
                at,
                "a Harmony message constrained to JSON names no recipient \
                 (to=functions.NAME); kept as text",
            );
        }
        return;
    };
    let name = to.strip_prefix("functions.").unwrap_or(to);
    out.call = json_call(name, None, message, at, opts, out);
}
