//! Approval that fits the risk, in process: the scenario table (tool x rule x arguments
//! x decision x policy change -> outcome, each row named), hooks that fail closed
//! (crash, timeout, bad JSON, slow HTTP) and what they may change, standing approvals
//! that end when the policy gets stricter, and deadlines.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::serving;

use std::time::Duration;

use serde_json::{Value, json};
use tempfile::TempDir;
use toolgate::agent::Agent;
use toolgate::protocol::{Decision, RunObject, RunStatus};
use toolgate::run::{RunError, Runner, StartRun};
use toolgate::store::{CallQuery, Refusal, Store, StoredCall};

/// The tool every row calls: a command that answers with the arguments it got.
const TRANSFER: &str = "name: transfer\ndescription: Moves money.\nparameters:\n  type: object\n  properties:\n    to: {type: string}\n    amount: {type: number}\n    memo: {type: string}\n  required: [to, amount]\nentry: {type: command, command: sh, args: [-c, \"cat; echo\"]}\n";

/// The rules of the example.
const RULES: &str = "{deny_if: \"args.to.startsWith('ext:') && args.amount > 10000\", confirm_if: \"args.amount > 1000\", otherwise: auto}";

struct World {
    dir: TempDir,
    runner: Runner,
}

impl World {
    /// An agent `finance` with `transfer` (its tool file's `permission:` set to
    /// `tool_permission` when given), the agent's entry for it `permission` (none when
    /// empty), `extra` agent settings, and a model that calls it once with `args`.
    fn new(tool_permission: Option<&str>, permission: &str, extra: &str, args: &Value) -> World {
        let dir = tempfile::tempdir().unwrap();
        for d in ["tools", "ws", "hooks"] {
            std::fs::create_dir(dir.path().join(d)).unwrap();
        }
        let tool = match tool_permission {
            Some(p) => format!("{TRANSFER}permission: {p}\n"),
            None => TRANSFER.to_string(),
        };
        std::fs::write(dir.path().join("tools/transfer.yaml"), tool).unwrap();
        std::fs::write(
            dir.path().join("replies.yaml"),
            format!(
                "replies:\n  - content: Paying.\n    tool_calls: [{{id: call_pay, name: transfer, arguments: {args}}}]\n  - content: Done.\n  - content: Done again.\n"
            ),
        )
        .unwrap();
        let w = World {
            runner: Runner::new(
                Store::open(dir.path().join("t.db")).unwrap(),
                toolgate::tool::sources::standard(),
            ),
            dir,
        };
        w.write_agent(permission, extra);
        w
    }

    fn write_agent(&self, permission: &str, extra: &str) {
        let permissions = if permission.is_empty() {
            String::new()
        } else {
            format!("permissions:\n  transfer: {permission}\n")
        };
        let tools = if permission == "GONE" {
            "[echo]"
        } else {
            "[transfer]"
        };
        let permissions = if permission == "GONE" {
            String::new()
        } else {
            permissions
        };
        std::fs::write(
            self.dir.path().join("agent.yaml"),
            format!(
                "name: finance\nmodel: scripted:replies.yaml\ntools: {tools}\n{permissions}{extra}"
            ),
        )
        .unwrap();
    }

    fn hook(&self, name: &str, script: &str) {
        std::fs::write(self.dir.path().join(format!("hooks/{name}.sh")), script).unwrap();
    }

    fn agent(&self) -> Agent {
        Agent::load(&self.dir.path().join("agent.yaml")).unwrap()
    }

    async fn start(&self, conversation: Option<&str>) -> RunObject {
        self.runner
            .start(StartRun {
                agent: self.agent(),
                model: None,
                conversation: conversation.map(str::to_string),
                message: "pay".into(),
                tools_dir: Some(self.dir.path().join("tools")),
                workspace: Some(self.dir.path().join("ws")),
                priority: None,
                owner: None,
            })
            .await
            .unwrap()
    }

    async fn records(&self, run: &str) -> Vec<StoredCall> {
        let q = CallQuery {
            run_id: Some(run.to_string()),
            ..CallQuery::default()
        };
        self.runner.store.calls(&q).await.unwrap().calls
    }

