//! The permission logic in one table: mode x permission x decision x tool kind ->
//! whether the run pauses (and for what), its final status, the call's record, and
//! what the model receives. Then the rules around it: standing approvals, iteration
//! limits, a scripted model running out, decisions that do not fit, cancelling, and
//! conversation history.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tempfile::TempDir;
use toolgate::agent::Agent;
use toolgate::model::{
    Message, MessageRole, Model, ModelError, ModelReply, ModelRequest, ReplySink,
};
use toolgate::parse::NativeCalls;
use toolgate::protocol::{Decision, ItemKind, RunObject, RunStatus, Usage};
use toolgate::run::{RunError, Runner, StartRun};
use toolgate::store::{CallQuery, Refusal, Store, StoredCall};

/// One reply: its text and its native calls (id, tool, arguments).
type Scripted = (String, Vec<(String, String, Value)>);

/// Replies given in turn (by the number of assistant messages so far); every request
/// is kept.
struct TestModel {
    replies: Vec<Scripted>,
    requests: Mutex<Vec<(String, Vec<Message>)>>,
}

#[async_trait::async_trait]
impl Model for TestModel {
    fn name(&self) -> &str {
        "test"
    }

    async fn complete(
        &self,
        request: ModelRequest<'_>,
        sink: &mut dyn ReplySink,
    ) -> Result<ModelReply, ModelError> {
        self.requests
            .lock()
            .unwrap()
            .push((request.system.to_string(), request.messages.to_vec()));
        let index = request
            .messages
            .iter()
            .filter(|m| m.role == MessageRole::Assistant)
            .count();
        let (content, calls) = self
            .replies
            .get(index)
            .ok_or_else(|| ModelError::Exhausted("no reply left".into()))?;
        sink.text(content);
        let mut native = NativeCalls::default();
        for (i, (id, name, args)) in calls.iter().enumerate() {
            native.delta(i as u64, Some(id), Some(name), Some(&args.to_string()), 0);
        }
        Ok(ModelReply {
            truncated: false,
            reasoning: Vec::new(),
            content: content.clone(),
            native,
            usage: Usage {
                model_calls: 1,
                ..Usage::default()
            },
        })
    }
}

const CLIENT_TOOL: &str = "name: ask_user\ndescription: Ask the person.\npermission: auto\nparameters:\n  - {name: question, type: string, required: true}\nentry: {type: client}\n";

struct World {
    dir: TempDir,
    runner: Runner,
    model: Arc<TestModel>,
}

impl World {
    fn new(agent_extra: &str, replies: Vec<Scripted>) -> (World, Agent) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("tools")).unwrap();
        std::fs::create_dir(dir.path().join("ws")).unwrap();
        std::fs::write(dir.path().join("tools/ask_user.yaml"), CLIENT_TOOL).unwrap();
        let file = dir.path().join("agent.yaml");
        std::fs::write(
            &file,
            format!("name: t\ntools: [echo, write_file, ask_user]\n{agent_extra}"),
        )
        .unwrap();
        let agent = Agent::load(&file).unwrap();
        let model = Arc::new(TestModel {
            replies,
            requests: Mutex::new(Vec::new()),
        });
        let mut runner = Runner::new(
            Store::open(dir.path().join("t.db")).unwrap(),
            toolgate::tool::sources::standard(),
        );
        runner.model = Some(model.clone());
        (World { dir, runner, model }, agent)
    }

    fn start(&self, agent: Agent, conversation: Option<&str>) -> StartRun {
        StartRun {
            priority: None,
            owner: None,
            agent,
            model: None,
            conversation: conversation.map(str::to_string),
            message: "please".into(),
            tools_dir: Some(self.dir.path().join("tools")),
            workspace: Some(self.dir.path().join("ws")),
        }
    }

    async fn records(&self, run: &RunObject) -> Vec<StoredCall> {
        let q = CallQuery {
            run_id: Some(run.id.clone()),
            ..CallQuery::default()
        };
        self.runner.store.calls(&q).await.unwrap().calls
    }

    /// The text that carried tool results in the last request.
    fn results_seen(&self) -> String {
        let requests = self.model.requests.lock().unwrap();
        let (_, messages) = requests.last().unwrap();
        messages
            .iter()
            .rev()
            .take_while(|m| m.role != MessageRole::Assistant)
            .map(|m| m.content.clone())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// One call in the model's first reply, as the mode writes it.
fn first_reply(mode: &str, tool: &str, args: &Value) -> Scripted {
    if mode == "xml" {
        let params: String = args
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| format!("<{k}><![CDATA[{}]]></{k}>", v.as_str().unwrap()))
            .collect();
        (
            format!(
                "Calling.\n<tool_call><name>{tool}</name><params>{params}</params></tool_call>"
            ),
            Vec::new(),
        )
    } else {
        (
            "Calling.".into(),
            vec![("call_1".into(), tool.into(), args.clone())],
        )
    }
}

