//! Final tools (`final: true` in a tool file): once a turn's calls all have results,
//! a final tool that succeeded makes its output the run's answer, and the run ends
//! without another model turn.

use super::state::Phase;
use super::{Live, Runner};
use toolgate_model::Message;
use toolgate_protocol::{CallStatus, events};

/// The note a person's edit puts before a result (see the loop's `settle`).
const EDITED: &str = "(A person edited the arguments before approving;";

impl Runner {
    /// The answer a finished turn gives when a final tool succeeded in it: that tool's
    /// output (several: in call order, a blank line between). `None`: the loop goes on.
    /// A final tool that failed, was denied or timed out ends nothing: the model sees
    /// the result as usual.
    fn final_answer(&self, live: &Live) -> Option<String> {
        let outputs: Vec<&str> = live
            .state
            .turn
            .iter()
            .flatten()
            .filter(|c| {
                live.toolkit
                    .resolve(&c.call.name)
                    .is_ok_and(|t| t.spec.is_final)
            })
            .filter_map(|c| match &c.phase {
                Phase::Done {
                    status: CallStatus::Succeeded | CallStatus::Client,
                    output,
                } => Some(match (&c.edited, output.split_once('\n')) {
                    (Some(_), Some((note, rest))) if note.starts_with(EDITED) => rest,
                    _ => output.as_str(),
                }),
                _ => None,
            })
            .collect();
        (!outputs.is_empty()).then(|| outputs.join("\n\n"))
    }

    /// Ends a finished turn in which a final tool succeeded: the turn's results join
    /// the conversation, then the answer. `false` (nothing changed) when there is none.
    pub(super) fn final_answered(&self, live: &mut Live) -> bool {
        let Some(answer) = self.final_answer(live) else {
            return false;
        };
        let turn = live.state.turn.take().unwrap_or_default();
        let results = super::conversation::results(live.state.mode, &turn, "", None, false);
        live.state.messages.extend(results);
        self.answer_with(live, answer);
        true
    }

    /// Makes `answer` the run's output: the model's last word in the conversation (so
    /// that a later run in it sees the answer it gave), and one `text.delta`, so that
    /// whoever follows the run's text sees it too.
    pub(super) fn answer_with(&self, live: &mut Live, answer: String) {
        live.state
            .messages
            .push(Message::assistant(answer.clone(), Vec::new()));
        // A secret argument the tool echoed stays out of the event.
        let secrets = super::sealing::secrets_of(live);
        self.emit(events::TextDelta {
            run_id: live.run_id.clone(),
            text: toolgate_tool::secrets::mask_values(&answer, &secrets).into_owned(),
        });
        live.state.output = Some(answer);
    }
}
