//! Asking on the terminal: a CONFIRM call is shown readably and approved, denied with a
//! reason, approved for good, or approved with edited arguments; a client tool's output
//! is typed in. Reads from any `BufRead`, so it is tested without a terminal.

use std::io::{self, BufRead, Write};

use serde_json::Value;
use toolgate::protocol::{Decision, ItemKind, RequiredItem};

/// Asks about one item; `None` leaves the run paused.
pub fn ask(
    item: &RequiredItem,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> io::Result<Option<Decision>> {
    writeln!(out, "\n{} wants to run {} with:", item.call_id, item.tool)?;
    let pretty = serde_json::to_string_pretty(&item.arguments).unwrap_or_default();
    for line in pretty.lines() {
        writeln!(out, "    {line}")?;
    }
    if item.kind == ItemKind::SubmitToolOutput {
        write!(
            out,
            "{} runs on your side: type its output (empty line to pause): ",
            item.tool
        )?;
        out.flush()?;
        let line = read_line(input)?;
        return Ok((!line.is_empty()).then_some(Decision::Submit {
            output: line,
            is_error: false,
        }));
    }
    loop {
        write!(
            out,
            "[a]pprove  [d]eny  a[l]ways  [e]dit arguments  [p]ause: "
        )?;
        out.flush()?;
        let answer = read_line(input)?;
        match answer.to_ascii_lowercase().as_str() {
            "a" | "approve" | "y" | "yes" => return Ok(Some(Decision::Approve)),
            "l" | "always" => return Ok(Some(Decision::ApproveAlways)),
            "d" | "deny" | "n" | "no" => {
                write!(out, "reason (told to the model): ")?;
                out.flush()?;
                let reason = read_line(input)?;
                return Ok(Some(Decision::Deny {
                    reason: (!reason.is_empty()).then_some(reason),
                }));
            }
            "e" | "edit" => {
                write!(out, "arguments as one JSON object: ")?;
                out.flush()?;
                let text = read_line(input)?;
                match serde_json::from_str::<Value>(&text) {
                    Ok(Value::Object(arguments)) => return Ok(Some(Decision::Edit { arguments })),
                    Ok(_) => writeln!(out, "that is not a JSON object")?,
                    Err(e) => writeln!(out, "that is not JSON: {e}")?,
                }
            }
            "p" | "pause" | "q" | "" => return Ok(None),
            other => writeln!(out, "'{other}' is not one of a, d, l, e, p")?,
        }
    }
}

fn read_line(input: &mut dyn BufRead) -> io::Result<String> {
    let mut line = String::new();
    if input.read_line(&mut line)? == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the input ended",
        ));
    }
    Ok(line.trim().to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn item(kind: ItemKind) -> RequiredItem {
        RequiredItem {
            call_id: "c1".into(),
            kind,
            tool: "write_file".into(),
            arguments: serde_json::json!({"path": "a.txt"}),
            run_id: None,
            path: Vec::new(),
            reason: None,
            expires_at: None,
            on_timeout: None,
            policy: None,
        }
    }

    fn answer(kind: ItemKind, typed: &str) -> Option<Decision> {
        let mut out = Vec::new();
        ask(&item(kind), &mut typed.as_bytes(), &mut out).unwrap()
    }

    #[test]
    fn every_answer() {
        assert_eq!(answer(ItemKind::Approval, "a\n"), Some(Decision::Approve));
        assert_eq!(
            answer(ItemKind::Approval, "l\n"),
            Some(Decision::ApproveAlways)
        );
        assert_eq!(
            answer(ItemKind::Approval, "d\nnot that file\n"),
            Some(Decision::Deny {
                reason: Some("not that file".into())
            })
        );
        assert_eq!(
            answer(ItemKind::Approval, "x\ne\n[1]\ne\n{\"path\": \"b.txt\"}\n"),
            Some(Decision::Edit {
                arguments: serde_json::json!({"path": "b.txt"})
                    .as_object()
                    .unwrap()
                    .clone()
            })
        );
        assert_eq!(answer(ItemKind::Approval, "p\n"), None);
        assert_eq!(
            answer(ItemKind::SubmitToolOutput, "blue\n"),
            Some(Decision::Submit {
                output: "blue".into(),
                is_error: false
            })
        );
        let mut out = Vec::new();
        assert!(ask(&item(ItemKind::Approval), &mut "".as_bytes(), &mut out).is_err());
    }
}