struct Row {
    /// What the row shows, as failures name it.
    name: &'static str,
    mode: &'static str,
    permissions: &'static str,
    tool: &'static str,
    args: Value,
    decision: Option<Decision>,
    pauses_for: Option<ItemKind>,
    status: RunStatus,
    record: (&'static str, Option<&'static str>),
    model_sees: &'static str,
}

#[rustfmt::skip]
fn rows() -> Vec<Row> {
    let write = json!({"path": "a.txt", "content": "A"});
    let ask = json!({"question": "Colour?"});
    let echo = json!({"text": "hello"});
    let deny = Some(Decision::Deny {
        reason: Some("too risky".into()),
    });
    let submit = Some(Decision::Submit {
        output: "blue".into(),
        is_error: false,
    });
    use ItemKind::{Approval, SubmitToolOutput};
    use RunStatus::Completed;
    vec![
        Row { name: "native auto call runs at once", mode: "native", permissions: "", tool: "echo", args: echo.clone(), decision: None, pauses_for: None, status: Completed, record: ("succeeded", None), model_sees: "hello" },
        Row { name: "xml auto call runs at once", mode: "xml", permissions: "", tool: "echo", args: echo.clone(), decision: None, pauses_for: None, status: Completed, record: ("succeeded", None), model_sees: "<status>ok</status>" },
        Row { name: "native confirm call approved", mode: "native", permissions: "", tool: "write_file", args: write.clone(), decision: Some(Decision::Approve), pauses_for: Some(Approval), status: Completed, record: ("succeeded", None), model_sees: "wrote 1 bytes" },
        Row { name: "xml confirm call approved", mode: "xml", permissions: "", tool: "write_file", args: write.clone(), decision: Some(Decision::Approve), pauses_for: Some(Approval), status: Completed, record: ("succeeded", None), model_sees: "wrote 1 bytes" },
        Row { name: "native confirm call denied with a reason", mode: "native", permissions: "", tool: "write_file", args: write.clone(), decision: deny.clone(), pauses_for: Some(Approval), status: Completed, record: ("denied", Some("denied")), model_sees: "Reason: too risky" },
        Row { name: "xml confirm call denied", mode: "xml", permissions: "", tool: "write_file", args: write.clone(), decision: deny.clone(), pauses_for: Some(Approval), status: Completed, record: ("denied", Some("denied")), model_sees: "<status>denied</status>" },
        Row { name: "native confirm call approved with edited arguments", mode: "native", permissions: "", tool: "write_file", args: write.clone(), decision: Some(Decision::Edit { arguments: json!({"path": "b.txt", "content": "BB"}) .as_object() .unwrap() .clone(), }), pauses_for: Some(Approval), status: Completed, record: ("succeeded", None), model_sees: "edited the arguments" },
        Row { name: "native confirm call approved always", mode: "native", permissions: "", tool: "write_file", args: write.clone(), decision: Some(Decision::ApproveAlways), pauses_for: Some(Approval), status: Completed, record: ("succeeded", None), model_sees: "wrote 1 bytes" },
        Row { name: "agent makes an auto tool confirm", mode: "native", permissions: "permissions: {echo: confirm}", tool: "echo", args: echo.clone(), decision: Some(Decision::Approve), pauses_for: Some(Approval), status: Completed, record: ("succeeded", None), model_sees: "hello" },
        Row { name: "agent forbids a tool (native)", mode: "native", permissions: "permissions: {echo: never}", tool: "echo", args: echo.clone(), decision: None, pauses_for: None, status: Completed, record: ("denied", Some("policy")), model_sees: "not allowed" },
        Row { name: "agent forbids a tool (xml)", mode: "xml", permissions: "permissions: {write_file: never}", tool: "write_file", args: write.clone(), decision: None, pauses_for: None, status: Completed, record: ("denied", Some("policy")), model_sees: "<status>denied</status>" },
        Row { name: "agent makes a confirm tool auto", mode: "native", permissions: "permissions: {write_file: auto}", tool: "write_file", args: write.clone(), decision: None, pauses_for: None, status: Completed, record: ("succeeded", None), model_sees: "wrote 1 bytes" },
        Row { name: "native client tool answered", mode: "native", permissions: "", tool: "ask_user", args: ask.clone(), decision: submit.clone(), pauses_for: Some(SubmitToolOutput), status: Completed, record: ("client", None), model_sees: "blue" },
        Row { name: "xml client tool answered", mode: "xml", permissions: "", tool: "ask_user", args: ask.clone(), decision: submit.clone(), pauses_for: Some(SubmitToolOutput), status: Completed, record: ("client", None), model_sees: "<![CDATA[blue]]>" },
        Row { name: "native client tool answered with an error", mode: "native", permissions: "", tool: "ask_user", args: ask.clone(), decision: Some(Decision::Submit { output: "no screen".into(), is_error: true, }), pauses_for: Some(SubmitToolOutput), status: Completed, record: ("failed", Some("client_error")), model_sees: "no screen" },
        Row { name: "unknown tool", mode: "native", permissions: "", tool: "rm_rf", args: json!({"path": "/"}), decision: None, pauses_for: None, status: Completed, record: ("failed", Some("tool_not_found")), model_sees: "no tool named 'rm_rf'" },
        Row { name: "native invalid arguments", mode: "native", permissions: "", tool: "write_file", args: json!({"path": "a.txt"}), decision: None, pauses_for: None, status: Completed, record: ("failed", Some("validation_error")), model_sees: "'content'" },
        Row { name: "xml invalid arguments", mode: "xml", permissions: "", tool: "write_file", args: json!({"path": "a.txt"}), decision: None, pauses_for: None, status: Completed, record: ("failed", Some("validation_error")), model_sees: "<status>error</status>" },
    ]
}

