//! The GLM-4.5 / 4.6 / 4.7 dialect: `<tool_call>NAME<arg_key>k</arg_key><arg_value>v</arg_value></tool_call>`.

use serde_json::Value;

use super::block::{BlockOutcome, RawCall, coerce_param, group_args};
use super::coerce::property;
use super::options::ParseOptions;
use super::tag_lex::is_tool_name;
use super::types::ProblemKind;

/// GLM-4.5 / 4.6 / 4.7: `<tool_call>NAME\n<arg_key>k</arg_key>\n<arg_value>v</arg_value>\n</tool_call>`
/// (4.7 writes no line breaks). Under `auto` the name must be followed by a line break
/// or an `<arg_key>`, so `<tool_call>example</tool_call>` in prose stays prose.
pub(crate) fn parse_glm(block: &str, closed: bool, opts: &ParseOptions) -> BlockOutcome {
    let mut out = BlockOutcome::default();
    let at = super::opener::TOOL_CALL.len();
    let mut body = &block[at..];
    if closed {
        body = body.strip_suffix("</tool_call>").unwrap_or(body);
    }
    let name_end = body.find(['\n', '<']).unwrap_or(body.len());
    let name = body[..name_end].trim();
    let rest = &body[name_end..];
    let framed = rest.starts_with('\n') || rest.starts_with("<arg_key>");
    if !is_tool_name(name) || (opts.dialect != super::options::Dialect::Glm && !framed) {
        return out;
    }
    let schema = opts.schema(name);
    let mut pairs = Vec::new();
    let mut rest = rest;
    while let Some(k) = rest.find("<arg_key>") {
        let after = &rest[k + "<arg_key>".len()..];
        let Some(ke) = after.find("</arg_key>") else {
            out.problem(
                ProblemKind::UnclosedTag,
                at,
                "an <arg_key> was never closed",
            );
            break;
        };
        let key = after[..ke].trim().to_string();
        let after = after[ke + "</arg_key>".len()..].trim_start();
        let Some(v) = after.strip_prefix("<arg_value>") else {
            out.problem(
                ProblemKind::StrayText,
                at,
                format!("<arg_key>{key}</arg_key> without an <arg_value>; ignored"),
            );
            rest = after;
            continue;
        };
        let (value, next) = match v.find("</arg_value>") {
            Some(e) => (&v[..e], &v[e + "</arg_value>".len()..]),
            None => {
                out.problem(
                    ProblemKind::ImplicitClose,
                    at,
                    format!("parameter '{key}' was never closed"),
                );
                (v, "")
            }
        };
        rest = next;
        let prop = property(schema, &key);
        let v = match prop {
            Some(_) => coerce_param(&key, value.to_string(), prop, at, &mut out),
            // GLM's template writes non-string values as JSON.
            None => serde_json::from_str::<Value>(value.trim())
                .unwrap_or_else(|_| Value::String(value.to_string())),
        };
        pairs.push((key, v));
    }
    if !closed {
        out.problem(
            ProblemKind::UnclosedTag,
            block.len(),
            "<tool_call> was never closed",
        );
    }
    let arguments = group_args(pairs, schema, at, &mut out);
    out.call = Some(RawCall {
        id: None,
        name: name.to_string(),
        arguments,
    });
    out
}
