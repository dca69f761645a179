//! The execution engine: one model turn's calls run as a batch, concurrently, within
//! the limits; results come back in call order; every call is recorded, and the batch
//! is reported done only once its records are committed. Timeouts, panics, unknown
//! tools and invalid arguments become error results with their kind, never a dead run.

mod cancel;
pub mod limits;
mod shares;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::Instrument;

use serde_json::{Map, Value};
use tokio::sync::mpsc::UnboundedSender;

pub use cancel::Cancel;
pub use limits::{Admission, LimitConfig, LimitError, Limiter, Metrics, Strategy};
pub use shares::{LimiterView, LimitsView, ProcessLimits, Slot, call_priority};

use toolgate_parse::ToolCall;
use toolgate_protocol::clock::now_ms;
use toolgate_protocol::{CallStatus, CallerKind, ErrorKind, Event};
use toolgate_store::CallRecord;
use toolgate_tool::DEFAULT_TIMEOUT;
use toolgate_tool::LoadedTool;
use toolgate_tool::ToolContext;
use toolgate_tool::ToolError;
use toolgate_tool::ToolOutput;

/// How the engine runs calls.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub limits: LimitConfig,
    /// For tools that set no timeout.
    pub default_timeout: Duration,
    /// The root for file tools.
    pub workspace: PathBuf,
    /// Where the tools' credentials come from (`None`: environment variables only).
    pub credentials: Option<toolgate_tool::Resolver>,
    /// For whom the calls run (tenant, user, run, conversation).
    pub context: std::sync::Arc<toolgate_tool::RunContext>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            limits: LimitConfig::default(),
            default_timeout: DEFAULT_TIMEOUT,
            workspace: PathBuf::from("."),
            credentials: None,
            context: Default::default(),
        }
    }
}

/// One call, resolved against a toolkit, with who it is for.
#[derive(Clone)]
pub struct PreparedCall {
    pub call: ToolCall,
    /// The tool, or why there is none (unknown tool: its error names the tools there are).
    pub tool: Result<Arc<LoadedTool>, ToolError>,
    pub conversation_id: String,
    pub run_id: Option<String>,
    pub agent: Option<String>,
    pub caller: CallerKind,
    /// Higher goes first under the `priority` strategy.
    pub priority: i32,
    /// A person approved it: it waits for a slot, whatever the queue bound.
    pub approved: bool,
}

/// How one call ended.
#[derive(Debug, Clone)]
pub struct CallOutcome {
    pub call_id: String,
    pub tool: String,
    pub status: CallStatus,
    pub result: Result<ToolOutput, ToolError>,
    /// What the caller records (with `run::commit_outcomes`, or in a run's save).
    pub record: CallRecord,
}

/// Runs calls; cheap to clone.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    config: EngineConfig,
    /// Where every call takes its slot.
    limits: Arc<ProcessLimits>,
    /// The agent's share inside `limits`, when its file sets `limits:`.
    share: Option<Arc<Limiter>>,
    /// Slots for the sub-agent runs this engine's run starts (category `subagent`).
    children: Arc<Limiter>,
    events: Option<UnboundedSender<Event>>,
}

impl Engine {
    /// An engine of its own: its calls pass `config.limits` alone. It sends events to
    /// `events`; it records nothing itself (its outcomes carry their records).
    pub fn new(config: EngineConfig, events: Option<UnboundedSender<Event>>) -> Self {
        let limits = ProcessLimits::new(config.limits.clone());
        Self::shared(config, limits, None, events)
    }

    /// An engine whose calls take their slots in the process's `limits`, and first in
    /// `share` (an agent's) when given. `config.limits` bounds the sub-agent runs its
    /// run starts at once (category `subagent`): those hold no call slot, so that a
    /// child's own calls never wait on the slot its parent holds.
    pub fn shared(
        config: EngineConfig,
        limits: Arc<ProcessLimits>,
        share: Option<Arc<Limiter>>,
        events: Option<UnboundedSender<Event>>,
    ) -> Self {
        let children = Limiter::new(config.limits.clone());
        Self {
            inner: Arc::new(Inner {
                config,
                limits,
                share,
                children,
                events,
            }),
        }
    }

    /// The process limiter's figures now.
    pub fn metrics(&self) -> Metrics {
        self.inner.limits.process().metrics()
    }

    /// The slots of the sub-agent runs this engine's run starts.
    pub fn children(&self) -> &Arc<Limiter> {
        &self.inner.children
    }

