//! How a tool is shown to people (the inbox, `/v1/tools`, `tools show`): a label, an
//! icon and help text, the texts in languages as Dify writes them (`{en_US: ...,
//! zh_Hans: ...}`) or one plain string. The model never sees any of it.
//!
//! An icon is a short text (an emoji) or an image file beside the tool, read once at
//! load and kept as a `data:` URL: the inbox never loads anything from another host, so
//! a remote URL is refused when the file is read.

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The language a plain string is taken to be in (Dify's default).
pub const DEFAULT_LANGUAGE: &str = "en_US";
/// The largest icon file kept (bytes).
pub const MAX_ICON_BYTES: u64 = 32 * 1024;
/// The most characters a text icon may have.
pub const MAX_ICON_CHARS: usize = 8;
/// The most characters of one label or help text.
const MAX_TEXT_CHARS: usize = 2000;

/// A text in languages: language tag -> text.
pub type Localized = BTreeMap<String, String>;

/// A tool's display metadata; every part optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Display {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<Localized>,
    /// A short text, or a `data:image/...;base64,` URL read from a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub help: Option<Localized>,
}

impl Display {
    /// Nothing to show.
    pub fn is_empty(&self) -> bool {
        self.label.is_none() && self.icon.is_none() && self.help.is_none()
    }

    /// The label in `language` (else English, else any).
    pub fn label_in(&self, language: &str) -> Option<&str> {
        self.label.as_ref().and_then(|l| pick(l, language))
    }

    /// The three keys as written in a file; `folders` are searched, in order, for an
    /// icon file. Errors name the key.
    pub fn read(
        label: Option<&Value>,
        icon: Option<&Value>,
        help: Option<&Value>,
        folders: &[&Path],
    ) -> Result<Display, (String, String)> {
        let text = |key: &str, v: Option<&Value>| match v.filter(|v| !v.is_null()) {
            None => Ok(None),
            Some(v) => localized(v).map_err(|m| (key.to_string(), format!("{key}: {m}"))),
        };
        let icon = match icon.filter(|v| !v.is_null()) {
            None => None,
            Some(Value::String(s)) => {
                Some(read_icon(s, folders).map_err(|m| ("icon".into(), format!("icon: {m}")))?)
            }
            Some(_) => return Err(("icon".into(), "icon: write a text or a file name".into())),
        };
        Ok(Display {
            label: text("label", label)?,
            icon,
            help: text("help", help)?,
        })
    }
}

/// The text in `language`, else English, else the first there is.
pub fn pick<'a>(text: &'a Localized, language: &str) -> Option<&'a str> {
    text.get(language)
        .or_else(|| text.get(DEFAULT_LANGUAGE))
        .or_else(|| text.values().next())
        .map(String::as_str)
}

/// A plain string, or an object of language -> string; empty texts are left out (and
/// nothing left is `None`).
pub fn localized(v: &Value) -> Result<Option<Localized>, String> {
    let mut out = Localized::new();
    let mut keep = |lang: &str, s: &str| -> Result<(), String> {
        let s = s.trim();
        if s.chars().count() > MAX_TEXT_CHARS {
            return Err(format!("longer than {MAX_TEXT_CHARS} characters"));
        }
        if !s.is_empty() {
            out.insert(lang.to_string(), s.to_string());
        }
        Ok(())
    };
    match v {
        Value::String(s) => keep(DEFAULT_LANGUAGE, s)?,
        Value::Object(map) => {
            for (lang, text) in map {
                match text {
                    Value::String(s) if valid_language(lang) => keep(lang, s)?,
                    Value::String(_) => {
                        return Err(format!("'{lang}' is not a language tag (en_US, zh_Hans)"));
                    }
                    _ => return Err(format!("the '{lang}' text is not a string")),
                }
            }
        }
        _ => {
            return Err(
                "write a string, or languages and their texts ({en_US: ..., zh_Hans: ...})".into(),
            );
        }
    }
    Ok((!out.is_empty()).then_some(out))
}

