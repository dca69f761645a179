//! The `input_image` and `input_file` parts of a user message: read (pure) into
//! attachments whose bytes are here (a base64 `data:` URL) or behind an `https` URL,
//! then fetched, checked and sized. An image goes to the model as an image part; a file
//! is saved in the run's workspace (uploads.rs) and the model is told its path.

use base64::Engine;
use serde_json::Value;

use super::input::InputError;
use toolgate_model::ImagePart;

/// The largest file a request may attach, decoded.
pub const MAX_FILE_BYTES: usize = 1024 * 1024;

/// Where an attachment's bytes are.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// Decoded from a `data:` URL.
    Bytes(Vec<u8>),
    /// To fetch: an `https` URL.
    Url(String),
}

/// One `input_image` or `input_file` part.
#[derive(Debug, Clone, PartialEq)]
pub enum Attachment {
    Image(Source),
    File {
        /// As the client named it (not yet made safe), if it did.
        filename: Option<String>,
        source: Source,
    },
}

/// A fetched attachment.
#[derive(Debug, Clone, PartialEq)]
pub enum Ready {
    Image(ImagePart),
    File { filename: String, bytes: Vec<u8> },
}

fn invalid(at: &str, what: impl std::fmt::Display) -> InputError {
    InputError::Invalid(format!("{at}: {what}"))
}

/// Reads one content part of type `input_image` or `input_file`.
pub fn read_part(at: &str, kind: &str, part: &Value) -> Result<Attachment, InputError> {
    if part.get("file_id").is_some_and(|v| !v.is_null()) {
        return Err(invalid(
            at,
            format!(
                "'file_id' is not supported (toolgate has no Files API); send the {} as a data URL or an https URL",
                if kind == "input_image" {
                    "image"
                } else {
                    "file"
                }
            ),
        ));
    }
    let text = |name: &str| -> Result<Option<&str>, InputError> {
        match part.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(_) => Err(invalid(at, format!("'{name}' must be a string"))),
        }
    };
    if kind == "input_image" {
        let url = text("image_url")?.ok_or_else(|| {
            invalid(
                at,
                "an input_image needs 'image_url' (a data URL or an https URL)",
            )
        })?;
        return Ok(Attachment::Image(source(
            at,
            url,
            toolgate_model::image::MAX_IMAGE_BYTES,
        )?));
    }
    let filename = text("filename")?.map(str::to_string);
    if let Some(name) = &filename
        && !plain_name(name)
    {
        return Err(invalid(
            at,
            format!(
                "filename '{}' is not a plain file name (no folders, no '..', no control characters)",
                name.escape_debug()
            ),
        ));
    }
    let source = match (text("file_data")?, text("file_url")?) {
        (Some(data), None) => {
            if filename.is_none() {
                return Err(invalid(
                    at,
                    "an input_file with 'file_data' needs a 'filename'",
                ));
            }
            match data.strip_prefix("data:") {
                Some(_) => source(at, data, MAX_FILE_BYTES)?,
                None => Source::Bytes(decode(at, data, MAX_FILE_BYTES)?),
            }
        }
        (None, Some(url)) => source(at, url, MAX_FILE_BYTES)?,
        _ => {
            return Err(invalid(
                at,
                "an input_file needs one of 'file_data' (base64, with 'filename') or 'file_url'",
            ));
        }
    };
    Ok(Attachment::File { filename, source })
}

/// A name without a folder: no `/` or `\\`, not `.` or `..`, no control character,
/// at most 255 bytes.
fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && !matches!(name, "." | "..")
        && !name.contains(['/', '\\'])
        && !name.chars().any(char::is_control)
}

/// A `data:` URL's bytes, or an `https` URL to fetch.
fn source(at: &str, url: &str, cap: usize) -> Result<Source, InputError> {
    if let Some(rest) = url.strip_prefix("data:") {
        let (meta, data) = rest
            .split_once(',')
            .ok_or_else(|| invalid(at, "a data URL is data:TYPE;base64,DATA"))?;
        if !meta.ends_with(";base64") {
            return Err(invalid(
                at,
                "only base64 data URLs are taken (data:TYPE;base64,DATA)",
            ));
        }
        return Ok(Source::Bytes(decode(at, data, cap)?));
    }
    if url.starts_with("https://") && reqwest::Url::parse(url).is_ok() {
        return Ok(Source::Url(url.to_string()));
    }
    Err(invalid(
        at,
        "the URL must be a base64 data URL or an https URL",
    ))
}

fn decode(at: &str, data: &str, cap: usize) -> Result<Vec<u8>, InputError> {
    // Base64 grows 4/3: anything much longer than the cap is refused before decoding.
    if data.len() / 4 * 3 > cap + 3 {
        return Err(too_large(at, cap));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| invalid(at, format!("the data is not valid base64: {e}")))?;
    if bytes.len() > cap {
        return Err(too_large(at, cap));
    }
    Ok(bytes)
}

