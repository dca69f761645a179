//! The decision rule's table: approve, deny, submit, always (with its fan-out), the
//! wrong kind, already decided, unknown and ambiguous calls, expired deadlines, a run
//! not paused.

#![allow(clippy::unwrap_used)]

use super::*;
use serde_json::json;
use toolgate_protocol::{RequiredItem, Usage};

const NOW: i64 = 1_000_000;

fn run(status: RunStatus) -> RunRow {
    RunRow {
        id: "run_top".into(),
        conversation_id: "conv".into(),
        agent: "a".into(),
        status,
        state: "{}".into(),
        iteration: 1,
        last_error: None,
        lease_owner: None,
        lease_until: None,
        created_at: 0,
        updated_at: 0,
        parent_run_id: None,
        parent_call_id: None,
        depth: 0,
        tenant: "default".into(),
        started_by: None,
        usage: Usage::default(),
    }
}

/// An item: call id, tool, kind, state, the sub-agent run holding it, its deadline.
fn item(
    call: &str,
    tool: &str,
    kind: ItemKind,
    state: PendingState,
    holder: Option<&str>,
    expires_at: Option<i64>,
) -> PendingRow {
    PendingRow {
        item: RequiredItem {
            call_id: call.into(),
            kind,
            tool: tool.into(),
            arguments: json!({}),
            run_id: holder.map(str::to_string),
            path: Vec::new(),
            reason: None,
            expires_at,
            on_timeout: None,
            policy: Some(format!("policy-of-{tool}")),
        },
        decision: None,
        state,
    }
}

fn approval(call: &str, tool: &str) -> PendingRow {
    item(
        call,
        tool,
        ItemKind::Approval,
        PendingState::Waiting,
        None,
        None,
    )
}

fn client(call: &str, tool: &str) -> PendingRow {
    item(
        call,
        tool,
        ItemKind::SubmitToolOutput,
        PendingState::Waiting,
        None,
        None,
    )
}

/// What a row expects: the items decided (holder/call) and the standing tools, or the
/// refusal's kind and the start of its message.
enum Want {
    Decides(&'static [&'static str], &'static [&'static str], usize),
    Refuses(Refusal, &'static str),
}

struct Row {
    name: &'static str,
    status: RunStatus,
    pending: Vec<PendingRow>,
    call: Option<&'static str>,
    decision: Decision,
    want: Want,
}

fn submit() -> Decision {
    Decision::Submit {
        output: "42".into(),
        is_error: false,
    }
}

fn deny() -> Decision {
    Decision::Deny { reason: None }
}