    /// What the model was told for `call_id`: its tool message.
    async fn told(&self, run: &RunObject, call_id: &str) -> String {
        self.runner
            .store
            .conversation_messages(&run.conversation_id)
            .await
            .unwrap()
            .iter()
            .map(|m| serde_json::from_str::<Value>(m).unwrap())
            .filter(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
            .map(|m| m["content"].as_str().unwrap_or_default().to_string())
            .next_back()
            .unwrap_or_default()
    }
}

/// A policy change between the pause and the decision.
#[derive(Clone, Copy)]
enum Change {
    None,
    /// The agent's entry for `transfer` becomes this.
    To(&'static str),
    /// `transfer` is taken out of the agent's tools.
    Gone,
}

struct Row {
    name: &'static str,
    /// The tool file's `permission:` (its default policy), if any.
    tool: Option<&'static str>,
    /// The agent's entry for `transfer` (empty: none).
    agent: &'static str,
    args: Value,
    /// The reason the item gives when the call waits for a person.
    asks: Option<&'static str>,
    decision: Option<Decision>,
    change: Change,
    /// The call's record status at the end.
    status: &'static str,
    /// Part of what the model read for the call.
    told: &'static str,
}

fn rows() -> Vec<Row> {
    let row = |name, agent, args: Value| Row {
        name,
        tool: None,
        agent,
        args,
        asks: None,
        decision: None,
        change: Change::None,
        status: "succeeded",
        told: "\"amount\"",
    };
    let big = || json!({"to": "int:acme", "amount": 5000});
    vec![
        row(
            "small_amount_runs_at_once",
            RULES,
            json!({"to": "int:acme", "amount": 50}),
        ),
        Row {
            asks: Some("confirm_if: args.amount > 1000"),
            decision: Some(Decision::Approve),
            ..row("large_amount_waits_and_runs_once_approved", RULES, big())
        },
        Row {
            status: "denied",
            told: "deny_if: args.to.startsWith('ext:') && args.amount > 10000",
            ..row(
                "huge_external_amount_is_refused_unasked",
                RULES,
                json!({"to": "ext:x", "amount": 20000}),
            )
        },
        Row {
            asks: Some("confirm_if: args.amount > 1000"),
            decision: Some(Decision::Deny {
                reason: Some("Not this month.".into()),
            }),
            status: "denied",
            told: "Not this month.",
            ..row("a_person_denies", RULES, big())
        },
        Row {
            asks: Some("confirm_if: args.amount > 1000"),
            decision: Some(Decision::Approve),
            change: Change::To("never"),
            status: "denied",
            told: "permission: never",
            ..row("approved_then_made_never_is_refused", RULES, big())
        },
        Row {
            asks: Some("confirm_if: args.amount > 1000"),
            decision: Some(Decision::Approve),
            change: Change::To("{deny_if: \"args.amount > 1000\"}"),
            status: "denied",
            told: "deny_if: args.amount > 1000",
            ..row("approved_then_a_rule_denies_is_refused", RULES, big())
        },
        Row {
            asks: Some("confirm_if: args.amount > 1000"),
            decision: Some(Decision::Approve),
            change: Change::Gone,
            status: "denied",
            told: "no longer one of this agent's tools",
            ..row(
                "approved_then_taken_from_the_toolkit_is_refused",
                RULES,
                big(),
            )
        },
        Row {
            asks: Some("confirm_if: args.amount > 1000"),
            decision: Some(Decision::Approve),
            change: Change::To("auto"),
            ..row("approved_then_loosened_runs", RULES, big())
        },
        Row {
            asks: Some("confirm_if: args.amount > 1000"),
            decision: Some(Decision::Edit {
                arguments: json!({"to": "ext:x", "amount": 20000})
                    .as_object()
                    .unwrap()
                    .clone(),
            }),
            status: "denied",
            told: "deny_if:",
            ..row("edited_into_a_denied_call_is_refused", RULES, big())
        },
        Row {
            asks: Some("could not be evaluated"),
            decision: Some(Decision::Approve),
            ..row(
                "a_rule_that_cannot_be_evaluated_holds_for_a_person",
                "{deny_if: \"args.memo.startsWith('x')\", otherwise: auto}",
                big(),
            )
        },
        Row {
            asks: Some("permission: confirm"),
            decision: Some(Decision::Approve),
            ..row("a_confirm_word_names_the_permission", "confirm", big())
        },
        Row {
            tool: Some("{confirm_if: \"args.amount > 100\"}"),
            asks: Some("confirm_if: args.amount > 100"),
            decision: Some(Decision::Approve),
            ..row("the_tool_files_rules_are_the_default", "", big())
        },
        Row {
            tool: Some("{confirm_if: \"args.amount > 100\"}"),
            ..row(
                "the_agents_rules_replace_the_tools",
                "{auto_if: \"args.amount < 10000\", otherwise: confirm}",
                big(),
            )
        },
        Row {
            tool: Some("{auto_if: \"args.to.startsWith('int:')\", otherwise: confirm}"),
            asks: Some("otherwise: confirm"),
            decision: Some(Decision::Approve),
            ..row(
                "otherwise_applies_when_no_rule_holds",
                "",
                json!({"to": "ext:x", "amount": 1}),
            )
        },
    ]
}

async fn run_row(row: &Row) -> Result<(), String> {
    let w = World::new(row.tool, row.agent, "", &row.args);
    let run = w.start(None).await;
    let item = run.required_action.as_ref().and_then(|r| r.items.first());
    match (row.asks, item) {
        (None, None) => {}
        (Some(want), Some(item)) => {
            let reason = item.reason.clone().unwrap_or_default();
            if !reason.contains(want) {
                return Err(format!("asked because '{reason}', wanted '{want}'"));
            }
        }
        (want, got) => return Err(format!("wanted a pause {want:?}, got {got:?}")),
    }
    if let Some(decision) = row.decision.clone() {
        w.runner
            .decide(&run.id, Some("call_pay"), decision)
            .await
            .map_err(|e| format!("the decision was refused: {e}"))?;
        match row.change {
            Change::None => {}
            Change::To(p) => w.write_agent(p, ""),
            Change::Gone => w.write_agent("GONE", ""),
        }
        let end = w.runner.resume(&run.id).await.map_err(|e| e.to_string())?;
        if end.status != RunStatus::Completed {
            return Err(format!("the run ended {:?}", end.status));
        }
    }
    let records = w.records(&run.id).await;
    let record = records
        .iter()
        .find(|r| r.record.call_id == "call_pay")
        .ok_or("no record of call_pay")?;
    if record.record.status.as_str() != row.status {
        return Err(format!("recorded {:?}", record.record));
    }
    let told = w.told(&run, "call_pay").await;
    if !told.contains(row.told) {
        return Err(format!("the model read '{told}', wanted '{}'", row.told));
    }
    Ok(())
}

/// tool x rule x arguments x decision x policy change -> outcome; every row runs, and
/// every failing row is named.
#[tokio::test(flavor = "multi_thread")]
async fn the_scenario_table() {
    let mut failed = Vec::new();
    for row in rows() {
        if let Err(e) = run_row(&row).await {
            failed.push(format!("{}: {e}", row.name));
        }
    }
    assert!(failed.is_empty(), "failing rows:\n{}", failed.join("\n"));
}

/// The reproduction, through the command line: a run paused on a `confirm`
/// `write_file`, the agent file edited to `never`, then `toolgate approve RUN`: the file
/// is not written, the record says denied with the reason, the model is told.
#[test]
fn a_stale_approval_is_refused_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join("ws")).unwrap();
    std::fs::write(
        root.join("replies.yaml"),
        "replies:\n  - content: Saving.\n    tool_calls: [{id: call_w, name: write_file, arguments: {path: out.txt, content: hi}}]\n  - content: Done.\n",
    )
    .unwrap();
    let agent = |p: &str| {
        std::fs::write(
            root.join("agent.yaml"),
            format!("name: writer\nmodel: scripted:replies.yaml\ntools: [write_file]\npermissions: {{write_file: {p}}}\nworkspace: ws\n"),
        )
        .unwrap()
    };
    agent("confirm");
    let toolgate = |args: &[&str]| serving::toolgate_in(root, &root.join("t.db"), args);
    let out = toolgate(&["run", "--agent", "agent.yaml", "--json", "save it"]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last: Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().unwrap()).unwrap();
    let id = last["id"].as_str().unwrap().to_string();
    agent("never");
    let out = toolgate(&["approve", &id]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!root.join("ws/out.txt").exists(), "the file was written");
    let out = toolgate(&["calls", "--json"]);
    let calls: Value = serde_json::from_slice(&out.stdout).unwrap();
    let call = calls["calls"].as_array().or(calls.as_array()).unwrap()[0].clone();
    assert_eq!(call["status"], "denied", "{call}");
    assert!(
        call["error_message"]
            .as_str()
            .unwrap()
            .contains("permission: never"),
        "{call}"
    );
}

