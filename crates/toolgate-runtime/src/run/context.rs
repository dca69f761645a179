//! The context budget in the loop: each request's prompt is counted (every message once,
//! as the history grows), and when the next one would pass the budget, or the model
//! said the last one did, the oldest turns are compacted: summarized by the model in a
//! request of its own, or dropped. The compaction is a message appended to the history
//! (see `context::view`), announced as `context.compacted`, counted in the usage.

use std::time::Duration;

use serde_json::Value;

use super::{Live, RunError, Runner};
use crate::agent::Agent;
use toolgate_model::context::{
    Budget, Compaction, Counter, PER_MESSAGE, Plan, Strategy, message_tokens, plan, transcript,
    view,
};
use toolgate_model::{Message, ModelRequest, ReplySink};
use toolgate_protocol::{Usage, events};

/// The instructions of a summary request.
pub const SUMMARY_INSTRUCTIONS: &str = "You compact the history of an agent's work so that it can go on within its context window. Summarize the conversation below: keep the task, the decisions made, the facts and results found (with the file names, ids and numbers that matter), what was done and what is left to do. Write plain text, without a preamble.";

/// Tokens kept for the compaction message when the tail to keep is chosen.
const NOTE_TOKENS: u64 = 400;

/// A run's budget while it is driven, with its token counts.
pub(super) struct ContextLive {
    pub budget: Budget,
    pub counter: Counter,
    /// Whether the model takes the images tools return.
    pub vision: bool,
    /// The tokens of each history message, by position, as far as counted.
    counts: Vec<u64>,
    /// The tokens of the system prompt and the tools.
    fixed: u64,
}

/// A request's messages, fitted to the budget.
pub(super) struct Fitted {
    /// The messages to send, when they are not the history as it is.
    pub messages: Option<Vec<Message>>,
    /// The prompt's tokens, as counted.
    pub tokens: u64,
}

impl ContextLive {
    pub fn new(agent: &Agent, model: &str, system: &str, tools: &[Value]) -> Self {
        let counter = Counter::for_model(model);
        let budget = Budget::resolve(
            agent.context.as_ref(),
            model,
            agent.model_settings.max_tokens,
        );
        let tools_tokens = if tools.is_empty() {
            0
        } else {
            counter.count(&Value::Array(tools.to_vec()).to_string())
        };
        Self {
            budget,
            counter,
            vision: toolgate_model::image::accepts_images(model, agent.model_settings.vision),
            counts: Vec::new(),
            fixed: counter.count(system) + PER_MESSAGE + tools_tokens,
        }
    }

    /// Counts the messages not counted yet.
    fn count(&mut self, messages: &[Message]) {
        for m in &messages[self.counts.len().min(messages.len())..] {
            self.counts.push(message_tokens(&self.counter, m));
        }
    }

    fn total(&self, view: &[usize]) -> u64 {
        self.fixed + view.iter().map(|&i| self.counts[i]).sum::<u64>()
    }
}

/// A sink for a summary request: its text is nobody's to see.
struct Quiet;

impl ReplySink for Quiet {
    fn text(&mut self, _: &str) {}
    fn retrying(&mut self, _: u32, _: Duration, _: &str) {}
}

impl Runner {
    /// The next request's messages: the history with its last compaction applied,
    /// compacted once more first when it would pass the budget (or when `force`: the
    /// model said the last request was too long).
    pub(super) async fn fit(
        &self,
        live: &mut Live,
        ctx: &mut ContextLive,
        force: bool,
    ) -> Result<Fitted, RunError> {
        ctx.count(&live.state.messages);
        let mut v = view(&live.state.messages);
        let mut tokens = ctx.total(&v);
        // Told the request was too long, the count is not to be trusted: aim for half.
        let target = if force {
            ctx.budget.compaction_target().min(tokens / 2)
        } else {
            ctx.budget.compaction_target()
        };
        if (force || tokens > ctx.budget.prompt_limit())
            && let Some(p) = plan(
                &live.state.messages,
                &v,
                &ctx.counts,
                ctx.fixed,
                NOTE_TOKENS.min(target / 4),
                target,
            )
        {
            self.compact(live, ctx, &v, p, tokens).await;
            ctx.count(&live.state.messages);
            v = view(&live.state.messages);
            tokens = ctx.total(&v);
        }
        let messages = (v.len() != live.state.messages.len())
            .then(|| v.iter().map(|&i| live.state.messages[i].clone()).collect());
        Ok(Fitted { messages, tokens })
    }

