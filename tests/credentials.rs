//! Credentials the model never sees nor fills: a tool file's `credentials:` (a stored
//! secret, an environment variable) and Dify-style `form: form` parameters. They are
//! not in the prompt or the tools array, are injected when the call runs, and their
//! values reach neither the records, the model, the output nor the database in clear.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Output;
use toolgate_test_support::toolgate;

use serde_json::Value;

use crate::launching;
use launching::{all, with_tools};

const TOOL: &str = r#"name: gh
description: Searches issues.
permission: auto
parameters:
  - {name: query, type: string, required: true, form: llm}
  - {name: api_key, type: string, required: true, form: form}
credentials:
  token: "${secret:GH_TOKEN}"
  org: {env: GH_ORG}
entry:
  type: command
  command: sh
  args: ["-c", "tee -a seen.log; echo"]
"#;

const TOKEN: &str = "ghp-credential-value-8d1f";
const API_KEY: &str = "form-api-key-value-27aa";

fn cli(dir: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut cmd = toolgate(dir);
    cmd.args(args)
        .env("GH_ORG", "acme")
        .env("KEY_FROM_ENV", API_KEY);
    launching::feed(cmd, stdin)
}

#[test]
fn credentials_are_injected_and_never_shown() {
    let dir = with_tools(&[("gh.yaml", TOOL)]);
    let d = dir.path();

    // The model is told about `query` only.
    let out = cli(d, &["prompt", "--openai", "gh"], None);
    assert!(out.status.success(), "{}", all(&out));
    let tools: Value = serde_json::from_slice(&out.stdout).unwrap();
    let props = &tools[0]["function"]["parameters"]["properties"];
    assert!(props["query"].is_object(), "{tools}");
    for hidden in ["api_key", "token", "org"] {
        assert!(
            props[hidden].is_null(),
            "{hidden} offered to the model: {tools}"
        );
    }
    assert_eq!(
        tools[0]["function"]["parameters"]["required"],
        serde_json::json!(["query"])
    );

    // Without its secrets the call says what to set.
    let out = cli(
        d,
        &["tools", "call", "gh", "--args", r#"{"query": "bug"}"#],
        None,
    );
    assert_eq!(out.status.code(), Some(1), "{}", all(&out));
    assert!(all(&out).contains("toolgate secrets set"), "{}", all(&out));

    let out = cli(
        d,
        &["secrets", "set", "GH_TOKEN"],
        Some(&format!("{TOKEN}\n")),
    );
    assert!(out.status.success(), "{}", all(&out));
    let out = cli(
        d,
        &["secrets", "set", "gh.api_key", "--from-env", "KEY_FROM_ENV"],
        None,
    );
    assert!(out.status.success(), "{}", all(&out));
    let out = cli(d, &["secrets", "list", "--json"], None);
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["GH_TOKEN", "gh.api_key"]);
    assert!(!all(&out).contains(TOKEN));

    // Now it runs with every credential; the echo of them is masked.
    let out = cli(
        d,
        &[
            "tools",
            "call",
            "gh",
            "--args",
            r#"{"query": "bug"}"#,
            "--json",
        ],
        None,
    );
    assert!(out.status.success(), "{}", all(&out));
    let text = all(&out);
    assert!(!text.contains(TOKEN) && !text.contains(API_KEY), "{text}");
    assert!(
        text.contains("[secret]") && !text.contains("acme"),
        "{text}"
    );
    let seen = std::fs::read_to_string(d.join("seen.log")).unwrap();
    let args: Value = serde_json::from_str(seen.lines().next().unwrap()).unwrap();
    assert_eq!(args["token"], TOKEN);
    assert_eq!(args["api_key"], API_KEY);
    assert_eq!(args["org"], "acme");
    assert_eq!(args["query"], "bug");

    // An agent's run: the model's result is masked too.
    std::fs::write(
        d.join("agent.yaml"),
        "name: searcher\nmodel: scripted:replies.yaml\ntools: [gh]\nworkspace: .\n",
    )
    .unwrap();
    std::fs::write(
        d.join("replies.yaml"),
        "replies:\n  - content: Searching.\n    tool_calls: [{id: c1, name: gh, arguments: {query: crash}}]\n  - content: Found it.\n",
    )
    .unwrap();
    let out = cli(d, &["run", "--agent", "agent.yaml", "--json", "find"], None);
    assert!(out.status.success(), "{}", all(&out));
    assert!(!all(&out).contains(TOKEN));
    for args in [vec!["calls", "--json"], vec!["stats", "--json"]] {
        let out = cli(d, &args, None);
        assert!(!all(&out).contains(TOKEN) && !all(&out).contains(API_KEY));
    }
    std::fs::remove_file(d.join("seen.log")).unwrap();
    for entry in std::fs::read_dir(d).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("toolgate.db") && !name.ends_with(".key") {
            let bytes = std::fs::read(&path).unwrap();
            for v in [TOKEN, API_KEY] {
                assert!(
                    !bytes.windows(v.len()).any(|w| w == v.as_bytes()),
                    "{v} in {name}"
                );
            }
        }
    }
    let out = cli(d, &["secrets", "rm", "GH_TOKEN"], None);
    assert!(out.status.success());
    let out = cli(d, &["secrets", "rm", "GH_TOKEN"], None);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_credential_that_is_also_a_parameter_or_a_bad_source_is_refused_at_load() {
    let dir = with_tools(&[
        (
            "a.yaml",
            "name: a\ndescription: x\nparameters:\n  - {name: token, type: string}\ncredentials:\n  token: \"${env:T}\"\n",
        ),
        (
            "b.yaml",
            "name: b\ndescription: x\ncredentials:\n  token: plain-text-key\n",
        ),
    ]);
    let d = dir.path();
    let out = cli(d, &["tools", "check"], None);
    assert_eq!(out.status.code(), Some(2), "{}", all(&out));
    let text = all(&out);
    assert!(
        text.contains("a.yaml:") && text.contains("also a parameter"),
        "{text}"
    );
    assert!(
        text.contains("b.yaml:") && text.contains("${env:VAR}"),
        "{text}"
    );
}
