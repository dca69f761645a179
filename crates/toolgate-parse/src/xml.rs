//! The XML dialect: `<tool_call><name>..</name><params>..</params></tool_call>` with
//! values in CDATA. Builds a small tree leniently (missing closing tags, a parameter
//! closed by the next one opening, markup-looking text in values) and turns the
//! parameters into JSON by the tool's schema.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::block::{BlockOutcome, RawCall, coerce_json_args, coerce_param, group_args};
use super::coerce::{Types, items, property};
use super::entities::decode;
use super::opener::TOOL_CALL;
use super::options::ParseOptions;
use super::types::ProblemKind;
use super::xml_lex::{CdataEnd, Lexer, Token};

/// Deeper nesting is kept as text: values are data, not documents.
const MAX_DEPTH: usize = 32;

/// Element names that hold the parameters.
const PARAM_CONTAINERS: [&str; 5] = ["params", "parameters", "arguments", "args", "input"];

#[derive(Debug)]
enum Piece<'a> {
    /// Text as written: entities decoded later.
    Text(&'a str),
    /// Markup kept as text, verbatim.
    Literal(&'a str),
    CData(&'a str),
}

#[derive(Debug)]
struct Node<'a> {
    name: &'a str,
    offset: usize,
    content_start: usize,
    content_end: usize,
    pieces: Vec<Piece<'a>>,
    children: Vec<Node<'a>>,
    has_cdata: bool,
}

impl<'a> Node<'a> {
    fn new(name: &'a str, offset: usize, content_start: usize) -> Self {
        Self {
            name,
            offset,
            content_start,
            content_end: content_start,
            pieces: Vec::new(),
            children: Vec::new(),
            has_cdata: false,
        }
    }

    /// Holds text or CDATA (not just whitespace): a value, not a container.
    fn has_content(&self) -> bool {
        self.has_cdata
            || self.pieces.iter().any(|p| match p {
                Piece::Text(t) => !t.trim().is_empty(),
                Piece::Literal(_) => true,
                Piece::CData(_) => true,
            })
    }

    /// The value written in this element: CDATA as is, text with entities decoded.
    /// Whitespace around the value is dropped when it is outside the CDATA sections
    /// (or, without CDATA, around the whole text).
    fn value(&self) -> String {
        let mut out = String::new();
        let first = self
            .pieces
            .iter()
            .position(|p| matches!(p, Piece::CData(_)));
        let last = self
            .pieces
            .iter()
            .rposition(|p| matches!(p, Piece::CData(_)));
        for (i, p) in self.pieces.iter().enumerate() {
            match *p {
                Piece::CData(c) => out.push_str(c),
                Piece::Literal(l) => out.push_str(l),
                Piece::Text(t) => {
                    let t = match (first, last) {
                        (Some(f), _) if i < f && out.trim().is_empty() => t.trim_start(),
                        _ => t,
                    };
                    let t = match last {
                        Some(l) if i > l => {
                            let rest_blank = self.pieces[i + 1..].iter().all(|p| match p {
                                Piece::Text(t) => t.trim().is_empty(),
                                _ => false,
                            });
                            if rest_blank { t.trim_end() } else { t }
                        }
                        _ => t,
                    };
                    out.push_str(&decode(t));
                }
            }
        }
        if first.is_none() {
            return out.trim().to_string();
        }
        out
    }

    /// Non-blank text beside child elements.
    fn stray_text(&self) -> bool {
        !self.children.is_empty() && self.has_content()
    }
}

struct Builder<'a> {
    src: &'a str,
    opts: &'a ParseOptions,
    /// The tool's name, once its `<name>` element has closed.
    tool: Option<String>,
    stack: Vec<Node<'a>>,
    /// Tag name -> where its next `</name>` is (or `None`: there is none).
    closes: HashMap<&'a str, Option<usize>>,
    out: BlockOutcome,
}