fn valid_language(tag: &str) -> bool {
    (2..=16).contains(&tag.len())
        && tag
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// An icon as written: an image file found in one of `folders`, else a short text.
pub fn read_icon(written: &str, folders: &[&Path]) -> Result<String, String> {
    let written = written.trim();
    let lower = written.to_ascii_lowercase();
    if lower.contains("://") || lower.starts_with("//") || lower.starts_with("data:") {
        return Err(
            "a URL is never loaded: give an image file beside the tool or a short text".into(),
        );
    }
    if let Some(mime) = image_type(&lower) {
        return read_image(written, mime, folders);
    }
    if written.is_empty() || written.chars().count() > MAX_ICON_CHARS {
        return Err(format!(
            "'{written}' is neither an image file (.svg, .png, .jpg, .gif, .webp) nor a short \
             text (at most {MAX_ICON_CHARS} characters)"
        ));
    }
    if written.chars().any(char::is_control) {
        return Err("the text holds control characters".into());
    }
    Ok(written.to_string())
}

/// A `data:` URI of an image type the inbox shows, base64, at most
/// [`MAX_ICON_BYTES`] once decoded.
pub fn inline_image(src: &str) -> bool {
    let Some(rest) = src.strip_prefix("data:") else {
        return false;
    };
    let Some((mime, data)) = rest.split_once(";base64,") else {
        return false;
    };
    let known = [
        "image/svg+xml",
        "image/png",
        "image/jpeg",
        "image/gif",
        "image/webp",
    ];
    known.contains(&mime)
        && (data.len() as u64) / 4 * 3 <= MAX_ICON_BYTES
        && base64::engine::general_purpose::STANDARD
            .decode(data)
            .is_ok()
}

fn image_type(name: &str) -> Option<&'static str> {
    let ext = Path::new(name).extension()?.to_str()?;
    Some(match ext {
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        _ => return None,
    })
}

/// The file `name` in the first folder that has it (never outside that folder), as a
/// `data:` URL.
fn read_image(name: &str, mime: &str, folders: &[&Path]) -> Result<String, String> {
    if Path::new(name).is_absolute() || name.split(['/', '\\']).any(|p| p == "..") {
        return Err(format!(
            "'{name}' must be a file name inside the tool's folder"
        ));
    }
    // Inside its folder once links are followed too: an icon never reads a file elsewhere.
    let inside = |folder: &Path| {
        let path = folder.join(name);
        let real = std::fs::canonicalize(&path).ok()?;
        let root = std::fs::canonicalize(folder).ok()?;
        (real.starts_with(&root) && real.is_file()).then_some(path)
    };
    let found = folders.iter().find_map(|f| inside(f));
    let Some(path) = found else {
        let places: Vec<String> = folders.iter().map(|f| f.display().to_string()).collect();
        return Err(format!("no file '{name}' in {}", places.join(" or ")));
    };
    let size = std::fs::metadata(&path).map_err(|e| e.to_string())?.len();
    if size > MAX_ICON_BYTES {
        return Err(format!(
            "{} has {size} bytes; an icon may have at most {MAX_ICON_BYTES}",
            path.display()
        ));
    }
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let data = base64::engine::general_purpose::STANDARD.encode(bytes);
    Ok(format!("data:{mime};base64,{data}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn texts_in_languages_or_plain() {
        let d = Display::read(
            Some(&json!({"en_US": "Pets", "zh_Hans": "宠物"})),
            Some(&json!("🐾")),
            Some(&json!("Looks up a pet.")),
            &[],
        )
        .unwrap();
        assert_eq!(d.label_in("zh_Hans"), Some("宠物"));
        assert_eq!(d.label_in("fr_FR"), Some("Pets"));
        assert_eq!(d.icon.as_deref(), Some("🐾"));
        assert_eq!(
            pick(d.help.as_ref().unwrap(), "de"),
            Some("Looks up a pet.")
        );
    }

    #[test]
    fn icon_files_become_data_urls_and_urls_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("i.svg"), "<svg/>").unwrap();
        let url = read_icon("i.svg", &[dir.path()]).unwrap();
        assert_eq!(url, "data:image/svg+xml;base64,PHN2Zy8+");
        for bad in [
            "https://x.example/i.png",
            "//x/i.png",
            "data:image/png;base64,AA",
            "../i.svg",
        ] {
            assert!(read_icon(bad, &[dir.path()]).is_err(), "{bad}");
        }
        assert!(inline_image(&url));
        assert!(!inline_image("data:text/html;base64,PHN2Zy8+"));
        assert!(!inline_image("https://x.example/i.png"));
        let e = read_icon("gone.png", &[dir.path()]).unwrap_err();
        assert!(e.contains("no file 'gone.png'"), "{e}");
        assert!(read_icon("a long text icon", &[]).is_err());
        std::fs::write(dir.path().join("big.png"), vec![0u8; 40_000]).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.svg"), "<svg/>").unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret.svg"),
            dir.path().join("link.svg"),
        )
        .unwrap();
        assert!(
            read_icon("link.svg", &[dir.path()]).is_err(),
            "a link out of the folder"
        );
        assert!(
            read_icon("big.png", &[dir.path()])
                .unwrap_err()
                .contains("at most")
        );
    }

    #[test]
    fn wrong_shapes_name_the_key() {
        let (key, m) = Display::read(Some(&json!(3)), None, None, &[]).unwrap_err();
        assert_eq!(key, "label");
        assert!(m.starts_with("label: write a string"), "{m}");
        let (key, _) = Display::read(None, None, Some(&json!({"en US!": "x"})), &[]).unwrap_err();
        assert_eq!(key, "help");
    }
}
