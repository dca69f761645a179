//! Sub-agents in one table: what the leaf agent does (AUTO, CONFIRM approved, client,
//! denied, failing, incomplete, cancelled) x how deep it sits (1: the top run's own
//! sub-agent, 2: a sub-agent's sub-agent) -> how the top run pauses (with the path to
//! the item), how the tree ends, and what the model right above the leaf reads. Then
//! the rules around it: parallel sub-agents, one pausing and one finishing; the routing
//! tool; a cycle cut off at max_depth; events tagged with the child's run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tempfile::TempDir;
use toolgate::agent::Agent;
use toolgate::model::{
    Message, MessageRole, Model, ModelError, ModelReply, ModelRequest, ReplySink,
};
use toolgate::parse::NativeCalls;
use toolgate::protocol::{Decision, ItemKind, RunEvent, RunObject, RunStatus, Usage};
use toolgate::run::{Runner, StartRun};
use toolgate::store::{CallQuery, Scope, Store};

/// One reply: its text and its native calls (id, tool, arguments).
type Scripted = (String, Vec<(String, String, Value)>);

/// One model for a whole tree: each agent's instructions are `I am NAME.`, and it gets
/// NAME's replies in turn. Every request is kept, by agent.
struct TreeModel {
    replies: HashMap<String, Vec<Scripted>>,
    requests: Mutex<Vec<(String, Vec<Message>)>>,
}

#[async_trait::async_trait]
impl Model for TreeModel {
    fn name(&self) -> &str {
        "tree"
    }

    async fn complete(
        &self,
        request: ModelRequest<'_>,
        sink: &mut dyn ReplySink,
    ) -> Result<ModelReply, ModelError> {
        let agent = request
            .system
            .strip_prefix("I am ")
            .and_then(|s| s.split('.').next())
            .unwrap_or("")
            .to_string();
        self.requests
            .lock()
            .unwrap()
            .push((agent.clone(), request.messages.to_vec()));
        let index = request
            .messages
            .iter()
            .filter(|m| m.role == MessageRole::Assistant)
            .count();
        let (content, calls) = self
            .replies
            .get(&agent)
            .and_then(|r| r.get(index))
            .ok_or_else(|| ModelError::Exhausted(format!("{agent} has no reply left")))?;
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
                prompt_tokens: 10,
                completion_tokens: 5,
                total_tokens: 15,
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
    model: Arc<TreeModel>,
    events: Arc<Mutex<Vec<RunEvent>>>,
}

impl World {
    /// Agent files (file name -> the rest of the file after `name` and
    /// `instructions`) and each agent's replies.
    fn new(agents: &[(&str, &str)], replies: Vec<(&str, Vec<Scripted>)>) -> World {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("tools")).unwrap();
        std::fs::create_dir(dir.path().join("ws")).unwrap();
        std::fs::write(dir.path().join("tools/ask_user.yaml"), CLIENT_TOOL).unwrap();
        for (name, rest) in agents {
            std::fs::write(
                dir.path().join(format!("{name}.yaml")),
                format!("name: {name}\ninstructions: I am {name}.\n{rest}"),
            )
            .unwrap();
        }
        let model = Arc::new(TreeModel {
            replies: replies
                .into_iter()
                .map(|(a, r)| (a.to_string(), r))
                .collect(),
            requests: Mutex::new(Vec::new()),
        });
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&events);
        tokio::spawn(async move {
            while let Some(e) = rx.recv().await {
                sink.lock().unwrap().push(e);
            }
        });
        let mut runner = Runner::new(
            Store::open(dir.path().join("t.db")).unwrap(),
            toolgate::tool::sources::standard(),
        );
        runner.model = Some(model.clone());
        let runner = runner.with_events(tx);
        World {
            dir,
            runner,
            model,
            events,
        }
    }

    async fn start(&self, agent: &str) -> RunObject {
        let agent = Agent::load(&self.dir.path().join(format!("{agent}.yaml"))).unwrap();
        self.runner
            .start(StartRun {
                priority: None,
                owner: None,
                agent,
                model: None,
                conversation: None,
                message: "please".into(),
                tools_dir: Some(self.dir.path().join("tools")),
                workspace: Some(self.dir.path().join("ws")),
            })
            .await
            .unwrap()
    }

    /// What `agent`'s model read last after its own last reply: the tool results.
    fn seen_by(&self, agent: &str) -> String {
        let requests = self.model.requests.lock().unwrap();
        let (_, messages) = requests.iter().rev().find(|(a, _)| a == agent).unwrap();
        messages
            .iter()
            .rev()
            .take_while(|m| m.role != MessageRole::Assistant)
            .map(|m| m.content.clone())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Every run of the tree under `top`, with its agent and status.
    async fn statuses(&self) -> Vec<(String, RunStatus)> {
        let mut out: Vec<(String, RunStatus)> = self
            .runner
            .store
            .runs(Scope::All, None, None, 100)
            .await
            .unwrap()
            .into_iter()
            .map(|r| (r.agent, r.status))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    async fn record_statuses(&self, run_id: &str) -> Vec<(String, String)> {
        let q = CallQuery {
            run_id: Some(run_id.to_string()),
            ..CallQuery::default()
        };
        self.runner
            .store
            .calls(&q)
            .await
            .unwrap()
            .calls
            .into_iter()
            .map(|c| (c.record.tool, c.record.status.as_str().to_string()))
            .collect()
    }
}

fn call(id: &str, tool: &str, args: Value) -> Scripted {
    ("Calling.".into(), vec![(id.into(), tool.into(), args)])
}

fn answer(text: &str) -> Scripted {
    (text.into(), Vec::new())
}

/// What the leaf does.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Leaf {
    Auto,
    Confirm,
    Client,
    Deny,
    Failure,
    Incomplete,
    Cancel,
}