    /// Replaces `view[plan.start..plan.end]` with a compaction message.
    async fn compact(&self, live: &mut Live, ctx: &ContextLive, v: &[usize], p: Plan, before: u64) {
        let positions = &v[p.start..p.end];
        let replaced: u64 = positions.iter().map(|&i| ctx.counts[i]).sum();
        let mut strategy = ctx.budget.strategy;
        let mut usage = Usage {
            compactions: 1,
            ..Usage::default()
        };
        let mut prompt_tokens = None;
        let mut content = None;
        if strategy == Strategy::Summarize {
            match self.summarize(live, ctx, positions).await {
                Ok((text, used, asked)) => {
                    usage.add(used);
                    prompt_tokens = Some(asked);
                    content = Some(format!(
                        "[A summary of {} earlier messages, compacted to fit the context window]\n{text}",
                        positions.len()
                    ));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "the summary request failed; dropping the oldest turns instead");
                    strategy = Strategy::Truncate;
                }
            }
        }
        let content = content.unwrap_or_else(|| {
            format!(
                "[{} earlier messages were dropped to fit the context window. Results of the calls made then can still be read with read_result when the tool is available.]",
                positions.len()
            )
        });
        let note_tokens = PER_MESSAGE + ctx.counter.count(&content);
        let after = before.saturating_sub(replaced) + note_tokens;
        let mut note = Message::user(content);
        note.prompt_tokens = prompt_tokens;
        note.compaction = Some(Compaction {
            strategy,
            from: p.from,
            to: p.to,
            messages: positions.len(),
            tokens_before: before,
            tokens_after: after,
        });
        tracing::info!(
            strategy = strategy.as_str(),
            messages = positions.len(),
            before,
            after,
            "context compacted"
        );
        live.state.messages.push(note);
        self.spent(live, usage);
        self.emit(events::ContextCompacted {
            run_id: live.run_id.clone(),
            strategy: strategy.as_str().into(),
            messages: positions.len(),
            tokens_before: before,
            tokens_after: after,
        });
    }

    /// Asks the model for a summary of the messages at `positions`: the text, the
    /// usage, and the request's prompt tokens.
    async fn summarize(
        &self,
        live: &Live,
        ctx: &ContextLive,
        positions: &[usize],
    ) -> Result<(String, Usage, u64), String> {
        let mut text = transcript(&live.state.messages, positions);
        // The transcript itself must fit: its beginning (the oldest turns) is kept.
        let room = ctx.budget.prompt_limit() / 2;
        if let Some(at) = ctx.counter.cut_at(&text, room) {
            text.truncate(at);
            text.push_str("\n[the rest of the transcript was left out]");
        }
        let asked =
            ctx.counter.count(SUMMARY_INSTRUCTIONS) + ctx.counter.count(&text) + 2 * PER_MESSAGE;
        let messages = [Message::user(text)];
        let request = ModelRequest {
            system: SUMMARY_INSTRUCTIONS,
            messages: &messages,
            tools: &[],
            response_format: None,
            tool_choice: None,
        };
        let reply = super::model_call::ask(&*live.model, request, &mut Quiet)
            .await
            .map_err(|e| e.to_string())?;
        let summary = reply.content.trim();
        if summary.is_empty() {
            return Err("the model answered the summary request with no text".into());
        }
        Ok((summary.to_string(), reply.usage, asked))
    }
}
