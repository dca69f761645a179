//! The execution engine: one model turn's calls run as a batch, concurrently, within
//! the limits; results come back in call order; every call is recorded, and the batch
//! is reported done only once its records are committed. Timeouts, panics, unknown
//! tools and invalid arguments become error results with their kind, never a dead run.

mod cancel;
mod kept;
mod kept_store;
pub mod limits;
mod retry;
mod shares;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::Instrument;

use serde_json::{Map, Value};
use tokio::sync::mpsc::UnboundedSender;

pub use cancel::Cancel;
pub use kept_store::StoreCache;
pub use limits::{Admission, LimitConfig, LimitError, Limiter, Metrics, Strategy};
pub use shares::{LimiterView, LimitsView, ProcessLimits, Slot, call_priority};

use toolgate_parse::ToolCall;
use toolgate_protocol::clock::now_ms;
use toolgate_protocol::{CallStatus, CallerKind, ErrorKind, Event};
use toolgate_store::CallRecord;
use toolgate_tool::{DEFAULT_TIMEOUT, LoadedTool, ToolContext, ToolError, ToolOutput};

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
    /// Where tools that act for the user through OAuth get the user's tokens.
    pub oauth: Option<std::sync::Arc<dyn toolgate_tool::oauth::UserTokens>>,
    /// Where read-only tools' results are kept (`cache:`; `None`: never kept).
    pub cache: Option<std::sync::Arc<dyn toolgate_tool::cache::ResultCache>>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            limits: LimitConfig::default(),
            default_timeout: DEFAULT_TIMEOUT,
            workspace: PathBuf::from("."),
            credentials: None,
            context: Default::default(),
            oauth: None,
            cache: None,
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

    /// Runs one prepared call (its tool, or its error) and makes its outcome and record.
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
        let want = Want {
            category: tool.as_ref().ok().and_then(|t| t.spec.category.clone()),
            priority,
            admission: admission_of(caller, approved),
        };
        let started_at = now_ms();
        let ToolCall {
            id: call_id,
            name,
            arguments: call_arguments,
        } = call;
        // What the record must not hold in clear, even when the tool echoes it.
        let mut secrets = Vec::new();
        let (arguments, ran) = match tool {
            Err(e) => (
                Value::Object(call_arguments),
                Ran {
                    result: Err(e),
                    started_at: None,
                    execution: Duration::ZERO,
                    credential_values: Vec::new(),
                    attempts: Vec::new(),
                    cached: None,
                },
            ),
            Ok(tool) => {
                let arguments = Value::Object(tool.redact(&call_arguments));
                tool.secret_values(&call_arguments, &mut secrets);
                let who = CallIds {
                    call_id: &call_id,
                    name: &name,
                    conversation_id: &conversation_id,
                };
                let ran = self
                    .run_tool(&tool, &who, call_arguments, &want, cancel)
                    .await;
                (arguments, ran)
            }
        };
        let result = match ran.result {
            Ok(out) if !ran.credential_values.is_empty() => Ok(
                toolgate_tool::secrets::mask_output(out, &ran.credential_values),
            ),
            other => other,
        };
        let status = status_of(&result);
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
            started_at: ran.started_at.unwrap_or(started_at),
            duration_ms: ran.execution.as_secs_f64() * 1000.0,
            replaced: false,
            attempts: masked_attempts(ran.attempts, &secrets, &ran.credential_values),
            cached: ran.cached,
        };
        fill_record(&mut record, &result, &secrets);
        self.report_finished(&record);
        CallOutcome {
            call_id,
            tool: name,
            status,
            result,
            record,
        }
    }

    /// Runs a resolved tool: its credentials, a slot within the limits, then the call
    /// itself (each cut short by `cancel`).
    async fn run_tool(
        &self,
        tool: &Arc<LoadedTool>,
        who: &CallIds<'_>,
        call_arguments: Map<String, Value>,
        want: &Want,
        cancel: &Cancel,
    ) -> Ran {
        let kept = kept::Kept::plan(
            self.inner.config.cache.as_ref(),
            tool,
            &self.inner.config.context,
            &call_arguments,
        );
        if let Some(hit) = self.kept_result(kept.as_ref(), who).await {
            return hit;
        }
        // What a kept result must not hold in clear: the call's secret arguments (a
        // tool declared safe to cache with them may echo one) and its credentials.
        let mut hidden = Vec::new();
        if kept.is_some() {
            tool.secret_values(&call_arguments, &mut hidden);
        }
        let mut started_at = None;
        let mut execution = Duration::ZERO;
        let mut attempts = Vec::new();
        // Credential values: not even the model sees them, should the tool echo one.
        let mut credential_values = Vec::new();
        let injected = self.credentials(tool).await;
        if let Ok(values) = &injected {
            credential_values.extend(values.values().filter_map(|v| v.as_str().map(String::from)));
        }
        let (limits, share) = (&self.inner.limits, self.inner.share.as_ref());
        let category = want.category.as_deref();
        let slot = match &injected {
            Err(_) => None,
            Ok(_) => tokio::select! {
                p = limits.acquire(share, category, want.priority, want.admission) => Some(p),
                _ = cancel.cancelled() => None,
            },
        };
        let result = match (slot, injected) {
            (_, Err(e)) => Err(e),
            (None, _) => Err(ToolError::Cancelled),
            (Some(Err(LimitError::Rejected(why))), _) => Err(ToolError::Rejected(why)),
            (Some(Ok(permit)), Ok(injected)) => {
                // The call starts now that it has its slot: its record says so.
                started_at = Some(now_ms());
                self.emit(|| Event::ToolStarted {
                    call_id: who.call_id.to_string(),
                    tool: who.name.to_string(),
                    conversation_id: who.conversation_id.to_string(),
                });
                let mut ctx = ToolContext::new(self.inner.config.workspace.clone());
                ctx.call_id = who.call_id.to_string();
                ctx.injected = injected;
                ctx.default_timeout = self.inner.config.default_timeout;
                ctx.run = std::sync::Arc::clone(&self.inner.config.context);
                ctx.user_tokens = self.inner.config.oauth.clone();
                if let Some(tx) = &self.inner.events {
                    ctx = ctx.with_output(tx.clone());
                }
                let start = Instant::now();
                let tried = retry::invoke(tool, &ctx, call_arguments, cancel).await;
                let r = tried.result;
                attempts = tried.attempts;
                execution = start.elapsed();
                drop(permit);
                toolgate_telemetry::metrics::tool_ran(who.name, execution);
                limits.record_finished(
                    share,
                    category,
                    execution,
                    matches!(r, Err(ToolError::Timeout(_))),
                );
                r
            }
        };
        if let Some(kept) = &kept {
            toolgate_telemetry::metrics::tool_cache(who.name, false);
            if let Ok(out) = &result {
                hidden.extend(credential_values.iter().cloned());
                let masked = toolgate_tool::secrets::mask_output(out.clone(), &hidden);
                kept.put(who.name, &masked).await;
            }
        }
        Ran {
            result,
            started_at,
            execution,
            credential_values,
            attempts,
            cached: kept.map(|_| false),
        }
    }

    /// The call's kept result, as a call that started and finished at once.
    async fn kept_result(&self, kept: Option<&kept::Kept>, who: &CallIds<'_>) -> Option<Ran> {
        let output = kept?.get().await?;
        toolgate_telemetry::metrics::tool_cache(who.name, true);
        self.emit(|| Event::ToolStarted {
            call_id: who.call_id.to_string(),
            tool: who.name.to_string(),
            conversation_id: who.conversation_id.to_string(),
        });
        Some(Ran {
            result: Ok(output),
            started_at: Some(now_ms()),
            execution: Duration::ZERO,
            credential_values: Vec::new(),
            attempts: Vec::new(),
            cached: Some(true),
        })
    }

    /// Tells the span, the log and the event stream that a call finished.
    fn report_finished(&self, record: &CallRecord) {
        toolgate_telemetry::genai::tool_done(
            &tracing::Span::current(),
            record.error_kind.map(ErrorKind::as_str),
            &record.arguments,
            record.result.as_deref(),
        );
        tracing::debug!(
            status = record.status.as_str(),
            duration_ms = record.duration_ms,
            error_kind = record.error_kind.map_or("", ErrorKind::as_str),
            "call finished"
        );
        self.emit(|| Event::ToolFinished {
            call_id: record.call_id.clone(),
            tool: record.tool.clone(),
            status: record.status,
            duration_ms: record.duration_ms,
            error_kind: record.error_kind,
        });
    }
}

