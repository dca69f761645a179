//! The approval inbox in a real browser: Debian's headless Chromium, driven by
//! playwright-core (both installed by tests/browser/setup.sh, which fails loudly when
//! it cannot), against a real `toolgate serve`. Each test runs one scenario of
//! tests/browser/inbox.mjs and then checks what the server recorded. Screenshots land
//! in target/browser-artifacts/.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::serving;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;
use serving::{Server, Site};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The node_modules with playwright-core (Chromium installed on the way).
fn modules() -> &'static Path {
    static MODULES: OnceLock<PathBuf> = OnceLock::new();
    MODULES.get_or_init(|| {
        let out = Command::new("bash")
            .arg(root().join("tests/browser/setup.sh"))
            .output()
            .expect("bash must be there to run tests/browser/setup.sh");
        assert!(
            out.status.success(),
            "tests/browser/setup.sh failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8(out.stdout).unwrap();
        PathBuf::from(stdout.lines().last().unwrap().trim())
    })
}

/// Runs one scenario against `server`; returns what it printed last (JSON), if anything.
fn scenario(server: &Server, name: &str) -> Value {
    scenario_with(server, name, &Value::Null)
}

/// [`scenario`], with the keys of other identities (`TOOLGATE_KEYS`).
fn scenario_with(server: &Server, name: &str, keys: &Value) -> Value {
    scenario_env(server, name, keys, &[])
}

/// [`scenario_with`], with more environment variables for the scenario.
fn scenario_env(
    server: &Server,
    name: &str,
    keys: &Value,
    env: &[(&str, &std::ffi::OsStr)],
) -> Value {
    let artifacts = root().join("target/browser-artifacts");
    let mut cmd = Command::new("node");
    cmd.arg(root().join("tests/browser/inbox.mjs"))
        .arg(name)
        .env("TOOLGATE_URL", &server.base)
        .env("PLAYWRIGHT_MODULES", modules())
        .env("ARTIFACTS", &artifacts)
        .env("TOOLGATE_KEYS", keys.to_string())
        .envs(env.iter().copied());
    match &server.key {
        Some(k) => cmd.env("TOOLGATE_KEY", k),
        None => cmd.env_remove("TOOLGATE_KEY"),
    };
    let out = cmd
        .output()
        .expect("node must be on PATH for the browser tests");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "scenario {name} failed (screenshots in {}):\n{stdout}\n{}",
        artifacts.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or(Value::Null)
}

fn run_id(v: &Value) -> String {
    v["run_id"]
        .as_str()
        .expect("the scenario names its run")
        .to_string()
}

/// A run pauses with the page open; its items appear without a reload; Approve and
/// Submit resolve them; the run completes on the page; the run and conversation pages
/// show its timeline and stats.
#[tokio::test(flavor = "multi_thread")]
async fn approve_and_submit_in_the_page() {
    let site = Site::new();
    let server = site.serve(None);
    let id = run_id(&scenario(&server, "approve"));
    let (status, run) = server.get(&format!("/v1/runs/{id}")).await;
    assert_eq!(status, 200);
    assert_eq!(run["status"], "completed", "{run}");
    let (_, calls) = server.get(&format!("/v1/calls?run_id={id}")).await;
    let by_call = |c: &str| {
        calls["calls"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["call_id"] == c)
            .cloned()
            .unwrap_or_else(|| panic!("no record of {c}: {calls}"))
    };
    assert_eq!(by_call("call_write")["status"], "succeeded");
    assert_eq!(by_call("call_ask")["status"], "client");
    assert_eq!(by_call("call_ask")["result"], "Blue");
    assert_eq!(
        std::fs::read_to_string(site.path().join("ws/result.txt")).unwrap(),
        "14\n"
    );
}

/// A run paused by the CLI on the server's database shows up on the open page
/// without a reload, within the scenario's 3 s (the page no longer re-reads: the
/// server's change feed carries it).
#[tokio::test(flavor = "multi_thread")]
async fn a_run_paused_by_another_process_appears_without_a_reload() {
    let site = Site::new();
    let server = site.serve(None);
    let id = run_id(&scenario_env(
        &server,
        "elsewhere",
        &Value::Null,
        &[
            ("TOOLGATE_BIN", std::ffi::OsStr::new(serving::bin())),
            ("TOOLGATE_SITE", site.path().as_os_str()),
        ],
    ));
    let (_, run) = server.get(&format!("/v1/runs/{id}")).await;
    assert_eq!(run["status"], "requires_action", "{run}");
}

