//! A model with fallbacks (`fallback:` in an agent file): the primary is asked first;
//! when it keeps failing (every retry spent, or the server unreachable) the next one is
//! asked, in order, and the first answer wins.

use std::sync::Arc;
use std::time::Duration;

use super::{Model, ModelError, ModelReply, ModelRequest, ReplySink};

/// The primary model, then the fallbacks, tried in order.
pub struct FallbackModel {
    models: Vec<Arc<dyn Model>>,
}

impl FallbackModel {
    /// `models[0]` is the primary; an empty list is refused.
    pub fn new(models: Vec<Arc<dyn Model>>) -> Result<Self, ModelError> {
        if models.is_empty() {
            return Err(ModelError::Config("a fallback chain needs a model".into()));
        }
        Ok(Self { models })
    }
}

/// Whether the next model should be tried after this failure: the server kept
/// failing or refused with something the next provider may not (a rejected request
/// with a too-long context is the loop's business, not a fallback's).
fn falls_through(e: &ModelError) -> bool {
    matches!(e, ModelError::Unavailable { .. })
}

#[async_trait::async_trait]
impl Model for FallbackModel {
    fn name(&self) -> &str {
        self.models[0].name()
    }

    async fn complete(
        &self,
        request: ModelRequest<'_>,
        sink: &mut dyn ReplySink,
    ) -> Result<ModelReply, ModelError> {
        let mut last = None;
        for (i, model) in self.models.iter().enumerate() {
            match model.complete(request, sink).await {
                Ok(reply) => return Ok(reply),
                Err(e) if falls_through(&e) && i + 1 < self.models.len() => {
                    let next = self.models[i + 1].name();
                    tracing::warn!(model = model.name(), next, error = %e, "model kept failing; trying the fallback");
                    sink.retrying(
                        i as u32 + 1,
                        Duration::ZERO,
                        &format!("{} kept failing ({e}); trying {next}", model.name()),
                    );
                    last = Some(e);
                }
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or(ModelError::Config("no model was asked".into())))
    }
}
