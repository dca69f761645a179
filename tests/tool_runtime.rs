//! Every built-in and entry type run for real: file tools against escape attempts,
//! `shell` and `command` against real programs (exit codes, timeouts, oversized
//! output), `http` and `http_request` against a local server, a panicking tool, and
//! toolkits that only reach the tools they were given.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use toolgate::tool::{
    Entry, Part, Permission, Tool, ToolContext, ToolError, ToolLibrary, ToolOutput, ToolSpec,
    ToolkitError, workspace,
};
use wiremock::matchers::{body_json, header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn args(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

fn ctx(dir: &Path) -> ToolContext {
    ToolContext::new(workspace::canonical_root(dir).unwrap())
}

fn text(out: &ToolOutput) -> String {
    out.to_text()
}

async fn run(lib: &ToolLibrary, name: &str, dir: &Path, a: Value) -> Result<ToolOutput, ToolError> {
    lib.get(name).unwrap().invoke(&ctx(dir), args(a)).await
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/commands")
}

fn spec(name: &str, entry: Entry, parameters: Value, timeout: Option<f64>) -> ToolSpec {
    ToolSpec {
        credentials: Default::default(),
        is_final: false,
        hidden: false,
        sandbox: None,
        name: name.into(),
        description: format!("test tool {name}"),
        parameters,
        permission: Permission::Auto,
        entry,
        category: None,
        timeout,
        tags: vec![],
        version: None,
        read_only: false,
        output: None,
        display: Default::default(),
    }
}

/// A library holding one tool file written from `yaml`.
fn library_with(yaml: &str) -> (tempfile::TempDir, ToolLibrary) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tool.yaml"), yaml).unwrap();
    let lib = ToolLibrary::load(dir.path(), &toolgate::tool::sources::standard()).unwrap();
    assert!(lib.errors().is_empty(), "{:?}", lib.errors());
    (dir, lib)
}

#[tokio::test]
async fn echo_and_calculator() {
    let lib = ToolLibrary::builtin(&toolgate::tool::sources::standard());
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        text(
            &run(&lib, "echo", dir.path(), json!({"text": "hi"}))
                .await
                .unwrap()
        ),
        "hi"
    );
    assert_eq!(
        text(
            &run(
                &lib,
                "calculator",
                dir.path(),
                json!({"expression": "2+3*4"})
            )
            .await
            .unwrap()
        ),
        "14"
    );
    assert_eq!(
        text(
            &run(&lib, "calculator", dir.path(), json!({"expression": "7/2"}))
                .await
                .unwrap()
        ),
        "3.5"
    );
    let err = run(&lib, "calculator", dir.path(), json!({"expression": "1/0"}))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "execution_error");
    assert!(err.to_string().contains("division by zero"));
}

#[tokio::test]
async fn current_time_in_zones() {
    let lib = ToolLibrary::builtin(&toolgate::tool::sources::standard());
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        &lib,
        "current_time",
        dir.path(),
        json!({"timezone": "America/New_York"}),
    )
    .await
    .unwrap();
    let Part::Json { json } = &out.parts[0] else {
        panic!("{out:?}")
    };
    assert_eq!(json["timezone"], "America/New_York");
    let dt = json["datetime"].as_str().unwrap();
    assert!(dt.ends_with("-05:00") || dt.ends_with("-04:00"), "{dt}");
    let utc = run(&lib, "current_time", dir.path(), json!({}))
        .await
        .unwrap();
    assert!(text(&utc).contains("+00:00"));
    let err = run(
        &lib,
        "current_time",
        dir.path(),
        json!({"timezone": "Mars/Olympus"}),
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("not a known time zone"), "{err}");
}