/// Who a call is, for its events and its context.
struct CallIds<'a> {
    call_id: &'a str,
    name: &'a str,
    conversation_id: &'a str,
}

/// What a call asks of the limits: its category, priority and admission.
struct Want {
    category: Option<String>,
    priority: i32,
    admission: Admission,
}

/// What running a tool gave.
struct Ran {
    result: Result<ToolOutput, ToolError>,
    /// When it got its slot and started (`None`: it never did).
    started_at: Option<i64>,
    /// How long the tool itself ran.
    execution: Duration,
    /// The credentials injected into it, masked in its output.
    credential_values: Vec<String>,
    /// Its tries, when its retry policy tried it more than once.
    attempts: Vec<toolgate_store::Attempt>,
    /// For a tool that keeps results: whether this one came from the cache.
    cached: Option<bool>,
}

/// `attempts` with the call's secret values and credentials shown as `[secret]`.
fn masked_attempts(
    mut attempts: Vec<toolgate_store::Attempt>,
    secrets: &[String],
    credentials: &[String],
) -> Vec<toolgate_store::Attempt> {
    let hidden: Vec<String> = secrets.iter().chain(credentials).cloned().collect();
    for a in &mut attempts {
        if let Some(e) = &mut a.error {
            *e = toolgate_tool::secrets::mask_values(e, &hidden).into_owned();
        }
    }
    attempts
}

/// How a call is admitted: workflows past the limits, approved calls to wait for a
/// slot whatever the queue bound, the rest limited.
fn admission_of(caller: CallerKind, approved: bool) -> Admission {
    if caller == CallerKind::Workflow {
        Admission::Bypass
    } else if approved {
        Admission::Approved
    } else {
        Admission::Limited
    }
}

/// The status a call's result gives it.
fn status_of(result: &Result<ToolOutput, ToolError>) -> CallStatus {
    match result {
        Ok(out) if out.is_error => CallStatus::Failed,
        Ok(_) => CallStatus::Succeeded,
        Err(ToolError::Timeout(_)) => CallStatus::Timeout,
        Err(ToolError::Cancelled) => CallStatus::Cancelled,
        Err(ToolError::ClientSide(_)) => CallStatus::Client,
        Err(_) => CallStatus::Failed,
    }
}

/// Puts the result (its `secrets` masked) or the error into the call's record.
fn fill_record(
    record: &mut CallRecord,
    result: &Result<ToolOutput, ToolError>,
    secrets: &[String],
) {
    match result {
        Ok(out) => {
            let text = out.to_text();
            record.set_result_text(match toolgate_tool::secrets::mask_values(&text, secrets) {
                std::borrow::Cow::Owned(masked) => masked,
                std::borrow::Cow::Borrowed(_) => text,
            })
        }
        Err(e) => {
            record.error_kind = Some(e.kind());
            record.error_message =
                Some(toolgate_tool::secrets::mask_values(&e.to_string(), secrets).into_owned());
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