    /// Runs `calls` concurrently and returns their outcomes in call order, each with
    /// the record the caller commits. `cancel` stops what is still running or waiting;
    /// those calls end cancelled.
    pub async fn execute_batch(
        &self,
        calls: Vec<PreparedCall>,
        cancel: &Cancel,
    ) -> Vec<CallOutcome> {
        // The calls run concurrently inside this task, tools included (see
        // `LoadedTool::invoke`: panics caught, a dropped call stops its tool): no
        // hand-off between threads to start and collect them.
        futures_util::future::join_all(calls.into_iter().map(|call| {
            // A child of the caller's span (a run's turn).
            let span = toolgate_telemetry::genai::tool_span(
                &tracing::Span::current(),
                &call.call.id,
                &call.call.name,
            );
            // Boxed: the call's future is large.
            Box::pin(self.run_one(call, cancel).instrument(span))
        }))
        .await
    }

    /// Sends the event `make` builds, built only when someone listens.
    fn emit(&self, make: impl FnOnce() -> Event) {
        if let Some(tx) = &self.inner.events {
            let _ = tx.send(make());
        }
    }

    /// The tool's credentials, looked up off the async workers (a stored secret is a
    /// database read).
    async fn credentials(&self, tool: &LoadedTool) -> Result<Map<String, Value>, ToolError> {
        if tool.spec.credentials.is_empty() {
            return Ok(Map::new());
        }
        let resolver = self
            .inner
            .config
            .credentials
            .clone()
            .unwrap_or_else(toolgate_tool::Resolver::env_only);
        let (name, wanted) = (tool.spec.name.clone(), tool.spec.credentials.clone());
        tokio::task::spawn_blocking(move || resolver.resolve(&name, &wanted))
            .await
            .map_err(|e| ToolError::Execution(format!("the credential lookup stopped: {e}")))?
            .map_err(|e| ToolError::MissingCredential(e.to_string()))
    }