#[tokio::test]
async fn file_tools_stay_in_the_workspace() {
    let lib = ToolLibrary::builtin(&toolgate::tool::sources::standard());
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "top secret").unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("escape")).unwrap();

    let wrote = run(
        &lib,
        "write_file",
        dir.path(),
        json!({"path": "notes/a.txt", "content": "one\n"}),
    )
    .await
    .unwrap();
    assert!(text(&wrote).contains("wrote 4 bytes"));
    run(
        &lib,
        "write_file",
        dir.path(),
        json!({"path": "notes/a.txt", "content": "two\n", "append": true}),
    )
    .await
    .unwrap();
    let read = run(
        &lib,
        "read_file",
        dir.path(),
        json!({"path": "notes/a.txt"}),
    )
    .await
    .unwrap();
    assert_eq!(text(&read), "one\ntwo\n");
    let listed = run(&lib, "list_dir", dir.path(), json!({})).await.unwrap();
    let Part::Json { json } = &listed.parts[0] else {
        panic!()
    };
    let names: Vec<&str> = json
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["escape", "notes"]);
    assert_eq!(json[0]["type"], "link");

    let secret = outside.path().join("secret.txt");
    let attempts = [
        ("read_file", json!({"path": "../secret.txt"})),
        ("read_file", json!({"path": "escape/secret.txt"})),
        ("read_file", json!({"path": secret.to_str().unwrap()})),
        ("list_dir", json!({"path": "escape"})),
        ("list_dir", json!({"path": ".."})),
        (
            "write_file",
            json!({"path": "escape/new.txt", "content": "x"}),
        ),
        (
            "write_file",
            json!({"path": "notes/../../new.txt", "content": "x"}),
        ),
    ];
    for (tool, a) in attempts {
        let err = run(&lib, tool, dir.path(), a.clone()).await.unwrap_err();
        assert!(err.to_string().contains("workspace"), "{tool} {a}: {err}");
    }
    assert!(!outside.path().join("new.txt").exists());
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "top secret");

    std::fs::write(dir.path().join("bin.dat"), [0u8, 1, 2, 3]).unwrap();
    let err = run(&lib, "read_file", dir.path(), json!({"path": "bin.dat"}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("binary"), "{err}");
    std::fs::write(dir.path().join("big.txt"), "x".repeat(5000)).unwrap();
    let cut = run(
        &lib,
        "read_file",
        dir.path(),
        json!({"path": "big.txt", "max_bytes": 100}),
    )
    .await
    .unwrap();
    assert!(text(&cut).contains("[file truncated: 100 of 5000 bytes shown]"));
}

#[tokio::test]
async fn shell_exit_codes_timeouts_and_caps() {
    let lib = ToolLibrary::builtin(&toolgate::tool::sources::standard());
    let dir = tempfile::tempdir().unwrap();
    let ok = run(
        &lib,
        "shell",
        dir.path(),
        json!({"command": "pwd; echo hello"}),
    )
    .await
    .unwrap();
    assert!(!ok.is_error);
    assert!(text(&ok).contains("hello"));
    assert!(text(&ok).contains(dir.path().file_name().unwrap().to_str().unwrap()));
    let failed = run(
        &lib,
        "shell",
        dir.path(),
        json!({"command": "echo out; echo oops >&2; exit 3"}),
    )
    .await
    .unwrap();
    assert!(failed.is_error);
    let t = text(&failed);
    assert!(
        t.contains("exit status 3") && t.contains("oops") && t.contains("out"),
        "{t}"
    );
    let started = Instant::now();
    let err = run(
        &lib,
        "shell",
        dir.path(),
        json!({"command": "sleep 20 & sleep 20", "timeout": 0.5}),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), "timeout");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let big = run(
        &lib,
        "shell",
        dir.path(),
        json!({"command": "head -c 300000 /dev/zero | tr '\\0' a"}),
    )
    .await
    .unwrap();
    assert!(text(&big).contains("[output truncated: 65536 of 300000 bytes shown]"));
}