// One row per case: the table reads best whole, as the rule's specification.
#[allow(clippy::too_many_lines)]
fn table() -> Vec<Row> {
    use PendingState::*;
    use Want::*;
    vec![
        Row {
            name: "approve the one named",
            status: RunStatus::RequiresAction,
            pending: vec![approval("c1", "pay"), approval("c2", "pay")],
            call: Some("c1"),
            decision: Decision::Approve,
            want: Decides(&["run_top/c1"], &[], 1),
        },
        Row {
            name: "approve every waiting approval, not the client's item",
            status: RunStatus::RequiresAction,
            pending: vec![
                approval("c1", "pay"),
                client("c2", "ask"),
                approval("c3", "mail"),
            ],
            call: None,
            decision: Decision::Approve,
            want: Decides(&["run_top/c1", "run_top/c3"], &[], 1),
        },
        Row {
            name: "deny the one named",
            status: RunStatus::RequiresAction,
            pending: vec![approval("c1", "pay")],
            call: Some("c1"),
            decision: deny(),
            want: Decides(&["run_top/c1"], &[], 0),
        },
        Row {
            name: "submit the client's output",
            status: RunStatus::RequiresAction,
            pending: vec![client("c1", "ask"), approval("c2", "pay")],
            call: Some("c1"),
            decision: submit(),
            want: Decides(&["run_top/c1"], &[], 1),
        },
        Row {
            name: "always approves the other calls of the tool and stands for it",
            status: RunStatus::RequiresAction,
            pending: vec![
                approval("c1", "pay"),
                approval("c2", "mail"),
                approval("c3", "pay"),
            ],
            call: Some("c1"),
            decision: Decision::ApproveAlways,
            want: Decides(&["run_top/c1", "run_top/c3"], &["run_top/pay"], 1),
        },
        Row {
            name: "always fans out only within the run that asked",
            status: RunStatus::RequiresAction,
            pending: vec![
                approval("c1", "pay"),
                item(
                    "c9",
                    "pay",
                    ItemKind::Approval,
                    Waiting,
                    Some("run_child"),
                    None,
                ),
            ],
            call: Some("c1"),
            decision: Decision::ApproveAlways,
            want: Decides(&["run_top/c1"], &["run_top/pay"], 1),
        },
        Row {
            name: "an approval answered with an output is the wrong kind",
            status: RunStatus::RequiresAction,
            pending: vec![approval("c1", "pay")],
            call: Some("c1"),
            decision: submit(),
            want: Refuses(
                Refusal::DecisionConflict,
                "call c1 (pay) is a approval item; it needs a decision: use toolgate approve or deny",
            ),
        },
        Row {
            name: "a client call approved is the wrong kind",
            status: RunStatus::RequiresAction,
            pending: vec![client("c1", "ask")],
            call: Some("c1"),
            decision: Decision::Approve,
            want: Refuses(
                Refusal::DecisionConflict,
                "call c1 (ask) is a submit_tool_output item; it is a client tool: use toolgate submit",
            ),
        },
        Row {
            name: "already decided",
            status: RunStatus::RequiresAction,
            pending: vec![item("c1", "pay", ItemKind::Approval, Decided, None, None)],
            call: Some("c1"),
            decision: Decision::Approve,
            want: Refuses(
                Refusal::DecisionConflict,
                "call c1 of run run_top is already decided (decided)",
            ),
        },
        Row {
            name: "an unknown call lists those waiting",
            status: RunStatus::RequiresAction,
            pending: vec![
                approval("c1", "pay"),
                item(
                    "c2",
                    "pay",
                    ItemKind::Approval,
                    Waiting,
                    Some("run_child"),
                    None,
                ),
            ],
            call: Some("nope"),
            decision: Decision::Approve,
            want: Refuses(
                Refusal::DecisionConflict,
                "run run_top has no pending call 'nope'; waiting: c1, run_child/c2",
            ),
        },
        Row {
            name: "a call id waiting in two runs must be qualified",
            status: RunStatus::RequiresAction,
            pending: vec![
                approval("c1", "pay"),
                item(
                    "c1",
                    "pay",
                    ItemKind::Approval,
                    Waiting,
                    Some("run_child"),
                    None,
                ),
            ],
            call: Some("c1"),
            decision: Decision::Approve,
            want: Refuses(
                Refusal::DecisionConflict,
                "call id 'c1' is waiting in more than one run of this tree; name one: run_top/c1, run_child/c1",
            ),
        },
        Row {
            name: "a qualified id names the child's item",
            status: RunStatus::RequiresAction,
            pending: vec![
                approval("c1", "pay"),
                item(
                    "c1",
                    "pay",
                    ItemKind::Approval,
                    Waiting,
                    Some("run_child"),
                    None,
                ),
            ],
            call: Some("run_child/c1"),
            decision: Decision::Approve,
            want: Decides(&["run_child/c1"], &[], 1),
        },
        Row {
            name: "an expired approval named cannot be approved",
            status: RunStatus::RequiresAction,
            pending: vec![item(
                "c1",
                "pay",
                ItemKind::Approval,
                Waiting,
                None,
                Some(NOW - 5_000),
            )],
            call: Some("c1"),
            decision: Decision::Approve,
            want: Refuses(
                Refusal::Expired,
                "call c1 (pay) of run run_top expired 5s ago",
            ),
        },
        Row {
            name: "an expired approval can still be denied",
            status: RunStatus::RequiresAction,
            pending: vec![item(
                "c1",
                "pay",
                ItemKind::Approval,
                Waiting,
                None,
                Some(NOW - 5_000),
            )],
            call: Some("c1"),
            decision: deny(),
            want: Decides(&["run_top/c1"], &[], 0),
        },
        Row {
            name: "approving all skips the expired",
            status: RunStatus::RequiresAction,
            pending: vec![
                item("c1", "pay", ItemKind::Approval, Waiting, None, Some(NOW)),
                approval("c2", "pay"),
            ],
            call: None,
            decision: Decision::Approve,
            want: Decides(&["run_top/c2"], &[], 1),
        },
        Row {
            name: "approving all when all expired",
            status: RunStatus::RequiresAction,
            pending: vec![item(
                "c1",
                "pay",
                ItemKind::Approval,
                Waiting,
                None,
                Some(NOW),
            )],
            call: None,
            decision: Decision::Approve,
            want: Refuses(
                Refusal::Expired,
                "every waiting approval of run run_top has expired",
            ),
        },
        Row {
            name: "nothing of the kind waits",
            status: RunStatus::RequiresAction,
            pending: vec![client("c1", "ask")],
            call: None,
            decision: Decision::Approve,
            want: Refuses(
                Refusal::DecisionConflict,
                "run run_top has no waiting approval items",
            ),
        },
        Row {
            name: "a run not paused",
            status: RunStatus::Completed,
            pending: vec![],
            call: Some("c1"),
            decision: Decision::Approve,
            want: Refuses(
                Refusal::DecisionConflict,
                "run run_top is completed, not waiting for a decision",
            ),
        },
    ]
}

#[test]
fn the_decision_table() {
    for row in table() {
        let got = choose(&run(row.status), &row.pending, row.call, &row.decision, NOW);
        match (row.want, got) {
            (Want::Decides(items, standing, still), Ok(changes)) => {
                let got_items: Vec<String> = changes
                    .items
                    .iter()
                    .map(|(h, c)| format!("{h}/{c}"))
                    .collect();
                assert_eq!(got_items, items, "{}", row.name);
                let got_standing: Vec<String> = changes
                    .standing
                    .iter()
                    .map(|(h, t, policy)| {
                        assert_eq!(policy, &format!("policy-of-{t}"), "{}", row.name);
                        format!("{h}/{t}")
                    })
                    .collect();
                assert_eq!(got_standing, standing, "{}", row.name);
                assert_eq!(changes.still_waiting, still, "{}", row.name);
                assert_eq!(changes.run_id, "run_top", "{}", row.name);
            }
            (Want::Refuses(kind, start), Err(refused)) => {
                assert_eq!(refused.kind(), kind, "{}", row.name);
                let message = refused.message();
                assert!(message.starts_with(start), "{}: {message}", row.name);
            }
            (Want::Decides(..), Err(refused)) => {
                panic!("{}: refused: {}", row.name, refused.message())
            }
            (Want::Refuses(..), Ok(changes)) => panic!("{}: decided {changes:?}", row.name),
        }
    }
}
