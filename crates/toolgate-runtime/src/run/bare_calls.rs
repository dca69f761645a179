//! Calls written as bare JSON objects (`{"name": .., "arguments": {..}}`), plain or in a
//! code fence: the way local models answer when their server has no tool parser for
//! them. Read only when the answer held no other call, and only for the agent's own
//! tools, so that prose or example JSON naming something else stays text.

use toolgate_parse::{Dialect, ParseOptions, ParsedTurn, ProblemKind, parse_text};

/// What an answer's text holds as bare calls: the turn read from it (calls, the prose
/// left around them, problems), or `None` when it holds none of the agent's calls.
///
/// The whole answer may be the calls (plain or fenced, one or several); in native mode
/// (`trailing`) prose may also follow bare calls that open the answer, or come first
/// when the calls are the answer's last fenced block.
pub(super) fn read(text: &str, opts: &ParseOptions, trailing: bool) -> Option<ParsedTurn> {
    let pieces = split_fences(text);
    let prose: String = pieces
        .iter()
        .filter(|p| !p.fenced)
        .map(|p| p.text)
        .collect();
    let fenced: Vec<&str> = pieces.iter().filter(|p| p.fenced).map(|p| p.text).collect();
    if prose.trim().is_empty() && !fenced.is_empty() {
        return calls_of(&fenced.join("\n"), opts, false).map(|t| with_prose(t, ""));
    }
    if fenced.is_empty() {
        // In native mode the calls may be followed by prose (kept as the text).
        return calls_of(text, opts, trailing);
    }
    let last = pieces.last()?;
    if trailing && last.fenced {
        let before: String = pieces[..pieces.len() - 1].iter().map(|p| p.text).collect();
        return calls_of(last.text, opts, false).map(|t| with_prose(t, before.trim()));
    }
    None
}

fn with_prose(mut turn: ParsedTurn, prose: &str) -> ParsedTurn {
    turn.text = prose.to_string();
    turn
}

/// `body` read as bare JSON calls: every call names one of the agent's tools and
/// nothing but calls is there (or, `prose_after`, the calls come first and prose after
/// them). A call cut short (or otherwise unreadable) whose name is one of the tools is
/// a problem under that name.
fn calls_of(body: &str, opts: &ParseOptions, prose_after: bool) -> Option<ParsedTurn> {
    let body = body.trim();
    if !body.starts_with('{') {
        return None;
    }
    let known = |name: &str| opts.schemas.contains_key(name);
    let mut turn = parse_text(body, &opts.clone().with_dialect(Dialect::Llama3));
    if !turn.calls.is_empty() {
        let all_known = turn.calls.iter().all(|c| known(&c.name));
        turn.text = turn.text.trim().to_string();
        return (all_known && (prose_after || turn.text.is_empty())).then_some(turn);
    }
    // Nothing read: a call whose JSON is broken (cut by the output limit, most often)
    // still names its tool; the model is told, under that name.
    let name = written_name(body).filter(|n| known(n))?;
    let mut problem = turn
        .problems
        .iter()
        .find(|p| p.kind == ProblemKind::InvalidJson)
        .cloned()
        .unwrap_or_else(|| {
            toolgate_parse::Problem::new(
                ProblemKind::InvalidJson,
                0,
                "the tool call's JSON is not complete",
            )
        });
    problem.tool = Some(name);
    turn.problems = vec![problem];
    turn.text.clear();
    Some(turn)
}

/// The `"name"` a JSON call starts with, read from text that may be cut short.
fn written_name(body: &str) -> Option<String> {
    let after = body.split_once("\"name\"")?.1.trim_start();
    let value = after.strip_prefix(':')?.trim_start().strip_prefix('"')?;
    let end = value.find('"')?;
    Some(value[..end].to_string())
}

/// A stretch of the answer: inside a code fence (its content, without the fence
/// lines) or not.
struct Piece<'a> {
    text: &'a str,
    fenced: bool,
}

