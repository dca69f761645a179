//! Compaction, planned: which messages a request is made of (the history with the last
//! compaction applied), and which of them the next compaction replaces. The history
//! itself is never rewritten: a compaction is a message appended to it, naming the
//! range it stands for, so a run resumed elsewhere rebuilds the same request.

use serde::{Deserialize, Serialize};

use super::Strategy;
use crate::{Message, MessageRole};

/// What a compaction message stands for (the `compaction` of a [`Message`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compaction {
    pub strategy: Strategy,
    /// The history from here...
    pub from: usize,
    /// ...up to (not including) here is replaced by this message.
    pub to: usize,
    /// How many messages of the request it replaced.
    pub messages: usize,
    /// The request's prompt tokens before, and after.
    pub tokens_before: u64,
    pub tokens_after: u64,
}

/// The positions in `messages` a request is made of: all of them, or with the last
/// compaction applied (the messages before its range, the compaction message in place
/// of the range, the messages after it).
pub fn view(messages: &[Message]) -> Vec<usize> {
    let Some(k) = messages.iter().rposition(|m| m.compaction.is_some()) else {
        return (0..messages.len()).collect();
    };
    let Some(c) = &messages[k].compaction else {
        return (0..messages.len()).collect();
    };
    (0..c.from.min(k))
        .chain([k])
        .chain((c.to..messages.len()).filter(|&i| i != k && messages[i].compaction.is_none()))
        .collect()
}

/// The position in `view` of the first user message (kept whole by every compaction).
pub fn first_user(messages: &[Message], view: &[usize]) -> Option<usize> {
    view.iter()
        .position(|&i| messages[i].role == MessageRole::User && messages[i].compaction.is_none())
}

/// The next compaction: the messages at `view[start..end]` are replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub start: usize,
    pub end: usize,
    /// The history range the compaction message will name.
    pub from: usize,
    pub to: usize,
}

/// The smallest compaction that brings the request to `target` tokens, given each
/// message's tokens (`counts`, by history position), the tokens outside the messages
/// (`fixed`: system prompt, tools) and room for the compaction message (`note`). The
/// first user message and everything before it stay; a cut never falls between a call
/// and its result; the last turn stays whole, so when even that is too much, as much as
/// may go goes. `None`: nothing can be compacted.
pub fn plan(
    messages: &[Message],
    view: &[usize],
    counts: &[u64],
    fixed: u64,
    note: u64,
    target: u64,
) -> Option<Plan> {
    let head = first_user(messages, view)?;
    let start = head + 1;
    // A turn starts where a message is not a result and the one before it made no call.
    let boundaries: Vec<usize> = (start + 1..view.len())
        .filter(|&p| {
            let (m, before) = (&messages[view[p]], &messages[view[p - 1]]);
            m.role != MessageRole::Tool && before.tool_calls.is_empty() && m.compaction.is_none()
        })
        .collect();
    let last = *boundaries.last()?;
    let kept: u64 = fixed + note + view[..start].iter().map(|&i| counts[i]).sum::<u64>();
    let mut tail: u64 = view[last..].iter().map(|&i| counts[i]).sum();
    // Walk back from the last turn while the tail still fits.
    let mut end = last;
    for &p in boundaries.iter().rev().skip(1) {
        let more: u64 = view[p..end].iter().map(|&i| counts[i]).sum();
        if kept + tail + more > target {
            break;
        }
        tail += more;
        end = p;
    }
    Some(Plan {
        start,
        end,
        from: view[head] + 1,
        to: view[end],
    })
}

/// The messages at `positions` as plain text, for a summary request: one block per
/// message, calls and results named.
pub fn transcript(messages: &[Message], positions: &[usize]) -> String {
    let mut out = String::new();
    for &i in positions {
        let m = &messages[i];
        let who = match (&m.role, &m.compaction) {
            (_, Some(_)) => "summary of earlier turns".to_string(),
            (MessageRole::User, None) => "user".to_string(),
            (MessageRole::Assistant, None) => "assistant".to_string(),
            (MessageRole::Tool, None) => format!(
                "result of {}",
                m.tool_call_id.as_deref().unwrap_or("a call")
            ),
        };
        out.push_str(&format!("[{who}]\n{}\n", m.content.trim_end()));
        for c in &m.tool_calls {
            out.push_str(&format!(
                "[call {} {}({})]\n",
                c.id,
                c.name,
                serde_json::Value::Object(c.arguments.clone())
            ));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use toolgate_parse::ToolCall;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "read_file".into(),
            arguments: Default::default(),
        }
    }

    /// user, then `turns` turns of (assistant with a call, its result), then a final
    /// assistant message.
    fn history(turns: usize) -> Vec<Message> {
        let mut m = vec![Message::user("task")];
        for t in 0..turns {
            let id = format!("c{t}");
            m.push(Message::assistant("", vec![call(&id)]));
            m.push(Message::tool(id, "x".repeat(100)));
        }
        m
    }

    #[test]
    fn a_plan_keeps_the_first_message_and_never_splits_a_call_from_its_result() {
        let m = history(10);
        let v = view(&m);
        let counts = vec![10u64; m.len()];
        let p = plan(&m, &v, &counts, 0, 0, 60).unwrap();
        assert_eq!(p.start, 1);
        assert_eq!(m[v[p.end]].role, MessageRole::Assistant, "{p:?}");
        // 10 (first) + the kept tail fit in 60.
        let tail: u64 = v[p.end..].iter().map(|&i| counts[i]).sum();
        assert!(10 + tail <= 60);
        assert_eq!((p.from, p.to), (1, v[p.end]));
    }

    #[test]
    fn the_last_turn_stays_even_when_it_is_too_big() {
        let m = history(3);
        let v = view(&m);
        let counts = vec![1000u64; m.len()];
        let p = plan(&m, &v, &counts, 0, 0, 10).unwrap();
        assert_eq!(p.end, v.len() - 2, "the last call and its result stay");
    }

    #[test]
    fn the_view_puts_the_compaction_in_place_of_its_range() {
        let mut m = history(4);
        let mut note = Message::user("summary");
        note.compaction = Some(Compaction {
            strategy: Strategy::Summarize,
            from: 1,
            to: 5,
            messages: 4,
            tokens_before: 0,
            tokens_after: 0,
        });
        m.push(note);
        m.push(Message::assistant("", vec![call("c9")]));
        assert_eq!(view(&m), vec![0, 9, 5, 6, 7, 8, 10]);
        assert_eq!(first_user(&m, &view(&m)), Some(0));
        assert!(plan(&history(0), &[0], &[1], 0, 0, 0).is_none());
    }
}
