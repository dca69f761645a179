//! Just enough of Markdown for the docs tests: fenced code blocks (with their info
//! string and the line before), links outside code, and heading anchors as mdBook
//! makes them.

use std::collections::HashSet;

/// A fenced code block.
pub struct Block {
    /// The fence's line, 1-based.
    pub line: usize,
    /// The info string: ```` ```sh,no_run ```` gives `sh,no_run`.
    pub info: String,
    /// The lines between the fences.
    pub body: Vec<String>,
    /// The last non-blank line before the fence (where a `no_run` reason goes).
    pub before: String,
}

impl Block {
    /// The language: the info string up to its first comma or space.
    pub fn lang(&self) -> &str {
        self.info.split([',', ' ']).next().unwrap_or_default()
    }

    /// Whether the info string carries `flag` (`sh,no_run`).
    pub fn has(&self, flag: &str) -> bool {
        self.info.split([',', ' ']).skip(1).any(|f| f == flag)
    }
}

/// The opening fence's marker (```` ``` ```` or `~~~`, possibly longer) and info
/// string, when `line` opens a fence.
fn fence(line: &str) -> Option<(String, String)> {
    let t = line.trim_start();
    let ch = t.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let n = t.chars().take_while(|c| *c == ch).count();
    (n >= 3).then(|| (ch.to_string().repeat(n), t[n..].trim().to_string()))
}

/// Every fenced block of `text`, in order.
pub fn blocks(text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut before = String::new();
    let mut i = 0;
    while i < lines.len() {
        if let Some((marker, info)) = fence(lines[i]) {
            let start = i;
            let mut body = Vec::new();
            i += 1;
            while i < lines.len() && lines[i].trim() != marker {
                body.push(lines[i].to_string());
                i += 1;
            }
            out.push(Block {
                line: start + 1,
                info,
                body,
                before: std::mem::take(&mut before),
            });
        } else if !lines[i].trim().is_empty() {
            before = lines[i].trim().to_string();
        }
        i += 1;
    }
    out
}

/// The lines of `text` outside fenced blocks, with their 1-based numbers.
fn prose(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut open: Option<String> = None;
    for (i, line) in text.lines().enumerate() {
        match (&open, fence(line)) {
            (None, Some((marker, _))) => open = Some(marker),
            (Some(marker), _) if line.trim() == marker => open = None,
            (None, None) => out.push((i + 1, line)),
            _ => {}
        }
    }
    out
}

/// `line` with its code spans (`` `...` ``, ``` ``...`` ```) blanked out.
fn without_code(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find('`') {
        out.push_str(&rest[..at]);
        let ticks = rest[at..].chars().take_while(|c| *c == '`').count();
        let marker = "`".repeat(ticks);
        let after = &rest[at + ticks..];
        match after.find(&marker) {
            Some(end) => rest = &after[end + ticks..],
            None => {
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A link: where it points, and the line it is on.
pub struct Link {
    pub line: usize,
    pub target: String,
}

/// Every link of `text` outside code: inline `[text](target)` (images too) and
/// reference definitions `[name]: target`.
pub fn links(text: &str) -> Vec<Link> {
    let mut out = Vec::new();
    for (line, raw) in prose(text) {
        let plain = without_code(raw);
        if let Some(def) = reference_definition(&plain) {
            out.push(Link { line, target: def });
            continue;
        }
        let mut rest = plain.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let end = after.find(')').unwrap_or(after.len());
            let target = after[..end].split_whitespace().next().unwrap_or_default();
            out.push(Link {
                line,
                target: target.trim_matches(['<', '>']).to_string(),
            });
            rest = &after[end..];
        }
    }
    out
}

/// The target of a reference definition (`[name]: target`).
fn reference_definition(line: &str) -> Option<String> {
    let t = line.trim_start().strip_prefix('[')?;
    let (_, after) = t.split_once("]:")?;
    Some(after.split_whitespace().next()?.to_string())
}

/// The ids mdBook gives the headings of `text` (`## The `serve` API` is
/// `the-serve-api`; a repeated one gets `-1`, `-2`, ...).
pub fn anchors(text: &str) -> HashSet<String> {
    let mut used = HashSet::new();
    for (_, line) in prose(text) {
        let t = line.trim_start();
        let hashes = t.chars().take_while(|c| *c == '#').count();
        if !(1..=6).contains(&hashes) || !t[hashes..].starts_with(' ') {
            continue;
        }
        let id = slug(&heading_text(&t[hashes..]));
        let mut candidate = id.clone();
        let mut n = 0;
        while !used.insert(candidate.clone()) {
            n += 1;
            candidate = format!("{id}-{n}");
        }
    }
    used
}

/// A heading's text as it renders: links give their text, emphasis and code marks go.
fn heading_text(markdown: &str) -> String {
    let mut out = String::new();
    let mut rest = markdown;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let end = after.find(')').map_or(after.len(), |e| e + 1);
        out.push_str(&rest[..at]);
        rest = &after[end..];
    }
    out.push_str(rest);
    out.replace(['`', '*', '['], "")
}

/// mdBook's `id_from_content`: lower case; letters, digits, `_` and `-` kept;
/// whitespace becomes `-`; the rest goes.
pub fn slug(text: &str) -> String {
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                Some(c)
            } else if c.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

#[test]
fn the_reader_finds_blocks_links_and_anchors() {
    let text = "# The `serve` API\n\nSee [x](a.md#b) and `[not](c.md)`.\n\n\
                <!-- no_run: needs a key -->\n```sh,no_run\necho [a](b)\n```\n\n## Twice\n## Twice\n\
                [ref]: https://example.com\n";
    let b = blocks(text);
    assert_eq!(b.len(), 1);
    assert_eq!(
        (b[0].line, b[0].lang(), b[0].has("no_run")),
        (6, "sh", true)
    );
    assert_eq!(b[0].before, "<!-- no_run: needs a key -->");
    let targets: Vec<_> = links(text).into_iter().map(|l| l.target).collect();
    assert_eq!(targets, ["a.md#b", "https://example.com"]);
    let a = anchors(text);
    for id in ["the-serve-api", "twice", "twice-1"] {
        assert!(a.contains(id), "{id} in {a:?}");
    }
}
