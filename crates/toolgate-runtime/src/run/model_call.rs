//! One model request of a run: asked inside its `chat` span, timed, and counted (calls,
//! latency and tokens by model) once it answers or fails.

use tracing::Instrument;

use toolgate_model::{Model, ModelError, ModelReply, ModelRequest, ReplySink};
use toolgate_telemetry::{genai, metrics};

/// Asks `model`, streaming its text to `sink`.
pub(super) async fn ask(
    model: &dyn Model,
    request: ModelRequest<'_>,
    sink: &mut dyn ReplySink,
) -> Result<ModelReply, ModelError> {
    let span = genai::model_span(model.name());
    let started = std::time::Instant::now();
    let answer = model.complete(request, sink).instrument(span.clone()).await;
    let took = started.elapsed();
    match &answer {
        Ok(reply) => {
            genai::model_done(&span, Ok(&reply.usage));
            metrics::model_called(model.name(), Some(&reply.usage), took);
        }
        Err(e) => {
            genai::model_done(&span, Err(kind(e)));
            metrics::model_called(model.name(), None, took);
        }
    }
    answer
}

/// `error.type` for a model's failure.
fn kind(e: &ModelError) -> &'static str {
    match e {
        ModelError::Config(_) => "config",
        ModelError::Unavailable { .. } => "unavailable",
        ModelError::Rejected(_) => "rejected",
        ModelError::Exhausted(_) => "exhausted",
        ModelError::ContextExceeded(_) => "context_exceeded",
    }
}