/// An "always" approval stands while the tool's policy is what it was; a stricter
/// policy (a new rule) ends it, and the next call is asked about again.
#[tokio::test(flavor = "multi_thread")]
async fn always_ends_when_the_policy_gets_stricter() {
    let w = World::new(
        None,
        "confirm",
        "",
        &json!({"to": "int:acme", "amount": 5000}),
    );
    let turn = |id: &str| {
        format!(
            "  - content: Paying.\n    tool_calls: [{{id: {id}, name: transfer, arguments: {{to: \"int:acme\", amount: 5000}}}}]\n  - content: Done.\n"
        )
    };
    std::fs::write(
        w.dir.path().join("replies.yaml"),
        format!("replies:\n{}{}{}", turn("c1"), turn("c2"), turn("c3")),
    )
    .unwrap();
    let first = w.start(Some("conv_always")).await;
    w.runner
        .decide(&first.id, Some("c1"), Decision::ApproveAlways)
        .await
        .unwrap();
    assert_eq!(
        w.runner.resume(&first.id).await.unwrap().status,
        RunStatus::Completed
    );
    // Same policy: the next run's call runs unasked.
    let second = w.start(Some("conv_always")).await;
    assert_eq!(second.status, RunStatus::Completed, "{second:?}");
    // Stricter: a rule that asks for large amounts.
    w.write_agent(
        "{confirm_if: \"args.amount > 1000\", otherwise: confirm}",
        "",
    );
    let third = w.start(Some("conv_always")).await;
    assert_eq!(
        third.status,
        RunStatus::RequiresAction,
        "the old always still stood"
    );
}