    async fn run_one(&self, prepared: PreparedCall, cancel: &Cancel) -> CallOutcome {
        let PreparedCall {
            call,
            tool,
            conversation_id,
            run_id,
            agent,
            caller,
            priority,
            approved,
        } = prepared;
        let admission = if caller == CallerKind::Workflow {
            Admission::Bypass
        } else if approved {
            Admission::Approved
        } else {
            Admission::Limited
        };
        let mut started_at = now_ms();
        let mut execution = Duration::ZERO;
        let ToolCall {
            id: call_id,
            name,
            arguments: call_arguments,
        } = call;
        let arguments;
        let category = tool.as_ref().ok().and_then(|t| t.spec.category.clone());
        // What the record must not hold in clear, even when the tool echoes it.
        let mut secrets = Vec::new();
        // Credential values: not even the model sees them, should the tool echo one.
        let mut credential_values = Vec::new();
        let result = match tool {
            Err(e) => {
                arguments = Value::Object(call_arguments);
                Err(e)
            }
            Ok(tool) => {
                arguments = Value::Object(tool.redact(&call_arguments));
                tool.secret_values(&call_arguments, &mut secrets);
                let injected = self.credentials(&tool).await;
                if let Ok(values) = &injected {
                    credential_values
                        .extend(values.values().filter_map(|v| v.as_str().map(String::from)));
                }
                let (limits, share) = (&self.inner.limits, self.inner.share.as_ref());
                let slot = match &injected {
                    Err(_) => None,
                    Ok(_) => tokio::select! {
                        p = limits.acquire(share, category.as_deref(), priority, admission) => Some(p),
                        _ = cancel.cancelled() => None,
                    },
                };
                match (slot, injected) {
                    (_, Err(e)) => Err(e),
                    (None, _) => Err(ToolError::Cancelled),
                    (Some(Err(LimitError::Rejected(why))), _) => Err(ToolError::Rejected(why)),
                    (Some(Ok(permit)), Ok(injected)) => {
                        // The call starts now that it has its slot: its record says so.
                        started_at = now_ms();
                        self.emit(|| Event::ToolStarted {
                            call_id: call_id.clone(),
                            tool: name.clone(),
                            conversation_id: conversation_id.clone(),
                        });
                        let mut ctx = ToolContext::new(self.inner.config.workspace.clone());
                        ctx.call_id = call_id.clone();
                        ctx.injected = injected;
                        ctx.default_timeout = self.inner.config.default_timeout;
                        ctx.run = std::sync::Arc::clone(&self.inner.config.context);
                        if let Some(tx) = &self.inner.events {
                            ctx = ctx.with_output(tx.clone());
                        }
                        let start = Instant::now();
                        let r = tokio::select! {
                            r = tool.invoke(&ctx, call_arguments) => r,
                            _ = cancel.cancelled() => Err(ToolError::Cancelled),
                        };
                        execution = start.elapsed();
                        drop(permit);
                        toolgate_telemetry::metrics::tool_ran(&name, execution);
                        limits.record_finished(
                            share,
                            category.as_deref(),
                            execution,
                            matches!(r, Err(ToolError::Timeout(_))),
                        );
                        r
                    }
                }
            }
        };
        let result = match result {
            Ok(out) if !credential_values.is_empty() => Ok(mask_output(out, &credential_values)),
            other => other,
        };
        let status = match &result {
            Ok(out) if out.is_error => CallStatus::Failed,
            Ok(_) => CallStatus::Succeeded,
            Err(ToolError::Timeout(_)) => CallStatus::Timeout,
            Err(ToolError::Cancelled) => CallStatus::Cancelled,
            Err(ToolError::ClientSide(_)) => CallStatus::Client,
            Err(_) => CallStatus::Failed,
        };
        let mut record = CallRecord {
            call_id: call_id.clone(),
            run_id,
            conversation_id,
            agent,
            caller,
            tool: name.clone(),
            arguments,
            result: None,
            result_size: 0,
            status,
            error_kind: None,
            error_message: None,
            started_at,
            duration_ms: execution.as_secs_f64() * 1000.0,
            replaced: false,
        };
        match &result {
            Ok(out) => {
                let text = out.to_text();
                record.set_result_text(match toolgate_tool::secrets::mask_values(&text, &secrets) {
                    std::borrow::Cow::Owned(masked) => masked,
                    std::borrow::Cow::Borrowed(_) => text,
                })
            }
            Err(e) => {
                record.error_kind = Some(e.kind());
                record.error_message = Some(
                    toolgate_tool::secrets::mask_values(&e.to_string(), &secrets).into_owned(),
                );
            }
        }
        toolgate_telemetry::genai::tool_done(
            &tracing::Span::current(),
            record.error_kind.map(ErrorKind::as_str),
            &record.arguments,
            record.result.as_deref(),
        );
        tracing::debug!(
            status = status.as_str(),
            duration_ms = record.duration_ms,
            error_kind = record.error_kind.map_or("", ErrorKind::as_str),
            "call finished"
        );
        self.emit(|| Event::ToolFinished {
            call_id: call_id.clone(),
            tool: name.clone(),
            status,
            duration_ms: record.duration_ms,
            error_kind: record.error_kind,
        });
        CallOutcome {
            call_id,
            tool: name,
            status,
            result,
            record,
        }
    }
}

/// A call ready for the engine: `tool` is what a toolkit resolved for it (or the
/// error that goes back to the model), recorded under `conversation_id`.
pub fn prepare(
    call: ToolCall,
    tool: Result<Arc<LoadedTool>, ToolError>,
    conversation_id: &str,
    caller: CallerKind,
) -> PreparedCall {
    PreparedCall {
        call,
        tool,
        conversation_id: conversation_id.to_string(),
        run_id: None,
        agent: None,
        caller,
        priority: 0,
        approved: false,
    }
}

/// A tool call built by a program (rather than parsed from a model's output).
pub fn call(id: &str, name: &str, arguments: Map<String, Value>) -> ToolCall {
    ToolCall {
        id: id.to_string(),
        name: name.to_string(),
        arguments,
    }
}

/// `out` with every occurrence of `values` in its text shown as `[secret]`.
fn mask_output(out: ToolOutput, values: &[String]) -> ToolOutput {
    let Ok(mut json) = serde_json::to_value(&out) else {
        return out;
    };
    mask_strings(&mut json, values);
    serde_json::from_value(json).unwrap_or(out)
}

fn mask_strings(v: &mut Value, values: &[String]) {
    match v {
        Value::String(s) => {
            if let std::borrow::Cow::Owned(m) = toolgate_tool::secrets::mask_values(s, values) {
                *s = m;
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| mask_strings(x, values)),
        Value::Object(o) => o.values_mut().for_each(|x| mask_strings(x, values)),
        _ => {}
    }
}
