//! One complete call block to one call: dispatch to the dialect's parser, the strict
//! rule, and the helpers every dialect shares (argument grouping and coercion).

use serde_json::{Map, Value};

use super::block_end::BlockKind;
use super::coerce::{
    Mismatch, Types, coerce_json_noting, coerce_string_noting, coerce_text_noting, items, property,
};
use super::options::ParseOptions;
use super::tagged_walk::Walk;
use super::types::{Problem, ProblemKind};
use super::{framed, glm, hermes, tagged, truncated, xml};

/// A call as a dialect parser found it, before its id is settled.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RawCall {
    pub id: Option<String>,
    pub name: String,
    pub arguments: Map<String, Value>,
}

/// What one block gave: a call (or none: the block is then text) and the problems met.
/// Problem offsets are relative to the block's first byte.
#[derive(Debug, Default)]
pub(crate) struct BlockOutcome {
    pub call: Option<RawCall>,
    /// Further calls written in the same block (a Hermes tag holding a list).
    pub more: Vec<RawCall>,
    pub problems: Vec<Problem>,
}

impl BlockOutcome {
    pub(crate) fn problem(&mut self, kind: ProblemKind, offset: usize, message: impl Into<String>) {
        self.problems.push(Problem::new(kind, offset, message));
    }
}

/// How a block's end was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// By its dialect's closer.
    Closed,
    /// Unclosed, where something else begins (the next call, a wrapper's closer).
    Unclosed,
    /// By the end of the output.
    Cut,
}

/// Parses `block` (exactly the bytes of one call, from its opening tag) as `kind`.
/// In strict mode a structural fault drops the call; a block cut by the end of the
/// output is never a call (unless its dialect's convention ends it there).
pub(crate) fn parse_block(
    kind: BlockKind,
    block: &str,
    ending: Ending,
    walk: Option<Box<Walk>>,
    opts: &ParseOptions,
) -> BlockOutcome {
    let convention =
        ending == Ending::Cut && truncated::ends_at_eof(kind) && !truncated::ends_bare(block);
    let closed = ending == Ending::Closed || convention;
    let mut out = match kind {
        BlockKind::Xml => xml::parse(block, closed, opts),
        BlockKind::Hermes => hermes::parse(block, closed, opts),
        BlockKind::Qwen { wrapped } => tagged::parse_qwen(block, wrapped, walk, opts),
        BlockKind::Invoke => tagged::parse_invoke(block, walk, opts),
        BlockKind::Glm => glm::parse_glm(block, closed, opts),
        BlockKind::Framed(f) => framed::parse(f, block, closed, opts),
    };
    if ending == Ending::Cut && !(convention && out.call.is_some()) {
        return truncated::truncated(out);
    }
    if opts.strict && out.call.is_some() && out.problems.iter().any(|p| p.kind.is_structural()) {
        out.call = None;
        out.more.clear();
        for p in &mut out.problems {
            if p.kind.is_structural() {
                p.message.push_str(" (strict: call dropped)");
            }
        }
    }
    out
}

/// Collects `(key, value)` pairs into arguments: a key given more than once becomes an
/// array of its values (reported when the schema wants a single value).
pub(crate) fn group_args(
    pairs: Vec<(String, Value)>,
    schema: Option<&Value>,
    offset: usize,
    out: &mut BlockOutcome,
) -> Map<String, Value> {
    let mut args = Map::new();
    for (key, value) in pairs {
        match args.get_mut(&key) {
            None => {
                args.insert(key, value);
            }
            Some(existing) => {
                let wants_array = property(schema, &key)
                    .and_then(Types::of)
                    .is_some_and(|t| t.has(Types::ARRAY));
                let known = property(schema, &key).is_some();
                if known && !wants_array {
                    out.problem(
                        ProblemKind::DuplicateParam,
                        offset,
                        format!(
                            "parameter '{key}' given more than once; its values were kept as a list"
                        ),
                    );
                }
                match existing {
                    Value::Array(list) if wants_array || !known => list.push(value),
                    _ => {
                        let first = existing.take();
                        *existing = Value::Array(vec![first, value]);
                    }
                }
            }
        }
    }
    args
}

/// Coerces one parameter written as text, reporting a value that does not fit.
pub(crate) fn coerce_param(
    key: &str,
    text: String,
    schema: Option<&Value>,
    offset: usize,
    out: &mut BlockOutcome,
) -> Value {
    let wants_array = schema
        .and_then(Types::of)
        .is_some_and(|t| t.has(Types::ARRAY) && !t.has(Types::STRING));
    if wants_array && text.trim().is_empty() {
        return Value::Array(Vec::new());
    }
    let mut recovered = None;
    if !wants_array {
        return match coerce_string_noting(text, schema, &mut recovered) {
            Ok(v) => {
                note_recovery(key, recovered, offset, &mut out.problems);
                v
            }
            Err(m) => mismatch(key, m, offset, out),
        };
    }
    match coerce_text_noting(&text, schema, &mut recovered) {
        Ok(v) => {
            note_recovery(key, recovered, offset, &mut out.problems);
            v
        }
        // One item written where a list is wanted: a list of that item.
        Err(_) if !text.trim_start().starts_with('[') => {
            let item = coerce_param(key, text, items(schema), offset, out);
            Value::Array(vec![item])
        }
        Err(m) => mismatch(key, m, offset, out),
    }
}

/// Reports a value the schema made readable although it was written oddly.
fn note_recovery(
    key: &str,
    recovered: Option<&'static str>,
    offset: usize,
    problems: &mut Vec<Problem>,
) {
    if let Some(how) = recovered {
        problems.push(Problem::new(
            ProblemKind::RecoveredValue,
            offset,
            format!("parameter '{key}': {how}"),
        ));
    }
}

/// Reports a value kept as written and returns it.
fn mismatch(key: &str, m: Mismatch, offset: usize, out: &mut BlockOutcome) -> Value {
    let written = match &m.kept {
        Value::String(s) => short(s),
        other => short(&other.to_string()),
    };
    out.problem(
        ProblemKind::UncoercedValue,
        offset,
        format!(
            "parameter '{key}' should be {}; kept as written: {written}",
            m.expected
        ),
    );
    m.kept
}

/// Coerces every argument of a call given as JSON (Hermes, native) to the tool schema.
pub(crate) fn coerce_json_args(
    args: Map<String, Value>,
    schema: Option<&Value>,
    offset: usize,
    problems: &mut Vec<Problem>,
) -> Map<String, Value> {
    if schema.is_none() {
        return args;
    }
    args.into_iter()
        .map(|(key, value)| {
            let mut recovered = None;
            let v = match coerce_json_noting(value, property(schema, &key), &mut recovered) {
                Ok(v) => {
                    note_recovery(&key, recovered, offset, problems);
                    v
                }
                Err(m) => {
                    let mut out = BlockOutcome::default();
                    let kept = mismatch(&key, m, offset, &mut out);
                    problems.append(&mut out.problems);
                    kept
                }
            };
            (key, v)
        })
        .collect()
}

/// The first 60 characters of `s`, for messages.
pub(crate) fn short(s: &str) -> String {
    let mut out: String = s.chars().take(60).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}