#[tokio::test]
async fn command_entry_runs_programs() {
    let dir = tempfile::tempdir().unwrap();
    let f = fixtures();
    let yaml = format!(
        "name: upper\ndescription: Capitals.\nparameters:\n  type: object\n  properties:\n    text: {{type: string}}\nentry:\n  type: command\n  command: sh\n  args: [\"{}\"]\n",
        f.join("upper.sh").display()
    );
    let (_tools, lib) = library_with(&yaml);
    let out = run(&lib, "upper", dir.path(), json!({"text": "abc"}))
        .await
        .unwrap();
    let Part::Json { json } = &out.parts[0] else {
        panic!("{out:?}")
    };
    assert_eq!(json["upper"], "ABC");

    // Plain text output, the workspace as cwd, environment from ${VAR}.
    // ${VAR} comes from toolgate's environment; PATH is always set (tests never set
    // variables: other threads read the environment at the same time).
    let path_var = std::env::var("PATH").unwrap();
    let yaml = format!(
        "name: plain\ndescription: Plain.\nentry:\n  type: command\n  command: sh\n  args: [\"{}\"]\n  env: {{API_TOKEN: \"${{PATH}}\"}}\n",
        f.join("plain.sh").display()
    );
    let (_tools, lib) = library_with(&yaml);
    let out = run(&lib, "plain", dir.path(), json!({"a": 1}))
        .await
        .unwrap();
    let t = text(&out);
    let root = workspace::canonical_root(dir.path()).unwrap();
    assert!(t.contains(&format!("cwd={}", root.display())), "{t}");
    assert!(t.contains("stdin={\"a\":1}"), "{t}");
    assert!(t.contains(&format!("token={path_var}")), "{t}");

    // A failing program: an error result carrying stderr.
    let (_tools, lib) = library_with(&format!(
        "name: fail\ndescription: Fails.\nentry: {{type: command, command: sh, args: [\"{}\"]}}\n",
        f.join("fail.sh").display()
    ));
    let out = run(&lib, "fail", dir.path(), json!({})).await.unwrap();
    assert!(out.is_error);
    let t = text(&out);
    assert!(
        t.contains("exited with status 4") && t.contains("bad input"),
        "{t}"
    );

    // Past its timeout, killed with the child it started.
    let (_tools, lib) = library_with(&format!(
        "name: slow\ndescription: Slow.\ntimeout: 0.5\nentry: {{type: command, command: sh, args: [\"{}\"]}}\n",
        f.join("slow.sh").display()
    ));
    let started = Instant::now();
    let err = run(&lib, "slow", dir.path(), json!({})).await.unwrap_err();
    assert_eq!(err.kind(), "timeout");
    assert!(started.elapsed() < Duration::from_secs(10));

    // Oversized output is capped, and said so.
    let (_tools, lib) = library_with(&format!(
        "name: flood\ndescription: Floods.\nentry: {{type: command, command: sh, args: [\"{}\"], max_output: 10000}}\n",
        f.join("flood.sh").display()
    ));
    let out = run(&lib, "flood", dir.path(), json!({})).await.unwrap();
    assert!(
        text(&out).contains("[output truncated: 10000 of 2002000 bytes shown]"),
        "{}",
        &text(&out)[text(&out).len() - 80..]
    );

    // A program that does not exist.
    let (_tools, lib) = library_with(
        "name: ghost\ndescription: x\nentry: {type: command, command: /no/such/program}\n",
    );
    let err = run(&lib, "ghost", dir.path(), json!({})).await.unwrap_err();
    assert!(err.to_string().contains("cannot start"), "{err}");
}