impl<'a> Builder<'a> {
    fn top(&mut self) -> &mut Node<'a> {
        // The root is pushed first and never popped before the end.
        let last = self.stack.len() - 1;
        &mut self.stack[last]
    }

    /// Whether a `</name>` follows position `from`.
    fn closes_later(&mut self, name: &'a str, from: usize) -> bool {
        if let Some(known) = self.closes.get(name) {
            match *known {
                None => return false,
                Some(at) if at >= from => return true,
                Some(_) => {}
            }
        }
        let pattern = format!("</{name}>");
        let found = memchr::memmem::find(&self.src.as_bytes()[from..], pattern.as_bytes())
            .map(|k| from + k);
        self.closes.insert(name, found);
        found.is_some()
    }

    /// Closes the innermost element (content ends at `end`) into its parent.
    fn pop(&mut self, end: usize) {
        if self.stack.len() < 2 {
            return;
        }
        if let Some(mut node) = self.stack.pop() {
            node.content_end = end;
            self.top().children.push(node);
        }
    }

    /// Whether an element opening now is a parameter: a child of the parameter
    /// container, or written directly in `<tool_call>`.
    fn opens_param(&self, name: &str) -> bool {
        match self.stack.len() {
            1 => name != "name" && !PARAM_CONTAINERS.contains(&name),
            2 => PARAM_CONTAINERS.contains(&self.stack[1].name),
            _ => false,
        }
    }

    /// A string parameter written without CDATA is taken as written up to its closing
    /// tag, markup and all. Returns where the lexer goes on.
    fn opaque_string(&mut self, name: &'a str, span: &std::ops::Range<usize>) -> Option<usize> {
        if !self.opens_param(name) {
            return None;
        }
        let schema = self.opts.schema(self.tool.as_deref()?)?;
        let types = Types::of(property(Some(schema), name)?)?;
        if !types.has(Types::STRING) || types.has(Types::OBJECT) || types.has(Types::ARRAY) {
            return None;
        }
        let close = format!("</{name}>");
        let end =
            span.end + memchr::memmem::find(&self.src.as_bytes()[span.end..], close.as_bytes())?;
        let content = &self.src[span.end..end];
        if content.contains("<![CDATA[") || content.contains("<!--") {
            return None;
        }
        let mut node = Node::new(name, span.start, span.end);
        node.pieces.push(Piece::Text(content));
        node.content_end = end;
        self.top().children.push(node);
        Some(end + close.len())
    }

    fn start(&mut self, name: &'a str, span: std::ops::Range<usize>, empty: bool) -> Option<usize> {
        if !empty && let Some(next) = self.opaque_string(name, &span) {
            return Some(next);
        }
        let in_value = self.stack.len() > 1 && self.top().has_content();
        if self.stack.len() > MAX_DEPTH
            || (in_value && (empty || !self.closes_later(name, span.end)))
        {
            let tag = &self.src[span];
            self.top().pieces.push(Piece::Literal(tag));
            return None;
        }
        if in_value {
            let closed = self.top().name;
            self.out.problem(
                ProblemKind::ImplicitClose,
                span.start,
                format!("<{closed}> was not closed before <{name}> opened; closed it there"),
            );
            self.pop(span.start);
        }
        self.stack.push(Node::new(name, span.start, span.end));
        if empty {
            self.pop(span.end);
        }
        None
    }

    fn end(&mut self, name: &'a str, span: std::ops::Range<usize>) -> bool {
        let Some(depth) = self.stack.iter().rposition(|n| n.name == name) else {
            if self.stack.len() > 1 {
                let tag = &self.src[span];
                self.top().pieces.push(Piece::Literal(tag));
            } else {
                self.out.problem(
                    ProblemKind::StrayCloseTag,
                    span.start,
                    format!("</{name}> closes nothing"),
                );
            }
            return false;
        };
        while self.stack.len() > depth + 1 {
            let inner = self.top().name;
            self.out.problem(
                ProblemKind::UnclosedTag,
                span.start,
                format!("<{inner}> was not closed before </{name}>; closed it there"),
            );
            self.pop(span.start);
        }
        if depth == 0 {
            self.top().content_end = span.start;
            return true;
        }
        self.pop(span.start);
        if self.stack.len() == 1
            && self.tool.is_none()
            && let Some(node) = self.stack[0].children.last().filter(|n| n.name == "name")
        {
            self.tool = Some(node.value());
        }
        false
    }
}

