//! Hooks run in the tools' sandbox and are told for whom (issue 42, item 9). A
//! `before_call` hook of a run started on a real `toolgate serve` with tenant acme's key
//! receives the tenant, the user, the run and the conversation in its JSON (and in its
//! environment); sandboxed, it cannot write its own folder (the agents folder) nor a
//! folder anyone may write outside, it writes only where its `sandbox: {write: [...]}`
//! lets it, and as root it runs as the tool user `nobody`. The same script with
//! `sandbox: off` does write both places: the barrier is the sandbox.
//!
//! On the binary before this: hooks started unsandboxed as toolgate's own user, were not
//! told tenant or user, and a hook's `sandbox:` key was refused (the agent did not load).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::serving;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use serving::{Site, toolgate_in};

/// A folder anyone may write: only the sandbox keeps a hook out of it.
fn open_folder(path: &Path) {
    std::fs::create_dir_all(path).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o777)).unwrap();
}

/// Agent `name` calling tool `x` once, behind a `before_call` hook `hooks/NAME.sh` with
/// `sandbox` settings; the script records what it got in `out`, tries to write into
/// its own folder and into `outside`, and allows the call.
fn guarded_agent(site: &Site, name: &str, sandbox: &str, out: &Path, outside: &Path) {
    let agents = site.path().join("agents");
    let script = format!(
        "cat > {out}/input.json\n\
         id -u > {out}/uid\n\
         echo \"$TOOLGATE_TENANT|$TOOLGATE_USER|$TOOLGATE_RUN_ID|$TOOLGATE_CONVERSATION_ID\" > {out}/env\n\
         (echo escaped > {agents}/{name}-escaped) 2>/dev/null\n\
         (echo escaped > {outside}/{name}-escaped) 2>/dev/null\n\
         echo '{{\"decision\": \"allow\"}}'\n",
        out = out.display(),
        agents = agents.display(),
        outside = outside.display(),
    );
    std::fs::create_dir_all(agents.join("hooks")).unwrap();
    std::fs::write(agents.join(format!("hooks/{name}.sh")), script).unwrap();
    std::fs::write(
        agents.join(format!("{name}.yaml")),
        format!(
            "name: {name}\nmodel: scripted:{name}.replies.yaml\ninstructions: Go.\ntools: [x]\n\
             hooks:\n  before_call:\n    command: [sh, hooks/{name}.sh]\n    timeout: 20s\n    sandbox: {sandbox}\n"
        ),
    )
    .unwrap();
    std::fs::write(
        agents.join(format!("{name}.replies.yaml")),
        "replies:\n  - content: Working.\n    tool_calls: [{id: call_x, name: x, arguments: {}}]\n  - content: Done.\n",
    )
    .unwrap();
}

/// Agent `bare` calling tool `x` once, behind a `before_call` hook with the default
/// sandbox (no `sandbox:` key): it cannot write anywhere to report, so it denies the
/// call with what it found as the reason: its uid, the tenant it was told, and whether
/// it could write into its own folder.
fn bare_agent(site: &Site) {
    let agents = site.path().join("agents");
    let script = r#"input=$(cat)
t=$(printf '%s' "$input" | grep -o '"tenant":"[^"]*"' | tr -d '"')
if (echo escaped > AGENTS/bare-escaped) 2>/dev/null; then w=wrote; else w=refused; fi
printf '{"decision": "deny", "reason": "uid=%s %s folder=%s"}' "$(id -u)" "$t" "$w"
"#
    .replace("AGENTS", &agents.display().to_string());
    std::fs::create_dir_all(agents.join("hooks")).unwrap();
    std::fs::write(agents.join("hooks/bare.sh"), script).unwrap();
    std::fs::write(
        agents.join("bare.yaml"),
        "name: bare\nmodel: scripted:bare.replies.yaml\ninstructions: Go.\ntools: [x]\n\
         hooks:\n  before_call: {command: [sh, hooks/bare.sh], timeout: 20s}\n",
    )
    .unwrap();
    std::fs::write(
        agents.join("bare.replies.yaml"),
        "replies:\n  - content: Working.\n    tool_calls: [{id: call_x, name: x, arguments: {}}]\n  - content: Done.\n",
    )
    .unwrap();
}

