//! The parser's integration tests in one binary: the case corpus (tests/corpus/*.json),
//! the peers' conformance cases and the dialects' own (tests/corpus/conformance/,
//! tests/corpus/dialects/), the API beyond the corpus, and the stream properties.
#![allow(clippy::unwrap_used, clippy::expect_used)]

/// The corpus folder, relative to this package (read by `common`).
const CORPUS: &str = "tests/corpus";

mod common;

mod conformance;
mod corpus;
mod cut_calls;
mod parse_api;
mod planted_markers;
mod stream_props;