/// Hook settings: `which` runs hooks/WHICH.sh, with a 500 ms timeout and `extra`.
fn command_hook(which: &str, extra: &str) -> String {
    format!("hooks:\n  {which}: {{command: [sh, hooks/{which}.sh], timeout: 500ms{extra}}}\n")
}

/// A local HTTP endpoint that answers every request after `delay` with `body`.
async fn endpoint(delay: Duration, body: &'static str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut buf = vec![0u8; 65536];
                let _ = sock.read(&mut buf).await;
                tokio::time::sleep(delay).await;
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(reply.as_bytes()).await;
            });
        }
    });
    format!("http://{addr}/hook")
}

struct HookRow {
    name: &'static str,
    /// `before_call` or `after_result`.
    which: &'static str,
    /// The script (for a command hook), or empty with `url`.
    script: &'static str,
    url: Option<(Duration, &'static str)>,
    /// More settings of the hook (`, on_error: confirm`).
    extra: &'static str,
    /// The run pauses, the item giving this reason.
    holds: Option<&'static str>,
    status: &'static str,
    error_kind: Option<&'static str>,
    told: &'static str,
    replaced: bool,
}

fn hook_rows() -> Vec<HookRow> {
    let row = |name, which, script| HookRow {
        name,
        which,
        script,
        url: None,
        extra: "",
        holds: None,
        status: "denied",
        error_kind: Some("hook_failed"),
        told: "",
        replaced: false,
    };
    vec![
        HookRow {
            status: "succeeded",
            error_kind: None,
            told: "\"amount\":5000",
            ..row(
                "allow_runs_the_call",
                "before_call",
                "cat >/dev/null; echo '{\"decision\": \"allow\"}'",
            )
        },
        HookRow {
            error_kind: Some("hook"),
            told: "Payments to acme are blocked.",
            ..row(
                "deny_tells_the_model_the_reason",
                "before_call",
                "echo '{\"decision\": \"deny\", \"reason\": \"Payments to acme are blocked.\"}'",
            )
        },
        HookRow {
            holds: Some("before_call hook: needs finance"),
            status: "succeeded",
            error_kind: None,
            told: "\"amount\"",
            ..row(
                "confirm_holds_for_a_person",
                "before_call",
                "echo '{\"decision\": \"confirm\", \"reason\": \"needs finance\"}'",
            )
        },
        HookRow {
            status: "succeeded",
            error_kind: None,
            told: "\"amount\":10",
            ..row(
                "rewritten_arguments_run",
                "before_call",
                "echo '{\"decision\": \"allow\", \"arguments\": {\"to\": \"int:acme\", \"amount\": 10}}'",
            )
        },
        HookRow {
            told: "the tool refuses",
            ..row(
                "rewritten_arguments_are_validated_again",
                "before_call",
                "echo '{\"decision\": \"allow\", \"arguments\": {\"to\": \"int:acme\", \"amount\": \"lots\"}}'",
            )
        },
        HookRow {
            error_kind: Some("policy"),
            told: "deny_if",
            ..row(
                "rewritten_arguments_meet_the_rules",
                "before_call",
                "echo '{\"decision\": \"allow\", \"arguments\": {\"to\": \"ext:x\", \"amount\": 20000}}'",
            )
        },
        HookRow {
            told: "exited with",
            ..row("a_crash_denies", "before_call", "echo oops >&2; exit 3")
        },
        HookRow {
            told: "did not answer within 500ms",
            ..row("a_timeout_denies", "before_call", "sleep 5")
        },
        HookRow {
            told: "answered nonsense",
            ..row("bad_json_denies", "before_call", "echo nope")
        },
        HookRow {
            told: "answered nonsense",
            ..row(
                "an_unknown_decision_denies",
                "before_call",
                "echo '{\"decision\": \"maybe\"}'",
            )
        },
        HookRow {
            extra: ", on_error: confirm",
            holds: Some("held for a person"),
            status: "succeeded",
            error_kind: None,
            told: "\"amount\"",
            ..row("a_crash_can_hold_for_a_person", "before_call", "exit 1")
        },
        HookRow {
            url: Some((Duration::from_secs(3), "{\"decision\": \"allow\"}")),
            told: "did not answer within 500ms",
            ..row("slow_http_denies", "before_call", "")
        },
        HookRow {
            url: Some((Duration::ZERO, "{\"decision\": \"allow\"}")),
            status: "succeeded",
            error_kind: None,
            told: "\"amount\"",
            ..row("http_allow_runs_the_call", "before_call", "")
        },
        HookRow {
            status: "succeeded",
            error_kind: None,
            told: "[withheld by policy]",
            replaced: true,
            ..row(
                "a_replaced_result_is_what_the_model_sees",
                "after_result",
                "echo '{\"result\": \"[withheld by policy]\"}'",
            )
        },
        HookRow {
            status: "succeeded",
            error_kind: None,
            told: "\"amount\":5000",
            ..row(
                "an_empty_answer_passes_the_result",
                "after_result",
                "echo '{}'",
            )
        },
        HookRow {
            status: "succeeded",
            told: "its result is withheld",
            replaced: true,
            ..row(
                "a_failing_after_result_withholds_the_result",
                "after_result",
                "exit 2",
            )
        },
    ]
}

async fn run_hook_row(row: &HookRow) -> Result<(), String> {
    let hooks = match row.url {
        Some((delay, body)) => format!(
            "hooks:\n  {}: {{url: \"{}\", timeout: 500ms{}}}\n",
            row.which,
            endpoint(delay, body).await,
            row.extra
        ),
        None => command_hook(row.which, row.extra),
    };
    let w = World::new(
        None,
        RULES,
        &hooks,
        &json!({"to": "int:acme", "amount": 5000}),
    );
    // The rules would ask for 5000: the rows are about the hooks, so let it run.
    w.write_agent(
        "{deny_if: \"args.to.startsWith('ext:') && args.amount > 10000\", otherwise: auto}",
        &hooks,
    );
    w.hook(row.which, row.script);
    let run = w.start(None).await;
    let item = run.required_action.as_ref().and_then(|r| r.items.first());
    match (row.holds, item) {
        (None, None) => {}
        (Some(want), Some(item)) => {
            let reason = item.reason.clone().unwrap_or_default();
            if !reason.contains(want) {
                return Err(format!("held because '{reason}', wanted '{want}'"));
            }
            w.runner
                .decide(&run.id, Some("call_pay"), Decision::Approve)
                .await
                .map_err(|e| e.to_string())?;
            // The hook runs again at the re-check: a holding hook holds no more once
            // a person approved.
            let end = w.runner.resume(&run.id).await.map_err(|e| e.to_string())?;
            if end.status != RunStatus::Completed {
                return Err(format!("the run ended {:?}", end.status));
            }
        }
        (want, got) => return Err(format!("wanted a hold {want:?}, got {got:?}")),
    }
    let records = w.records(&run.id).await;
    let r = &records.first().ok_or("no record")?.record;
    if r.status.as_str() != row.status
        || r.error_kind.map(toolgate::protocol::ErrorKind::as_str) != row.error_kind
        || r.replaced != row.replaced
    {
        return Err(format!("recorded {r:?}"));
    }
    if row.replaced
        && r.status.as_str() == "succeeded"
        && !r
            .result
            .as_deref()
            .unwrap_or_default()
            .contains("\"amount\"")
    {
        return Err(format!("the record lost what the tool returned: {r:?}"));
    }
    let told = w.told(&run, "call_pay").await;
    if !told.contains(row.told) {
        return Err(format!("the model read '{told}', wanted '{}'", row.told));
    }
    Ok(())
}

/// Hooks around the call: what they may do, and how each way of failing fails closed.
#[tokio::test(flavor = "multi_thread")]
async fn hooks_and_how_they_fail_closed() {
    let mut failed = Vec::new();
    for row in hook_rows() {
        if let Err(e) = run_hook_row(&row).await {
            failed.push(format!("{}: {e}", row.name));
        }
    }
    assert!(failed.is_empty(), "failing rows:\n{}", failed.join("\n"));
}

/// An approval not decided in time can no longer be approved (`expired`); `resume`
/// denies it and the model is told; `on_timeout: cancel_run` cancels the run instead.
#[tokio::test(flavor = "multi_thread")]
async fn an_expired_approval_is_denied_or_cancels_the_run() {
    let args = json!({"to": "int:acme", "amount": 5000});
    let w = World::new(None, RULES, "approval_timeout: 700ms\n", &args);
    let run = w.start(None).await;
    let item = &run.required_action.as_ref().unwrap().items[0];
    let at = item.expires_at.expect("the item has its deadline");
    assert!(
        (at - run.updated_at - 700).abs() < 2000,
        "{at} vs {}",
        run.updated_at
    );
    tokio::time::sleep(Duration::from_millis(900)).await;
    match w
        .runner
        .decide(&run.id, Some("call_pay"), Decision::Approve)
        .await
    {
        Err(RunError::Refused {
            kind: Refusal::Expired,
            message,
        }) => {
            assert!(message.contains("expired"), "{message}")
        }
        other => panic!("an expired item was approvable: {other:?}"),
    }
    let end = w.runner.resume(&run.id).await.unwrap();
    assert_eq!(end.status, RunStatus::Completed);
    let r = &w.records(&run.id).await[0].record;
    assert_eq!(
        (
            r.status.as_str(),
            r.error_kind.map(toolgate::protocol::ErrorKind::as_str)
        ),
        ("denied", Some("expired"))
    );
    assert!(w.told(&run, "call_pay").await.contains("expired"));

    let w = World::new(
        None,
        RULES,
        "approval_timeout: 300ms\non_timeout: cancel_run\n",
        &args,
    );
    let run = w.start(None).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        w.runner.resume(&run.id).await.unwrap().status,
        RunStatus::Cancelled
    );

