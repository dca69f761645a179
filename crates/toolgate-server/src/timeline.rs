//! A run's timeline for people (the inbox's run page): the messages it added, every
//! item it paused for with the decision and when it was made, and its call records,
//! with secret values shown as `[secret]`.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::AppState;
use super::error::{ApiError, ErrorBody, PathId};
use toolgate_protocol::{Decision, RequiredItem, RunObject};
use toolgate_runtime::run::run_object;
use toolgate_store::{PauseRow, PendingRow, PendingState, StoredCall, TimelineRows};
use toolgate_tool::secrets::{mask_stored, mask_tokens};

/// `GET /v1/runs/{id}/timeline`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Timeline {
    pub run: RunObject,
    /// The messages this run added to its conversation, in order.
    pub messages: Vec<TimelineMessage>,
    /// Every item the run paused for, in the order they were asked.
    pub pauses: Vec<Pause>,
    /// The run's call records, oldest first.
    pub calls: Vec<StoredCall>,
}

/// One message of the conversation.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TimelineMessage {
    /// Its position in the conversation, from 0.
    #[serde(default)]
    pub seq: i64,
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    #[serde(default)]
    pub content: String,
    /// What the model thought while writing an assistant message, block by block
    /// (`text`, and `start`/`end`: where it stood in the answer).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<Object>)]
    pub thinking: Vec<Value>,
    /// An assistant message's calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<MessageCall>,
    /// The call a tool message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// A compaction turn: the older messages this one replaced in later requests
    /// (`strategy`, `from`, `to`, `messages`, `tokens_before`, `tokens_after`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub compaction: Option<Value>,
    /// The prompt tokens of the request this message answered, as counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
}

/// A call as the model made it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct MessageCall {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub arguments: Value,
}

/// Where a paused item stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PauseState {
    /// Nobody has decided yet.
    Waiting,
    /// Decided; the run has not acted on it yet.
    Decided,
    /// The approved call is running.
    Executing,
    /// Acted on.
    Done,
}

/// One item a run paused for, and what was decided.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Pause {
    #[serde(flatten)]
    pub item: RequiredItem,
    pub state: PauseState,
    /// The decision, once made (edited arguments with secret values masked).
    pub decision: Option<Decision>,
    /// Unix milliseconds, once decided.
    pub decided_at: Option<i64>,
    /// Who decided: the caller's identity (an issued key's name, a JWT's subject,
    /// `api-key` or `local` for the server's one key or a server without keys), or
    /// `cli:USER` for the command line.
    pub decided_by: Option<String>,
    /// The id of the issued key it decided with.
    pub decided_by_key: Option<String>,
    /// The display name the person typed (`by`), kept beside the identity.
    pub decided_as: Option<String>,
}

/// A run's timeline: its messages, pauses and decisions, and call records.
#[utoipa::path(get, path = "/v1/runs/{id}/timeline", tag = "runs",
    params(("id" = String, Path, description = "A run id or a unique prefix")),
    responses((status = 200, body = Timeline), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, description = "The prefix names more than one run", body = ErrorBody),
        (status = 500, body = ErrorBody)))]
pub async fn timeline(
    State(state): State<Arc<AppState>>,
    super::scope::Caller(who): super::scope::Caller,
    PathId(id): PathId,
) -> Result<Json<Timeline>, ApiError> {
    let id = state.run_for(&who, &id).await?.id;
    let rows = state.runner.store.run_timeline(&id).await?;
    Ok(Json(build(rows)))
}

fn build(rows: TimelineRows) -> Timeline {
    let TimelineRows {
        run,
        messages,
        pauses,
        calls,
    } = rows;
    let pending: Vec<PendingRow> = pauses
        .iter()
        .map(|p| PendingRow {
            item: p.item.clone(),
            decision: p.decision.clone(),
            state: p.state,
        })
        .collect();
    Timeline {
        run: run_object(&run, &pending),
        messages: messages
            .into_iter()
            .filter_map(|(seq, text)| {
                let mut m: TimelineMessage = serde_json::from_str(&mask_stored(&text)).ok()?;
                m.seq = seq;
                Some(m)
            })
            .collect(),
        pauses: pauses.into_iter().map(pause).collect(),
        calls: calls
            .into_iter()
            .map(|mut c| {
                if let Some(r) = &c.record.result {
                    c.record.result = Some(mask_tokens(r).into_owned());
                }
                c
            })
            .collect(),
    }
}

fn pause(p: PauseRow) -> Pause {
    let decision = p.decision.map(|d| match d {
        Decision::Edit { arguments } => {
            let text = mask_stored(&Value::Object(arguments).to_string()).into_owned();
            Decision::Edit {
                arguments: match serde_json::from_str(&text) {
                    Ok(Value::Object(arguments)) => arguments,
                    _ => serde_json::Map::new(),
                },
            }
        }
        other => other,
    });
    Pause {
        item: p.item,
        state: match p.state {
            PendingState::Waiting => PauseState::Waiting,
            PendingState::Decided => PauseState::Decided,
            PendingState::Executing => PauseState::Executing,
            PendingState::Done => PauseState::Done,
        },
        decision,
        decided_at: p.decided_at,
        decided_by: p.decided_by,
        decided_by_key: p.decided_by_key,
        decided_as: p.decided_as,
    }
}