/// Fails the row with a message naming it, unless `cond` holds.
macro_rules! ensure {
    ($cond:expr, $($why:tt)*) => {
        if !$cond {
            return Err(format!($($why)*));
        }
    };
}

/// Every row is played, and every failing row is reported (not only the first).
#[tokio::test]
async fn the_scenario_table() {
    let mut failed = Vec::new();
    let rows = rows();
    for row in &rows {
        if let Err(why) = play(row).await {
            failed.push(format!("{}: {why}", row.name));
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} scenario rows failed:\n  {}",
        failed.len(),
        rows.len(),
        failed.join("\n  ")
    );
}

/// One row: the run, its pause and decision, its end, the record, what the model saw.
async fn play(row: &Row) -> Result<(), String> {
    let (w, agent) = World::new(
        &format!("mode: {}\n{}\n", row.mode, row.permissions),
        vec![
            first_reply(row.mode, row.tool, &row.args),
            ("Finished.".into(), Vec::new()),
        ],
    );
    let mut run = w
        .runner
        .start(w.start(agent, None))
        .await
        .map_err(|e| format!("the start failed: {e}"))?;
    match row.pauses_for {
        Some(kind) => {
            ensure!(
                run.status == RunStatus::RequiresAction,
                "expected a pause, the run is {:?}",
                run.status
            );
            let items = run
                .required_action
                .clone()
                .map(|r| r.items)
                .unwrap_or_default();
            ensure!(items.len() == 1, "{} items wait: {items:?}", items.len());
            ensure!(items[0].kind == kind, "it waits for {:?}", items[0].kind);
            ensure!(
                items[0].tool == row.tool,
                "the item's tool is {}",
                items[0].tool
            );
            ensure!(
                items[0].arguments == row.args,
                "the item shows {}",
                items[0].arguments
            );
            ensure!(
                w.records(&run).await.is_empty(),
                "something was recorded before the decision"
            );
            let decision = row
                .decision
                .clone()
                .ok_or("the row pauses but gives no decision")?;
            let decided = w
                .runner
                .decide(&run.id, Some(&items[0].call_id), decision)
                .await
                .map_err(|e| format!("the decision failed: {e}"))?;
            ensure!(decided.waiting == 0, "{} items still wait", decided.waiting);
            run = w
                .runner
                .resume(&run.id)
                .await
                .map_err(|e| format!("the resume failed: {e}"))?;
        }
        None => ensure!(
            row.decision.is_none(),
            "a decision for a row that never pauses"
        ),
    }
    ensure!(
        run.status == row.status,
        "the run ended {:?}: {run:?}",
        run.status
    );
    let records = w.records(&run).await;
    ensure!(records.len() == 1, "{} records", records.len());
    let record = &records[0].record;
    ensure!(
        record.status.as_str() == row.record.0,
        "recorded {}, expected {}",
        record.status.as_str(),
        row.record.0
    );
    ensure!(
        record.error_kind.map(toolgate::protocol::ErrorKind::as_str) == row.record.1,
        "error kind {:?}, expected {:?}",
        record.error_kind,
        row.record.1
    );
    let seen = w.results_seen();
    ensure!(seen.contains(row.model_sees), "the model saw {seen}");
    if let Some(Decision::Edit { arguments }) = &row.decision {
        // Validated when decided: the defaults are filled in.
        for (k, v) in arguments {
            ensure!(
                &record.arguments[k] == v,
                "the record has {k} = {}",
                record.arguments[k]
            );
        }
        let written = std::fs::read_to_string(w.dir.path().join("ws/b.txt")).unwrap_or_default();
        ensure!(written == "BB", "b.txt holds {written:?}");
        ensure!(!w.dir.path().join("ws/a.txt").exists(), "a.txt was written");
    }
    Ok(())
}

