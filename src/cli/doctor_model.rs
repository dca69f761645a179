//! `toolgate doctor --model URL_OR_SPEC`: asks a model server one probe question with
//! one tool, and says in which form the model answers (native `tool_calls`, a text
//! dialect, bare JSON, or prose) and what to put in the agent file for it.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use serde_json::{Value, json};
use toolgate::model::{Message, ModelReply, ModelSpec, OpenAiConfig, Providers, ReplySink};

use super::Failure;
use super::out::{self, print_json};

/// The probe's tool, in OpenAI's form.
fn probe_tool() -> Value {
    json!({"type": "function", "function": {
        "name": "get_weather",
        "description": "The current weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"], "additionalProperties": false},
    }})
}

/// How the model answered the probe.
#[derive(Debug, PartialEq, Eq)]
enum Form {
    Native,
    Text(&'static str),
    Prose,
}

impl Form {
    fn name(&self) -> &'static str {
        match self {
            Form::Native => "native tool_calls",
            Form::Text(form) => form,
            Form::Prose => "prose (no call)",
        }
    }

    /// What to write in the agent file for this form.
    fn advice(&self) -> &'static str {
        match self {
            Form::Native => "mode: native (no dialect: needed)",
            Form::Text("bare JSON") => {
                "mode: native with no dialect: (bare and fenced JSON calls are read), or dialect: llama3"
            }
            Form::Text(_) => "mode: native with no dialect: (calls in text are read with auto)",
            Form::Prose => {
                "the model wrote no call: start the server with its chat template's tool support (llama-server --jinja, vllm --enable-auto-tool-choice --tool-call-parser NAME), or use mode: xml"
            }
        }
    }
}

/// Sorts the reply into a form.
fn form_of(reply: &ModelReply) -> Form {
    if !reply.native.is_empty() {
        return Form::Native;
    }
    let mut schemas = toolgate::parse::Schemas::new();
    schemas.insert(
        "get_weather".into(),
        probe_tool()["function"]["parameters"].clone(),
    );
    let opts = toolgate::parse::ParseOptions::default().with_schemas(std::sync::Arc::new(schemas));
    let text = reply.content.trim();
    if !toolgate::parse::parse_text(text, &opts).calls.is_empty() {
        return Form::Text("a text dialect (auto reads it)");
    }
    let unfenced = text
        .trim_start_matches("```json")
        .trim_start_matches("```")
        .trim_end_matches("```")
        .trim();
    if unfenced.starts_with('{') && unfenced.contains("get_weather") {
        return Form::Text("bare JSON");
    }
    Form::Prose
}

/// Text and retries go nowhere: the probe prints its verdict only.
struct Quiet;

impl ReplySink for Quiet {
    fn text(&mut self, _: &str) {}
    fn retrying(&mut self, _: u32, _: Duration, _: &str) {}
}

/// The model a URL (an OpenAI-compatible server) or a spec (`openai:NAME`) names.
fn model_of(target: &str) -> Result<std::sync::Arc<dyn toolgate::model::Model>, Failure> {
    let mut config = OpenAiConfig::from_env();
    config.attempts = 1;
    let name = if target.starts_with("http://") || target.starts_with("https://") {
        config.base_url = Some(target.to_string());
        // Local servers serve the one model they loaded, whatever the name.
        "openai:local".to_string()
    } else {
        target.to_string()
    };
    let spec = ModelSpec {
        name,
        settings: Default::default(),
    };
    Providers::standard()
        .make(&spec, &config)
        .map_err(|e| Failure::bad_input(e.to_string()))
}

pub fn run(target: &str, as_json: bool) -> Result<ExitCode, Failure> {
    let model = model_of(target)?;
    let tools = [probe_tool()];
    let messages = [Message::user(
        "What is the weather in Paris right now? Use your tool.",
    )];
    let request = toolgate::model::ModelRequest {
        system: "You are a helpful assistant with tools. Call a tool when it helps.",
        messages: &messages,
        tools: &tools,
        response_format: None,
        tool_choice: None,
    };
    let reply = super::run::runtime()?
        .block_on(model.complete(request, &mut Quiet))
        .map_err(|e| Failure::other(format!("the model server did not answer the probe: {e}")))?;
    let form = form_of(&reply);
    let mut out = out::stdout();
    if as_json {
        let report = json!({
            "model": target,
            "form": form.name(),
            "agent_file": form.advice(),
            "truncated": reply.truncated,
            "reply": reply.content,
        });
        print_json(&mut out, &report, true)?;
    } else {
        let text = format!(
            "model: {target}\nanswers tool calls as: {}\nin the agent file: {}\n",
            form.name(),
            form.advice()
        );
        out.write_all(text.as_bytes()).map_err(out::write_failure)?;
    }
    Ok(if form == Form::Prose {
        super::exit::code(super::exit::FAILED)
    } else {
        ExitCode::SUCCESS
    })
}
