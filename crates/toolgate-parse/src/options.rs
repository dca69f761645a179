//! How to parse: which dialect, strict or lenient, which tool schemas to coerce by.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::Arc;

use serde_json::Value;

/// The written forms of tool calls toolgate reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dialect {
    /// Every text dialect below, told apart call by call; for whole inputs given to
    /// [`crate::parse_input`], a chat.completion JSON or SSE recording too.
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
    /// GLM-4.5 / 4.6 / 4.7: `<tool_call>NAME<arg_key>k</arg_key><arg_value>v</arg_value></tool_call>`.
    Glm,
    /// Kimi K2: `<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>{..}<|tool_call_end|>..`.
    KimiK2,
    /// Kimi K3's XTML: `<|open|>call tool="NAME"<|sep|><|open|>argument key="K" type="string"<|sep|>v<|close|>argument<|sep|><|close|>call<|sep|>`.
    KimiK3,
    /// DeepSeek V3 / V3.1 (`<｜tool▁call▁begin｜>` ...), V3.2 / V4 / V4.1 DSML (`<｜DSML｜invoke name=..>`).
    DeepSeek,
    /// gpt-oss Harmony: `<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{..}<|call|>`.
    Harmony,
    /// Mistral: `[TOOL_CALLS][{"name": .., "arguments": {..}}]` and `[TOOL_CALLS]NAME[ARGS]{..}`.
    Mistral,
    /// Gemma 4: `<|tool_call>call:NAME{key:<|"|>v<|"|>,n:1}<tool_call|>`.
    Gemma4,
    /// IBM Granite 3.0: `<|tool_call|>[{"name": .., "arguments": {..}}]`.
    Granite,
    /// Tencent Hunyuan A13B: `<tool_calls>[{"name": .., "arguments": {..}}]</tool_calls>`.
    Hunyuan,
    /// LiquidAI LFM2: `<|tool_call_start|>[f(a=1)]<|tool_call_end|>`.
    Lfm2,
    /// Llama 3.x JSON: `<|python_tag|>{..}` and, by name only, a bare
    /// `{"name": .., "parameters": {..}}` at a line start.
    Llama3,
    /// Llama 4 / pythonic: `<|python_start|>[f(a=1)]<|python_end|>` and, by name only, a
    /// bare `[f(a=1, b="x")]` at a line start.
    Pythonic,
}

impl Dialect {
    pub const NAMES: &'static str = "auto, xml, hermes, qwen3-coder, invoke, openai, glm, kimi-k2, kimi-k3, deepseek, harmony, mistral, gemma4, granite, hunyuan, lfm2, llama3, pythonic (aliases: seed-oss reads as qwen3-coder, ernie as hermes)";

    pub(crate) fn allows_xml(self) -> bool {
        matches!(self, Dialect::Auto | Dialect::Xml | Dialect::OpenAi)
    }
    pub(crate) fn allows_hermes(self) -> bool {
        matches!(
            self,
            Dialect::Auto | Dialect::Hermes | Dialect::OpenAi | Dialect::Hunyuan
        )
    }
    pub(crate) fn allows_qwen(self) -> bool {
        matches!(self, Dialect::Auto | Dialect::Qwen3Coder | Dialect::OpenAi)
    }
    /// Formats framed by special tokens join `auto`; `dialect` itself allows its own.
    pub(crate) fn allows_special(self, dialect: Dialect) -> bool {
        self == dialect || matches!(self, Dialect::Auto | Dialect::OpenAi)
    }
    /// Whether prose is scanned for `[` and `{` too (Mistral's `[TOOL_CALLS]`, bare
    /// JSON and pythonic calls), not only `<`.
    pub(crate) fn scans_brackets(self) -> bool {
        self.allows_special(Dialect::Mistral) || matches!(self, Dialect::Llama3 | Dialect::Pythonic)
    }
    /// Dialects whose templates may put `<think>` in the prompt, so that the output
    /// starts mid-reasoning and holds only `</think>`: DeepSeek R1 / V3.1 / V3.2
    /// (thinking mode) and Kimi K2 Thinking. Text before a `</think>` that no `<think>`
    /// opened is reasoning.
    pub(crate) fn prompts_think(self) -> bool {
        matches!(self, Dialect::DeepSeek | Dialect::KimiK2)
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
            "hermes" | "qwen2.5" | "json" | "ernie" | "ernie4.5" | "ernie45" | "ernie-4.5" => {
                Dialect::Hermes
            }
            "qwen3-coder" | "qwen3coder" | "qwen3" | "qwen" | "seed-oss" | "seed_oss"
            | "seedoss" => Dialect::Qwen3Coder,
            "invoke" | "minimax" | "minimax-m2" => Dialect::Invoke,
            "glm" | "glm4" | "glm-4.5" | "glm-4.6" | "glm-4.7" | "glm45" | "glm47" => Dialect::Glm,
            "kimi" | "kimi-k2" | "kimi_k2" | "kimik2" => Dialect::KimiK2,
            "kimi-k3" | "kimi_k3" | "kimik3" | "k3" | "xtml" => Dialect::KimiK3,
            "deepseek" | "deepseek-v3" | "deepseekv3" | "deepseek-v3.1" | "deepseekv31"
            | "deepseek-v3.2" | "deepseekv32" | "dsml" | "deepseek-v4" | "deepseekv4"
            | "deepseek-v4.1" | "deepseekv41" => Dialect::DeepSeek,
            "harmony" | "gpt-oss" | "gpt_oss" | "gptoss" => Dialect::Harmony,
            "mistral" => Dialect::Mistral,
            "gemma4" | "gemma-4" | "gemma" => Dialect::Gemma4,
            "granite" | "granite3" | "granite-3" => Dialect::Granite,
            "hunyuan" | "hunyuan-a13b" | "hunyuan_a13b" => Dialect::Hunyuan,
            "lfm2" | "lfm" | "lfm2.5" => Dialect::Lfm2,
            "llama3" | "llama3_json" | "llama3-json" | "llama" => Dialect::Llama3,
            "pythonic" | "llama4" | "llama4_pythonic" | "llama4-pythonic" => Dialect::Pythonic,
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
    /// The prompt ended inside a `<think>` block (a template that opens it for the
    /// model): the output is reasoning up to its `</think>`, or to its end.
    pub reasoning_opened: bool,
}

impl Default for ParseOptions {
    fn default() -> Self {
        Self {
            dialect: Dialect::Auto,
            strict: false,
            schemas: Arc::new(Schemas::new()),
            id_prefix: Arc::from("call_"),
            reasoning_opened: false,
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
    pub fn with_reasoning_opened(mut self, opened: bool) -> Self {
        self.reasoning_opened = opened;
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
