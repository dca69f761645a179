//! `toolgate tools new NAME --kind KIND`: every kind writes a tool that loads and whose
//! test call (the one its file's comment and the command's output give) passes as
//! written: command and Dify with python3 alone, MCP with the python3 server written
//! beside it, http and OpenAPI against a real peer (the FastAPI app of
//! tests/py/flaky_api.py, whose `/get` answers as httpbin.org's). Nothing is written
//! over an existing file.

use std::path::Path;
use std::process::Output;

use serde_json::Value;
use toolgate_test_support::toolgate;

use crate::tool_retries::{hits, start_api};

fn cli(dir: &Path, args: &[&str]) -> Output {
    toolgate(dir)
        .args(args)
        .env("TOOLGATE_DB", dir.join("toolgate.db"))
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `tools new`, then the test call it printed (a shell word list: the JSON in quotes).
fn new_and_try(dir: &Path, name: &str, kind: &str, url: Option<&str>) -> Value {
    let mut args = vec!["tools", "new", name, "--kind", kind, "--json"];
    if let Some(u) = url {
        args.extend(["--url", u]);
    }
    let out = cli(dir, &args);
    assert!(out.status.success(), "{}", text(&out));
    let made: Value = serde_json::from_slice(&out.stdout).unwrap();
    for f in made["files"].as_array().unwrap() {
        assert!(dir.join(f.as_str().unwrap()).is_file(), "{made}");
    }
    let line = made["try"].as_str().unwrap();
    let (head, json) = line.split_once(" '").unwrap();
    let words: Vec<&str> = head.split_whitespace().collect();
    assert_eq!(&words[..3], ["toolgate", "tools", "call"], "{line}");
    assert_eq!(words[4], "--args");
    let arguments = json.trim_end_matches('\'');
    let out = cli(
        dir,
        &["tools", "call", words[3], "--args", arguments, "--json"],
    );
    assert!(out.status.success(), "{line}: {}", text(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn every_kind_writes_a_tool_whose_test_call_passes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let api = start_api();
    let url = format!("http://127.0.0.1:{}", api.port);

    let out = new_and_try(d, "shouter", "command", None);
    assert!(out.to_string().contains("HELLO"), "{out}");
    let out = new_and_try(d, "echo_mcp", "mcp", None);
    assert!(out.to_string().contains("HELLO"), "{out}");
    let out = new_and_try(d, "echo_dify", "dify", None);
    assert!(out.to_string().contains("HELLO"), "{out}");
    let out = new_and_try(d, "fetcher", "http", Some(&url));
    assert!(
        out.to_string().contains(r#"\"q\":\"hello\""#) || out.to_string().contains("\"q\""),
        "{out}"
    );
    let out = new_and_try(d, "petstore", "openapi", Some(&url));
    assert!(out.to_string().contains("hello"), "{out}");
    assert_eq!(
        hits(&api, "get"),
        2,
        "the http and OpenAPI tools reached the peer"
    );

    // Everything loads together, with its label; the Dify tool has its icon.
    let out = cli(d, &["tools", "check"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("5 tool(s) loaded, 0 problem(s)"),
        "{}",
        text(&out)
    );
    let out = cli(d, &["tools", "list", "--json"]);
    let all: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let shouter = all.iter().find(|t| t["name"] == "shouter").unwrap();
    assert_eq!(shouter["label"]["en_US"], "Shouter");
    let dify = all.iter().find(|t| t["name"] == "echo_dify__echo").unwrap();
    assert!(
        dify["icon"]
            .as_str()
            .unwrap()
            .starts_with("data:image/svg+xml")
    );
}

#[test]
fn nothing_is_written_over_a_file_or_under_a_bad_name() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert!(cli(d, &["tools", "new", "mine"]).status.success());
    std::fs::write(d.join("tools/mine.yaml"), "name: mine\n").unwrap();
    let out = cli(d, &["tools", "new", "mine", "--kind", "http"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("tools/mine.yaml is already there: nothing was written"),
        "{}",
        text(&out)
    );
    assert_eq!(
        std::fs::read_to_string(d.join("tools/mine.yaml")).unwrap(),
        "name: mine\n"
    );
    for bad in ["9lives", "two__parts", "dash-ed", "../up"] {
        let out = cli(d, &["tools", "new", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(text(&out).contains("is not a tool name"), "{}", text(&out));
    }
    let out = cli(
        d,
        &["tools", "new", "far", "--kind", "http", "--url", "ftp://x"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("not an http(s) URL"), "{}", text(&out));
}
