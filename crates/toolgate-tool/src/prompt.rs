//! What a model is told about its tools: the XML tool instructions and the block that
//! returns results (minijinja templates from `prompts/`, built into the binary), and
//! the OpenAI `tools` array for native mode, all from the same specs.

use minijinja::syntax::SyntaxConfig;
use minijinja::value::Serde;
use minijinja::{Environment, context};
use serde::Serialize;
use serde_json::{Value, json};

use crate::{LoadedTool, Schema, ToolOutput};

const INSTRUCTIONS: &str = include_str!("../prompts/tool_instructions.j2");
const RESULTS: &str = include_str!("../prompts/tool_results.j2");

/// A template failed to render.
#[derive(Debug, thiserror::Error)]
#[error("prompt template {name}: {source}")]
pub struct PromptError {
    name: &'static str,
    #[source]
    source: minijinja::Error,
}

/// The prompt templates, compiled once.
pub struct Prompts {
    env: Environment<'static>,
}

/// One result handed back to the model.
#[derive(Debug, Clone, Serialize)]
pub struct ResultItem {
    pub call_id: String,
    pub name: String,
    /// `ok`, `error`, `denied`, ...
    pub status: String,
    pub output: String,
}

impl ResultItem {
    pub fn from_output(call_id: &str, name: &str, output: &ToolOutput) -> Self {
        Self {
            call_id: call_id.to_string(),
            name: name.to_string(),
            status: if output.is_error { "error" } else { "ok" }.to_string(),
            output: output.to_text(),
        }
    }
}

#[derive(Serialize)]
struct ToolView {
    name: String,
    description: String,
    params: Vec<ParamView>,
    example: String,
}

#[derive(Serialize)]
struct ParamView {
    name: String,
    r#type: String,
    required: bool,
    default: Option<String>,
    limits: Option<String>,
    description: Option<String>,
}

/// Writes `]]>` so that it survives inside CDATA.
pub fn cdata_escape(value: &str) -> String {
    value.replace("]]>", "]]]]><![CDATA[>")
}

impl Prompts {
    pub fn new() -> Result<Self, PromptError> {
        let mut env = Environment::new();
        let syntax = SyntaxConfig::builder()
            .trim_blocks(true)
            .build()
            .map_err(|source| PromptError {
                name: "syntax",
                source,
            })?;
        env.set_syntax(syntax);
        env.add_filter("cdata", |v: String| cdata_escape(&v));
        env.add_template("tool_instructions", INSTRUCTIONS)
            .map_err(|source| PromptError {
                name: "tool_instructions",
                source,
            })?;
        env.add_template("tool_results", RESULTS)
            .map_err(|source| PromptError {
                name: "tool_results",
                source,
            })?;
        Ok(Self { env })
    }

    /// The XML-mode instructions for `tools`: each tool, its parameters with types,
    /// required or default, and an example call.
    pub fn tool_instructions(&self, tools: &[&LoadedTool]) -> Result<String, PromptError> {
        let views: Vec<ToolView> = tools.iter().map(|t| view(t)).collect();
        self.render("tool_instructions", context! { tools => Serde(views) })
    }

    /// The block that returns results to the model in XML mode.
    pub fn tool_results(&self, results: &[ResultItem]) -> Result<String, PromptError> {
        self.render("tool_results", context! { results => Serde(results) })
    }

    fn render(&self, name: &'static str, ctx: minijinja::Value) -> Result<String, PromptError> {
        self.env
            .get_template(name)
            .and_then(|t| t.render(ctx))
            .map_err(|source| PromptError { name, source })
    }
}

fn view(tool: &LoadedTool) -> ToolView {
    let params = tool
        .schema
        .properties()
        .map(|(name, s)| ParamView {
            name: name.to_string(),
            r#type: type_text(s),
            required: tool.schema.is_required(name),
            default: s.default_value().map(Value::to_string),
            limits: limits(s),
            description: s.description().map(str::to_string),
        })
        .collect();
    ToolView {
        name: tool.spec.name.clone(),
        description: tool.spec.description.clone(),
        params,
        example: example_call(tool),
    }
}

