//! The last stage of the streaming parser: ordered output (text deltas, calls,
//! problems), call ids, and the groups that may hold nothing but calls (a code fence,
//! a `<function_calls>` or `<tool_calls>` wrapper). A group whose content is calls and
//! whitespace yields the calls and drops its frame; anything else in it turns the
//! whole group back into text, calls included, so example calls in a code block are
//! never run.

use std::collections::HashSet;

use super::block::RawCall;
use super::opener::{FenceLine, Wrapper};
use super::types::{Problem, ProblemKind, Reasoning, ToolCall};

/// What the streaming parser hands out, in input order.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// Text that is not part of any call.
    Text(String),
    /// A piece of the model's reasoning, with where it stands in the input; pieces of
    /// one block follow each other (`end` of one is `start` of the next).
    Reasoning(Reasoning),
    /// A complete call.
    Call(ToolCall),
    Problem(Problem),
}

/// A call held by a group, with its raw text (for when it has to become text again)
/// and its problems (absolute offsets).
#[derive(Debug)]
struct Found {
    call: RawCall,
    raw: String,
    problems: Vec<Problem>,
}

#[derive(Debug)]
enum Item {
    /// The group's own opening or closing line/tag.
    Frame(String),
    /// Whitespace between calls.
    Space(String),
    Call(Found),
    Problem(Problem),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum GroupKind {
    Fence { ch: u8, count: usize },
    Wrapper(Wrapper),
}

#[derive(Debug)]
struct Group {
    kind: GroupKind,
    items: Vec<Item>,
    offset: usize,
    calls: usize,
}

pub(crate) struct Emitter {
    events: Vec<StreamEvent>,
    /// Open groups, outermost first: at most a fence, then a wrapper.
    groups: Vec<Group>,
    /// The open fence has shown other content: everything up to its end is text.
    as_text: bool,
    strict: bool,
    id_prefix: std::sync::Arc<str>,
    next_id: u64,
    used_ids: HashSet<String>,
    /// Wrappers that turned into text (they held prose): their closer is text too.
    flipped: Vec<Wrapper>,
    /// Nothing but blanks was written since the last call.
    after_call: bool,
}

impl Emitter {
    pub(crate) fn new(strict: bool, id_prefix: std::sync::Arc<str>) -> Self {
        Self {
            events: Vec::new(),
            groups: Vec::new(),
            as_text: false,
            strict,
            id_prefix,
            next_id: 1,
            used_ids: HashSet::new(),
            flipped: Vec::new(),
            after_call: false,
        }
    }

    pub(crate) fn drain(&mut self) -> std::vec::Drain<'_, StreamEvent> {
        self.events.drain(..)
    }

    fn collecting(&self) -> bool {
        !self.groups.is_empty() && !self.as_text
    }

    /// Text that is not a call.
    pub(crate) fn text(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        if !s.bytes().all(|b| b.is_ascii_whitespace()) {
            self.after_call = false;
        }
        if self.collecting() {
            if s.bytes().all(|b| b.is_ascii_whitespace()) {
                if let Some(g) = self.groups.last_mut() {
                    g.items.push(Item::Space(s.to_string()));
                }
                return;
            }
            self.flip();
        }
        match self.events.last_mut() {
            Some(StreamEvent::Text(t)) => t.push_str(s),
            _ => self.events.push(StreamEvent::Text(s.to_string())),
        }
    }

    /// A piece of reasoning. It is never part of a group's content: a group holding
    /// calls around it keeps them.
    pub(crate) fn reasoning(&mut self, piece: Reasoning) {
        if piece.text.is_empty() {
            return;
        }
        match self.events.last_mut() {
            Some(StreamEvent::Reasoning(last)) if last.end == piece.start => {
                last.text.push_str(&piece.text);
                last.end = piece.end;
            }
            _ => self.events.push(StreamEvent::Reasoning(piece)),
        }
    }

    /// Whether a code fence is open (its content is shown, not run or thought).
    pub(crate) fn in_fence(&self) -> bool {
        self.groups
            .first()
            .is_some_and(|g| matches!(g.kind, GroupKind::Fence { .. }))
    }

    /// A problem that belongs to no kept call.
    pub(crate) fn problem(&mut self, p: Problem) {
        if self.collecting() {
            if let Some(g) = self.groups.last_mut() {
                g.items.push(Item::Problem(p));
            }
        } else {
            self.events.push(StreamEvent::Problem(p));
        }
    }

    /// A call, with the text it was written as (needed only if a group turns it
    /// back into text) and its problems.
    pub(crate) fn call(&mut self, call: RawCall, raw: &str, problems: Vec<Problem>) {
        if self.collecting() {
            let found = Found {
                call,
                raw: raw.to_string(),
                problems,
            };
            self.found(found);
        } else if self.as_text {
            self.text(raw);
        } else {
            self.emit_call(call, problems);
        }
    }

