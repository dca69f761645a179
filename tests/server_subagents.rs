//! Sub-agents through `toolgate serve`'s HTTP API: a run whose grandchild waits shows
//! the item with its path, the run's tree (`GET /v1/runs/{id}/tree`) and the
//! conversation's stats show the sub-agent runs, an approval through the top run
//! finishes the tree, the SSE stream carries the children's events tagged with their
//! runs, and the OpenAPI document describes the tree.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::serving;

use serde_json::json;
use serving::Site;

/// `team` -> `team_coder` -> `team_writer`, whose write_file waits for a person.
fn team_site() -> Site {
    let site = Site::new();
    let write = |p: &str, t: &str| std::fs::write(site.path().join("agents").join(p), t).unwrap();
    write(
        "team.yaml",
        "name: team\nmodel: scripted:team.replies.yaml\ninstructions: Lead.\nsubagents:\n  coder: team_coder.yaml\n",
    );
    write(
        "team.replies.yaml",
        "replies:\n  - content: Coder, please.\n    tool_calls: [{id: call_c, name: coder, arguments: {task: write it}}]\n    usage: {prompt_tokens: 10, completion_tokens: 5}\n  - content: The team is done.\n",
    );
    write(
        "team_coder.yaml",
        "name: team_coder\ndescription: Codes.\nmodel: scripted:team_coder.replies.yaml\nsubagents:\n  writer: team_writer.yaml\n",
    );
    write(
        "team_coder.replies.yaml",
        "replies:\n  - content: Writer, please.\n    tool_calls: [{id: call_w, name: writer, arguments: {task: save it}}]\n    usage: {prompt_tokens: 20, completion_tokens: 5}\n  - content: Coded.\n",
    );
    write(
        "team_writer.yaml",
        "name: team_writer\ndescription: Writes files.\nmodel: scripted:team_writer.replies.yaml\ntools: [write_file]\n",
    );
    write(
        "team_writer.replies.yaml",
        "replies:\n  - content: Saving.\n    tool_calls: [{id: call_f, name: write_file, arguments: {path: out.txt, content: hi}}]\n    usage: {prompt_tokens: 30, completion_tokens: 5}\n  - content: Saved.\n",
    );
    site
}

#[tokio::test]
async fn the_api_shows_the_tree_and_an_approval_through_the_top_finishes_it() {
    let site = team_site();
    let server = site.serve(None);
    let (status, run) = server
        .post("/v1/runs", json!({"agent": "team", "input": "go"}))
        .await;
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["status"], "requires_action", "{run}");
    let id = run["id"].as_str().unwrap();
    let item = &run["required_action"]["items"][0];
    assert_eq!(item["call_id"], "call_f");
    assert_eq!(item["tool"], "write_file");
    let path = item["path"].as_array().unwrap();
    assert_eq!(path.len(), 3, "{item}");
    assert_eq!(path[0], id);
    assert_eq!(path[2], item["run_id"]);

    let (status, tree) = server.get(&format!("/v1/runs/{id}/tree")).await;
    assert_eq!(status, 200, "{tree}");
    assert_eq!(tree["agent"], "team");
    let coder = &tree["children"][0];
    assert_eq!(coder["agent"], "team_coder");
    assert_eq!(coder["parent_call_id"], "call_c");
    assert_eq!(coder["status"], "requires_action");
    assert_eq!(coder["children"][0]["agent"], "team_writer");
    assert_eq!(tree["totals"]["usage"]["total_tokens"], 75, "{tree}");

    // The child run object names its parent.
    let (_, child) = server
        .get(&format!("/v1/runs/{}", coder["run_id"].as_str().unwrap()))
        .await;
    assert_eq!(child["parent_run_id"], id);
    assert_eq!(child["parent_call_id"], "call_c");

    // Approved through the top run, streamed: the children's events come tagged
    // with their runs, and the top's run object comes last.
    let events = server
        .post_sse(
            &format!("/v1/runs/{id}/approve"),
            json!({"call_id": "call_f", "stream": true}),
        )
        .await;
    let (last_name, last) = events.last().unwrap();
    assert_eq!(last_name, "run");
    assert_eq!(last["id"], id);
    assert_eq!(last["status"], "completed", "{last}");
    let runs_seen: std::collections::HashSet<&str> = events
        .iter()
        .filter_map(|(_, e)| e["run_id"].as_str())
        .collect();
    assert_eq!(runs_seen.len(), 3, "{events:?}");
    assert!(site.path().join("ws/out.txt").exists());

    let conv = last["conversation_id"].as_str().unwrap();
    let (status, stats) = server.get(&format!("/v1/conversations/{conv}/stats")).await;
    assert_eq!(status, 200, "{stats}");
    assert_eq!(stats["total_calls"], 1);
    assert_eq!(stats["totals_with_subagents"]["calls"], 3, "{stats}");
    assert_eq!(stats["totals_with_subagents"]["success_rate"], 100.0);
    let tree = &stats["run_trees"][0];
    assert_eq!(
        tree["children"][0]["children"][0]["tools"]["write_file"]["calls"],
        1
    );

    let (_, doc) = server.get("/openapi.json").await;
    assert!(doc["paths"]["/v1/runs/{id}/tree"]["get"].is_object());
    let schemas = &doc["components"]["schemas"];
    assert!(
        schemas["RunTree"]["properties"]["children"].is_object(),
        "{}",
        schemas["RunTree"]
    );
    assert!(schemas["RequiredItem"]["properties"]["path"].is_object());
    assert!(schemas["ConversationStats"].is_object());
}
