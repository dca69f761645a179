//! Two tenants on one server cannot see each other's files (issue 42, item 1). acme's
//! client uploads a report through `/v1/responses` and writes a file with a tool; then
//! globex's client, and the default tenant's admin, run an agent that lists its
//! workspace and reads those files every way it can name them (by name, `..`, the
//! `tenants/` path, a link it made, a command tool). Before, one `--workspace` held
//! every tenant's files and globex read acme's report; now each tenant has its own
//! folder (`WS/tenants/T/`, the default tenant `WS` itself, with `tenants/` out of its
//! reach), and acme's own snoop is the control: it does find both files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use toolgate_test_support::serving::identity::keys_create;
use toolgate_test_support::serving::{Server, Site};

const REPORT: &str = "ACME-REPORT-71c0e9";
const NOTE: &str = "ACME-NOTE-5b2f48";

/// Every way a run can name acme's files, from its own workspace.
fn snoop_replies() -> String {
    let reads = [
        "acme-secret-report.txt",
        "uploads/acme-secret-report.txt",
        "note.txt",
        "../acme/note.txt",
        "../acme/uploads/acme-secret-report.txt",
        "tenants/acme/note.txt",
        "tenants/acme/uploads/acme-secret-report.txt",
        "link/note.txt",
        "link2/note.txt",
    ];
    // The command tool first, on a turn of its own: its links exist for the reads.
    let first = json!([
        {"id": "call_sh", "name": "peek", "arguments": {}},
        {"id": "call_ls", "name": "list_dir", "arguments": {"path": "."}},
        {"id": "call_ls_t", "name": "list_dir", "arguments": {"path": "tenants"}},
    ]);
    let then: Vec<Value> = reads
        .iter()
        .enumerate()
        .map(|(i, path)| json!({"id": format!("call_r{i}"), "name": "read_file", "arguments": {"path": path}}))
        .collect();
    format!(
        "replies:\n  - content: Looking.\n    tool_calls: {first}\n  - content: Reading.\n    tool_calls: {}\n  - content: Done.\n",
        serde_json::to_string(&then).unwrap()
    )
}

fn site() -> Site {
    let site = Site::new();
    let root = site.path();
    let write = |p: &str, text: &str| std::fs::write(root.join(p), text).unwrap();
    // A command tool that links to the other tenants' folder, then reads through it.
    write(
        "tools/peek.yaml",
        "name: peek\ndescription: Looks around.\npermission: auto\nentry:\n  type: command\n  command: sh\n  args: [-c, \"ln -s ../acme link 2>&1; ln -s tenants/acme link2 2>&1; ls -aR . 2>&1; cat note.txt ../acme/note.txt tenants/acme/note.txt link/note.txt link2/note.txt ../acme/uploads/* tenants/acme/uploads/* 2>&1; true\"]\n",
    );
    write(
        "agents/keeper.yaml",
        "name: keeper\nmodel: scripted:keeper.replies.yaml\ninstructions: Keep.\ntools: [write_file]\npermissions: {write_file: auto}\n",
    );
    write(
        "agents/keeper.replies.yaml",
        &format!(
            "replies:\n  - content: Keeping.\n    tool_calls: [{{id: call_w, name: write_file, arguments: {{path: note.txt, content: {NOTE}}}}}]\n  - content: Kept.\n  - content: Read.\n  - content: Read again.\n"
        ),
    );
    write(
        "agents/snoop.yaml",
        "name: snoop\nmodel: scripted:snoop.replies.yaml\ninstructions: Look.\ntools: [list_dir, read_file, peek]\npermissions: {list_dir: auto, read_file: auto, peek: auto}\n",
    );
    write("agents/snoop.replies.yaml", &snoop_replies());
    site
}

/// Starts `agent` as `cred`'s caller and returns what its calls gave back.
async fn run_as(server: &Server, cred: &str, agent: &str) -> String {
    let calls = server.completed_calls(cred, agent, "Go.").await;
    assert!(!calls.is_empty());
    // What came back, not what was asked (the arguments name acme's files).
    calls
        .iter()
        .map(|c| format!("{} {}\n", c["result"], c["error_message"]))
        .collect()
}

/// acme uploads its report with a Responses request (the file saved in its workspace).
async fn upload(server: &Server, cred: &str) {
    use base64::Engine;
    let data = base64::engine::general_purpose::STANDARD.encode(REPORT);
    let body = json!({
        "model": "agent:keeper",
        "input": [{"role": "user", "content": [
            {"type": "input_text", "text": "Keep this."},
            {"type": "input_file", "filename": "acme-secret-report.txt",
             "file_data": format!("data:text/plain;base64,{data}")},
        ]}],
    });
    let answered = server
        .client
        .post(server.url("/v1/responses"))
        .bearer_auth(cred)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = answered.status().as_u16();
    let text = answered.text().await.unwrap();
    assert_eq!(status, 200, "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn two_tenants_on_one_server_cannot_see_each_others_files() {
    let site = site();
    let acme = keys_create(&site, "acme", "acme-client", "client", "");
    let globex = keys_create(&site, "globex", "globex-client", "client", "");
    let admin = "admin-key-0f3e9a7c";
    let server = site.serve(Some(admin));
    upload(&server, &acme).await;
    run_as(&server, &acme, "keeper").await;
    let mine = run_as(&server, &acme, "snoop").await;
    assert!(
        mine.contains(NOTE) && mine.contains(REPORT),
        "the control: {mine}"
    );
    for (who, cred) in [("globex", globex.as_str()), ("the default tenant", admin)] {
        let seen = run_as(&server, cred, "snoop").await;
        assert!(!seen.contains(NOTE), "{who} read acme's note: {seen}");
        assert!(!seen.contains(REPORT), "{who} read acme's report: {seen}");
        if cred == admin {
            // A link the default tenant's tool made into `tenants/` is refused on open.
            assert!(
                seen.contains("'link2/note.txt' is out of the tools' reach"),
                "{seen}"
            );
        }
    }
    let ws = site.path().join("ws");
    assert_eq!(
        std::fs::read_to_string(ws.join("tenants/acme/note.txt")).unwrap(),
        NOTE,
        "acme's file is in acme's workspace"
    );
    assert!(ws.join("tenants/globex").is_dir());
}
