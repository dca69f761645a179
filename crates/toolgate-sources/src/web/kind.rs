//! What a fetched body is, by its `Content-Type`, and by its first bytes when the
//! server sent none or only `application/octet-stream`.

/// How `web_fetch` reads a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    /// HTML: main content as Markdown.
    Html,
    /// PDF: its text.
    Pdf,
    /// JSON, as JSON.
    Json,
    /// An image a model can take (PNG, JPEG, GIF, WebP), with its MIME type.
    Image(&'static str),
    /// Plain text, Markdown, CSV, XML and the like, as it is.
    Text,
    /// Anything else, with its media type: not read.
    Other(String),
}

/// The kind of a body of media type `media` (lower case, no parameters).
pub(crate) fn of(media: Option<&str>, body: &[u8]) -> Kind {
    match media {
        None | Some("application/octet-stream" | "binary/octet-stream") => sniff(body),
        Some("text/html" | "application/xhtml+xml") => Kind::Html,
        Some("application/pdf" | "application/x-pdf") => Kind::Pdf,
        Some(m) if m.ends_with("/json") || m.ends_with("+json") => Kind::Json,
        Some(m) if m.starts_with("image/") => match toolgate_protocol::image::sniff(body) {
            Some(mime) => Kind::Image(mime),
            // SVG is XML: text a model can read.
            None if m == "image/svg+xml" => Kind::Text,
            None => Kind::Other(m.to_string()),
        },
        Some(m) if is_text(m) => Kind::Text,
        Some(m) => Kind::Other(m.to_string()),
    }
}

fn is_text(media: &str) -> bool {
    media.starts_with("text/")
        || media.ends_with("/xml")
        || media.ends_with("+xml")
        || matches!(
            media,
            "application/javascript" | "application/x-yaml" | "application/yaml"
        )
}

/// The kind of a body the server did not type, by its first bytes.
fn sniff(body: &[u8]) -> Kind {
    if body.starts_with(b"%PDF-") {
        return Kind::Pdf;
    }
    if let Some(mime) = toolgate_protocol::image::sniff(body) {
        return Kind::Image(mime);
    }
    let head = String::from_utf8_lossy(&body[..body.len().min(512)]).to_ascii_lowercase();
    let head = head.trim_start_matches('\u{feff}').trim_start();
    if head.starts_with("<!doctype html") || head.starts_with("<html") {
        return Kind::Html;
    }
    if (head.starts_with('{') || head.starts_with('['))
        && serde_json::from_slice::<serde_json::Value>(body).is_ok()
    {
        return Kind::Json;
    }
    if !body.iter().take(8192).any(|&b| b == 0) && std::str::from_utf8(body).is_ok() {
        return Kind::Text;
    }
    Kind::Other("application/octet-stream".into())
}

/// `body` as text in `charset` (UTF-8 when unnamed or unknown; a byte order mark wins).
pub(crate) fn decode(body: &[u8], charset: Option<&str>) -> String {
    let encoding = charset
        .and_then(|c| encoding_rs::Encoding::for_label(c.as_bytes()))
        .unwrap_or(encoding_rs::UTF_8);
    encoding.decode(body).0.into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_content_type_decides_and_bytes_decide_without_one() {
        let png = b"\x89PNG\r\n\x1a\nrest";
        let rows: &[(Option<&str>, &[u8], Kind)] = &[
            (Some("text/html"), b"x", Kind::Html),
            (Some("application/pdf"), b"x", Kind::Pdf),
            (Some("application/ld+json"), b"{}", Kind::Json),
            (Some("image/png"), png, Kind::Image("image/png")),
            (Some("image/tiff"), b"II*", Kind::Other("image/tiff".into())),
            (Some("text/markdown"), b"# x", Kind::Text),
            (
                Some("application/zip"),
                b"PK",
                Kind::Other("application/zip".into()),
            ),
            (None, b"%PDF-1.4", Kind::Pdf),
            (None, png, Kind::Image("image/png")),
            (None, b"  <!DOCTYPE html><p>x", Kind::Html),
            (None, b"[1, 2]", Kind::Json),
            (None, b"plain words", Kind::Text),
            (
                Some("application/octet-stream"),
                b"\0\x01\x02",
                Kind::Other("application/octet-stream".into()),
            ),
        ];
        for (media, body, want) in rows {
            assert_eq!(&of(*media, body), want, "{media:?}");
        }
    }

    #[test]
    fn text_is_decoded_in_its_charset() {
        assert_eq!(decode(b"caf\xe9", Some("iso-8859-1")), "café");
        assert_eq!(decode("café".as_bytes(), None), "café");
        assert_eq!(decode("café".as_bytes(), Some("no-such-charset")), "café");
    }
}
