//! The OpenAPI source: `openapi:` files bring one tool per operation; the documents they
//! read, when kept in the tools folder, bring none; a document kept outside the folder
//! is watched beside it.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Kind, document, kind, load};
use toolgate_tool::source::{Claim, Found, ToolSource};

/// The source's name in its tools' origin.
pub const NAME: &str = "openapi";

/// `openapi:` files and the documents they read.
pub struct OpenApiFiles;

impl ToolSource for OpenApiFiles {
    fn name(&self) -> &'static str {
        NAME
    }

    fn claims(&self, _path: &Path, text: &str) -> Claim {
        match kind(text) {
            Some(Kind::Source) => Claim::Tools,
            Some(Kind::Document) => Claim::Skip,
            None => Claim::Not,
        }
    }

    fn load(&self, path: &Path, _text: &str) -> Found {
        load(path).into()
    }

    /// The document an `openapi:` file names by path, when it is not in the file's own
    /// folder (which is watched already).
    fn watches(&self, path: &Path, text: &str) -> Vec<PathBuf> {
        let dir = path.parent().unwrap_or(Path::new("."));
        let named = document::parse_text(text).ok().and_then(|v| {
            v.get("openapi")
                .and_then(Value::as_str)
                .map(|p| dir.join(p))
        });
        named
            .filter(|doc| doc.parent() != Some(dir))
            .into_iter()
            .collect()
    }
}