/// Splits `text` at lines that open and close code fences (```` ``` ```` or `~~~`,
/// any info string); an unclosed fence runs to the end.
fn split_fences(text: &str) -> Vec<Piece<'_>> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut open: Option<usize> = None;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let fence = {
            let t = line.trim();
            t.starts_with("```") || t.starts_with("~~~")
        };
        let next = at + line.len();
        if fence {
            match open {
                None => {
                    pieces.push(Piece {
                        text: &text[start..at],
                        fenced: false,
                    });
                    open = Some(next);
                }
                Some(body) => {
                    pieces.push(Piece {
                        text: &text[body..at],
                        fenced: true,
                    });
                    open = None;
                    start = next;
                }
            }
        }
        at = next;
    }
    match open {
        Some(body) => pieces.push(Piece {
            text: &text[body..],
            fenced: true,
        }),
        None => pieces.push(Piece {
            text: &text[start..],
            fenced: false,
        }),
    }
    pieces.retain(|p| p.fenced || !p.text.trim().is_empty());
    pieces
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::Arc;

    use super::*;

    fn opts() -> ParseOptions {
        let mut schemas = toolgate_parse::Schemas::new();
        schemas.insert(
            "echo".into(),
            serde_json::json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        );
        ParseOptions::default().with_schemas(Arc::new(schemas))
    }

    fn names(text: &str, trailing: bool) -> Option<Vec<String>> {
        read(text, &opts(), trailing).map(|t| t.calls.into_iter().map(|c| c.name).collect())
    }

    #[test]
    fn reads_plain_fenced_and_several_calls() {
        let call = r#"{"name": "echo", "arguments": {"text": "hi"}}"#;
        for (what, text) in [
            ("plain", call.to_string()),
            ("padded", format!("\n  {call}\n")),
            ("fenced", format!("```json\n{call}\n```")),
            ("fenced, unclosed", format!("```\n{call}\n")),
            (
                "parameters",
                r#"{"name": "echo", "parameters": {"text": "hi"}}"#.into(),
            ),
            (
                "pretty",
                "{\n  \"name\": \"echo\",\n  \"arguments\": {\n    \"text\": \"hi\"\n  }\n}".into(),
            ),
        ] {
            assert_eq!(names(&text, false), Some(vec!["echo".into()]), "{what}");
        }
        let two = format!("{call}\n{call}");
        assert_eq!(names(&two, false).unwrap().len(), 2);
        let turn = read(&format!("```json\n{call}\n```"), &opts(), false).unwrap();
        assert_eq!(turn.calls[0].arguments["text"], "hi");
        assert!(turn.text.is_empty());
    }

    #[test]
    fn prose_and_other_names_stay_text() {
        let call = r#"{"name": "echo", "arguments": {"text": "hi"}}"#;
        for text in [
            format!("The payload is\n{call}\nas JSON."),
            r#"{"name": "weather", "arguments": {"city": "Oslo"}}"#.to_string(),
            "Plain prose.".to_string(),
            format!("Call it like this:\n```json\n{call}\n```\nthen read it."),
        ] {
            assert_eq!(names(&text, true), None, "{text}");
        }
        assert_eq!(
            names(r#"{"name": "echo", "note": 1} and more"#, false),
            None
        );
        // Calls then prose, and a last fenced block after prose, are calls in native
        // mode only.
        let then = format!("{call}\nThis echoes hi.");
        assert_eq!(names(&then, false), None);
        let turn = read(&then, &opts(), true).unwrap();
        assert_eq!(
            (turn.calls.len(), turn.text.as_str()),
            (1, "This echoes hi.")
        );
        let led = format!("I will echo it.\n```json\n{call}\n```");
        assert_eq!(names(&led, false), None);
        let turn = read(&led, &opts(), true).unwrap();
        assert_eq!(turn.calls.len(), 1);
        assert_eq!(turn.text, "I will echo it.");
    }

    #[test]
    fn a_cut_call_is_a_problem_under_its_name() {
        let turn = read(
            r#"{"name": "echo", "arguments": {"text": "a long te"#,
            &opts(),
            false,
        )
        .unwrap();
        assert!(turn.calls.is_empty());
        assert_eq!(turn.problems.len(), 1);
        assert_eq!(turn.problems[0].tool.as_deref(), Some("echo"));
        assert_eq!(
            read(r#"{"name": "other", "arguments": {"#, &opts(), false),
            None
        );
    }
}