struct Row {
    leaf: Leaf,
    /// The item the top run pauses for.
    pauses_for: Option<ItemKind>,
    /// The top run's end.
    top: RunStatus,
    /// The leaf's end.
    leaf_status: RunStatus,
    /// What the model right above the leaf reads as the sub-agent call's result.
    above_sees: &'static str,
}

#[rustfmt::skip]
fn rows() -> Vec<Row> {
    use ItemKind::{Approval, SubmitToolOutput};
    use RunStatus::{Cancelled, Completed, Failed, Incomplete};
    vec![
        Row { leaf: Leaf::Auto, pauses_for: None, top: Completed, leaf_status: Completed, above_sees: "leaf says done" },
        Row { leaf: Leaf::Confirm, pauses_for: Some(Approval), top: Completed, leaf_status: Completed, above_sees: "leaf says done" },
        Row { leaf: Leaf::Client, pauses_for: Some(SubmitToolOutput), top: Completed, leaf_status: Completed, above_sees: "leaf says done" },
        Row { leaf: Leaf::Deny, pauses_for: Some(Approval), top: Completed, leaf_status: Completed, above_sees: "leaf says done" },
        Row { leaf: Leaf::Failure, pauses_for: None, top: Completed, leaf_status: Failed, above_sees: "no reply left" },
        Row { leaf: Leaf::Incomplete, pauses_for: None, top: Completed, leaf_status: Incomplete, above_sees: "stopped without a final answer" },
        Row { leaf: Leaf::Cancel, pauses_for: Some(Approval), top: Cancelled, leaf_status: Cancelled, above_sees: "" },
    ]
}

/// The leaf's agent file and replies for a row.
fn leaf(row: &Row) -> (String, Vec<Scripted>) {
    let write = json!({"path": "a.txt", "content": "A"});
    match row.leaf {
        Leaf::Auto => (
            "tools: [echo]\n".into(),
            vec![
                call("l1", "echo", json!({"text": "hi"})),
                answer("leaf says done"),
            ],
        ),
        Leaf::Confirm | Leaf::Deny | Leaf::Cancel => (
            "tools: [write_file]\n".into(),
            vec![call("l1", "write_file", write), answer("leaf says done")],
        ),
        Leaf::Client => (
            "tools: [ask_user]\n".into(),
            vec![
                call("l1", "ask_user", json!({"question": "Colour?"})),
                answer("leaf says done"),
            ],
        ),
        Leaf::Failure => ("tools: [echo]\n".into(), Vec::new()),
        Leaf::Incomplete => (
            "tools: [echo]\nmax_iterations: 1\n".into(),
            vec![
                call("l1", "echo", json!({"text": "hi"})),
                answer("never read"),
            ],
        ),
    }
}

