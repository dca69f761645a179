//! Structure-aware chunking: a document is cut into sections where it has structure
//! (Markdown headings, PDF pages), each section into paragraphs (sentences, then words,
//! when a paragraph is longer than a chunk), and the pieces packed into chunks of at
//! most `size` characters. Each chunk is a contiguous range of the document's text
//! (its byte offsets are its position) and begins up to `overlap` characters before
//! its predecessor ended, when both are in the same section.

use crate::extract::{Extracted, Structure};

/// How to cut: characters per chunk, and characters shared by neighbours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkSize {
    pub size: usize,
    pub overlap: usize,
}

impl ChunkSize {
    /// The sizes, checked: a chunk of at least 50 characters, an overlap under half of it.
    pub fn new(size: usize, overlap: usize) -> Result<ChunkSize, String> {
        if size < 50 {
            return Err(format!(
                "--chunk {size} is too small: use at least 50 characters"
            ));
        }
        if overlap * 2 > size {
            return Err(format!(
                "--overlap {overlap} is too large for --chunk {size}: use at most half of it"
            ));
        }
        Ok(ChunkSize { size, overlap })
    }
}

impl Default for ChunkSize {
    fn default() -> Self {
        ChunkSize {
            size: 800,
            overlap: 100,
        }
    }
}

/// One chunk: its text (a slice of the document), section and byte range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    pub text: String,
    pub section: Option<String>,
    pub start: usize,
    pub end: usize,
}

/// A section of the document: its heading trail (or page) and byte range.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Section {
    title: Option<String>,
    start: usize,
    end: usize,
}

/// Cuts `doc` into chunks.
pub fn chunk(doc: &Extracted, size: ChunkSize) -> Vec<Chunk> {
    let mut out = Vec::new();
    for section in sections(doc) {
        let pieces = pieces(&doc.text, section.start, section.end, size.size);
        pack(&doc.text, &section, &pieces, size, &mut out);
    }
    out
}

/// The document's sections, in order, covering its text.
fn sections(doc: &Extracted) -> Vec<Section> {
    match &doc.structure {
        Structure::Plain => vec![Section {
            title: None,
            start: 0,
            end: doc.text.len(),
        }],
        Structure::Pages(starts) => starts
            .iter()
            .enumerate()
            .map(|(i, &start)| Section {
                title: Some(format!("page {}", i + 1)),
                start,
                end: starts.get(i + 1).copied().unwrap_or(doc.text.len()),
            })
            .collect(),
        Structure::Markdown => markdown_sections(&doc.text),
    }
}

/// Markdown sections: a heading (`#` to `######`, outside code fences) begins one, and
/// its title is the trail of headings above it (`Install > From source`).
fn markdown_sections(text: &str) -> Vec<Section> {
    let mut out = vec![Section {
        title: None,
        start: 0,
        end: text.len(),
    }];
    let mut trail: Vec<(usize, String)> = Vec::new();
    let mut fenced = false;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fenced = !fenced;
        } else if !fenced && let Some((level, title)) = heading(trimmed) {
            trail.retain(|(l, _)| *l < level);
            trail.push((level, title));
            if let Some(last) = out.last_mut() {
                last.end = at;
            }
            let names: Vec<&str> = trail.iter().map(|(_, t)| t.as_str()).collect();
            out.push(Section {
                title: Some(names.join(" > ")),
                start: at,
                end: text.len(),
            });
        }
        at += line.len();
    }
    // A section that is only its heading (a title right above a subsection) adds
    // nothing: its title is in the trail of the sections below it.
    out.retain(|s| {
        let body = &text[s.start..s.end];
        let body = if s.title.is_some() {
            body.split_once('\n').map_or("", |(_, rest)| rest)
        } else {
            body
        };
        !body.trim().is_empty()
    });
    out
}

/// A Markdown heading line's level and title.
fn heading(line: &str) -> Option<(usize, String)> {
    let level = line.bytes().take_while(|b| *b == b'#').count();
    let rest = &line[level..];
    if !(1..=6).contains(&level) || !(rest.starts_with(' ') || rest.trim().is_empty()) {
        return None;
    }
    let title = rest.trim().trim_end_matches('#').trim().to_string();
    (!title.is_empty()).then_some((level, title))
}

/// The section's text as pieces no longer than `size` characters: paragraphs, or a
/// long paragraph's sentences, or a long sentence's words (a word longer than a chunk
/// is cut at a character boundary).
fn pieces(text: &str, start: usize, end: usize, size: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (a, b) in split_keeping(text, start, end, "\n\n") {
        if chars(text, a, b) <= size {
            out.push((a, b));
            continue;
        }
        for (a, b) in split_sentences(text, a, b) {
            if chars(text, a, b) <= size {
                out.push((a, b));
            } else {
                for (a, b) in split_keeping(text, a, b, " ") {
                    hard_cut(text, a, b, size, &mut out);
                }
            }
        }
    }
    out
}

/// `text[start..end]` split after each `sep`, empty pieces dropped.
fn split_keeping(text: &str, start: usize, end: usize, sep: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut from = start;
    for (i, _) in text[start..end].match_indices(sep) {
        let to = start + i + sep.len();
        if to > from {
            out.push((from, to));
        }
        from = to;
    }
    if from < end {
        out.push((from, end));
    }
    out
}

