//! Tool files as users write them (both parameter forms, every field, broken files
//! reported with file and line), and the prompts made from them: the XML instructions
//! (whose example calls must parse back into valid calls), the results block and the
//! OpenAI tools array.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use serde_json::{Value, json};
use toolgate::parse::{ParseOptions, parse_text};
use toolgate::prompt::{Prompts, ResultItem, openai_tools};
use toolgate::tool::{Entry, Permission, ToolLibrary, ToolOutput, load_dir};

fn folder(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

#[test]
fn broken_files_are_reported_and_the_rest_load() {
    let dir = folder(&[
        ("good.yaml", "name: good\ndescription: Fine.\n"),
        ("bad_yaml.yaml", "name: bad\ndescription: [unclosed\n"),
        ("bad_field.yaml", "name: odd\ndescripton: typo\n"),
        (
            "bad_handler.yaml",
            "name: h\nentry: {type: builtin, handler: teleport}\n",
        ),
        (
            "bad_regex.yaml",
            "name: r\nparameters:\n  type: object\n  properties:\n    u: {type: string, pattern: \"(\"}\n",
        ),
        (
            "bad_url.yaml",
            "name: u\nentry: {type: http, url: \"ftp://x\"}\n",
        ),
        (
            "bad_json.json",
            "{\"name\": \"j\",\n \"description\": 3,\n}",
        ),
        ("dup.yaml", "name: good\n"),
        ("bad_name.yaml", "name: \"has space\"\n"),
        ("notes.txt", "not a tool file"),
    ]);
    let loaded = load_dir(dir.path()).unwrap();
    let names: Vec<&str> = loaded.tools.iter().map(|t| t.spec.name.as_str()).collect();
    assert_eq!(names, ["good"]);
    let errors: Vec<String> = loaded.errors.iter().map(ToString::to_string).collect();
    let find = |file: &str| {
        errors
            .iter()
            .find(|e| e.contains(file))
            .cloned()
            .unwrap_or_else(|| panic!("no error for {file}: {errors:#?}"))
    };
    assert!(
        find("bad_yaml.yaml:2:").contains("bad_yaml.yaml:2"),
        "{errors:#?}"
    );
    assert!(find("bad_field.yaml").contains("unknown field `descripton`"));
    assert!(find("bad_handler.yaml").contains("no built-in handler 'teleport'"));
    assert!(
        find("bad_regex.yaml").contains(
            "bad_regex.yaml:5: parameters: u: pattern \"(\" does not compile: unclosed group"
        ),
        "{errors:#?}"
    );
    assert!(
        find("bad_handler.yaml").contains("bad_handler.yaml:2:"),
        "{errors:#?}"
    );
    assert!(find("bad_url.yaml").contains("must start with http"));
    assert!(
        find("bad_json.json").contains("bad_json.json:2"),
        "{errors:#?}"
    );
    assert!(find("dup.yaml").contains("already defined in"));
    assert!(find("bad_name.yaml").contains("must be letters"));
    assert_eq!(errors.len(), 8, "{errors:#?}");
}

#[test]
fn both_parameter_forms_and_every_field() {
    let dir = folder(&[
        (
            "fetch.yaml",
            r#"name: fetch
description: Fetch a page.
permission: confirm
category: http
tags: [web, read]
timeout: 12.5
version: 2
parameters:
  - {name: url, type: string, required: true, description: "The page.", validation: {pattern: "^https?://"}}
  - {name: timeout, type: number, default: 30, validation: {min: 1, max: 300}}
  - {name: token, type: string, secret: true}
  - {name: note, type: string, nullable: true}
entry: {type: client}
"#,
        ),
        (
            "typo.yaml",
            "name: typo\nparameters:\n  - {name: a, type: string, description: one, two}\n",
        ),
    ]);
    let lib = ToolLibrary::load(dir.path()).unwrap();
    let t = lib.get("fetch").unwrap();
    assert_eq!(t.spec.permission, Permission::Confirm);
    assert_eq!(t.spec.category.as_deref(), Some("http"));
    assert_eq!(t.spec.tags, ["web", "read"]);
    assert_eq!(t.spec.timeout, Some(12.5));
    assert_eq!(t.spec.version.as_deref(), Some("2"));
    assert_eq!(t.spec.entry, Entry::Client);
    assert_eq!(t.schema.secret_params(), ["token"]);
    let ok = t
        .check(
            json!({"url": "https://a", "note": null})
                .as_object()
                .unwrap()
                .clone(),
        )
        .unwrap();
    assert_eq!(
        Value::Object(ok),
        json!({"url": "https://a", "note": null, "timeout": 30})
    );
    let err = t
        .check(
            json!({"url": "a", "timeout": 0})
                .as_object()
                .unwrap()
                .clone(),
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid arguments for 'fetch': 'url': must match the pattern ^https?://, got text \"a\"; 'timeout': must be at least 1, got 0"
    );
    let typo = lib
        .errors()
        .iter()
        .find(|e| e.path.ends_with("typo.yaml"))
        .unwrap();
    assert!(typo.message.contains("unknown key"), "{typo}");
}

#[test]
fn files_may_redefine_builtins() {
    let dir = folder(&[(
        "calc.yaml",
        "name: calculator\ndescription: Sums for the team.\npermission: confirm\nparameters:\n  type: object\n  properties:\n    expression: {type: string}\n  required: [expression]\nentry: {type: builtin, handler: calculator}\n",
    )]);
    let lib = ToolLibrary::load(dir.path()).unwrap();
    let t = lib.get("calculator").unwrap();
    assert_eq!(t.spec.description, "Sums for the team.");
    assert_eq!(t.spec.permission, Permission::Confirm);
    assert!(lib.get("echo").is_some());
}

#[test]
fn example_calls_in_the_instructions_parse_back_into_valid_calls() {
    let lib = Arc::new(ToolLibrary::builtin());
    let prompts = Prompts::new().unwrap();
    let opts = ParseOptions::default().with_schemas(Arc::new(lib.schemas()));
    for tool in lib.tools() {
        let text = prompts.tool_instructions(&[&**tool]).unwrap();
        assert!(text.contains(&format!("## {}", tool.spec.name)));
        for (name, _) in tool.schema.properties() {
            assert!(
                text.contains(&format!("- {name} (")),
                "{name} missing:\n{text}"
            );
        }
        let example = &text[text.find("Example:").unwrap()..];
        let turn = parse_text(example, &opts);
        assert_eq!(turn.calls.len(), 1, "{example}");
        assert_eq!(turn.calls[0].name, tool.spec.name);
        if let Err(e) = tool.check(turn.calls[0].arguments.clone()) {
            panic!(
                "the example for {} does not validate: {e}\n{example}",
                tool.spec.name
            );
        }
    }
}

#[test]
fn instructions_explain_types_defaults_and_the_cdata_escape() {
    let lib = ToolLibrary::builtin();
    let prompts = Prompts::new().unwrap();
    let tools: Vec<_> = ["http_request", "read_file"]
        .iter()
        .map(|n| &**lib.get(n).unwrap())
        .collect();
    let text = prompts.tool_instructions(&tools).unwrap();
    assert!(text.contains("]]]]><![CDATA[>"));
    assert!(
        text.contains("- url (string, required, matching ^https?://): An http or https URL."),
        "{text}"
    );
    assert!(
        text.contains("- method (string, default \"GET\", one of: \"GET\""),
        "{text}"
    );
    assert!(
        text.contains("- max_bytes (integer, default 1048576, 1 to 10485760)"),
        "{text}"
    );
    assert!(
        text.contains("<url><![CDATA[https://example.com]]></url>"),
        "{text}"
    );
}

#[test]
fn results_block_keeps_any_output_intact() {
    let prompts = Prompts::new().unwrap();
    let tricky = "done ]]> and <tool_call> & more";
    let block = prompts
        .tool_results(&[
            ResultItem::from_output("call_1", "echo", &ToolOutput::text(tricky)),
            ResultItem::from_output("call_2", "shell", &ToolOutput::error("exit status 1")),
        ])
        .unwrap();
    assert!(block.contains("<call_id>call_1</call_id>"));
    assert!(block.contains("<status>error</status>"));
    assert!(
        block.contains("done ]]]]><![CDATA[> and <tool_call> & more"),
        "{block}"
    );
    // Read back the way the parser reads CDATA: the output is exactly what the tool gave.
    let start = block.find("<output><![CDATA[").unwrap() + "<output><![CDATA[".len();
    let end = block[start..].find("]]></output>").unwrap() + start;
    assert_eq!(block[start..end].replace("]]]]><![CDATA[>", "]]>"), tricky);
}

#[test]
fn openai_tools_array() {
    let dir = folder(&[(
        "login.yaml",
        "name: login\ndescription: Log in.\nparameters:\n  type: object\n  properties:\n    user: {type: string}\n    password: {type: string, secret: true}\n  required: [user, password]\n",
    )]);
    let lib = ToolLibrary::load(dir.path()).unwrap();
    let tools = openai_tools(&[&**lib.get("login").unwrap(), &**lib.get("echo").unwrap()]);
    assert_eq!(tools[0]["type"], "function");
    assert_eq!(tools[0]["function"]["name"], "login");
    assert_eq!(
        tools[0]["function"]["parameters"]["properties"]["password"],
        json!({"type": "string"})
    );
    assert_eq!(
        tools[1]["function"]["parameters"]["required"],
        json!(["text"])
    );
}