/// Whether this test runs as root (then sandboxed programs run as `nobody`).
fn root() -> bool {
    let out = std::process::Command::new("id").arg("-u").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim() == "0"
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hook_is_told_for_whom_and_runs_in_the_sandbox() {
    let site = Site::new();
    let root_dir = site.path().to_path_buf();
    std::fs::write(
        root_dir.join("tools/x.yaml"),
        "name: x\ndescription: Answers.\npermission: auto\nentry: {type: command, command: echo, args: [done]}\n",
    )
    .unwrap();
    let outside = root_dir.join("outside");
    open_folder(&outside);
    open_folder(&root_dir.join("agents"));
    let (tight, loose): (PathBuf, PathBuf) =
        (root_dir.join("out-tight"), root_dir.join("out-loose"));
    open_folder(&tight);
    open_folder(&loose);
    guarded_agent(
        &site,
        "tight",
        &format!("{{write: [{}]}}", tight.display()),
        &tight,
        &outside,
    );
    guarded_agent(&site, "loose", "off", &loose, &outside);
    bare_agent(&site);
    let key = serving::identity::keys_create(&site, "acme", "acme-client", "client", "");
    let mut server = site.serve(None);
    server.key = Some(key);

    // Default settings: sandboxed, told the tenant, its own folder read-only.
    let (s, run) = server
        .post("/v1/runs", json!({"agent": "bare", "input": "Go."}))
        .await;
    assert_eq!(s, 200, "{run}");
    let (_, calls) = server
        .get(&format!("/v1/calls?run_id={}", run["id"].as_str().unwrap()))
        .await;
    let call = &calls["calls"][0];
    assert_eq!(call["error_kind"], "hook", "{call}");
    let said = call.to_string();
    let uid = if root() { "uid=65534" } else { "uid=" };
    for want in [uid, "tenant:acme", "folder=refused"] {
        assert!(
            said.contains(want),
            "the hook found otherwise than {want}: {call}"
        );
    }
    assert!(!root_dir.join("agents/bare-escaped").exists());

    let (s, run) = server
        .post("/v1/runs", json!({"agent": "tight", "input": "Go."}))
        .await;
    assert_eq!(s, 200, "{run}");
    assert_eq!(
        run["status"], "completed",
        "the hook did not allow the call: {run}"
    );
    let input: Value =
        serde_json::from_str(&std::fs::read_to_string(tight.join("input.json")).unwrap()).unwrap();
    assert_eq!(input["hook"], "before_call", "{input}");
    assert_eq!(input["tenant"], "acme", "{input}");
    assert_eq!(input["user"], "acme-client", "{input}");
    assert_eq!(input["run_id"], run["id"], "{input}");
    assert_eq!(input["conversation_id"], run["conversation_id"], "{input}");
    let env = std::fs::read_to_string(tight.join("env")).unwrap();
    assert_eq!(
        env.trim(),
        format!(
            "acme|acme-client|{}|{}",
            run["id"].as_str().unwrap(),
            run["conversation_id"].as_str().unwrap()
        )
    );
    let uid = std::fs::read_to_string(tight.join("uid")).unwrap();
    if root() {
        assert_eq!(uid.trim(), "65534", "the hook ran as uid {uid}, not nobody");
    }
    assert!(
        !root_dir.join("agents/tight-escaped").exists(),
        "the sandboxed hook wrote into its own folder (the agents folder)"
    );
    assert!(
        !outside.join("tight-escaped").exists(),
        "the sandboxed hook wrote outside its folders"
    );

    // The same hook unsandboxed writes both: what stopped it above was the sandbox.
    let (s, run) = server
        .post("/v1/runs", json!({"agent": "loose", "input": "Go."}))
        .await;
    assert_eq!(s, 200, "{run}");
    assert_eq!(run["status"], "completed", "{run}");
    assert!(root_dir.join("agents/loose-escaped").exists());
    assert!(outside.join("loose-escaped").exists());
    if root() {
        let uid = std::fs::read_to_string(loose.join("uid")).unwrap();
        assert_eq!(uid.trim(), "0", "sandbox: off runs as toolgate's own user");
    }
    // Both calls ran and are recorded as such.
    let out = toolgate_in(site.path(), &site.db(), &["calls", "--json"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("\"succeeded\"").count(), 2, "{text}");
    assert_eq!(text.matches("\"denied\"").count(), 1, "{text}");
}
