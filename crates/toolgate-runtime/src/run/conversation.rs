//! What the model is sent besides the conversation: the system prompt (the agent's
//! instructions, plus the tool instructions in xml mode), the OpenAI tools array in
//! native mode, and the messages that give a turn's results back in call order.

use std::sync::OnceLock;

use serde_json::Value;

use crate::agent::{Agent, Mode};
use toolgate_model::Message;
use toolgate_protocol::CallStatus;
use toolgate_tool::Toolkit;
use toolgate_tool::prompt::{Prompts, ResultItem, openai_tools};

use super::state::{Phase, TurnCall};

fn prompts() -> Result<&'static Prompts, String> {
    static PROMPTS: OnceLock<Result<Prompts, String>> = OnceLock::new();
    PROMPTS
        .get_or_init(|| Prompts::new().map_err(|e| e.to_string()))
        .as_ref()
        .map_err(Clone::clone)
}

/// Why the system prompt could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromptError {
    /// The prompt templates do not load.
    #[error("{0}")]
    Templates(String),
    /// The tool instructions do not render.
    #[error("{0}")]
    Instructions(String),
}

/// The system prompt for `agent` with `toolkit`: its instructions, and in xml mode the
/// tool instructions after them.
pub fn system_prompt(agent: &Agent, toolkit: &Toolkit) -> Result<String, PromptError> {
    let mut system = agent.instructions.trim_end().to_string();
    let tools = toolkit.tools();
    if agent.mode == Mode::Xml && !tools.is_empty() {
        let refs: Vec<&toolgate_tool::LoadedTool> = tools.iter().map(|t| t.as_ref()).collect();
        let text = prompts()
            .map_err(PromptError::Templates)?
            .tool_instructions(&refs)
            .map_err(|e| PromptError::Instructions(e.to_string()))?;
        if !system.is_empty() {
            system.push_str("\n\n");
        }
        system.push_str(&text);
    }
    Ok(system)
}

/// The `tools` of a native-mode request (empty in xml mode).
pub fn tools(agent: &Agent, toolkit: &Toolkit) -> Vec<Value> {
    if agent.mode == Mode::Xml {
        return Vec::new();
    }
    let tools = toolkit.tools();
    let refs: Vec<&toolgate_tool::LoadedTool> = tools.iter().map(|t| t.as_ref()).collect();
    match openai_tools(&refs) {
        Value::Array(list) => list,
        _ => Vec::new(),
    }
}

/// The status word the model reads for a result.
fn status_word(status: CallStatus) -> &'static str {
    match status {
        CallStatus::Succeeded | CallStatus::Client => "ok",
        CallStatus::Denied => "denied",
        CallStatus::Timeout => "timeout",
        CallStatus::Cancelled => "cancelled",
        CallStatus::Failed => "error",
    }
}

/// The messages that return a turn's results, in call order: one tool message per call
/// (native), or one user message of `<tool_result>` blocks (xml). A call without a
/// result is answered with `unfinished`. With `cut` (a counter and a token limit), a
/// result over the limit is cut, with a marker saying how much was left out (and how
/// to read the rest, when the model has `read_result`).
/// Images a call's result carried go with its message when the model takes them
/// (`vision`) and they are under the size cap; otherwise a line of text says what was
/// left out.
pub(crate) fn results(
    mode: Mode,
    turn: &[TurnCall],
    unfinished: &str,
    cut: Option<(&toolgate_model::context::Counter, u64, bool)>,
    vision: bool,
) -> Vec<Message> {
    // Each call's text, and the images that go to the model.
    let shown = |c: &TurnCall| -> (String, Vec<toolgate_model::ImagePart>) {
        let mut text = match (&c.phase, cut) {
            (Phase::Done { output, .. }, Some((counter, limit, read_on))) => {
                toolgate_model::context::cut_result(counter, output, &c.call.id, limit, read_on)
            }
            (Phase::Done { output, .. }, None) => output.clone(),
            _ => unfinished.to_string(),
        };
        let mut images = Vec::new();
        for image in &c.images {
            let why = if !vision {
                Some("the model reads text only")
            } else if image.bytes() > toolgate_model::image::MAX_IMAGE_BYTES {
                Some("over the 5 MiB image cap")
            } else {
                None
            };
            match why {
                Some(why) => {
                    text.push('\n');
                    text.push_str(&toolgate_model::image::withheld(image, why));
                }
                None => images.push(image.clone()),
            }
        }
        (text, images)
    };
    let output = |c: &TurnCall| shown(c).0;
    match mode {
        Mode::Native => turn
            .iter()
            .map(|c| {
                let (text, images) = shown(c);
                let mut m = Message::tool(c.call.id.clone(), text);
                m.images = images;
                m
            })
            .collect(),
        Mode::Xml => {
            let items: Vec<ResultItem> = turn
                .iter()
                .map(|c| ResultItem {
                    call_id: c.call.id.clone(),
                    name: c.call.name.clone(),
                    status: match &c.phase {
                        Phase::Done { status, .. } => status_word(*status),
                        _ => "cancelled",
                    }
                    .to_string(),
                    output: output(c),
                })
                .collect();
            let text = match prompts()
                .and_then(|p| p.tool_results(&items).map_err(|e| e.to_string()))
            {
                Ok(text) => text,
                // The templates are built in; this only guards against a broken build.
                Err(_) => items
                    .iter()
                    .map(|i| format!("{} ({}): {}\n{}\n", i.name, i.call_id, i.status, i.output))
                    .collect(),
            };
            let mut m = Message::user(text);
            m.images = turn.iter().flat_map(|c| shown(c).1).collect();
            vec![m]
        }
    }
}