    /// A call already held by a group, passed on as the group closes.
    fn found(&mut self, found: Found) {
        if self.collecting() {
            if let Some(g) = self.groups.last_mut() {
                g.calls += 1;
                g.items.push(Item::Call(found));
            }
        } else if self.as_text {
            self.text(&found.raw);
        } else {
            self.emit_call(found.call, found.problems);
        }
    }

    /// A call's closing tag met outside any call (`</tool_call>`): a closer the model
    /// wrote twice when it comes right after a call (blanks between) and no group is
    /// open, dropped; text anywhere else, where prose may quote it.
    pub(crate) fn stray_close(&mut self, tag: &str) {
        if !(self.after_call && self.groups.is_empty()) {
            self.text(tag);
        }
    }

    fn emit_call(&mut self, call: RawCall, problems: Vec<Problem>) {
        self.after_call = true;
        let id = self.settle_id(call.id, call.name.as_str(), &problems);
        let call_problems: Vec<Problem> = problems
            .into_iter()
            .map(|mut p| {
                p.call_id = Some(id.0.clone());
                p
            })
            .collect();
        self.events.push(StreamEvent::Call(ToolCall {
            id: id.0,
            name: call.name,
            arguments: call.arguments,
        }));
        if let Some(p) = id.1 {
            self.events.push(StreamEvent::Problem(p));
        }
        self.events
            .extend(call_problems.into_iter().map(StreamEvent::Problem));
    }

    /// The call's own id when it has a fresh one, a generated one otherwise.
    fn settle_id(
        &mut self,
        wanted: Option<String>,
        name: &str,
        problems: &[Problem],
    ) -> (String, Option<Problem>) {
        let mut note = None;
        if let Some(id) = wanted.filter(|id| !id.is_empty()) {
            if !self.generated_already(&id) && self.used_ids.insert(id.clone()) {
                return (id, None);
            }
            let offset = problems.first().map_or(0, |p| p.offset);
            note = Some(Problem::new(
                ProblemKind::DuplicateId,
                offset,
                format!("call to '{name}' reused the id '{id}'; it was given a new one"),
            ));
        }
        // Generated ids are unique by their counter; only the model's own ids are kept
        // in `used_ids`, and a generated id must avoid those.
        loop {
            let id = format!("{}{}", self.id_prefix, self.next_id);
            self.next_id += 1;
            if !self.used_ids.contains(&id) {
                if let Some(p) = note.as_mut() {
                    p.call_id = Some(id.clone());
                }
                return (id, note);
            }
        }
    }

    /// Whether `id` is one this emitter generated.
    fn generated_already(&self, id: &str) -> bool {
        id.strip_prefix(&*self.id_prefix)
            .and_then(|n| n.parse::<u64>().ok().filter(|v| v.to_string() == n))
            .is_some_and(|n| n >= 1 && n < self.next_id)
    }

    /// Every open group's content becomes text. An open fence stays open (as text) so
    /// that calls inside it are not taken as calls; wrappers end here.
    fn flip(&mut self) {
        let groups = std::mem::take(&mut self.groups);
        let mut text = String::new();
        let mut problems = Vec::new();
        let mut fence = None;
        for mut g in groups {
            for item in g.items.drain(..) {
                match item {
                    Item::Frame(s) | Item::Space(s) => text.push_str(&s),
                    Item::Call(f) => text.push_str(&f.raw),
                    Item::Problem(p) => problems.push(p),
                }
            }
            match g.kind {
                GroupKind::Fence { .. } => {
                    g.calls = 0;
                    fence = Some(g);
                }
                GroupKind::Wrapper(w) => self.flipped.push(w),
            }
        }
        self.as_text = fence.is_some();
        self.groups.extend(fence);
        self.text(&text);
        for p in problems {
            self.problem(p);
        }
    }

    /// A complete line that reads as a code fence (its line break included).
    pub(crate) fn fence_line(&mut self, line: &str, fence: FenceLine, offset: usize) {
        let closes = |kind: GroupKind| match kind {
            GroupKind::Fence { ch, count } => fence.bare && fence.ch == ch && fence.count >= count,
            GroupKind::Wrapper(_) => false,
        };
        match self.groups.first().map(|g| g.kind) {
            Some(kind) if closes(kind) => {
                if self.as_text {
                    self.groups.clear();
                    self.as_text = false;
                    self.text(line);
                    return;
                }
                while self.groups.len() > 1 {
                    self.close_top(None, true, offset);
                }
                self.close_top(Some(line), false, offset);
            }
            None => self.groups.push(Group {
                kind: GroupKind::Fence {
                    ch: fence.ch,
                    count: fence.count,
                },
                items: vec![Item::Frame(line.to_string())],
                offset,
                calls: 0,
            }),
            Some(_) if self.collecting() => {
                self.flip();
                self.fence_line(line, fence, offset);
            }
            Some(_) => self.text(line),
        }
    }