/// A call held by a rule on its arguments: the card names the rule that asked
/// (`confirm_if: args.amount > 1000`) and the deadline; approving it runs the call.
#[tokio::test(flavor = "multi_thread")]
async fn the_card_names_the_rule_that_asked() {
    let site = Site::new();
    site.finance("approval_timeout: 30m\n");
    let server = site.serve(None);
    let id = run_id(&scenario(&server, "reason"));
    let (_, run) = server.get(&format!("/v1/runs/{id}")).await;
    assert_eq!(run["status"], "completed", "{run}");
    let (_, calls) = server.get(&format!("/v1/calls?run_id={id}")).await;
    assert_eq!(calls["calls"][0]["status"], "succeeded", "{calls}");
}

/// Deny with a reason (by the keyboard on the focused item): the reason is the call's
/// result in what the model is sent next.
#[tokio::test(flavor = "multi_thread")]
async fn deny_with_a_reason_reaches_the_model() {
    let site = Site::new();
    let server = site.serve(None);
    let id = run_id(&scenario(&server, "deny"));
    let (status, t) = server.get(&format!("/v1/runs/{id}/timeline")).await;
    assert_eq!(status, 200);
    assert_eq!(t["run"]["status"], "completed", "{t}");
    let answer = t["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "call_write")
        .unwrap_or_else(|| panic!("no tool message for call_write: {t}"));
    assert!(
        answer["content"]
            .as_str()
            .unwrap()
            .contains("Not in this folder, please."),
        "{answer}"
    );
    // A later message exists: the model was asked again with that answer.
    let seq = answer["seq"].as_i64().unwrap();
    assert!(
        t["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["role"] == "assistant" && m["seq"].as_i64().unwrap() > seq)
    );
    let pause = t["pauses"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["call_id"] == "call_write")
        .unwrap();
    assert_eq!(pause["decision"]["type"], "deny");
    assert_eq!(pause["decision"]["reason"], "Not in this folder, please.");
    assert!(pause["decided_at"].as_i64().unwrap() > 0);
    assert_eq!(pause["decided_by"], "local", "the identity decides");
    assert_eq!(
        pause["decided_as"], "inbox",
        "the page names no one: it says inbox"
    );
    assert!(!site.path().join("ws/result.txt").exists());
}

/// Edited arguments that are not JSON send nothing; ones the server refuses show its
/// error next to the field and change nothing; a decision another person made first
/// is said plainly and leaves theirs in place.
#[tokio::test(flavor = "multi_thread")]
async fn invalid_edit_changes_nothing_and_a_lost_race_is_said() {
    let site = Site::new();
    let server = site.serve(None);
    let id = run_id(&scenario(&server, "edit"));
    let (_, t) = server.get(&format!("/v1/runs/{id}/timeline")).await;
    let pause = t["pauses"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["call_id"] == "call_write")
        .unwrap()
        .clone();
    assert_eq!(pause["decision"]["type"], "deny", "{pause}");
    assert_eq!(pause["decision"]["reason"], "decided elsewhere");
    assert_eq!(pause["arguments"]["path"], "result.txt");
    assert_eq!(t["run"]["status"], "requires_action");
}

/// With an API key set, the page asks for it, loads nothing without it, refuses a
/// wrong one and keeps the right one for the session; `a` on a focused item approves.
#[tokio::test(flavor = "multi_thread")]
async fn the_page_asks_for_the_key() {
    let site = Site::new();
    let server = site.serve(Some("inbox-test-key"));
    let id = run_id(&scenario(&server, "key"));
    assert_eq!(
        decision(&server, &id, "call_write").await["type"],
        "approve"
    );
}

/// The decision recorded for one call of a run.
async fn decision(server: &Server, run: &str, call: &str) -> Value {
    let (status, t) = server.get(&format!("/v1/runs/{run}/timeline")).await;
    assert_eq!(status, 200, "{t}");
    t["pauses"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["call_id"] == call)
        .unwrap_or_else(|| panic!("no pause for {call}: {t}"))["decision"]
        .clone()
}

/// On a phone-sized screen nothing scrolls sideways, every control is there, and a tap
/// on Approve always records a standing approval.
#[tokio::test(flavor = "multi_thread")]
async fn phone_sized_screen() {
    let site = Site::new();
    let server = site.serve(None);
    let id = run_id(&scenario(&server, "phone"));
    assert_eq!(
        decision(&server, &id, "call_write").await["type"],
        "approve_always"
    );
}

/// Twenty navigations in one tab, by links and back/forward, with the back/forward
/// cache on: a cached page holds no event stream open (six would take every connection
/// the browser gives the host, and the tab would hang); a restored page shows what
/// changed meanwhile; an Approve at the end is recorded.
#[tokio::test(flavor = "multi_thread")]
async fn cached_pages_hold_no_stream_open() {
    let site = Site::new();
    let server = site.serve(None);
    let id = run_id(&scenario(&server, "bfcache"));
    let (status, run) = server.get(&format!("/v1/runs/{id}")).await;
    assert_eq!(status, 200);
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(
        decision(&server, &id, "call_write").await["type"],
        "approve"
    );
}

/// A secret argument reads `[secret]` in the inbox and on the run page; a long value
/// is folded until opened. The card shows the tool's label, icon (a file beside the
/// tool, inline) and help.
#[tokio::test(flavor = "multi_thread")]
async fn secrets_are_masked_and_long_values_folded() {
    let site = Site::new();
    let write = |p: &str, text: &str| std::fs::write(site.path().join(p), text).unwrap();
    write(
        "tools/send_note.yaml",
        "name: send_note\ndescription: Send a note, signed with a token.\nlabel: {en_US: Send a note, zh_Hans: 发送便条}\nicon: note.svg\nhelp: Approve only notes to people you know.\npermission: confirm\nparameters:\n  type: object\n  properties:\n    token: {type: string, secret: true}\n    text: {type: string}\n  required: [token, text]\nentry:\n  type: command\n  command: sh\n  args: [-c, \"echo sent\"]\n",
    );
    write(
        "tools/note.svg",
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 20 20\"><rect width=\"20\" height=\"20\" fill=\"#3d7ab8\"/></svg>",
    );
    let text: String = (1..=20)
        .map(|i| format!("This is line {i} of the note, long enough to be worth folding.\n"))
        .collect();
    let replies = serde_json::json!({"replies": [
        {"content": "Sending.", "tool_calls": [{"id": "call_note", "name": "send_note",
            "arguments": {"token": "tok-very-secret-123", "text": text}}]},
        {"content": "Sent."}
    ]});
    // JSON is YAML.
    write("agents/vault.replies.yaml", &replies.to_string());
    write(
        "agents/vault.yaml",
        "name: vault\nmodel: scripted:vault.replies.yaml\ninstructions: Send notes.\ntools: [send_note]\n",
    );
    let server = site.serve(None);
    scenario(&server, "secrets");
}

/// A right-to-left override in a path the model wrote (and a zero-width space in its
/// call id) shows escaped, under a warning badge; an ordinary call has no badge; the
/// arguments edited on the page reach the tool unchanged.
#[tokio::test(flavor = "multi_thread")]
async fn hidden_characters_show_escaped() {
    let site = Site::new();
    let path = "invoice\u{202e}gnp.exe";
    let replies = serde_json::json!({"replies": [
        {"content": "Saving the invoice.", "tool_calls": [{"id": "call\u{200b}_invoice",
            "name": "write_file", "arguments": {"path": path, "content": "not a picture\n"}}]},
        {"content": "Saved."}
    ]});
    let write = |p: &str, text: &str| std::fs::write(site.path().join(p), text).unwrap();
    // JSON is YAML.
    write("agents/courier.replies.yaml", &replies.to_string());
    write(
        "agents/courier.yaml",
        "name: courier\nmodel: scripted:courier.replies.yaml\ninstructions: File invoices.\ntools: [write_file]\n",
    );
    let server = site.serve(None);
    let id = run_id(&scenario(&server, "hidden"));
    let (_, run) = server.get(&format!("/v1/runs/{id}")).await;
    assert_eq!(run["status"], "completed", "{run}");
    let d = decision(&server, &id, "call\u{200b}_invoice").await;
    assert!(d["type"] == "edit" || d["type"] == "approve", "{d}");
    assert_eq!(
        std::fs::read_to_string(site.path().join("ws").join(path)).unwrap(),
        "not a picture\n",
        "the escaped text in the editor went back as the character itself"
    );
}

/// An authorization item (a tool acting for its user at an OAuth provider) shows a
/// "Connect" link to its consent URL and nothing to decide; a budget item shows what
/// was spent and "Raise and continue", which the run goes on after. One screenshot of
/// both (`consent-and-budget.png`). The consent itself is tested against a real
/// authorization server in tests/oauth.rs.
#[tokio::test(flavor = "multi_thread")]
async fn consent_and_budget_items_say_what_they_wait_for() {
    let site = Site::new();
    std::fs::write(
        site.path().join("tools/calendar_me.yaml"),
        "name: calendar_me\ndescription: Who the user is in their calendar.\nlabel: Calendar\nentry:\n  type: http\n  url: https://calendar.example/me\n  oauth:\n    name: calendar\n    authorize_url: https://calendar.example/authorize\n    token_url: https://calendar.example/token\n    client_id: toolgate-inbox\n    scopes: [calendar.read]\n",
    )
    .unwrap();
    site.agent(
        "planner",
        "[calendar_me]",
        "  - content: Looking.\n    tool_calls: [{id: call_me, name: calendar_me, arguments: {}}]\n  - content: Done.\n",
    );
    site.agent(
        "spender",
        "[echo]",
        "  - content: Echoing.\n    tool_calls: [{id: call_echo, name: echo, arguments: {text: hi}}]\n    usage: {prompt_tokens: 80, completion_tokens: 40}\n  - content: Done.\n    usage: {prompt_tokens: 90, completion_tokens: 5}\n",
    );
    let agent = site.path().join("agents/spender.yaml");
    let text = std::fs::read_to_string(&agent).unwrap();
    std::fs::write(&agent, format!("{text}budget: {{per: run, tokens: 100}}\n")).unwrap();
    let key = serving::identity::keys_create(&site, "default", "alice", "client,approver", "");
    let mut server = Server::start(&site, None, &[]);
    server.key = Some(key);
    scenario(&server, "consent_budget");
}

/// Keys of two tenants, an app's JWT (HS256) and an agent with `four_eyes`: the three
/// identities scenarios, each in its own page.
fn identities_site() -> (Site, Server, Value) {
    let site = Site::new();
    std::fs::write(
        site.path().join("agents/ledger.yaml"),
        "name: ledger\nmodel: scripted:assistant.replies.yaml\ninstructions: Help.\ntools: [calculator, write_file, ask_user]\nmax_iterations: 6\nfour_eyes: true\n",
    )
    .unwrap();
    let secret = "a-browser-test-hs256-secret-32-bytes-long";
    std::fs::write(site.path().join("jwt.secret"), secret).unwrap();
    let key = |tenant: &str, name: &str, role: &str| -> String {
        let out = Command::new(serving::bin())
            .arg("--db")
            .arg(site.db())
            .args([
                "--tenant", tenant, "keys", "create", "--name", name, "--role", role, "--json",
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["key"].as_str().unwrap().to_string()
    };
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 3600;
    let token = |roles: &[&str]| {
        jsonwebtoken::encode(
            &jsonwebtoken::Header::default(),
            &serde_json::json!({"sub": "ann", "tenant": "a", "roles": roles, "exp": exp}),
            &jsonwebtoken::EncodingKey::from_secret(secret.as_bytes()),
        )
        .unwrap()
    };
    let keys = serde_json::json!({
        "a_client": key("a", "a-app", "client"),
        "a_approver": key("a", "a-boss", "approver"),
        "b_client": key("b", "b-app", "client"),
        "ann_client": token(&["client"]),
        "ann_approver": token(&["approver"]),
    });
    let secret_file = site.path().join("jwt.secret");
    let server = Server::start(
        &site,
        None,
        &["--jwt-secret-file", secret_file.to_str().unwrap()],
    );
    (site, server, keys)
}

/// An approver of tenant A sees A's waiting item (and approves it) but not B's; B's
/// run page says there is no such run.
#[tokio::test(flavor = "multi_thread")]
async fn an_approver_sees_only_its_tenants_items() {
    let (_site, mut server, keys) = identities_site();
    let out = scenario_with(&server, "tenants", &keys);
    server.key = keys["a_approver"].as_str().map(str::to_string);
    let (_, t) = server
        .get(&format!("/v1/runs/{}/timeline", run_id(&out)))
        .await;
    let pause = t["pauses"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["call_id"] == "call_write")
        .cloned()
        .unwrap();
    assert_eq!(pause["decided_by"], "a-boss", "{pause}");
    assert!(
        pause["decided_by_key"]
            .as_str()
            .unwrap()
            .starts_with("key_")
    );
    let (status, _) = server
        .get(&format!("/v1/runs/{}", out["other"].as_str().unwrap()))
        .await;
    assert_eq!(status, 404);
}

/// A client-role key sees its items without Approve or Deny, and the reason why.
#[tokio::test(flavor = "multi_thread")]
async fn a_client_key_has_no_approve_button() {
    let (_site, server, keys) = identities_site();
    scenario_with(&server, "client_view", &keys);
}

/// four_eyes: the person who started the run is told in the page that someone else
/// must approve it, and the server refuses the same decision.
#[tokio::test(flavor = "multi_thread")]
async fn four_eyes_keeps_the_starter_from_approving_in_the_page() {
    let (_site, mut server, keys) = identities_site();
    let out = scenario_with(&server, "four_eyes", &keys);
    server.key = keys["ann_approver"].as_str().map(str::to_string);
    let (status, e) = server
        .post(
            &format!("/v1/runs/{}/approve", run_id(&out)),
            serde_json::json!({"call_id": "call_write"}),
        )
        .await;
    assert_eq!(status, 403, "{e}");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("four eyes")
    );
}

/// The console: the runs list (filters in the address, live, back/forward), a run's
/// timeline with its reasoning and the tree of its sub-agent's run, a conversation's
/// and a tool's charts, and the tool catalogue, each page reached from the nav; one
/// screenshot per page (`console-runs.png`, `console-run.png`,
/// `console-conversation.png`, `console-tools.png`, `console-tool.png`).
#[tokio::test(flavor = "multi_thread")]
async fn the_console_shows_runs_trees_charts_and_the_catalogue() {
    let site = Site::new();
    let write = |p: &str, t: &str| std::fs::write(site.path().join(p), t).unwrap();
    write(
        "agents/planner.yaml",
        "name: planner\nmodel: scripted:planner.replies.yaml\nmode: xml\nsubagents:\n  helper: helper.yaml\n",
    );
    write(
        "agents/planner.replies.yaml",
        "replies:\n  - content: \"<think>The helper can multiply.</think>Asking the helper.\\n<tool_call><name>helper</name><params><task>6*7</task></params></tool_call>\"\n    usage: {prompt_tokens: 120, completion_tokens: 30}\n  - content: It is 42.\n    usage: {prompt_tokens: 160, completion_tokens: 8}\n",
    );
    write(
        "agents/helper.yaml",
        "name: helper\ndescription: Multiplies.\nmodel: scripted:helper.replies.yaml\ntools: [calculator]\n",
    );
    write(
        "agents/helper.replies.yaml",
        "replies:\n  - content: Computing.\n    tool_calls: [{id: call_mul, name: calculator, arguments: {expression: \"6*7\"}}]\n  - content: \"42\"\n",
    );
    write(
        "tools/pay.yaml",
        "name: pay\ndescription: Pays.\nparameters:\n  - {name: amount, type: number, required: true}\npermission:\n  confirm_if: args.amount > 100\n  otherwise: auto\nentry: {type: client}\n",
    );
    let server = site.serve(None);
    let seen = scenario(&server, "console");
    let tree = seen["tree"].as_str().unwrap();
    let (status, t) = server.get(&format!("/v1/runs/{tree}/tree")).await;
    assert_eq!(status, 200);
    assert_eq!(t["children"][0]["agent"], "helper", "{t}");
    let artifacts = root().join("target/browser-artifacts");
    for page in ["runs", "run", "conversation", "tools", "tool"] {
        let shot = artifacts.join(format!("console-{page}.png"));
        assert!(shot.exists(), "{} was not taken", shot.display());
    }
}
