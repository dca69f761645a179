//! Text from a document's bytes, by its kind: Markdown and plain text as they are,
//! HTML converted to Markdown (`htmd`; scripts, styles and navigation dropped) so that
//! its headings become sections, PDF as text page by page (`pdf-extract`).

/// What kind of document a file is, from its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub enum Kind {
    Markdown,
    Text,
    Html,
    Pdf,
}

impl Kind {
    /// The kind of a file named `name`; `None` for a kind toolgate does not read.
    pub fn of(name: &str) -> Option<Kind> {
        let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase())?;
        Some(match ext.as_str() {
            "md" | "markdown" | "mdx" => Kind::Markdown,
            "txt" | "text" | "rst" | "log" | "csv" => Kind::Text,
            "html" | "htm" | "xhtml" => Kind::Html,
            "pdf" => Kind::Pdf,
            _ => return None,
        })
    }

    /// The extensions read, for messages.
    pub const EXTENSIONS: &'static str = ".md, .markdown, .txt, .text, .rst, .html, .htm, .pdf";
}

/// Where a document's text has structure to cut along.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Structure {
    /// None: paragraphs only.
    Plain,
    /// Markdown headings.
    Markdown,
    /// Pages: the byte offset where each begins.
    Pages(Vec<usize>),
}

/// A document's text and its structure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extracted {
    pub text: String,
    pub structure: Structure,
}

/// The text of a document of `kind`; why not, when it has none to give.
pub fn extract(kind: Kind, bytes: &[u8]) -> Result<Extracted, String> {
    let extracted = match kind {
        Kind::Markdown => Extracted {
            text: utf8(bytes)?,
            structure: Structure::Markdown,
        },
        Kind::Text => Extracted {
            text: utf8(bytes)?,
            structure: Structure::Plain,
        },
        Kind::Html => Extracted {
            text: html(&utf8(bytes)?)?,
            structure: Structure::Markdown,
        },
        Kind::Pdf => pdf(bytes)?,
    };
    if extracted.text.trim().is_empty() {
        return Err(match kind {
            Kind::Pdf => "the PDF has no text (a scanned PDF needs OCR first)".into(),
            _ => "the document is empty".into(),
        });
    }
    Ok(extracted)
}

/// The bytes as UTF-8 (a byte-order mark dropped).
fn utf8(bytes: &[u8]) -> Result<String, String> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    String::from_utf8(bytes.to_vec()).map_err(|e| {
        format!(
            "not UTF-8 text (invalid byte at {})",
            e.utf8_error().valid_up_to()
        )
    })
}

/// HTML as Markdown, without the page's scripts, styles, navigation and forms.
fn html(source: &str) -> Result<String, String> {
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(vec![
            "script", "style", "noscript", "nav", "header", "footer", "aside", "form", "iframe",
            "svg", "head",
        ])
        .build();
    converter
        .convert(source)
        .map_err(|e| format!("cannot read the HTML: {e}"))
}

/// A PDF's text, page by page (pages joined by a blank line).
fn pdf(bytes: &[u8]) -> Result<Extracted, String> {
    // pdf-extract panics on some malformed files: a bad file is an error, not a crash.
    let pages = std::panic::catch_unwind(|| pdf_extract::extract_text_from_mem_by_pages(bytes))
        .map_err(|_| "cannot read the PDF (the parser gave up on it)".to_string())?
        .map_err(|e| format!("cannot read the PDF: {e}"))?;
    let mut text = String::new();
    let mut starts = Vec::with_capacity(pages.len());
    for page in pages {
        starts.push(text.len());
        text.push_str(page.trim());
        text.push_str("\n\n");
    }
    Ok(Extracted {
        text,
        structure: Structure::Pages(starts),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn html_becomes_markdown_without_scripts_or_navigation() {
        let page = "<html><head><title>t</title><script>var x = 1;</script></head><body>\
            <nav><a href='/'>Home</a></nav><h1>Tides</h1><p>The moon pulls the <b>sea</b>.</p>\
            <footer>Copyright</footer></body></html>";
        let out = extract(Kind::Html, page.as_bytes()).unwrap();
        assert!(out.text.contains("# Tides"), "{}", out.text);
        assert!(
            out.text.contains("The moon pulls the **sea**."),
            "{}",
            out.text
        );
        for gone in ["var x", "Home", "Copyright"] {
            assert!(!out.text.contains(gone), "{gone} in {}", out.text);
        }
    }

    #[test]
    fn kinds_come_from_extensions() {
        assert_eq!(Kind::of("a/b/README.MD"), Some(Kind::Markdown));
        assert_eq!(Kind::of("x.htm"), Some(Kind::Html));
        assert_eq!(Kind::of("x.pdf"), Some(Kind::Pdf));
        assert_eq!(Kind::of("x.png"), None);
        assert_eq!(Kind::of("Makefile"), None);
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        assert!(extract(Kind::Pdf, b"%PDF-1.4 not really").is_err());
        assert!(extract(Kind::Text, &[0xff, 0xfe, 0x00]).is_err());
        assert!(extract(Kind::Markdown, b"   \n").is_err());
    }
}