fn type_text(s: &Schema) -> String {
    match (s.type_name().as_str(), s.item_schema()) {
        ("array", Some(items)) => format!("list of {}", items.type_name()),
        (t, _) => t.to_string(),
    }
}

/// `one of: "a", "b"`, `1 to 50`, `pattern ^https?://`.
fn limits(s: &Schema) -> Option<String> {
    let raw = s.raw();
    let mut parts = Vec::new();
    if let Some(values) = s.enum_values() {
        let list: Vec<String> = values.iter().map(Value::to_string).collect();
        parts.push(format!("one of: {}", list.join(", ")));
    }
    match (raw.get("minimum"), raw.get("maximum")) {
        (Some(a), Some(b)) => parts.push(format!("{a} to {b}")),
        (Some(a), None) => parts.push(format!("at least {a}")),
        (None, Some(b)) => parts.push(format!("at most {b}")),
        _ => {}
    }
    if let Some(p) = raw.get("pattern").and_then(Value::as_str) {
        parts.push(format!("matching {p}"));
    }
    if let Some(n) = raw.get("maxLength") {
        parts.push(format!("at most {n} characters"));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// A sample value of the right type, as it would be written in CDATA.
fn sample(s: &Schema) -> String {
    if let Some(first) = s.enum_values().and_then(|v| v.first()) {
        return text_of(first);
    }
    if let Some(d) = s.default_value() {
        return text_of(d);
    }
    let raw = s.raw();
    match s.type_name().split(" or ").next().unwrap_or("string") {
        "integer" => raw
            .get("minimum")
            .and_then(Value::as_i64)
            .unwrap_or(1)
            .to_string(),
        "number" => raw
            .get("minimum")
            .and_then(Value::as_f64)
            .map_or("1.5".into(), |m| m.to_string()),
        "boolean" => "true".into(),
        "array" => match s.item_schema() {
            Some(items) => format!("[{}]", json_sample(items)),
            None => "[]".into(),
        },
        "object" => "{}".into(),
        _ => raw
            .get("pattern")
            .and_then(Value::as_str)
            .filter(|p| p.contains("http"))
            .map_or("...".into(), |_| "https://example.com".into()),
    }
}

fn json_sample(s: &Schema) -> String {
    let text = sample(s);
    match s.type_name().as_str() {
        "string" => Value::String(text).to_string(),
        _ => text,
    }
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// An example call with the required parameters (or the first one, if none is).
fn example_call(tool: &LoadedTool) -> String {
    let mut params: Vec<(&str, &Schema)> = tool
        .schema
        .properties()
        .filter(|(n, _)| tool.schema.is_required(n))
        .collect();
    if params.is_empty() {
        params.extend(tool.schema.properties().take(1));
    }
    let mut out = format!(
        "<tool_call>\n  <name>{}</name>\n  <params>\n",
        tool.spec.name
    );
    for (name, s) in params {
        out.push_str(&format!(
            "    <{name}><![CDATA[{}]]></{name}>\n",
            cdata_escape(&sample(s))
        ));
    }
    out.push_str("  </params>\n</tool_call>");
    out
}

/// The OpenAI `tools` array (function definitions) for native mode.
pub fn openai_tools(tools: &[&LoadedTool]) -> Value {
    Value::Array(
        tools
            .iter()
            .map(|t| match crate::custom::format_of(&t.spec.parameters) {
                // A custom tool: its freeform input in its format.
                Some(format) => json!({
                    "type": "custom",
                    "custom": {
                        "name": t.spec.name,
                        "description": t.spec.description,
                        "format": format,
                    }
                }),
                None => json!({
                    "type": "function",
                    "function": {
                        "name": t.spec.name,
                        "description": t.spec.description,
                        "parameters": strip_extensions(&t.spec.parameters),
                    }
                }),
            })
            .collect(),
    )
}

/// The schema without toolgate's own keywords (`secret`), which OpenAI does not know.
fn strip_extensions(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| k.as_str() != "secret" && k.as_str() != crate::custom::MARKER)
                .map(|(k, v)| (k.clone(), strip_extensions(v)))
                .collect(),
        ),
        Value::Array(list) => Value::Array(list.iter().map(strip_extensions).collect()),
        other => other.clone(),
    }
}
