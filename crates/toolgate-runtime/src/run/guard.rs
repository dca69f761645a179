//! The policy around each call in the loop: `before_call` hooks as a turn's calls are
//! gated, the re-check against the policy of the moment right before an approved call
//! runs, and `after_result` hooks on what the model sees. Hooks fail closed.

use serde_json::{Map, Value};

use super::state::TurnCall;
use super::{Live, Runner};
use toolgate_parse::ToolCall;
use toolgate_protocol::ErrorKind;
use toolgate_tool::permission::{Gate, Who};
use toolgate_tool::policy::hooks::OnError;
use toolgate_tool::policy::{Before, HookRequest};

/// What the `before_call` hooks said about one call.
pub(super) enum Screen {
    /// Go on: with these arguments when a hook rewrote them, and held for a person
    /// (why) when a hook asked for one.
    Pass {
        arguments: Option<Map<String, Value>>,
        hold: Option<String>,
    },
    /// Refused: what the model reads (and the record says), and the record's error
    /// kind (`hook`: a hook said no; `hook_failed`: a hook gave no usable answer).
    Deny { told: String, kind: ErrorKind },
}

impl Screen {
    pub(super) fn pass() -> Screen {
        Screen::Pass {
            arguments: None,
            hold: None,
        }
    }
}

/// What the `after_result` hooks made of a result.
pub(super) struct After {
    /// What the model sees.
    pub shown: String,
    /// It is not what the tool returned.
    pub replaced: bool,
    /// A hook failed (the result is withheld then).
    pub failure: Option<String>,
}

/// What a hook of `call` receives: the call, and for whom it runs (tenant, user, run,
/// conversation).
fn hook_request<'a>(
    live: &'a Live,
    call: &'a ToolCall,
    hook: &'static str,
    arguments: &'a Map<String, Value>,
    result: Option<&'a str>,
) -> HookRequest<'a> {
    let whom = who(live);
    HookRequest {
        hook,
        tool: &call.name,
        arguments,
        agent: &live.agent.name,
        tenant: whom.tenant,
        user: (!whom.user.is_empty()).then_some(whom.user),
        run_id: &live.run_id,
        call_id: &call.id,
        conversation_id: &live.conversation_id,
        result,
    }
}

/// Who a call is for, as rules see it: the agent, and the run's owner (its tenant,
/// `default` when it names none, and the user who started it, empty when nobody is
/// named).
pub(super) fn who(live: &Live) -> Who<'_> {
    let owner = live.state.owner.as_ref();
    Who {
        agent: &live.agent.name,
        user: owner.and_then(|o| o.user.as_deref()).unwrap_or(""),
        tenant: owner.map_or(toolgate_protocol::identity::DEFAULT_TENANT, |o| {
            o.tenant.as_str()
        }),
    }
}