fn too_large(at: &str, cap: usize) -> InputError {
    invalid(at, format!("the attachment is larger than {cap} bytes"))
}

/// An image's bytes as the model gets them, or why they are not an image it takes.
pub fn image(at: &str, bytes: &[u8]) -> Result<ImagePart, InputError> {
    let mime = toolgate_model::image::sniff(bytes)
        .ok_or_else(|| invalid(at, "the image is not a PNG, JPEG, GIF or WebP image"))?;
    Ok(ImagePart {
        mime: mime.to_string(),
        data: base64::engine::general_purpose::STANDARD.encode(bytes),
    })
}

/// Fetches what is behind the URLs and checks every attachment; the error names the
/// attachment (`attachments[N]`).
pub async fn fetch(list: Vec<Attachment>) -> Result<Vec<Ready>, InputError> {
    let mut out = Vec::with_capacity(list.len());
    for (i, attachment) in list.into_iter().enumerate() {
        let at = format!("attachments[{i}]");
        out.push(match attachment {
            Attachment::Image(source) => {
                let bytes = bytes_of(&at, source, toolgate_model::image::MAX_IMAGE_BYTES).await?;
                Ready::Image(image(&at, &bytes)?)
            }
            Attachment::File { filename, source } => {
                let from_url = match &source {
                    Source::Url(url) => reqwest::Url::parse(url)
                        .ok()
                        .and_then(|u| u.path_segments()?.next_back().map(str::to_string))
                        .filter(|s| !s.is_empty()),
                    Source::Bytes(_) => None,
                };
                let bytes = bytes_of(&at, source, MAX_FILE_BYTES).await?;
                let filename = filename.or(from_url).unwrap_or_else(|| "file".into());
                Ready::File { filename, bytes }
            }
        });
    }
    Ok(out)
}

async fn bytes_of(at: &str, source: Source, cap: usize) -> Result<Vec<u8>, InputError> {
    match source {
        Source::Bytes(bytes) => Ok(bytes),
        Source::Url(url) => super::fetch::get(&url, cap)
            .await
            .map_err(|e| invalid(at, e)),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;

    fn err(kind: &str, part: Value) -> String {
        match read_part("p", kind, &part).unwrap_err() {
            InputError::Invalid(m) | InputError::Conflict(m) => m,
        }
    }

    #[test]
    fn parts_are_read_and_bad_ones_named() {
        let png = base64::engine::general_purpose::STANDARD.encode(b"\x89PNG\r\n\x1a\nxyz");
        let part = read_part(
            "p",
            "input_image",
            &json!({"type": "input_image", "image_url": format!("data:image/png;base64,{png}")}),
        )
        .unwrap();
        let Attachment::Image(Source::Bytes(bytes)) = part else {
            panic!("{part:?}")
        };
        assert_eq!(image_mime(&bytes), "image/png");
        let file = read_part(
            "p",
            "input_file",
            &json!({"filename": "a.txt", "file_data": "data:text/plain;base64,aGk="}),
        )
        .unwrap();
        assert_eq!(
            file,
            Attachment::File {
                filename: Some("a.txt".into()),
                source: Source::Bytes(b"hi".to_vec())
            }
        );
        assert!(matches!(
            read_part(
                "p",
                "input_image",
                &json!({"image_url": "https://example.com/a.png"})
            ),
            Ok(Attachment::Image(Source::Url(_)))
        ));
        assert!(
            err("input_image", json!({"file_id": "file_1"})).contains("'file_id' is not supported")
        );
        assert!(
            err("input_file", json!({"file_id": "file_1"})).contains("'file_id' is not supported")
        );
        assert!(err("input_image", json!({"image_url": "http://x/a.png"})).contains("https"));
        assert!(
            err(
                "input_file",
                json!({"filename": "a", "file_data": "data:text/plain;base64,@@"})
            )
            .contains("not valid base64")
        );
        assert!(err("input_file", json!({"file_data": "aGk="})).contains("needs a 'filename'"));
        for bad in ["../../x", "a/b", "..", "a\\b", "x\u{0}y"] {
            let e = err("input_file", json!({"filename": bad, "file_data": "aGk="}));
            assert!(e.contains("not a plain file name"), "{bad}: {e}");
        }
        let big = "A".repeat(MAX_FILE_BYTES / 3 * 4 + 400);
        assert!(
            err("input_file", json!({"filename": "a", "file_data": big})).contains("larger than")
        );
        assert!(image("p", b"hello").is_err());
    }

    fn image_mime(bytes: &[u8]) -> String {
        image("p", bytes).unwrap().mime
    }
}