fn write_call(id: &str) -> Scripted {
    (
        String::new(),
        vec![(
            id.into(),
            "write_file".into(),
            json!({"path": format!("{id}.txt"), "content": id}),
        )],
    )
}

#[tokio::test]
async fn an_always_approval_stands_for_the_conversation() {
    let (w, agent) = World::new(
        "",
        vec![
            write_call("w1"),
            ("one".into(), vec![]),
            write_call("w2"),
            ("two".into(), vec![]),
        ],
    );
    let run = w
        .runner
        .start(w.start(agent.clone(), Some("conv_a")))
        .await
        .unwrap();
    assert_eq!(run.status, RunStatus::RequiresAction);
    w.runner
        .decide(&run.id, Some("w1"), Decision::ApproveAlways)
        .await
        .unwrap();
    assert_eq!(
        w.runner.resume(&run.id).await.unwrap().status,
        RunStatus::Completed
    );
    let standing = w
        .runner
        .store
        .standing_approvals("conv_a", "t")
        .await
        .unwrap();
    assert_eq!(
        standing.iter().map(|(t, _)| t.as_str()).collect::<Vec<_>>(),
        ["write_file"]
    );
    assert!(
        w.runner
            .store
            .standing_approvals("conv_a", "another_agent")
            .await
            .unwrap()
            .is_empty(),
        "an always given to one agent is not another agent's"
    );
    // The next run of the conversation writes without asking.
    let second = w
        .runner
        .start(w.start(agent.clone(), Some("conv_a")))
        .await
        .unwrap();
    assert_eq!(second.status, RunStatus::Completed, "{second:?}");
    assert!(w.dir.path().join("ws/w2.txt").exists());
    // Another conversation still asks.
    let (w2, agent2) = World::new("", vec![write_call("w9"), ("x".into(), vec![])]);
    let other = w2
        .runner
        .start(w2.start(agent2, Some("conv_b")))
        .await
        .unwrap();
    assert_eq!(other.status, RunStatus::RequiresAction);
}