async fn scenario(row: &Row, depth: usize) {
    let name = format!("{:?} at depth {depth}", row.leaf);
    let (leaf_file, leaf_replies) = leaf(row);
    let mut agents = vec![("leaf", leaf_file.as_str())];
    let mut replies = vec![("leaf", leaf_replies)];
    // top -> leaf, or top -> mid -> leaf.
    let above = if depth == 1 { "top" } else { "mid" };
    if depth == 2 {
        agents.push(("mid", "subagents:\n  leaf: leaf.yaml\n"));
        replies.push((
            "mid",
            vec![
                call("m1", "leaf", json!({"task": "do it"})),
                answer("mid says done"),
            ],
        ));
    }
    let top_file = format!(
        "subagents:\n  {above_tool}: {above_tool}.yaml\n",
        above_tool = if depth == 1 { "leaf" } else { "mid" }
    );
    agents.push(("top", top_file.as_str()));
    let first = if depth == 1 { "leaf" } else { "mid" };
    replies.push((
        "top",
        vec![
            call("t1", first, json!({"task": "do it"})),
            answer("top says done"),
        ],
    ));
    let w = World::new(&agents, replies);
    let mut run = w.start("top").await;
    match row.pauses_for {
        None => {}
        Some(kind) => {
            assert_eq!(run.status, RunStatus::RequiresAction, "{name}: {run:?}");
            let items = run.required_action.clone().unwrap().items;
            assert_eq!(items.len(), 1, "{name}");
            assert_eq!(items[0].kind, kind, "{name}");
            assert_eq!(items[0].call_id, "l1", "{name}");
            // The path: the top run, then each run down to the leaf's.
            assert_eq!(items[0].path.len(), depth + 1, "{name}: {:?}", items[0]);
            assert_eq!(items[0].path[0], run.id, "{name}");
            assert_eq!(items[0].path.last(), items[0].run_id.as_ref(), "{name}");
            let decision = match row.leaf {
                Leaf::Confirm => Some(Decision::Approve),
                Leaf::Deny => Some(Decision::Deny {
                    reason: Some("not today".into()),
                }),
                Leaf::Client => Some(Decision::Submit {
                    output: "blue".into(),
                    is_error: false,
                }),
                _ => None,
            };
            match decision {
                Some(d) => {
                    // Decided through the top run; resuming the top resumes the tree.
                    let decided = w.runner.decide(&run.id, Some("l1"), d).await.unwrap();
                    assert_eq!(decided.waiting, 0, "{name}");
                    run = w.runner.resume(&run.id).await.unwrap();
                }
                None => {
                    run = w.runner.cancel(&run.id).await.unwrap();
                }
            }
        }
    }
    assert_eq!(run.status, row.top, "{name}: {run:?}");
    let statuses = w.statuses().await;
    let leaf_status = statuses.iter().find(|(a, _)| a == "leaf").unwrap().1;
    assert_eq!(leaf_status, row.leaf_status, "{name}: {statuses:?}");
    if row.leaf == Leaf::Cancel {
        assert!(
            statuses.iter().all(|(_, s)| *s == RunStatus::Cancelled),
            "{name}: {statuses:?}"
        );
        return;
    }
    let seen = w.seen_by(above);
    assert!(
        seen.contains(row.above_sees),
        "{name}: the model above the leaf read {seen:?}"
    );
    if depth == 2 {
        assert!(w.seen_by("top").contains("mid says done"), "{name}");
    }
    // What the leaf's own model read about its call.
    let leaf_run = w
        .runner
        .store
        .runs(Scope::All, None, None, 100)
        .await
        .unwrap()
        .into_iter()
        .find(|r| r.agent == "leaf")
        .unwrap();
    match row.leaf {
        Leaf::Deny => {
            assert!(w.seen_by("leaf").contains("not today"), "{name}");
            assert_eq!(
                w.record_statuses(&leaf_run.id).await,
                [("write_file".to_string(), "denied".to_string())]
            );
        }
        Leaf::Client => assert!(w.seen_by("leaf").contains("blue"), "{name}"),
        Leaf::Confirm => {
            assert!(w.dir.path().join("ws/a.txt").exists(), "{name}");
            assert_eq!(
                w.record_statuses(&leaf_run.id).await,
                [("write_file".to_string(), "succeeded".to_string())]
            );
        }
        _ => {}
    }
    // The top's record of its sub-agent call.
    let top_records = w.record_statuses(&run.id).await;
    let expected = if row.leaf_status == RunStatus::Completed || depth == 2 {
        "succeeded"
    } else {
        "failed"
    };
    assert_eq!(
        top_records,
        [(first.to_string(), expected.to_string())],
        "{name}"
    );
    // The tree rolls up: the top's totals count every run's calls and tokens.
    let tree = w.runner.tree(&run.id).await.unwrap();
    assert_eq!(tree.children.len(), 1, "{name}");
    // (A leaf whose model never answered used no tokens.)
    let leaf_tokens = if row.leaf == Leaf::Failure && depth == 1 {
        0
    } else {
        1
    };
    assert!(
        tree.totals.usage.total_tokens >= tree.summary.usage.total_tokens + leaf_tokens,
        "{name}"
    );
    assert!(
        tree.totals.calls >= tree.summary.calls + tree.children[0].summary.calls,
        "{name}"
    );
}