/// Parses one `<tool_call>` block of the XML dialect.
pub(crate) fn parse(block: &str, closed: bool, opts: &ParseOptions) -> BlockOutcome {
    let mut b = Builder {
        src: block,
        opts,
        tool: None,
        stack: vec![Node::new("tool_call", 0, TOOL_CALL.len())],
        closes: HashMap::new(),
        out: BlockOutcome::default(),
    };
    let mut lexer = Lexer::new(block, TOOL_CALL.len());
    let mut root_closed = false;
    while let Some(token) = lexer.next() {
        match token {
            Token::Text(t) => {
                let top = b.top();
                // Leading whitespace is never part of a value: keep containers light.
                if !top.pieces.is_empty() || !t.bytes().all(|c| c.is_ascii_whitespace()) {
                    top.pieces.push(Piece::Text(t));
                }
            }
            Token::CData { content, end } => {
                match end {
                    CdataEnd::Closed => {}
                    CdataEnd::Slipped => {
                        let name = b.top().name;
                        b.out.problem(
                            ProblemKind::UnterminatedCdata,
                            lexer.pos(),
                            format!(
                                "the CDATA section in <{name}> ended with ]> instead of ]]>; \
                                 closed it before </{name}>"
                            ),
                        );
                    }
                    CdataEnd::Unterminated => b.out.problem(
                        ProblemKind::UnterminatedCdata,
                        block.len(),
                        "the output ended inside <![CDATA[; the value was kept up to there",
                    ),
                }
                let top = b.top();
                top.pieces.push(Piece::CData(content));
                top.has_cdata = true;
            }
            Token::Start { name, span, empty } => {
                if let Some(next) = b.start(name, span, empty) {
                    lexer.seek(next);
                }
            }
            Token::End { name, span } => {
                if b.end(name, span) {
                    root_closed = true;
                    break;
                }
            }
        }
    }
    let end = lexer.pos();
    while b.stack.len() > 1 {
        let name = b.top().name;
        b.out.problem(
            ProblemKind::UnclosedTag,
            end,
            format!("<{name}> was never closed"),
        );
        b.pop(end);
    }
    if !root_closed || !closed {
        b.out.problem(
            ProblemKind::UnclosedTag,
            end,
            "<tool_call> was never closed",
        );
    }
    let Some(root) = b.stack.pop() else {
        return b.out;
    };
    let mut out = b.out;
    let call = to_call(root, block, opts, &mut out);
    out.call = call;
    out
}

fn to_call(
    root: Node<'_>,
    src: &str,
    opts: &ParseOptions,
    out: &mut BlockOutcome,
) -> Option<RawCall> {
    if root.has_content() {
        out.problem(
            ProblemKind::StrayText,
            root.content_start,
            "text inside <tool_call> outside any element was ignored",
        );
    }
    let mut name = None;
    let mut container = None;
    let mut loose = Vec::new();
    for child in root.children {
        if child.name == "name" && name.is_none() {
            name = Some(child.value());
        } else if container.is_none() && PARAM_CONTAINERS.contains(&child.name) {
            container = Some(child);
        } else {
            loose.push(child);
        }
    }
    let name = name.filter(|n| !n.is_empty());
    let Some(name) = name else {
        out.problem(
            ProblemKind::MissingName,
            0,
            "a <tool_call> without a <name> is not a call",
        );
        return None;
    };
    let schema = opts.schema(&name);
    let mut arguments = match container {
        Some(c) if c.children.is_empty() && c.has_content() => json_params(&c, schema, out),
        Some(c) => {
            if c.stray_text() {
                out.problem(
                    ProblemKind::StrayText,
                    c.content_start,
                    format!("text between the parameters of <{}> was ignored", c.name),
                );
            }
            object(c.children, schema, src, out)
        }
        None => Map::new(),
    };
    if !loose.is_empty() {
        for n in &loose {
            out.problem(
                ProblemKind::ParamOutsideParams,
                n.offset,
                format!("<{}> is outside <params>; taken as a parameter", n.name),
            );
        }
        for (k, v) in object(loose, schema, src, out) {
            arguments.entry(k).or_insert(v);
        }
    }
    Some(RawCall {
        id: None,
        name,
        arguments,
    })
}

