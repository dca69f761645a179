//! How to parse: which dialect, strict or lenient, which tool schemas to coerce by.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::Arc;

use serde_json::Value;

/// The written forms of tool calls toolgate reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dialect {
    /// Every text dialect below, told apart call by call; for whole inputs given to
    /// [`crate::parse::parse_input`], a chat.completion JSON or SSE recording too.
    #[default]
    Auto,
    /// `<tool_call><name>..</name><params><k><![CDATA[v]]></k></params></tool_call>`.
    Xml,
    /// Hermes / Qwen2.5: `<tool_call>{"name": .., "arguments": {..}}</tool_call>`.
    Hermes,
    /// Qwen3-coder: `<tool_call><function=NAME><parameter=K>v</parameter></function></tool_call>`.
    Qwen3Coder,
    /// `<invoke name=".."><parameter name="..">v</parameter></invoke>`.
    Invoke,
    /// Native OpenAI `tool_calls`: a chat.completion JSON or a recorded SSE stream.
    OpenAi,
}

impl Dialect {
    pub const NAMES: &'static str = "auto, xml, hermes, qwen3-coder, invoke, openai";

    pub(crate) fn allows_xml(self) -> bool {
        matches!(self, Dialect::Auto | Dialect::Xml | Dialect::OpenAi)
    }
    pub(crate) fn allows_hermes(self) -> bool {
        matches!(self, Dialect::Auto | Dialect::Hermes | Dialect::OpenAi)
    }
    pub(crate) fn allows_qwen(self) -> bool {
        matches!(self, Dialect::Auto | Dialect::Qwen3Coder | Dialect::OpenAi)
    }
    pub(crate) fn allows_invoke(self) -> bool {
        matches!(self, Dialect::Auto | Dialect::Invoke | Dialect::OpenAi)
    }
}

impl FromStr for Dialect {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "auto" => Dialect::Auto,
            "xml" | "cdata" => Dialect::Xml,
            "hermes" | "qwen2.5" | "json" => Dialect::Hermes,
            "qwen3-coder" | "qwen3coder" | "qwen3" | "qwen" => Dialect::Qwen3Coder,
            "invoke" => Dialect::Invoke,
            "openai" | "native" => Dialect::OpenAi,
            other => {
                return Err(format!(
                    "unknown dialect '{other}' (one of: {})",
                    Self::NAMES
                ));
            }
        })
    }
}

/// Tool name -> the JSON Schema object of its parameters.
pub type Schemas = HashMap<String, Value>;

/// Options for one parse. Cheap to clone: the schemas are shared.
#[derive(Debug, Clone)]
pub struct ParseOptions {
    pub dialect: Dialect,
    /// Report structural faults and drop the calls that have them, instead of recovering.
    pub strict: bool,
    /// Parameter schemas of the known tools, for coercion.
    pub schemas: Arc<Schemas>,
    /// Generated call ids are this prefix followed by a counter (`call_1`, `call_2`, ...).
    pub id_prefix: Arc<str>,
}

impl Default for ParseOptions {
    fn default() -> Self {
        Self {
            dialect: Dialect::Auto,
            strict: false,
            schemas: Arc::new(Schemas::new()),
            id_prefix: Arc::from("call_"),
        }
    }
}

impl ParseOptions {
    pub fn with_dialect(mut self, dialect: Dialect) -> Self {
        self.dialect = dialect;
        self
    }
    pub fn with_strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }
    pub fn with_schemas(mut self, schemas: Arc<Schemas>) -> Self {
        self.schemas = schemas;
        self
    }
    pub fn with_id_prefix(mut self, prefix: impl AsRef<str>) -> Self {
        self.id_prefix = Arc::from(prefix.as_ref());
        self
    }

    /// The parameter schema of `tool`, if it is known.
    pub fn schema(&self, tool: &str) -> Option<&Value> {
        self.schemas.get(tool)
    }
}