#[tokio::test]
async fn http_entry_against_a_local_server() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/users/ann%20lee/repos"))
        .and(query_param("per_page", "5"))
        .and(header(
            "x-search-path",
            std::env::var("PATH").unwrap().as_str(),
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([{"name": "toolgate"}])))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/notes"))
        .and(body_json(json!({"title": "T", "pinned": true})))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({"id": 7})))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/big"))
        .respond_with(ResponseTemplate::new(200).set_body_string("y".repeat(50_000)))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/slow"))
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(5)))
        .mount(&server)
        .await;
    let yaml = format!(
        r#"name: repos
description: List repositories.
parameters:
  type: object
  properties:
    user: {{type: string}}
    limit: {{type: integer, default: 5}}
    sort: {{type: string}}
  required: [user]
entry:
  type: http
  method: GET
  url: "{}/users/{{user}}/repos"
  allow_hosts: ["127.0.0.1"]
  query: {{per_page: "{{limit}}", sort: "{{sort}}"}}
  headers: {{X-Search-Path: "${{PATH}}"}}
"#,
        server.uri()
    );
    let (_tools, lib) = library_with(&yaml);
    let dir = tempfile::tempdir().unwrap();
    let out = run(&lib, "repos", dir.path(), json!({"user": "ann lee"}))
        .await
        .unwrap();
    assert!(!out.is_error, "{out:?}");
    assert_eq!(
        out.parts[0],
        Part::Json {
            json: json!([{"name": "toolgate"}])
        }
    );

    let yaml = format!(
        "name: add_note\ndescription: Add a note.\nparameters:\n  type: object\n  properties:\n    title: {{type: string}}\n    pinned: {{type: boolean}}\nentry:\n  type: http\n  method: POST\n  url: \"{}/notes\"\n  allow_hosts: [127.0.0.1]\n  body: json\n",
        server.uri()
    );
    let (_tools, lib) = library_with(&yaml);
    let out = run(
        &lib,
        "add_note",
        dir.path(),
        json!({"title": "T", "pinned": "true"}),
    )
    .await
    .unwrap();
    assert_eq!(
        out.parts[0],
        Part::Json {
            json: json!({"id": 7})
        }
    );

    // A status of 400 or more is an error result with the body.
    let (_tools, lib) = library_with(&format!(
        "name: missing\ndescription: x\nentry: {{type: http, url: \"{}/nothing\", allow_hosts: [127.0.0.1]}}\n",
        server.uri()
    ));
    let out = run(&lib, "missing", dir.path(), json!({})).await.unwrap();
    assert!(out.is_error);
    assert!(text(&out).contains("HTTP 404"), "{}", text(&out));

    // The response size cap.
    let (_tools, lib) = library_with(&format!(
        "name: big\ndescription: x\nentry: {{type: http, url: \"{}/big\", allow_hosts: [127.0.0.1], max_response: 1000}}\n",
        server.uri()
    ));
    let out = run(&lib, "big", dir.path(), json!({})).await.unwrap();
    assert!(text(&out).contains("[response truncated: 1000 of 50000 bytes shown]"));

    // The tool's timeout.
    let (_tools, lib) = library_with(&format!(
        "name: slow\ndescription: x\ntimeout: 0.5\nentry: {{type: http, url: \"{}/slow\", allow_hosts: [127.0.0.1]}}\n",
        server.uri()
    ));
    let err = run(&lib, "slow", dir.path(), json!({})).await.unwrap_err();
    assert_eq!(err.kind(), "timeout");

    // A credential that is not set is a clear error, not an empty header.
    let (_tools, lib) = library_with(&format!(
        "name: nokey\ndescription: x\nentry: {{type: http, url: \"{}/x\", allow_hosts: [127.0.0.1], headers: {{X-Key: \"${{TOOLGATE_NOT_SET_ANYWHERE}}\"}}}}\n",
        server.uri()
    ));
    let err = run(&lib, "nokey", dir.path(), json!({})).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("TOOLGATE_NOT_SET_ANYWHERE is not set"),
        "{err}"
    );
}

#[tokio::test]
async fn http_request_builtin() {
    let server = MockServer::start().await;
    Mock::given(method("PUT"))
        .and(path("/items/1"))
        .and(header("x-trace", "abc"))
        .and(body_json(json!({"v": 2})))
        .respond_with(ResponseTemplate::new(200).set_body_string("updated"))
        .mount(&server)
        .await;
    let lib = ToolLibrary::builtin(&toolgate::tool::sources::standard());
    assert_eq!(
        lib.get("http_request").unwrap().spec.permission,
        Permission::Confirm
    );
    let dir = tempfile::tempdir().unwrap();
    // The server is on loopback, which the network rule refuses by default (opened by
    // TOOLGATE_HTTP_ALLOW only: tests/network.rs runs that through the binary).
    let err = run(
        &lib,
        "http_request",
        dir.path(),
        json!({
            "url": format!("{}/items/1", server.uri()), "method": "PUT",
            "headers": {"X-Trace": "abc"}, "body": {"v": 2}
        }),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), "blocked_address");
    assert_eq!(server.received_requests().await.unwrap().len(), 0);
    let err = run(
        &lib,
        "http_request",
        dir.path(),
        json!({"url": "file:///etc/passwd"}),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), "validation_error");
}

