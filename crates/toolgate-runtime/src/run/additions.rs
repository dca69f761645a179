//! What a client adds to a run beyond its agent file (a Responses request): its own
//! tools and output format, kept in the run's state so that a resume in any process
//! has them, and images that go with the first message.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{RunError, RunState, Runner, workspace_of};
use crate::agent::Agent;
use toolgate_model::{self as model, ImagePart, Message};

/// What a client adds to a run beyond its agent file (a Responses request): its own
/// tools and output format, kept in the run's state, and images with the message.
/// `None` keeps what the run had (on a resume).
#[derive(Debug, Clone, Default)]
pub struct Additions {
    /// Replaces the run's client tools.
    pub tools: Option<Vec<toolgate_tool::ClientTool>>,
    /// Replaces the run's `response_format` (`Some(None)`: none from now on).
    pub response_format: Option<Option<Value>>,
    /// Images that go with the user's message (a start only).
    pub images: Vec<toolgate_model::ImagePart>,
}

impl Runner {
    /// The tools a run's client declared, as its state keeps them.
    pub async fn client_tools(
        &self,
        run_id: &str,
    ) -> Result<Vec<toolgate_tool::ClientTool>, RunError> {
        let (row, _) = self.store.run(run_id).await?;
        let state: RunState =
            self.opened(&row.state, &format!("run {}: its saved state", row.id))?;
        Ok(state.client_tools)
    }

    /// The workspace a run of `agent` started with `asked` (a server's `--workspace`)
    /// works in.
    pub fn workspace_for(
        asked: Option<&Path>,
        agent: &Agent,
        owner: Option<&toolgate_protocol::identity::RunOwner>,
    ) -> PathBuf {
        workspace_of(asked, agent, owner)
    }
}

/// A run's first user message: `text`, with `images` when the model takes them, else a
/// line for each saying it was left out.
pub(super) fn first_message(
    text: &str,
    images: Vec<ImagePart>,
    model_name: &str,
    agent: &Agent,
) -> Message {
    let mut first = Message::user(text);
    if model::image::accepts_images(model_name, agent.model_settings.vision) {
        first.images = images;
    } else {
        for image in &images {
            first.content.push('\n');
            first
                .content
                .push_str(&model::image::withheld(image, "the model reads text only"));
        }
    }
    first
}
