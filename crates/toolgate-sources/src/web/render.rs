//! A fetched body as `web_fetch`'s output, the content type deciding: HTML as readable
//! Markdown, PDF as text, JSON as JSON, images as image parts, other text as it is; a
//! window of `max_chars` characters from `start` for anything read as text.

use base64::Engine;
use serde_json::Value;

use super::get::Fetched;
use super::kind::{self, Kind};
use super::{html, pdf};
use toolgate_protocol::image::MAX_IMAGE_BYTES;
use toolgate_tool::{Part, ToolError, ToolOutput};

/// Characters of the body an error status shows.
const ERROR_EXCERPT: usize = 2000;

/// Which characters of a text the model gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Window {
    pub start: usize,
    pub max_chars: usize,
}

/// The output for `page`, read up to `cap` bytes (the cap named in the notes).
pub(crate) async fn output(
    page: Fetched,
    window: Window,
    cap: usize,
) -> Result<ToolOutput, ToolError> {
    let kind = kind::of(page.media_type.as_deref(), &page.body);
    if !page.status.is_success() {
        return Ok(failed(page, &kind).await);
    }
    let whole = |what: &str| too_large(&page, what, cap);
    let part = match kind {
        Kind::Html | Kind::Text => text_part(&page, &kind, window, cap).await,
        Kind::Pdf if page.cut => return Err(whole("a PDF")),
        Kind::Pdf => {
            let url = page.url.to_string();
            let text = pdf::text(page.body, &url).await?;
            Part::Text {
                text: framed(None, &url, &text, window, None),
            }
        }
        Kind::Json if page.cut => return Err(whole("a JSON document")),
        Kind::Json => json_part(&page, window),
        Kind::Image(_) if page.cut || page.body.len() > MAX_IMAGE_BYTES => {
            return Err(whole("an image"));
        }
        Kind::Image(mime) => Part::Image {
            mime: mime.to_string(),
            url: None,
            data: Some(base64::engine::general_purpose::STANDARD.encode(&page.body)),
        },
        Kind::Other(media) => {
            return Err(ToolError::Execution(format!(
                "{} is {media}, which web_fetch does not read: it reads HTML, PDF, JSON, text and images",
                page.url
            )));
        }
    };
    Ok(ToolOutput {
        parts: vec![part],
        is_error: false,
    })
}

/// HTML as Markdown, or text as it is; a body cut at the cap says so.
async fn text_part(page: &Fetched, kind: &Kind, window: Window, cap: usize) -> Part {
    let text = kind::decode(&page.body, page.charset.as_deref());
    let url = page.url.to_string();
    let (title, body) = match kind {
        Kind::Html => {
            let at = url.clone();
            let page = tokio::task::spawn_blocking(move || html::readable(&text, &at)).await;
            match page {
                Ok(p) => (Some(p.title), p.markdown),
                Err(e) => (None, format!("[the page could not be converted: {e}]")),
            }
        }
        _ => (None, text),
    };
    let cut = page.cut.then(|| {
        format!("[the response is larger than {cap} bytes: only its first {cap} bytes were read]")
    });
    Part::Text {
        text: framed(title.as_deref(), &url, &body, window, cut.as_deref()),
    }
}

/// JSON as a JSON part; longer than the window, the window of its text.
fn json_part(page: &Fetched, window: Window) -> Part {
    let text = kind::decode(&page.body, page.charset.as_deref());
    let url = page.url.to_string();
    match serde_json::from_str::<Value>(&text) {
        Ok(json) if window.start == 0 && text.chars().count() <= window.max_chars => {
            Part::Json { json }
        }
        Ok(_) => Part::Text {
            text: framed(None, &url, &text, window, None),
        },
        Err(e) => Part::Text {
            text: framed(
                None,
                &url,
                &text,
                window,
                Some(&format!("[the body is not valid JSON: {e}]")),
            ),
        },
    }
}

/// The text with its title and URL above, the window's note and `note` below.
fn framed(
    title: Option<&str>,
    url: &str,
    body: &str,
    window: Window,
    note: Option<&str>,
) -> String {
    let mut out = String::new();
    if let Some(title) = title.filter(|t| !t.is_empty()) {
        out.push_str(&format!("Title: {title}\n"));
    }
    out.push_str(&format!("URL: {url}\n\n"));
    let total = body.chars().count();
    let shown: String = body
        .chars()
        .skip(window.start)
        .take(window.max_chars)
        .collect();
    out.push_str(&shown);
    let end = (window.start + window.max_chars).min(total);
    if window.start >= total && total > 0 {
        out.push_str(&format!(
            "\n\n[start {} is past the end: the text has {total} characters]",
            window.start
        ));
    } else if window.start > 0 || end < total {
        out.push_str(&format!(
            "\n\n[characters {} to {end} of {total}",
            window.start
        ));
        if end < total {
            out.push_str(&format!("; call again with start: {end} for more"));
        }
        out.push(']');
    }
    if let Some(note) = note {
        out.push_str("\n\n");
        out.push_str(note);
    }
    out
}

fn too_large(page: &Fetched, what: &str, cap: usize) -> ToolError {
    let limit = if what == "an image" {
        format!("{} bytes, the most a model takes", cap.min(MAX_IMAGE_BYTES))
    } else {
        format!("{cap} bytes; {} sets the cap", super::fetch::MAX_BYTES_ENV)
    };
    ToolError::Execution(format!(
        "{} is {what} larger than web_fetch reads ({limit})",
        page.url
    ))
}

/// An error status: the status line, then the start of the body as text.
async fn failed(page: Fetched, kind: &Kind) -> ToolOutput {
    let mut text = format!("HTTP {} from GET {}", page.status, page.url);
    let body = match kind {
        Kind::Html | Kind::Text | Kind::Json => {
            let window = Window {
                start: 0,
                max_chars: ERROR_EXCERPT,
            };
            match text_part(&page, kind, window, usize::MAX).await {
                Part::Text { text } => Some(text),
                _ => None,
            }
        }
        _ => None,
    };
    if let Some(body) = body {
        text.push('\n');
        text.push_str(&body);
    }
    ToolOutput {
        parts: vec![Part::Text { text }],
        is_error: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_says_what_it_shows_and_where_the_rest_is() {
        let w = |start, max_chars| Window { start, max_chars };
        let all = framed(Some("T"), "https://a/", "abcdef", w(0, 10), None);
        assert_eq!(all, "Title: T\nURL: https://a/\n\nabcdef");
        let head = framed(None, "https://a/", "abcdef", w(0, 4), None);
        assert!(
            head.ends_with("abcd\n\n[characters 0 to 4 of 6; call again with start: 4 for more]"),
            "{head}"
        );
        let tail = framed(None, "https://a/", "abcdef", w(4, 4), Some("[n]"));
        assert!(
            tail.ends_with("ef\n\n[characters 4 to 6 of 6]\n\n[n]"),
            "{tail}"
        );
        let past = framed(None, "https://a/", "abcdef", w(9, 4), None);
        assert!(past.contains("past the end"), "{past}");
    }
}