    pub(crate) fn wrapper_open(&mut self, tag: &str, wrapper: Wrapper, offset: usize) {
        let can_open = match self.groups.last() {
            None => true,
            Some(g) => !self.as_text && matches!(g.kind, GroupKind::Fence { .. }),
        };
        if can_open {
            self.groups.push(Group {
                kind: GroupKind::Wrapper(wrapper),
                items: vec![Item::Frame(tag.to_string())],
                offset,
                calls: 0,
            });
        } else {
            self.text(tag);
        }
    }

    pub(crate) fn wrapper_close(&mut self, tag: &str, wrapper: Wrapper, offset: usize) {
        let matches_top = !self.as_text
            && self
                .groups
                .last()
                .is_some_and(|g| g.kind == GroupKind::Wrapper(wrapper));
        if matches_top {
            self.close_top(Some(tag), false, offset);
        } else if let Some(k) = self.flipped.iter().rposition(|&w| w == wrapper) {
            self.flipped.remove(k);
            self.text(tag);
        } else {
            self.markup(tag, wrapper.special());
        }
    }

    /// A dialect's markup met outside any call: dropped when `special` (special
    /// tokens are never prose), except inside a code fence, whose content is kept as
    /// written.
    pub(crate) fn markup(&mut self, tag: &str, special: bool) {
        let in_fence = self
            .groups
            .iter()
            .any(|g| matches!(g.kind, GroupKind::Fence { .. }));
        if !special || in_fence {
            self.text(tag);
        }
    }

    /// Closes the innermost (collecting) group: calls out if it held calls only.
    fn close_top(&mut self, closing: Option<&str>, unclosed: bool, offset: usize) {
        let Some(g) = self.groups.pop() else { return };
        let what = match g.kind {
            GroupKind::Fence { .. } => "code fence",
            GroupKind::Wrapper(Wrapper::FunctionCalls) => "<function_calls> wrapper",
            GroupKind::Wrapper(Wrapper::ToolCalls) => "<tool_calls> wrapper",
            GroupKind::Wrapper(Wrapper::Minimax) => "<minimax:tool_call> wrapper",
            GroupKind::Wrapper(Wrapper::KimiSection) => "<|tool_calls_section_begin|> section",
            GroupKind::Wrapper(Wrapper::DeepSeekCalls) => "<｜tool▁calls▁begin｜> section",
            GroupKind::Wrapper(Wrapper::DsmlCalls) => "<｜DSML｜function_calls> wrapper",
            GroupKind::Wrapper(Wrapper::DsmlToolCalls) => "<｜DSML｜tool_calls> wrapper",
            GroupKind::Wrapper(Wrapper::Dsml41Calls) => "<｜DSML｜ calls> wrapper",
            GroupKind::Wrapper(Wrapper::KimiK3Tools) => "<|open|>tools<|sep|> channel",
            GroupKind::Wrapper(Wrapper::Seed) => "<seed:tool_call> wrapper",
        };
        let keep_calls = g.calls > 0 && !(unclosed && self.strict);
        let empty_markup = matches!(g.kind, GroupKind::Wrapper(w) if w.special())
            && closing.is_some()
            && g.calls == 0
            && g.items
                .iter()
                .all(|i| matches!(i, Item::Frame(_) | Item::Space(_)))
            && self.groups.is_empty();
        if empty_markup {
            return;
        }
        if unclosed && g.calls > 0 {
            let at = if unclosed { g.offset } else { offset };
            let mut message = format!("{what} holding calls was never closed");
            if !keep_calls {
                message.push_str(" (strict: calls dropped)");
            }
            self.problem(Problem::new(ProblemKind::UnclosedGroup, at, message));
        }
        if keep_calls {
            for item in g.items {
                match item {
                    Item::Frame(_) | Item::Space(_) => {}
                    Item::Call(f) => self.found(f),
                    Item::Problem(p) => self.problem(p),
                }
            }
        } else {
            let mut text = String::new();
            let mut problems = Vec::new();
            for item in g.items {
                match item {
                    Item::Frame(s) | Item::Space(s) => text.push_str(&s),
                    Item::Call(f) => text.push_str(&f.raw),
                    Item::Problem(p) => problems.push(p),
                }
            }
            text.push_str(closing.unwrap_or(""));
            self.text(&text);
            for p in problems {
                self.problem(p);
            }
        }
    }

    /// End of input: open groups close as they are.
    pub(crate) fn finish(&mut self, offset: usize) {
        if self.as_text {
            self.groups.clear();
            self.as_text = false;
        }
        while !self.groups.is_empty() {
            self.close_top(None, true, offset);
        }
    }
}
