//! `Part`: one piece of a tool's output (text, JSON, an image, a link, a file), as
//! events, records and results carry it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One piece of a tool's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    Text {
        text: String,
    },
    Json {
        json: Value,
    },
    /// An image, as a URL or base64 data with its MIME type.
    Image {
        mime: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        url: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data: Option<String>,
    },
    Link {
        url: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
    /// A file the tool wrote or points to (a path in the workspace). A file saved from
    /// a binary result (a PDF an API answered, an MCP blob) also has an `id`, by which
    /// the client fetches it (`GET /v1/files/{id}`), its `name` and size.
    File {
        path: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bytes: Option<u64>,
    },
}