#[tokio::test]
async fn history_carries_from_run_to_run() {
    let (w, agent) = World::new(
        "",
        vec![
            ("first answer".into(), vec![]),
            ("second answer".into(), vec![]),
        ],
    );
    let run = w
        .runner
        .start(w.start(agent.clone(), Some("conv_h")))
        .await
        .unwrap();
    assert_eq!(run.output.as_deref(), Some("first answer"));
    let run2 = w
        .runner
        .start(w.start(agent, Some("conv_h")))
        .await
        .unwrap();
    assert_eq!(run2.output.as_deref(), Some("second answer"));
    assert_eq!(run2.conversation_id, "conv_h");
    let requests = w.model.requests.lock().unwrap();
    let roles: Vec<MessageRole> = requests[1].1.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [MessageRole::User, MessageRole::Assistant, MessageRole::User]
    );
    assert_eq!(requests[1].1[1].content, "first answer");
}

#[tokio::test]
async fn a_conversation_with_a_paused_run_takes_no_new_run() {
    let (w, agent) = World::new("", vec![write_call("w1")]);
    let run = w
        .runner
        .start(w.start(agent.clone(), Some("conv_p")))
        .await
        .unwrap();
    assert_eq!(run.status, RunStatus::RequiresAction);
    let err = w
        .runner
        .start(w.start(agent, Some("conv_p")))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, RunError::Refused { kind: Refusal::ConversationBusy, message } if message.contains(&run.id)),
        "{err}"
    );
}