/// `<params>{"json": "object"}</params>`: parameters written as JSON.
fn json_params(
    container: &Node<'_>,
    schema: Option<&Value>,
    out: &mut BlockOutcome,
) -> Map<String, Value> {
    match serde_json::from_str::<Value>(container.value().trim()) {
        Ok(Value::Object(map)) => {
            coerce_json_args(map, schema, container.offset, &mut out.problems)
        }
        _ => {
            out.problem(
                ProblemKind::StrayText,
                container.content_start,
                format!(
                    "<{}> holds text that is neither parameters nor a JSON object; ignored",
                    container.name
                ),
            );
            Map::new()
        }
    }
}

/// Child elements as an object: repeated names become arrays.
fn object(
    children: Vec<Node<'_>>,
    schema: Option<&Value>,
    src: &str,
    out: &mut BlockOutcome,
) -> Map<String, Value> {
    let offset = children.first().map_or(0, |c| c.offset);
    let repeated_names = repeated(&children);
    let mut pairs = Vec::with_capacity(children.len());
    for child in children {
        let prop = property(schema, child.name);
        let wants_array = prop
            .and_then(Types::of)
            .is_some_and(|t| t.has(Types::ARRAY));
        // Each of several repeated elements is one item of the array.
        let repeated = repeated_names.binary_search(&child.name).is_ok();
        let schema = if wants_array && repeated {
            items(prop)
        } else {
            prop
        };
        let key = child.name.to_string();
        let value = value(child, schema, src, out);
        pairs.push((key, value));
    }
    group_args(pairs, schema, offset, out)
}

/// The names that occur more than once among `children`, sorted. Allocates only when
/// there are some (a scan for the usual few parameters, a sort for many).
fn repeated<'a>(children: &[Node<'a>]) -> Vec<&'a str> {
    if children.len() > 32 {
        let mut names: Vec<&str> = children.iter().map(|c| c.name).collect();
        names.sort_unstable();
        let mut out: Vec<&str> = names
            .windows(2)
            .filter(|w| w[0] == w[1])
            .map(|w| w[0])
            .collect();
        out.dedup();
        return out;
    }
    let mut out = Vec::new();
    for (i, c) in children.iter().enumerate() {
        if children[..i].iter().any(|p| p.name == c.name) && !out.contains(&c.name) {
            out.push(c.name);
        }
    }
    out.sort_unstable();
    out
}

/// One element's value by its schema.
fn value(node: Node<'_>, schema: Option<&Value>, src: &str, out: &mut BlockOutcome) -> Value {
    let types = schema.and_then(Types::of);
    if node.children.is_empty() {
        let text = node.value();
        // An array property's items arrive here one by one; a whole JSON array too.
        return coerce_param(node.name, text, schema, node.offset, out);
    }
    if node.stray_text() {
        out.problem(
            ProblemKind::StrayText,
            node.content_start,
            format!(
                "text beside the elements inside <{}> was ignored",
                node.name
            ),
        );
    }
    match types {
        Some(t) if t.has(Types::STRING) && !t.has(Types::OBJECT) && !t.has(Types::ARRAY) => {
            // Markup in a string parameter written without CDATA: keep it as written.
            Value::String(src[node.content_start..node.content_end].trim().to_string())
        }
        Some(t) if t.has(Types::ARRAY) && !t.has(Types::OBJECT) => {
            let item_schema = items(schema);
            Value::Array(
                node.children
                    .into_iter()
                    .map(|c| value(c, item_schema, src, out))
                    .collect(),
            )
        }
        _ => Value::Object(object(node.children, schema, src, out)),
    }
}