    // The tool's own deadline, shorter than the agent's, is the one that applies.
    let w = World::new(None, RULES, "approval_timeout: 30m\n", &args);
    let tool = std::fs::read_to_string(w.dir.path().join("tools/transfer.yaml")).unwrap();
    std::fs::write(
        w.dir.path().join("tools/transfer.yaml"),
        format!("{tool}approval_timeout: 2s\non_timeout: cancel_run\n"),
    )
    .unwrap();
    let run = w.start(None).await;
    let item = &run.required_action.as_ref().unwrap().items[0];
    assert!(
        item.expires_at.unwrap() - run.updated_at < 10_000,
        "{item:?}"
    );
    assert_eq!(
        item.on_timeout,
        Some(toolgate::policy::OnTimeout::CancelRun)
    );
}

/// A bad rule is one line naming the file and the line.
#[test]
fn a_bad_rule_is_one_line_with_file_and_line() {
    let w = World::new(None, "{confirm_if: \"args.amount >\"}", "", &json!({}));
    let e = Agent::load(&w.dir.path().join("agent.yaml"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("agent.yaml:5:"), "{e}");
    assert!(e.contains("confirm_if"), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    let w = World::new(Some("{deny_if: \"arg.to == 'x'\"}"), "", "", &json!({}));
    let lib = toolgate::tool::ToolLibrary::load(
        &w.dir.path().join("tools"),
        &toolgate::tool::sources::standard(),
    )
    .unwrap();
    let e = lib.errors()[0].to_string();
    assert!(e.contains("transfer.yaml:") && e.contains("'arg'"), "{e}");
}