#[tokio::test]
async fn max_iterations_ends_the_run_incomplete() {
    let (w, agent) = World::new(
        "max_iterations: 2\n",
        vec![
            (
                "".into(),
                vec![("c1".into(), "echo".into(), json!({"text": "a"}))],
            ),
            (
                "".into(),
                vec![("c2".into(), "echo".into(), json!({"text": "b"}))],
            ),
            ("never asked".into(), vec![]),
        ],
    );
    let run = w.runner.start(w.start(agent, None)).await.unwrap();
    assert_eq!(run.status, RunStatus::Incomplete);
    assert_eq!(run.iteration, 2);
    assert!(
        run.last_error
            .clone()
            .unwrap()
            .contains("max_iterations (2)")
    );
    assert_eq!(w.records(&run).await.len(), 2);
    assert_eq!(w.model.requests.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn a_scripted_model_that_runs_out_fails_clearly_and_resumes_once_extended() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("replies.yaml");
    std::fs::write(
        &script,
        "replies:\n  - content: Echoing.\n    tool_calls: [{name: echo, arguments: {text: hi}}]\n",
    )
    .unwrap();
    let file = dir.path().join("agent.yaml");
    std::fs::write(
        &file,
        "name: s\nmodel: scripted:replies.yaml\ntools: [echo]\n",
    )
    .unwrap();
    let agent = Agent::load(&file).unwrap();
    let runner = Runner::new(
        Store::open(dir.path().join("t.db")).unwrap(),
        toolgate::tool::sources::standard(),
    );
    let start = StartRun {
        priority: None,
        owner: None,
        agent,
        model: None,
        conversation: None,
        message: "hi".into(),
        tools_dir: None,
        workspace: Some(dir.path().to_path_buf()),
    };
    let run = runner.start(start).await.unwrap();
    assert_eq!(run.status, RunStatus::Failed);
    let error = run.last_error.clone().unwrap();
    assert!(
        error.contains("has 1 reply, and reply 2 was asked for"),
        "{error}"
    );
    assert!(error.contains(&script.display().to_string()), "{error}");
    std::fs::write(
        &script,
        "replies:\n  - content: Echoing.\n    tool_calls: [{name: echo, arguments: {text: hi}}]\n  - content: Said hi.\n",
    )
    .unwrap();
    let run = runner.resume(&run.id).await.unwrap();
    assert_eq!(run.status, RunStatus::Completed);
    assert_eq!(run.output.as_deref(), Some("Said hi."));
    // The echo ran once, before the failure; the resume did not run it again.
    let q = CallQuery::default();
    assert_eq!(runner.store.calls(&q).await.unwrap().calls.len(), 1);
}

#[tokio::test]
async fn decisions_that_do_not_fit_change_nothing() {
    let ask = (
        "".to_string(),
        vec![
            (
                "w".to_string(),
                "write_file".to_string(),
                json!({"path": "a.txt", "content": "A"}),
            ),
            (
                "q".to_string(),
                "ask_user".to_string(),
                json!({"question": "?"}),
            ),
        ],
    );
    let (w, agent) = World::new("", vec![ask, ("done".into(), vec![])]);
    let run = w.runner.start(w.start(agent, None)).await.unwrap();
    assert_eq!(run.status, RunStatus::RequiresAction);
    let submit = Decision::Submit {
        output: "x".into(),
        is_error: false,
    };
    let conflict = |e: RunError, needle: &str| {
        assert!(
            matches!(&e, RunError::Refused { kind: Refusal::DecisionConflict | Refusal::StillWaiting, message } if message.contains(needle)),
            "{e}"
        );
    };
    conflict(
        w.runner
            .decide(&run.id, Some("w"), submit.clone())
            .await
            .unwrap_err(),
        "toolgate approve or deny",
    );
    conflict(
        w.runner
            .decide(&run.id, Some("q"), Decision::Approve)
            .await
            .unwrap_err(),
        "toolgate submit",
    );
    conflict(
        w.runner
            .decide(&run.id, Some("nope"), Decision::Approve)
            .await
            .unwrap_err(),
        "waiting: w, q",
    );
    let bad_edit = Decision::Edit {
        arguments: json!({"path": 5}).as_object().unwrap().clone(),
    };
    let e = w
        .runner
        .decide(&run.id, Some("w"), bad_edit)
        .await
        .unwrap_err();
    assert!(
        matches!(&e, RunError::InvalidArguments(m) if m.contains("content")),
        "{e}"
    );
    assert!(matches!(
        w.runner
            .decide("run_nothing", None, Decision::Approve)
            .await
            .unwrap_err(),
        RunError::NotFound(_)
    ));
    // Both items still wait; resuming now is refused and names what waits.
    let shown = w.runner.get(&run.id).await.unwrap();
    assert_eq!(shown.required_action.unwrap().items.len(), 2);
    conflict(
        w.runner.resume(&run.id).await.unwrap_err(),
        "still waits on call w",
    );
    // A prefix of the id finds the run.
    w.runner
        .decide(&run.id[..10], Some("w"), Decision::Approve)
        .await
        .unwrap();
    conflict(
        w.runner
            .decide(&run.id, Some("w"), Decision::Approve)
            .await
            .unwrap_err(),
        "already decided",
    );
    w.runner.decide(&run.id, Some("q"), submit).await.unwrap();
    assert_eq!(
        w.runner.resume(&run.id).await.unwrap().status,
        RunStatus::Completed
    );
}

#[tokio::test]
async fn a_cancelled_run_never_continues() {
    let (w, agent) = World::new("", vec![write_call("w1"), ("x".into(), vec![])]);
    let run = w
        .runner
        .start(w.start(agent.clone(), Some("conv_c")))
        .await
        .unwrap();
    let cancelled = w.runner.cancel(&run.id).await.unwrap();
    assert_eq!(cancelled.status, RunStatus::Cancelled);
    let e = w
        .runner
        .decide(&run.id, Some("w1"), Decision::Approve)
        .await
        .unwrap_err();
    assert!(
        matches!(&e, RunError::Refused { kind: Refusal::DecisionConflict, message } if message.contains("not waiting")),
        "{e}"
    );
    let e = w.runner.resume(&run.id).await.unwrap_err();
    assert!(
        matches!(&e, RunError::Refused { kind: Refusal::NotResumable, message } if message.contains("cancelled")),
        "{e}"
    );
    assert!(!w.dir.path().join("ws/w1.txt").exists());
    // The conversation goes on; the unanswered call is closed for the model.
    let next = w
        .runner
        .start(w.start(agent, Some("conv_c")))
        .await
        .unwrap();
    assert_eq!(next.status, RunStatus::Completed);
    let requests = w.model.requests.lock().unwrap();
    let last = &requests.last().unwrap().1;
    assert!(
        last.iter()
            .any(|m| m.role == MessageRole::Tool && m.content.contains("ended before"))
    );
}

#[test]
fn agent_files_name_the_field_at_fault() {
    let dir = tempfile::tempdir().unwrap();
    let check = |text: &str, needles: &[&str]| {
        let file = dir.path().join("a.yaml");
        std::fs::write(&file, text).unwrap();
        let e = Agent::load(&file).unwrap_err().to_string();
        assert!(e.starts_with(&file.display().to_string()), "{e}");
        for n in needles {
            assert!(e.contains(n), "{e} lacks {n}");
        }
    };
    check("name: a\nmode: json\n", &["mode", "json"]);
    check("name: a\ntoosl: [echo]\n", &["toosl"]);
    check(
        "name: a\ntools: [echo]\npermissions: {shell: confirm}\n",
        &[":3", "permissions", "shell"],
    );
    check("name: a\nmax_iterations: 0\n", &[":2", "max_iterations"]);
    check("name: a\nmodel: gpt-4\n", &["model", "openai:NAME"]);
    check(
        "name: a\ninstructions: x\ninstructions_file: y.md\n",
        &["not both"],
    );
    check(
        "name: a\ninstructions_file: missing.md\n",
        &["instructions_file", "missing.md"],
    );
    let file = dir.path().join("b.yaml");
    std::fs::write(&file, "name: b\n\ntools: [echo, nosuch]\n").unwrap();
    let agent = Agent::load(&file).unwrap();
    let e = match agent.toolkit(&Arc::new(toolgate::tool::ToolLibrary::builtin(
        &toolgate::tool::sources::standard(),
    ))) {
        Ok(_) => panic!("an unknown tool was accepted"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains(":3") && e.contains("nosuch"), "{e}");
}

/// A secret sealed at rest reaches the model in clear when a new runner (another
/// process) continues the run and replays its history, and in a later run of the same
/// conversation.
#[tokio::test]
async fn sealed_secrets_replay_to_the_model_in_clear() {
    let ask = (
        "Asking.".to_string(),
        vec![(
            "q1".to_string(),
            "ask_user".to_string(),
            json!({"question": "pin?", "pin": "PIN-4242-secret"}),
        )],
    );
    let (w, _) = World::new(
        "",
        vec![ask, ("done".into(), vec![]), ("again".into(), vec![])],
    );
    std::fs::write(
        w.dir.path().join("tools/ask_user.yaml"),
        "name: ask_user\ndescription: Ask.\nparameters:\n  type: object\n  properties:\n    question: {type: string}\n    pin: {type: string, secret: true}\nentry: {type: client}\n",
    )
    .unwrap();
    let agent = Agent::load(&w.dir.path().join("agent.yaml")).unwrap();
    let run = w.runner.start(w.start(agent.clone(), None)).await.unwrap();
    assert_eq!(run.status, RunStatus::RequiresAction);
    assert_eq!(
        run.required_action.unwrap().items[0].arguments["pin"],
        "[secret]"
    );
    let stored: Vec<String> = w
        .runner
        .store
        .conversation_messages(&run.conversation_id)
        .await
        .unwrap();
    assert!(
        stored.iter().all(|m| !m.contains("PIN-4242-secret")),
        "{stored:?}"
    );
    assert!(
        stored.iter().any(|m| m.contains("[[tgsecret:v1:")),
        "{stored:?}"
    );
    // Another runner on the same database, as another process would be.
    let mut other = Runner::new(
        Store::open(w.dir.path().join("t.db")).unwrap(),
        toolgate::tool::sources::standard(),
    );
    other.model = Some(w.model.clone());
    other
        .decide(
            &run.id,
            Some("q1"),
            Decision::Submit {
                output: "ok".into(),
                is_error: false,
            },
        )
        .await
        .unwrap();
    let done = other.resume(&run.id).await.unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    let replayed = {
        let requests = w.model.requests.lock().unwrap();
        requests.last().unwrap().1.clone()
    };
    let call = replayed
        .iter()
        .flat_map(|m| &m.tool_calls)
        .find(|c| c.id == "q1")
        .unwrap();
    assert_eq!(call.arguments["pin"], "PIN-4242-secret");
    // A later run in the conversation replays it too.
    let mut again = w.start(agent, Some(&run.conversation_id));
    again.message = "once more".into();
    let later = other.start(again).await.unwrap();
    assert_eq!(later.status, RunStatus::Completed);
    let requests = w.model.requests.lock().unwrap();
    let seen = serde_json::to_string(&requests.last().unwrap().1).unwrap();
    assert!(
        seen.contains("PIN-4242-secret") && !seen.contains("tgsecret"),
        "{seen}"
    );
}

/// Calls a person approved are never dropped by a queue bound: with `limits:` in the
/// agent file allowing 2 at once and 3 waiting, all 60 approved calls of one turn run.
#[tokio::test]
async fn approved_calls_wait_for_a_slot_whatever_the_queue_bound() {
    let calls: Vec<(String, String, Value)> = (0..60)
        .map(|i| {
            (
                format!("e{i}"),
                "echo".to_string(),
                json!({"text": format!("n{i}")}),
            )
        })
        .collect();
    let (w, agent) = World::new(
        "permissions: {echo: confirm}\nlimits: {global: 2, queue: 3, strategy: reject}\n",
        vec![("Echoing.".into(), calls), ("done".into(), vec![])],
    );
    assert_eq!(agent.limits.as_ref().unwrap().queue, 3);
    let run = w.runner.start(w.start(agent, None)).await.unwrap();
    assert_eq!(run.required_action.as_ref().unwrap().items.len(), 60);
    w.runner
        .decide(&run.id, None, Decision::Approve)
        .await
        .unwrap();
    let done = w.runner.resume(&run.id).await.unwrap();
    assert_eq!(done.status, RunStatus::Completed, "{done:?}");
    let q = CallQuery {
        run_id: Some(done.id.clone()),
        limit: Some(1000),
        ..CallQuery::default()
    };
    let records = w.runner.store.calls(&q).await.unwrap().calls;
    assert_eq!(records.len(), 60);
    assert!(
        records
            .iter()
            .all(|r| r.record.status == toolgate::protocol::CallStatus::Succeeded),
        "{:?}",
        records
            .iter()
            .find(|r| r.record.status != toolgate::protocol::CallStatus::Succeeded)
    );
}
