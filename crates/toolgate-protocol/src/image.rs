//! Images from tools to vision models: the parts a result carries (MCP image content,
//! `read_file` of an image, a command's declared image output), their size cap, the
//! models known to read text only, and the text a model gets in an image's place.

use base64::Engine;
use serde::{Deserialize, Serialize};
use sha2::Digest;

/// The largest image sent to a model, decoded (Anthropic's per-image limit).
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;

/// One image a tool returned, as it is sent: base64 data and its MIME type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImagePart {
    pub mime: String,
    /// Base64, without a `data:` prefix.
    pub data: String,
}

impl ImagePart {
    /// The decoded size in bytes.
    pub fn bytes(&self) -> usize {
        let pad = self.data.bytes().rev().take_while(|&b| b == b'=').count();
        (self.data.len() * 3 / 4).saturating_sub(pad)
    }

    /// `data:MIME;base64,DATA`.
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.mime, self.data)
    }
}

/// What a record keeps of an image: its type, size and a hash, not its data.
pub fn reference(mime: &str, data: &str) -> String {
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .unwrap_or_default();
    let hash = sha2::Sha256::digest(&decoded);
    let hex: String = hash.iter().take(6).map(|b| format!("{b:02x}")).collect();
    format!("[image {mime}, {} bytes, sha256:{hex}]", decoded.len())
}

/// The MIME type of image bytes, by their magic numbers (PNG, JPEG, GIF, WebP).
pub fn sniff(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Models known to read text only (by name after the provider prefix).
const TEXT_ONLY: &[&str] = &[
    "gpt-3.5",
    "gpt-4-0314",
    "gpt-4-0613",
    "gpt-4-32k",
    "o1-mini",
    "o3-mini",
    "gpt-oss",
];

/// Whether `spec`'s model takes images: the `vision` setting when given, else not for
/// the models known to read text only.
pub fn accepts_images(spec: &str, vision: Option<bool>) -> bool {
    if let Some(v) = vision {
        return v;
    }
    let name = spec.split_once(':').map_or(spec, |(_, n)| n);
    !(name == "gpt-4" || TEXT_ONLY.iter().any(|p| name.starts_with(p)))
}

/// The text a model gets instead of an image it is not sent.
pub fn withheld(image: &ImagePart, why: &str) -> String {
    format!(
        "[image {}, {} bytes: not shown, {why}]",
        image.mime,
        image.bytes()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_references_and_kinds() {
        let png = ImagePart {
            mime: "image/png".into(),
            data: base64::engine::general_purpose::STANDARD.encode(b"\x89PNG\r\n\x1a\nabc"),
        };
        assert_eq!(png.bytes(), 11);
        assert!(reference(&png.mime, &png.data).starts_with("[image image/png, 11 bytes, sha256:"));
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\nabc"), Some("image/png"));
        assert_eq!(sniff(b"hello"), None);
        assert!(accepts_images("openai:gpt-4o", None));
        assert!(!accepts_images("openai:gpt-3.5-turbo", None));
        assert!(!accepts_images("openai:gpt-4o", Some(false)));
    }
}