struct Panics(ToolSpec);

#[async_trait]
impl Tool for Panics {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    async fn call(
        &self,
        _ctx: &ToolContext,
        _args: Map<String, Value>,
    ) -> Result<ToolOutput, ToolError> {
        panic!("the tool fell over");
    }
}

struct Sleeps(ToolSpec);

#[async_trait]
impl Tool for Sleeps {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    async fn call(
        &self,
        _ctx: &ToolContext,
        _args: Map<String, Value>,
    ) -> Result<ToolOutput, ToolError> {
        tokio::time::sleep(Duration::from_secs(30)).await;
        Ok(ToolOutput::text("late"))
    }
}

#[tokio::test]
async fn panics_and_timeouts_become_errors() {
    let mut lib = ToolLibrary::builtin(&toolgate::tool::sources::standard());
    let params = json!({"type": "object", "properties": {}});
    lib.add(Arc::new(Panics(spec(
        "panics",
        Entry::Builtin {
            handler: "x".into(),
        },
        params.clone(),
        None,
    ))))
    .unwrap();
    lib.add(Arc::new(Sleeps(spec(
        "sleeps",
        Entry::Builtin {
            handler: "x".into(),
        },
        params,
        Some(0.2),
    ))))
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let err = run(&lib, "panics", dir.path(), json!({}))
        .await
        .unwrap_err();
    assert_eq!(err, ToolError::Panicked("the tool fell over".into()));
    assert_eq!(err.kind(), "execution_error");
    let err = run(&lib, "sleeps", dir.path(), json!({}))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "timeout");
    // The library still works after both.
    assert_eq!(
        text(
            &run(&lib, "echo", dir.path(), json!({"text": "still here"}))
                .await
                .unwrap()
        ),
        "still here"
    );
}

#[tokio::test]
async fn toolkits_reach_only_their_tools() {
    let lib = Arc::new(ToolLibrary::builtin(&toolgate::tool::sources::standard()));
    let kit = lib
        .toolkit(
            &["calculator".into(), "write_file".into()],
            HashMap::from([("calculator".into(), Permission::Confirm)]),
        )
        .unwrap();
    assert!(kit.resolve("calculator").is_ok());
    let err = kit.resolve("shell").unwrap_err();
    assert_eq!(err.kind(), "tool_not_found");
    assert_eq!(
        err.to_string(),
        "there is no tool named 'shell'; the tools you have are: calculator, write_file"
    );
    assert_eq!(kit.permission("calculator"), Permission::Confirm);
    assert_eq!(kit.permission("write_file"), Permission::Confirm);
    assert_eq!(kit.permission("shell"), Permission::Never);
    assert_eq!(kit.schemas().len(), 2);
    let bad = lib
        .toolkit(&["calculator".into(), "teleport".into()], HashMap::new())
        .err()
        .unwrap();
    assert!(
        matches!(&bad, ToolkitError::UnknownTools(m) if m.contains("unknown tool(s): teleport")),
        "{bad}"
    );
    let bad = lib
        .toolkit(
            &["calculator".into()],
            HashMap::from([("shell".into(), Permission::Auto)]),
        )
        .err()
        .unwrap();
    assert!(
        matches!(&bad, ToolkitError::StrayPermission(m) if m.contains("'shell'")),
        "{bad}"
    );
}

#[tokio::test]
async fn client_tools_are_never_run() {
    let (_tools, lib) = library_with(
        "name: ask\ndescription: Ask.\nparameters: [{name: q, type: string, required: true}]\nentry: {type: client}\n",
    );
    let dir = tempfile::tempdir().unwrap();
    let tool = lib.get("ask").unwrap();
    assert!(tool.definition_only());
    assert_eq!(
        run(&lib, "ask", dir.path(), json!({"q": "?"}))
            .await
            .unwrap_err()
            .kind(),
        "client"
    );
    assert_eq!(
        run(&lib, "ask", dir.path(), json!({}))
            .await
            .unwrap_err()
            .kind(),
        "validation_error"
    );
}