impl Runner {
    /// Asks the `before_call` hooks of `call` (the tool's, then the agent's), each
    /// seeing the arguments the one before left. Rewritten arguments are validated
    /// again; a failing hook denies or holds the call, as its `on_error` says.
    pub(super) async fn before_call(&self, live: &Live, call: &ToolCall) -> Screen {
        let hooks = live.toolkit.hooks(&call.name, false);
        let Ok(tool) = live.toolkit.resolve(&call.name) else {
            return Screen::pass();
        };
        if hooks.is_empty() {
            return Screen::pass();
        }
        let mut args = call.arguments.clone();
        let mut rewritten = false;
        let mut hold = None;
        for hook in hooks {
            let shown = tool.redact(&args);
            let request = hook_request(live, call, "before_call", &shown, None);
            let answer = match hook.before(&request).await {
                Ok(answer) => answer,
                Err(e) => {
                    tracing::warn!(call_id = %call.id, tool = %call.name, error = %e, "a hook failed; the call fails closed");
                    match hook.on_error {
                        OnError::Deny => {
                            return Screen::Deny {
                                told: format!("The call was not run: {e}, and hooks fail closed."),
                                kind: ErrorKind::HookFailed,
                            };
                        }
                        OnError::Confirm => {
                            hold.get_or_insert(format!("{e}; held for a person"));
                            continue;
                        }
                    }
                }
            };
            if let Some(new) = answer.arguments {
                // Secret values went out as [secret]; left so, they keep their values.
                let mut new = Value::Object(new);
                toolgate_tool::secrets::restore_masked(
                    &tool.spec.parameters,
                    &mut new,
                    &Value::Object(args.clone()),
                );
                let checked = match new {
                    Value::Object(new) => tool.check(new).map_err(|e| e.to_string()),
                    _ => Err("they are not an object".to_string()),
                };
                match checked {
                    Ok(checked) => {
                        args = checked;
                        rewritten = true;
                    }
                    Err(e) => {
                        return Screen::Deny {
                            told: format!(
                                "A before_call hook rewrote the arguments into ones the tool refuses ({e}); the call was not run."
                            ),
                            kind: ErrorKind::HookFailed,
                        };
                    }
                }
            }
            match answer.decision {
                Before::Allow => {}
                Before::Deny(reason) => {
                    return Screen::Deny {
                        told: reason
                            .map(|r| r.trim().to_string())
                            .filter(|r| !r.is_empty())
                            .unwrap_or_else(|| {
                                "A before_call hook denied this call; it was not run.".into()
                            }),
                        kind: ErrorKind::Hook,
                    };
                }
                Before::Confirm(reason) => {
                    hold.get_or_insert(format!(
                        "before_call hook: {}",
                        reason.as_deref().unwrap_or("asks for a person")
                    ));
                }
            }
        }
        Screen::Pass {
            arguments: rewritten.then_some(args),
            hold,
        }
    }

    /// Gates an approved call again, right before it runs, against the agent's and
    /// tool's policy of this moment (word, rules, hooks). `None`: it may run (with the
    /// arguments a hook left in `c`); otherwise what the model is told.
    pub(super) async fn recheck(&self, live: &Live, c: &mut TurnCall) -> Option<String> {
        let mut call = c.call.clone();
        if let Some(args) = &c.edited {
            call.arguments = args.clone();
        }
        if live.toolkit.resolve(&call.name).is_err() {
            return Some(format!(
                "The call was approved, but '{}' is no longer one of this agent's tools, so it was not run.",
                call.name
            ));
        }
        let verdict = Gate::judge(&live.toolkit, &call, &[], &who(live));
        match verdict.gate {
            Gate::Refuse => {
                return Some(format!(
                    "The call was approved, but the policy changed before it ran and now refuses it ({}); it was not run.",
                    verdict.reason.unwrap_or_default()
                ));
            }
            Gate::Client => {
                return Some(format!(
                    "The call was approved, but '{}' is now a client tool; it was not run here.",
                    call.name
                ));
            }
            Gate::Run | Gate::Approval => {}
        }
        match self.before_call(live, &call).await {
            Screen::Deny { told, .. } => Some(told),
            Screen::Pass {
                arguments: Some(args),
                ..
            } => {
                match &mut c.edited {
                    Some(edited) => *edited = args,
                    None => c.call.arguments = args,
                }
                None
            }
            Screen::Pass { .. } => None,
        }
    }

    /// Passes a call's result through its `after_result` hooks (the tool's, then the
    /// agent's). A hook that fails withholds the result from the model.
    pub(super) async fn after_result(&self, live: &Live, call: &ToolCall, result: String) -> After {
        let mut after = After {
            shown: result,
            replaced: false,
            failure: None,
        };
        let hooks = live.toolkit.hooks(&call.name, true);
        if hooks.is_empty() {
            return after;
        }
        let arguments = match live.toolkit.resolve(&call.name) {
            Ok(tool) => tool.redact(&call.arguments),
            Err(_) => call.arguments.clone(),
        };
        for hook in hooks {
            let request = hook_request(live, call, "after_result", &arguments, Some(&after.shown));
            match hook.after(&request).await {
                Ok(None) => {}
                Ok(Some(replacement)) => {
                    after.shown = replacement;
                    after.replaced = true;
                }
                Err(e) => {
                    tracing::warn!(call_id = %call.id, tool = %call.name, error = %e, "a hook failed; the result is withheld");
                    after.shown = format!(
                        "The tool ran, but its result is withheld: {e}, and hooks fail closed."
                    );
                    after.replaced = true;
                    after.failure = Some(e.to_string());
                    break;
                }
            }
        }
        after
    }
}
