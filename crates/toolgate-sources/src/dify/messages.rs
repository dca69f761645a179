//! The adapter's messages (one JSON object per line, with its kind) as output parts:
//! text, JSON, links, images by URL, and blobs kept with their kinds (an image blob an
//! image part, any other a file saved in the run's workspace).

use base64::Engine;
use serde::Deserialize;
use serde_json::Value;

use toolgate_tool::files::FileSink;
use toolgate_tool::{Part, ToolError, ToolOutput};

/// One message the adapter wrote.
#[derive(Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Message {
    Text {
        text: String,
    },
    Json {
        json: Value,
    },
    Link {
        url: String,
    },
    Image {
        url: String,
    },
    Blob {
        data: String,
        mime: String,
        #[serde(default)]
        name: Option<String>,
    },
}

/// The adapter's output (as the command tool read it) as the tool's parts. A failed
/// run (its stderr) and lines that are not messages stay as they are.
pub fn parts_of(out: ToolOutput, sink: &FileSink) -> Result<ToolOutput, ToolError> {
    if out.is_error {
        return Ok(out);
    }
    let mut parts = Vec::new();
    for part in out.parts {
        match part {
            Part::Json { json } => parts.push(message_part(json, sink)?),
            Part::Text { text } => {
                for line in text.lines().filter(|l| !l.trim().is_empty()) {
                    match serde_json::from_str::<Value>(line) {
                        Ok(json) => parts.push(message_part(json, sink)?),
                        Err(_) => parts.push(Part::Text { text: line.into() }),
                    }
                }
            }
            other => parts.push(other),
        }
    }
    Ok(ToolOutput {
        parts,
        is_error: false,
    })
}

fn message_part(json: Value, sink: &FileSink) -> Result<Part, ToolError> {
    let message = match serde_json::from_value::<Message>(json.clone()) {
        Ok(m) => m,
        Err(_) => return Ok(Part::Json { json }),
    };
    Ok(match message {
        Message::Text { text } => Part::Text { text },
        Message::Json { json } => Part::Json { json },
        Message::Link { url } => Part::Link { url, title: None },
        Message::Image { url } => Part::Image {
            mime: image_type(&url).to_string(),
            url: Some(url),
            data: None,
        },
        Message::Blob { data, mime, name } => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(data.as_bytes())
                .map_err(|e| ToolError::Execution(format!("the tool's blob is not base64: {e}")))?;
            sink.part(&bytes, &mime, name.as_deref())?
        }
    })
}

/// An image URL's type, by its extension (`image/*` when it has none known).
fn image_type(url: &str) -> &'static str {
    let path = url
        .split(['?', '#'])
        .next()
        .unwrap_or(url)
        .to_ascii_lowercase();
    match path.rsplit('.').next() {
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("webp") => "image/webp",
        Some("svg") => "image/svg+xml",
        _ => "image/*",
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn messages_keep_their_kinds() {
        let dir = tempfile::tempdir().unwrap();
        let sink = FileSink::new(dir.path(), "run_d1f7");
        let pdf = base64::engine::general_purpose::STANDARD.encode(b"%PDF-1.4 \xff");
        let blob = format!(
            r#"{{"kind": "blob", "data": "{pdf}", "mime": "application/pdf", "name": "r.pdf"}}"#
        );
        let lines = [
            r#"{"kind": "text", "text": "Sunny"}"#,
            r#"{"kind": "json", "json": {"t": 21}}"#,
            r#"{"kind": "link", "url": "https://example.com/a"}"#,
            r#"{"kind": "image", "url": "https://example.com/m.png"}"#,
            blob.as_str(),
            "plain words",
        ]
        .join("\n");
        let out = parts_of(ToolOutput::text(lines), &sink).unwrap();
        assert!(matches!(&out.parts[0], Part::Text { text } if text == "Sunny"));
        assert!(matches!(&out.parts[1], Part::Json { json } if json["t"] == 21));
        assert!(matches!(&out.parts[2], Part::Link { url, .. } if url == "https://example.com/a"));
        assert!(
            matches!(&out.parts[3], Part::Image { mime, url: Some(_), .. } if mime == "image/png")
        );
        let Part::File { path, name, .. } = &out.parts[4] else {
            panic!("{:?}", out.parts[4])
        };
        assert_eq!(name.as_deref(), Some("r.pdf"));
        assert_eq!(
            std::fs::read(dir.path().join(path)).unwrap(),
            b"%PDF-1.4 \xff"
        );
        assert!(matches!(&out.parts[5], Part::Text { text } if text == "plain words"));
    }
}
