//! HTML to readable Markdown: the main content found by `dom_smoothie` (a port of
//! Mozilla's readability.js, the algorithm behind Firefox's Reader View: scripts, styles,
//! navigation, sidebars and footers scored away, relative links made absolute), written
//! as Markdown by `dom_query`'s serializer (links, headings, lists, code and tables
//! kept). Navigation, sidebars, forms and the page's own header and footer leave the
//! document first (readability scores them low, but a short page is taken whole); a
//! page readability finds no article in is written whole, less the same chrome.

use dom_query::Document;
use dom_smoothie::{Config, Readability, TextMode};

/// Elements that are never content, removed with what they hold.
const CHROME: &str = "nav, aside, form, noscript, template, iframe, button, dialog";

/// Elements that are the page's chrome outside an article (and its own inside one).
const FRAMES: &str = "header, footer";

/// Elements a page written whole leaves out, with what they hold.
const SKIPPED: &[&str] = &["script", "style", "head", "meta", "svg"];

/// Elements readability looks at, at most: a larger page is written whole.
const MAX_ELEMENTS: usize = 50_000;

/// A page as Markdown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Readable {
    /// The page's title (empty when it has none).
    pub title: String,
    pub markdown: String,
}

/// The readable content of `html`, fetched from `url` (absolute: relative links are
/// resolved against it).
pub(crate) fn readable(html: &str, url: &str) -> Readable {
    let config = Config {
        text_mode: TextMode::Markdown,
        max_elements_to_parse: MAX_ELEMENTS,
        ..Config::default()
    };
    let doc = without_chrome(html);
    let article =
        Readability::with_document(doc, Some(url), Some(config)).and_then(|mut r| r.parse());
    match article {
        Ok(a) if !a.text_content.trim().is_empty() => Readable {
            title: a.title.trim().to_string(),
            markdown: tidy(&a.text_content),
        },
        _ => whole(&without_chrome(html)),
    }
}

/// The document of `html` without navigation, sidebars, forms, and headers and footers
/// that are not inside an article.
fn without_chrome(html: &str) -> Document {
    let doc = Document::from(html);
    doc.select(CHROME).remove();
    for node in doc.select(FRAMES).nodes() {
        let framed = node
            .ancestors_it(None)
            .any(|a| a.has_name("article") || a.has_name("main"));
        if !framed {
            node.remove_from_parent();
        }
    }
    doc
}

/// The whole page, less its chrome.
fn whole(doc: &Document) -> Readable {
    let title = doc.select("title").text().trim().to_string();
    let body = doc.select("body");
    let markdown = match body.nodes().first() {
        Some(node) => node.md(Some(SKIPPED)),
        None => doc.md(Some(SKIPPED)),
    };
    Readable {
        title,
        markdown: tidy(&markdown),
    }
}

/// Runs of blank lines as one, no trailing spaces, no blank start or end.
fn tidy(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut blank = 0;
    for line in markdown.lines().map(str::trim_end) {
        if line.is_empty() {
            blank += 1;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank > 0 { "\n\n" } else { "\n" });
        }
        blank = 0;
        out.push_str(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const ARTICLE: &str = r#"<!doctype html><html><head><title>Otters | Zoo</title>
<script>var tracking = "SCRIPT-MARK";</script><style>p{color:red}</style></head>
<body><nav><a href="/home">Home</a> <a href="/shop">NAV-MARK shop</a></nav>
<article><h1>Otters</h1>
<p>Sea otters hold hands while they sleep so that they do not drift apart. They live
in the northern Pacific and eat sea urchins, crabs and clams, which they open with
stones they keep in a pouch of skin under their forelegs.</p>
<p>Read the <a href="/care/otters">care guide</a> or the
<a href="https://example.org/study">field study</a> for more about their habits, their
dens, their young and the long days they spend grooming their thick fur coats.</p>
<h2>Diet</h2><ul><li>Urchins</li><li>Crabs</li></ul></article>
<footer>FOOTER-MARK copyright</footer></body></html>"#;

    #[test]
    fn the_article_is_markdown_with_links_and_without_chrome() {
        let page = readable(ARTICLE, "https://zoo.example/animals/otters");
        let md = &page.markdown;
        assert!(page.title.contains("Otters"), "{page:?}");
        assert!(md.contains("hold hands"), "{md}");
        assert!(
            md.contains("[care guide](https://zoo.example/care/otters)"),
            "{md}"
        );
        assert!(
            md.contains("[field study](https://example.org/study)"),
            "{md}"
        );
        assert!(md.contains("## Diet"), "{md}");
        for mark in ["SCRIPT-MARK", "NAV-MARK", "FOOTER-MARK", "color:red"] {
            assert!(!md.contains(mark), "{mark} in {md}");
        }
    }

    #[test]
    fn a_page_without_an_article_is_written_whole_less_its_chrome() {
        let page = readable(
            "<html><head><title>Tiny</title></head><body><nav>NAV-MARK</nav><p>Just <a href=\"https://a.example/\">one</a> line.</p><script>SCRIPT-MARK</script></body></html>",
            "https://a.example/",
        );
        assert_eq!(page.title, "Tiny");
        assert!(
            page.markdown.contains("[one](https://a.example/)"),
            "{page:?}"
        );
        assert!(
            !page.markdown.contains("NAV-MARK") && !page.markdown.contains("SCRIPT-MARK"),
            "{page:?}"
        );
    }

    #[test]
    fn blank_runs_collapse() {
        assert_eq!(tidy("\n\na  \n\n\n\nb\nc\n\n"), "a\n\nb\nc");
    }
}