#[tokio::test]
async fn scenario_table_at_depth_1_and_2() {
    for depth in [1, 2] {
        for row in rows() {
            scenario(&row, depth).await;
        }
    }
}

#[tokio::test]
async fn parallel_sub_agents_one_pausing_one_finishing() {
    let w = World::new(
        &[
            ("quick", "tools: [echo]\n"),
            ("careful", "tools: [write_file]\n"),
            (
                "top",
                "subagents:\n  quick: quick.yaml\n  careful: careful.yaml\n",
            ),
        ],
        vec![
            (
                "quick",
                vec![
                    call("q1", "echo", json!({"text": "hi"})),
                    answer("quick is done"),
                ],
            ),
            (
                "careful",
                vec![
                    call("c1", "write_file", json!({"path": "b.txt", "content": "B"})),
                    answer("careful is done"),
                ],
            ),
            (
                "top",
                vec![
                    (
                        "Both at once.".into(),
                        vec![
                            ("t1".into(), "quick".into(), json!({"task": "a"})),
                            ("t2".into(), "careful".into(), json!({"task": "b"})),
                        ],
                    ),
                    answer("all done"),
                ],
            ),
        ],
    );
    let run = w.start("top").await;
    assert_eq!(run.status, RunStatus::RequiresAction);
    let items = run.required_action.clone().unwrap().items;
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].tool, "write_file");
    // The sibling finished while the other waits, and its result is recorded.
    let statuses = w.statuses().await;
    assert!(
        statuses.contains(&("quick".into(), RunStatus::Completed)),
        "{statuses:?}"
    );
    assert!(
        statuses.contains(&("careful".into(), RunStatus::RequiresAction)),
        "{statuses:?}"
    );
    assert_eq!(
        w.record_statuses(&run.id).await,
        [("quick".to_string(), "succeeded".to_string())]
    );
    // A call id unique in the tree is enough; the qualified form works too.
    let holder = items[0].run_id.clone().unwrap();
    w.runner
        .decide(&run.id, Some(&format!("{holder}/c1")), Decision::Approve)
        .await
        .unwrap();
    let run = w.runner.resume(&run.id).await.unwrap();
    assert_eq!(run.status, RunStatus::Completed, "{run:?}");
    let seen = w.seen_by("top");
    assert!(
        seen.contains("quick is done") && seen.contains("careful is done"),
        "{seen}"
    );
    // The quick sub-agent ran once: resuming the top did not start it again.
    let quick_requests = w
        .model
        .requests
        .lock()
        .unwrap()
        .iter()
        .filter(|(a, _)| a == "quick")
        .count();
    assert_eq!(quick_requests, 2);
}

#[tokio::test]
async fn the_routing_tool_hands_tasks_by_agent_name() {
    let w = World::new(
        &[
            ("helper", "description: Says hello.\ntools: [echo]\n"),
            (
                "top",
                "subagents: [helper.yaml]\npermissions: {call_subagent: confirm}\n",
            ),
        ],
        vec![
            ("helper", vec![answer("helper says hello")]),
            (
                "top",
                vec![
                    call(
                        "t1",
                        "call_subagent",
                        json!({"agent_name": "helper", "task": "greet"}),
                    ),
                    answer("top done"),
                ],
            ),
        ],
    );
    let run = w.start("top").await;
    // The routing tool's own permission: confirm, asked at the top.
    assert_eq!(run.status, RunStatus::RequiresAction);
    let items = run.required_action.clone().unwrap().items;
    assert_eq!(items[0].tool, "call_subagent");
    assert!(items[0].path.is_empty(), "the top run's own item");
    w.runner
        .decide(&run.id, Some("t1"), Decision::Approve)
        .await
        .unwrap();
    let run = w.runner.resume(&run.id).await.unwrap();
    assert_eq!(run.status, RunStatus::Completed, "{run:?}");
    assert!(w.seen_by("top").contains("helper says hello"));
    // The tool's description lists the sub-agents with their own descriptions.
    let agent = Agent::load(&w.dir.path().join("top.yaml")).unwrap();
    let library = std::sync::Arc::new(toolgate::tool::ToolLibrary::builtin(
        &toolgate::tool::sources::standard(),
    ));
    let kit = agent.toolkit(&library).unwrap();
    let tool = kit.resolve("call_subagent").unwrap();
    assert!(
        tool.spec.description.contains("helper: Says hello."),
        "{}",
        tool.spec.description
    );
}

