//! Binary results as parts: what a body of some content type becomes (an image part for
//! an image a model can take, text for text, else a file), and the saving of a file in
//! the run's workspace (`files/ID.EXT`, opened beneath the root like every file tool's
//! path), so the model can read it and the client can fetch it by id.

use std::io::Write;
use std::path::{Path, PathBuf};

use base64::Engine;

use crate::output::{Part, ToolError};
use crate::runnable::ToolContext;
use crate::workspace::Workspace;
use toolgate_protocol::image::MAX_IMAGE_BYTES;

/// The folder of a workspace that saved files go in.
pub const FOLDER: &str = "files";

/// Where a call's binary results are saved: the run's workspace, under ids naming the
/// run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSink {
    workspace: PathBuf,
    run_id: String,
}

impl FileSink {
    /// The sink of a call's context (a call outside a run saves under the run id
    /// `local`).
    pub fn of(ctx: &ToolContext) -> Self {
        Self::new(&ctx.workspace, ctx.run.run_id.as_deref().unwrap_or("local"))
    }

    pub fn new(workspace: &Path, run_id: &str) -> Self {
        Self {
            workspace: workspace.to_path_buf(),
            run_id: run_id.to_string(),
        }
    }

    /// What `bytes` of content type `mime` become: an image part (an image small enough
    /// to send to a model), a text part (text, JSON and XML types, or bytes that are
    /// UTF-8 when no type is given), else a file saved with `name` as its given name.
    pub fn part(&self, bytes: &[u8], mime: &str, name: Option<&str>) -> Result<Part, ToolError> {
        let mime = essence(mime);
        if mime.starts_with("image/") && bytes.len() <= MAX_IMAGE_BYTES {
            let kind = toolgate_protocol::image::sniff(bytes).unwrap_or(mime.as_str());
            return Ok(Part::Image {
                mime: kind.to_string(),
                url: None,
                data: Some(base64::engine::general_purpose::STANDARD.encode(bytes)),
            });
        }
        if is_textual(&mime) || (mime.is_empty() && std::str::from_utf8(bytes).is_ok()) {
            return Ok(Part::Text {
                text: String::from_utf8_lossy(bytes).into_owned(),
            });
        }
        let mime = if mime.is_empty() {
            "application/octet-stream".to_string()
        } else {
            mime
        };
        self.save(bytes, &mime, name)
    }

    /// Saves `bytes` as a new file in the workspace's `files/` folder and returns its
    /// part: the path the model reads it by, its id, name, type and size.
    pub fn save(&self, bytes: &[u8], mime: &str, name: Option<&str>) -> Result<Part, ToolError> {
        let suffix = &uuid::Uuid::new_v4().simple().to_string()[..12];
        let id = toolgate_protocol::file::file_id(&self.run_id, suffix);
        let ext = extension(mime);
        let path = format!("{FOLDER}/{id}.{ext}");
        let ws = Workspace::open(&self.workspace)?;
        ws.dir()
            .create_dir_all(FOLDER)
            .map_err(|e| Workspace::io_error("create the folder", FOLDER, e))?;
        let folder = ws
            .dir()
            .open_dir(FOLDER)
            .map_err(|e| Workspace::io_error("open the folder", FOLDER, e))?;
        ws.check_opened(&folder, FOLDER)?;
        let mut options = cap_std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        let mut file = folder
            .open_with(format!("{id}.{ext}"), &options)
            .map_err(|e| Workspace::io_error("create", &path, e))?
            .into_std();
        file.write_all(bytes)
            .map_err(|e| Workspace::io_error("write", &path, e))?;
        let name = name
            .map(plain_name)
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| format!("{id}.{ext}"));
        Ok(Part::File {
            path,
            mime: Some(mime.to_string()),
            id: Some(id),
            name: Some(name),
            bytes: Some(bytes.len() as u64),
        })
    }
}

/// A content type without its parameters, lower case: `application/pdf`.
pub fn essence(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// Whether a body of this type is text for the model.
pub fn is_textual(mime: &str) -> bool {
    let mime = essence(mime);
    mime.starts_with("text/")
        || ["json", "xml", "yaml", "javascript", "x-www-form-urlencoded"]
            .iter()
            .any(|t| mime.contains(t))
}

/// The file name a `Content-Disposition` header gives, if any.
///
/// ```
/// use toolgate_tool::files::disposition_name;
/// assert_eq!(disposition_name("attachment; filename=\"card.pdf\""), Some("card.pdf".into()));
/// assert_eq!(disposition_name("inline"), None);
/// ```
pub fn disposition_name(header: &str) -> Option<String> {
    header.split(';').find_map(|p| {
        let (k, v) = p.trim().split_once('=')?;
        (k.trim().eq_ignore_ascii_case("filename")).then(|| v.trim().trim_matches('"').to_string())
    })
}

/// A given name reduced to its last component, made of safe characters.
fn plain_name(name: &str) -> String {
    let last = name.rsplit(['/', '\\']).next().unwrap_or(name);
    let clean: String = last
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ' '))
        .take(120)
        .collect();
    clean.trim_start_matches('.').trim().to_string()
}

/// The extension a saved file of type `mime` gets.
fn extension(mime: &str) -> &'static str {
    match essence(mime).as_str() {
        "application/pdf" => "pdf",
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/svg+xml" => "svg",
        "application/zip" => "zip",
        "application/gzip" => "gz",
        "text/csv" => "csv",
        "text/plain" => "txt",
        "application/json" => "json",
        "audio/mpeg" => "mp3",
        "audio/wav" | "audio/x-wav" => "wav",
        "video/mp4" => "mp4",
        _ => "bin",
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn bodies_become_images_text_or_saved_files() {
        let dir = tempfile::tempdir().unwrap();
        let sink = FileSink::new(dir.path(), "run_ab12");
        let png = b"\x89PNG\r\n\x1a\n0000";
        assert!(
            matches!(sink.part(png, "image/png", None).unwrap(), Part::Image { mime, .. } if mime == "image/png")
        );
        assert!(matches!(
            sink.part(b"{}", "application/json; charset=utf-8", None)
                .unwrap(),
            Part::Text { .. }
        ));
        assert!(matches!(
            sink.part(b"plain", "", None).unwrap(),
            Part::Text { .. }
        ));
        let pdf = b"%PDF-1.4\n\xff\xfe binary";
        let Part::File {
            path,
            mime,
            id,
            name,
            bytes,
        } = sink
            .part(pdf, "application/pdf", Some("../../card.pdf"))
            .unwrap()
        else {
            panic!("not a file")
        };
        assert_eq!(mime.as_deref(), Some("application/pdf"));
        assert_eq!(name.as_deref(), Some("card.pdf"));
        assert_eq!(bytes, Some(pdf.len() as u64));
        let id = id.unwrap();
        assert_eq!(toolgate_protocol::file::run_of(&id), Some("run_ab12"));
        assert_eq!(path, format!("files/{id}.pdf"));
        assert_eq!(std::fs::read(dir.path().join(&path)).unwrap(), pdf);
        // Bytes that are not UTF-8 and have no type are a file too.
        assert!(
            matches!(sink.part(b"\xff\x00", "", None).unwrap(), Part::File { mime: Some(m), .. } if m == "application/octet-stream")
        );
    }
}