/// Sentences: cut after `.`, `!`, `?` or a line break followed by whitespace.
fn split_sentences(text: &str, start: usize, end: usize) -> Vec<(usize, usize)> {
    let slice = &text[start..end];
    let mut out = Vec::new();
    let mut from = 0;
    let mut chars = slice.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let ends = matches!(c, '.' | '!' | '?' | '\n')
            && chars.peek().is_some_and(|(_, next)| next.is_whitespace());
        if ends {
            let to = i + c.len_utf8();
            out.push((start + from, start + to));
            from = to;
        }
    }
    if from < slice.len() {
        out.push((start + from, end));
    }
    out
}

/// A word longer than `size` characters, cut at character boundaries.
fn hard_cut(text: &str, start: usize, end: usize, size: usize, out: &mut Vec<(usize, usize)>) {
    let mut from = start;
    let mut count = 0;
    for (i, _) in text[start..end].char_indices() {
        if count == size {
            out.push((from, start + i));
            from = start + i;
            count = 0;
        }
        count += 1;
    }
    if from < end {
        out.push((from, end));
    }
}

/// Characters in `text[a..b]`.
fn chars(text: &str, a: usize, b: usize) -> usize {
    text[a..b].chars().count()
}

/// Packs consecutive pieces into chunks of at most `size` characters, each after the
/// first beginning up to `overlap` characters before the previous one ended.
fn pack(
    text: &str,
    section: &Section,
    pieces: &[(usize, usize)],
    size: ChunkSize,
    out: &mut Vec<Chunk>,
) {
    let mut i = 0;
    let mut carried: Option<usize> = None;
    while i < pieces.len() {
        let start = carried.unwrap_or(pieces[i].0);
        let mut end = pieces[i].1;
        i += 1;
        while i < pieces.len() && chars(text, start, pieces[i].1) <= size.size {
            end = pieces[i].1;
            i += 1;
        }
        push(text, section, start, end, out);
        carried = (i < pieces.len() && size.overlap > 0)
            .then(|| overlap_start(text, start, end, size.overlap))
            .flatten()
            .filter(|&s| chars(text, s, pieces[i].1) <= size.size);
    }
}

/// Where the overlap taken from the end of `text[start..end]` begins: at most
/// `overlap` characters back, at the start of a word.
fn overlap_start(text: &str, start: usize, end: usize, overlap: usize) -> Option<usize> {
    let back = text[start..end]
        .char_indices()
        .rev()
        .nth(overlap.saturating_sub(1))?
        .0
        + start;
    let word = text[back..end].find(char::is_whitespace)?;
    let from = back + word;
    let first = text[from..end].find(|c: char| !c.is_whitespace())?;
    Some(from + first).filter(|&s| s < end && s > start)
}

/// Adds the chunk `text[start..end]`, trimmed; nothing when it is blank.
fn push(text: &str, section: &Section, start: usize, end: usize, out: &mut Vec<Chunk>) {
    let slice = &text[start..end];
    let lead = slice.len() - slice.trim_start().len();
    let body = slice.trim();
    if body.is_empty() {
        return;
    }
    out.push(Chunk {
        text: body.to_string(),
        section: section.title.clone(),
        start: start + lead,
        end: start + lead + body.len(),
    });
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn md(text: &str) -> Extracted {
        Extracted {
            text: text.into(),
            structure: Structure::Markdown,
        }
    }

    #[test]
    fn headings_make_sections_with_their_trail() {
        let doc = md(
            "# Guide\n\nIntro.\n\n## Install\n\nRun it.\n\n```\n# not a heading\n```\n\n## Use\n\nCall it.\n",
        );
        let chunks = chunk(&doc, ChunkSize::default());
        let titles: Vec<_> = chunks
            .iter()
            .map(|c| c.section.as_deref().unwrap())
            .collect();
        assert_eq!(titles, ["Guide", "Guide > Install", "Guide > Use"]);
        assert!(chunks[1].text.contains("# not a heading"));
        for c in &chunks {
            assert_eq!(&doc.text[c.start..c.end], c.text);
        }
    }

    #[test]
    fn long_text_is_cut_within_size_with_overlap() {
        let para: String = (0..200).map(|i| format!("word{i} ")).collect();
        let doc = Extracted {
            text: para.clone(),
            structure: Structure::Plain,
        };
        let size = ChunkSize::new(100, 20).unwrap();
        let chunks = chunk(&doc, size);
        assert!(chunks.len() > 10);
        for pair in chunks.windows(2) {
            assert!(pair[0].text.chars().count() <= 100);
            assert!(pair[1].start < pair[0].end, "neighbours overlap");
            assert!(pair[0].end - pair[1].start <= 20);
        }
        let last = chunks.last().unwrap();
        assert_eq!(last.end, para.trim_end().len());
    }

    #[test]
    fn sizes_are_checked() {
        assert!(ChunkSize::new(10, 0).is_err());
        assert!(ChunkSize::new(100, 60).is_err());
        assert!(ChunkSize::new(100, 50).is_ok());
    }
}