#[tokio::test]
async fn a_cycle_is_cut_off_at_max_depth() {
    // loop calls itself: depth 1 and 2 start, depth 3 is refused (max_depth 2).
    let w = World::new(
        &[("loop", "max_depth: 2\nsubagents:\n  again: loop.yaml\n")],
        vec![(
            "loop",
            vec![
                call("x1", "again", json!({"task": "again"})),
                answer("loop done"),
            ],
        )],
    );
    let run = w.start("loop").await;
    assert_eq!(run.status, RunStatus::Completed, "{run:?}");
    let runs = w
        .runner
        .store
        .runs(Scope::All, None, None, 100)
        .await
        .unwrap();
    assert_eq!(runs.len(), 3, "the top and two levels below it");
    let deepest = runs.iter().max_by_key(|r| r.depth).unwrap();
    assert_eq!(deepest.depth, 2);
    // What the deepest run's model read: a clear refusal naming the cycle.
    let requests = w.model.requests.lock().unwrap();
    let refused = requests
        .iter()
        .flat_map(|(_, m)| m.iter())
        .find(|m| m.content.contains("was not started"))
        .expect("a refusal reached a model");
    assert!(
        refused.content.contains("past max_depth 2"),
        "{}",
        refused.content
    );
    assert!(refused.content.contains("cycle"), "{}", refused.content);
    assert!(
        refused.content.contains("loop -> again -> again -> again"),
        "{}",
        refused.content
    );
}

#[tokio::test]
async fn child_events_reach_the_parent_stream_tagged_with_the_child_run() {
    let w = World::new(
        &[
            ("leaf", "tools: [echo]\n"),
            ("top", "subagents:\n  leaf: leaf.yaml\n"),
        ],
        vec![
            (
                "leaf",
                vec![
                    call("l1", "echo", json!({"text": "hi"})),
                    answer("leaf done"),
                ],
            ),
            (
                "top",
                vec![call("t1", "leaf", json!({"task": "x"})), answer("top done")],
            ),
        ],
    );
    let run = w.start("top").await;
    assert_eq!(run.status, RunStatus::Completed);
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let leaf_run = w
        .runner
        .store
        .runs(Scope::All, None, None, 10)
        .await
        .unwrap()
        .into_iter()
        .find(|r| r.agent == "leaf")
        .unwrap();
    let events = w.events.lock().unwrap();
    let of_leaf: Vec<&str> = events
        .iter()
        .filter(|e| e.run_id() == leaf_run.id)
        .map(|e| e.name())
        .collect();
    assert!(of_leaf.contains(&"run.started"), "{of_leaf:?}");
    assert!(of_leaf.contains(&"tool.finished"), "{of_leaf:?}");
    assert!(of_leaf.contains(&"run.completed"), "{of_leaf:?}");
    let of_top: Vec<&str> = events
        .iter()
        .filter(|e| e.run_id() == run.id)
        .map(|e| e.name())
        .collect();
    assert!(
        of_top.contains(&"tool.started") && of_top.contains(&"tool.finished"),
        "{of_top:?}"
    );
    assert_eq!(of_top.last(), Some(&"run.completed"));
}

#[tokio::test]
async fn edited_arguments_for_a_childs_call_are_checked_by_the_childs_tools() {
    let w = World::new(
        &[
            ("leaf", "tools: [write_file]\n"),
            ("top", "tools: [echo]\nsubagents:\n  leaf: leaf.yaml\n"),
        ],
        vec![
            (
                "leaf",
                vec![
                    call("l1", "write_file", json!({"path": "a.txt", "content": "A"})),
                    answer("leaf done"),
                ],
            ),
            (
                "top",
                vec![call("t1", "leaf", json!({"task": "x"})), answer("top done")],
            ),
        ],
    );
    let run = w.start("top").await;
    assert_eq!(run.status, RunStatus::RequiresAction);
    let bad = json!({"path": "b.txt"}).as_object().unwrap().clone();
    let refused = w
        .runner
        .decide(&run.id, Some("l1"), Decision::Edit { arguments: bad })
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("content"), "{refused}");
    let good = json!({"path": "b.txt", "content": "BB"})
        .as_object()
        .unwrap()
        .clone();
    w.runner
        .decide(&run.id, Some("l1"), Decision::Edit { arguments: good })
        .await
        .unwrap();
    let run = w.runner.resume(&run.id).await.unwrap();
    assert_eq!(run.status, RunStatus::Completed, "{run:?}");
    assert_eq!(
        std::fs::read_to_string(w.dir.path().join("ws/b.txt")).unwrap(),
        "BB"
    );
}
