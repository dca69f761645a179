//! The parser's case corpus, read by the CLI tests: the reader is the parser crate's
//! own (crates/toolgate-parse/tests/common), the tool files the corpus cases call are
//! toolgate's (tests/corpus/tools/).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

#[path = "../../crates/toolgate-parse/tests/common/mod.rs"]
mod cases;

pub use cases::*;

/// The tool files whose parameter schemas are the corpus's schemas.json.
pub fn tools_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/tools")
}
