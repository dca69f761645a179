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
    let loaded = load_dir(dir.path(), &toolgate::tool::sources::standard()).unwrap();
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
    let lib = ToolLibrary::load(dir.path(), &toolgate::tool::sources::standard()).unwrap();
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
    let lib = ToolLibrary::load(dir.path(), &toolgate::tool::sources::standard()).unwrap();
    let t = lib.get("calculator").unwrap();
    assert_eq!(t.spec.description, "Sums for the team.");
    assert_eq!(t.spec.permission, Permission::Confirm);
    assert!(lib.get("echo").is_some());
}

#[test]
fn example_calls_in_the_instructions_parse_back_into_valid_calls() {
    let lib = Arc::new(ToolLibrary::builtin(&toolgate::tool::sources::standard()));
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
    let lib = ToolLibrary::builtin(&toolgate::tool::sources::standard());
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
    let lib = ToolLibrary::load(dir.path(), &toolgate::tool::sources::standard()).unwrap();
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

#[test]
fn list_form_validation_rules_are_enforced() {
    // Seed-style rules: snake_case names under `validation:`.
    let dir = folder(&[(
        "pick.yaml",
        r#"name: pick
description: Pick a few.
parameters:
  - name: choices
    type: array
    required: true
    items: {type: string}
    validation: {min_items: 2, max_items: 3, unique_items: true}
  - {name: label, type: string, validation: {min_length: 2, max_length: 5}}
  - {name: weight, type: number, validation: {exclusive_min: 0, max: 1}}
"#,
    )]);
    let lib = ToolLibrary::load(dir.path(), &toolgate::tool::sources::standard()).unwrap();
    assert!(lib.errors().is_empty(), "{:?}", lib.errors());
    let t = lib.get("pick").unwrap();
    let check = |v: Value| {
        t.check(v.as_object().unwrap().clone())
            .map_err(|e| e.to_string())
    };
    assert!(check(json!({"choices": ["a", "b"]})).is_ok());
    assert!(check(json!({"choices": ["a", "b", "c"], "label": "ab", "weight": 1})).is_ok());
    for (args, needle) in [
        (
            json!({"choices": ["a"]}),
            "'choices': must have at least 2 items, got 1",
        ),
        (
            json!({"choices": ["a", "b", "c", "d"]}),
            "'choices': must have at most 3 items, got 4",
        ),
        (
            json!({"choices": ["a", "a"]}),
            "'choices': must not repeat an item, but item 1 repeats text \"a\"",
        ),
        (
            json!({"choices": ["a", "b"], "label": "abcdef"}),
            "'label': must be at most 5 characters long, got 6",
        ),
        (
            json!({"choices": ["a", "b"], "weight": 0}),
            "'weight': must be more than 0, got 0",
        ),
        // The list names every parameter: one it does not name is refused.
        (json!({"choices": ["a", "b"], "colour": "red"}), "colour"),
    ] {
        let err = check(args.clone()).unwrap_err();
        assert!(err.contains(needle), "{args}: {err}");
    }
}

#[test]
fn every_key_is_enforced_or_refused_with_its_line() {
    let cases: [(&str, &str, &str); 17] = [
        (
            "typo_map.yaml",
            "name: t\nparameters:\n  type: object\n  properties:\n    n: {type: integer, minimun: 1}\n",
            "typo_map.yaml:5: parameters: n: minimun: unknown keyword (did you mean minimum?)",
        ),
        (
            "typo_rule.yaml",
            "name: t\nparameters:\n  - name: tags\n    type: array\n    validation:\n      min_itmes: 2\n",
            "typo_rule.yaml:6: parameters: validation of 'tags': unknown rule 'min_itmes' (did you mean min_items?)",
        ),
        (
            "typo_top.yaml",
            "name: t\ndescription: d\npermision: confirm\n",
            "typo_top.yaml:3:",
        ),
        (
            "any_of.yaml",
            "name: t\nparameters:\n  type: object\n  properties:\n    v:\n      anyOf:\n        - {type: string}\n        - {type: integer, minimun: 1}\n",
            "any_of.yaml:8: parameters: v.anyOf[1]: minimun: unknown keyword (did you mean minimum?)",
        ),
        (
            "ref.json",
            "{\"name\": \"t\",\n \"parameters\": {\"type\": \"object\",\n   \"properties\": {\"v\": {\"$ref\": \"#/$defs/v\"}}}}\n",
            "ref.json:3: parameters: v: $ref \"#/$defs/v\" points to nothing in this schema",
        ),
        (
            "one_of_type.yaml",
            "name: t\nparameters:\n  type: object\n  properties:\n    v:\n      oneOf:\n        - {type: strin}\n",
            "one_of_type.yaml:7: parameters: v.oneOf[0].type: ",
        ),
        (
            "nullable_map.yaml",
            "name: t\nparameters:\n  type: object\n  properties:\n    v: {type: string, nullable: true}\n",
            "nullable_map.yaml:5: parameters: v: nullable: not a JSON Schema keyword; write type: [T, \"null\"]",
        ),
        (
            "required_text.yaml",
            "name: t\nparameters:\n  - {name: a, required: \"yes\"}\n",
            "required_text.yaml:3: parameters: required of 'a' must be true or false",
        ),
        (
            "bad_type.yaml",
            "name: t\nparameters:\n  type: object\n  properties:\n    a: {type: [string, text]}\n",
            "bad_type.yaml:5: parameters: a: unknown type",
        ),
        (
            "bad_default.yaml",
            "name: t\nparameters:\n  type: object\n  properties:\n    n:\n      type: integer\n      maximum: 50\n      default: 80\n",
            "bad_default.yaml:8: parameters: n: the default 80 does not pass its own schema: must be at most 50, got 80",
        ),
        (
            "crossed.yaml",
            "name: t\nparameters:\n  - {name: size, type: integer, validation: {min: 5, max: 1}}\n",
            "crossed.yaml:3: parameters: size: minimum 5 is above maximum 1: no value can pass",
        ),
        (
            "format_rule.yaml",
            "name: t\nparameters:\n  - {name: mail, validation: {format: email}}\n",
            "format_rule.yaml:3: parameters: validation of 'mail': format is an annotation toolgate does not check",
        ),
        (
            "twice.yaml",
            "name: t\nparameters:\n  - {name: size, type: integer, minimum: 1, validation: {min: 2}}\n",
            "twice.yaml:3: parameters: parameter 'size': minimum is given twice",
        ),
        (
            "output_typo.yaml",
            "name: t\noutput:\n  type: object\n  properties:\n    total: {type: integer, maximun: 3}\n",
            "output_typo.yaml:5: output: total: maximun: unknown keyword (did you mean maximum?)",
        ),
        (
            "output_text.yaml",
            "name: t\noutput: a number\n",
            "output_text.yaml:2: output must be a JSON Schema",
        ),
        (
            "timeout.yaml",
            "name: t\ndescription: d\ntimeout: -1\n",
            "timeout.yaml:3: timeout must be a positive number",
        ),
        (
            "entry_key.yaml",
            "name: t\nentry: {type: command, command: cat, shell: true}\n",
            "entry_key.yaml:2:",
        ),
    ];
    let dir = folder(&cases.map(|(name, text, _)| (name, text)));
    let loaded = load_dir(dir.path(), &toolgate::tool::sources::standard()).unwrap();
    assert!(loaded.tools.is_empty(), "{:?}", loaded.tools);
    let errors: Vec<String> = loaded.errors.iter().map(ToString::to_string).collect();
    for (file, _, needle) in cases {
        let err = errors
            .iter()
            .find(|e| e.contains(&format!("/{file}")))
            .unwrap_or_else(|| panic!("{file} was accepted: {errors:#?}"));
        assert!(err.contains(needle), "{file}: {err}");
    }
    assert!(
        errors
            .iter()
            .any(|e| e.contains("unknown field `permision`"))
    );
}

#[test]
fn annotations_are_accepted() {
    let dir = folder(&[(
        "notes.yaml",
        r#"name: notes
parameters:
  $schema: "https://json-schema.org/draft/2020-12/schema"
  $comment: annotations only
  title: Notes
  type: object
  properties:
    when: {type: string, format: date-time, description: When., examples: ["2026-01-01T00:00:00Z"]}
    old: {type: string, deprecated: true, readOnly: true, x-order: 2}
    token: {type: string, writeOnly: true, secret: true}
"#,
    )]);
    let lib = ToolLibrary::load(dir.path(), &toolgate::tool::sources::standard()).unwrap();
    assert!(lib.errors().is_empty(), "{:?}", lib.errors());
    // `format` is shown, not checked.
    let t = lib.get("notes").unwrap();
    assert!(
        t.check(json!({"when": "not a date"}).as_object().unwrap().clone())
            .is_ok()
    );
}

/// A complete tool file in the seed's shape: list-form parameters with rules and an
/// `output:` block, which is kept as the declared output schema and checked.
#[tokio::test]
async fn an_output_block_is_the_declared_output_and_is_checked() {
    let dir = folder(&[
        (
            "tally.yaml",
            r#"name: tally
description: Count the items (the program echoes its input).
permission: auto
parameters:
  - name: items
    type: array
    required: true
    items: {type: string}
    validation: {min_items: 2, max_items: 3}
  - {name: count, type: integer, required: true, validation: {min: 0}}
output:
  type: object
  description: What came back.
  properties:
    items: {type: array, items: {type: string}}
    count: {type: integer, maximum: 2}
  required: [items, count]
entry: {type: command, command: cat}
"#,
        ),
        (
            "fields.yaml",
            "name: fields\noutput:\n  - {name: ok, type: boolean, required: true}\n",
        ),
    ]);
    let lib = ToolLibrary::load(dir.path(), &toolgate::tool::sources::standard()).unwrap();
    assert!(lib.errors().is_empty(), "{:?}", lib.errors());
    let t = lib.get("tally").unwrap();
    assert_eq!(
        t.spec.output.as_ref().unwrap()["required"],
        json!(["items", "count"])
    );
    let fields = lib.get("fields").unwrap();
    assert_eq!(
        fields.spec.output.as_ref().unwrap()["properties"]["ok"]["type"],
        "boolean"
    );

    let ws = tempfile::tempdir().unwrap();
    let ctx = toolgate::tool::ToolContext::new(ws.path().to_path_buf());
    let args = |v: Value| v.as_object().unwrap().clone();
    let ok = t
        .invoke(&ctx, args(json!({"items": ["a", "b"], "count": 2})))
        .await
        .unwrap();
    assert_eq!(ok.to_text(), r#"{"items":["a","b"],"count":2}"#);
    let err = t
        .invoke(&ctx, args(json!({"items": ["a", "b"], "count": 3})))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "'tally' returned an output that does not match its declared output schema: 'count': must be at most 2, got 3"
    );
    assert_eq!(err.kind(), "execution_error");
    // The parameters' rules hold before anything runs.
    let err = t
        .invoke(&ctx, args(json!({"items": ["a"], "count": 1})))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("must have at least 2 items"),
        "{err}"
    );
    // The output schema is part of the spec a client reads (`tools show --json`).
    let shown = serde_json::to_value(&t.spec).unwrap();
    assert_eq!(shown["output"]["properties"]["count"]["maximum"], 2);
}

/// A message about an output that breaks its schema never quotes a secret argument.
#[tokio::test]
async fn an_output_error_never_quotes_a_secret() {
    let dir = folder(&[(
        "echoer.yaml",
        r#"name: echoer
parameters:
  type: object
  properties:
    token: {type: string, secret: true}
output:
  type: object
  properties:
    token: {type: integer}
entry: {type: command, command: cat}
"#,
    )]);
    let lib = ToolLibrary::load(dir.path(), &toolgate::tool::sources::standard()).unwrap();
    assert!(lib.errors().is_empty(), "{:?}", lib.errors());
    let ws = tempfile::tempdir().unwrap();
    let ctx = toolgate::tool::ToolContext::new(ws.path().to_path_buf());
    let token = "tok-0123456789abcdefghijklmnopqrstuvwxyz-0123456789";
    let err = lib
        .get("echoer")
        .unwrap()
        .invoke(&ctx, json!({"token": token}).as_object().unwrap().clone())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("'token': must be integer"), "{err}");
    assert!(err.contains("[secret]"), "{err}");
    assert!(!err.contains("tok-0123"), "{err}");
}
