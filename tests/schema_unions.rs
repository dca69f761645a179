//! Tool files with any JSON Schema, end to end through the binary: a schema as Pydantic
//! writes it for a FastAPI model (`$defs`, `$ref`, `anyOf`, `oneOf` with a
//! discriminator, a type list) and OpenAI's own function example load in
//! `toolgate tools check`, guide `toolgate parse --tools` by the union rules (whole and
//! streamed), and a scripted xml-mode run hands the tool the coerced arguments while the
//! full validator turns away a call that breaks the schema.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Output;
use toolgate_test_support::toolgate;

use serde_json::{Value, json};

fn cli(args: &[&str], dir: &Path) -> Output {
    toolgate(dir).args(args).output().unwrap()
}

/// The Pydantic schema of the parser corpus (tests/corpus/tools/forecast.json), run by
/// `cat` so that the run shows the arguments the tool got.
fn forecast() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/tools/forecast.json");
    let mut tool: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    tool["entry"] = json!({"type": "command", "command": "cat"});
    tool.to_string()
}

/// OpenAI's function-calling example: strict mode writes an optional field as a type
/// list with `null` in its enum.
const GET_WEATHER: &str = r#"name: get_weather
description: Retrieves current weather for the given location.
parameters:
  type: object
  properties:
    location: {type: string, description: "City and country e.g. Bogotá, Colombia"}
    units: {type: [string, "null"], enum: [celsius, fahrenheit, null]}
  required: [location, units]
  additionalProperties: false
"#;

fn folder(extra: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools");
    std::fs::create_dir(&tools).unwrap();
    std::fs::write(tools.join("forecast.json"), forecast()).unwrap();
    std::fs::write(tools.join("get_weather.yaml"), GET_WEATHER).unwrap();
    for (name, text) in extra {
        std::fs::write(tools.join(name), text).unwrap();
    }
    dir
}

#[test]
fn tools_check_loads_union_schemas_and_points_at_a_typo_inside_one() {
    let typo = "name: odd\nparameters:\n  type: object\n  properties:\n    v:\n      anyOf:\n        - {type: string}\n        - {type: integer, minimun: 1}\n";
    let dir = folder(&[("odd.yaml", typo)]);
    let out = cli(&["tools", "check"], dir.path());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("ok      forecast (tools/forecast.json)"),
        "{text}"
    );
    assert!(
        text.contains("ok      get_weather (tools/get_weather.yaml)"),
        "{text}"
    );
    assert!(
        text.contains(
            "broken  tools/odd.yaml:8: parameters: v.anyOf[1]: minimun: unknown keyword (did you mean minimum?)"
        ),
        "{text}"
    );
    assert_eq!(out.status.code(), Some(2), "{text}");
    std::fs::remove_file(dir.path().join("tools/odd.yaml")).unwrap();
    let out = cli(&["tools", "check"], dir.path());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // `tools show` names a union's types.
    let out = cli(&["tools", "show", "forecast"], dir.path());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("note (string or null, optional)"), "{text}");
    assert!(text.contains("place (object, required)"), "{text}");
}

#[test]
fn parse_with_tools_follows_the_union_rules_whole_and_streamed() {
    let dir = folder(&[]);
    let input = concat!(
        "<tool_call><name>forecast</name><params>",
        "<place>{\"city\": \"Oslo\", \"unit\": \"c\", \"days\": \"3\"}</place><note>null</note>",
        "<hours>[6, \"9\"]</hours><tags>[\"rain\"]</tags>",
        "<shape>{\"kind\": \"box\", \"size\": \"2.5\"}</shape></params></tool_call>",
        "<tool_call><name>forecast</name><params><place><city>Bergen</city></place>",
        "<note>42</note><hours>7 am</hours><tags>rain, wind</tags></params></tool_call>",
        "<tool_call><name>get_weather</name><params><location>Paris</location>",
        "<units>null</units></params></tool_call>"
    );
    std::fs::write(dir.path().join("out.txt"), input).unwrap();
    let whole = cli(&["parse", "--tools", "tools", "out.txt"], dir.path());
    assert!(
        whole.status.success(),
        "{}",
        String::from_utf8_lossy(&whole.stderr)
    );
    let turn: Value = serde_json::from_slice(&whole.stdout).unwrap();
    let args: Vec<&Value> = turn["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["arguments"])
        .collect();
    assert_eq!(
        args[0],
        &json!({"place": {"city": "Oslo", "unit": "c", "days": 3}, "note": null,
                "hours": [6, 9], "tags": ["rain"], "shape": {"kind": "box", "size": 2.5}})
    );
    assert_eq!(
        args[1],
        &json!({"place": {"city": "Bergen"}, "note": "42", "hours": "7 am", "tags": "rain, wind"})
    );
    assert_eq!(args[2], &json!({"location": "Paris", "units": null}));
    assert_eq!(turn["problems"], json!([]));
    for chunk in ["1", "7"] {
        let streamed = cli(
            &["parse", "--tools", "tools", "--stream", chunk, "out.txt"],
            dir.path(),
        );
        assert_eq!(streamed.stdout, whole.stdout, "--stream {chunk}");
    }
}

#[test]
fn an_xml_mode_run_gets_coerced_arguments_and_the_full_validator_turns_a_bad_call_away() {
    let dir = folder(&[]);
    let p = dir.path();
    std::fs::write(
        p.join("agent.yaml"),
        "name: a\nmode: xml\nmodel: scripted:replies.json\ntools: [forecast]\nworkspace: .\n",
    )
    .unwrap();
    let calls = concat!(
        "<tool_call><name>forecast</name><params><place><city>Oslo</city><days>3</days></place>",
        "<note>None</note><hours>[6, \"9\"]</hours><tags>rain</tags></params></tool_call>",
        "<tool_call><name>forecast</name><params><place><city>Bergen</city><days>0</days>",
        "</place><shape>{\"kind\": \"box\"}</shape></params></tool_call>"
    );
    let replies = json!({"replies": [{"content": calls}, {"content": "Done."}]});
    std::fs::write(p.join("replies.json"), replies.to_string()).unwrap();
    let out = cli(&["run", "--agent", "agent.yaml", "--json", "go"], p);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let all: Vec<String> = events.iter().map(Value::to_string).collect();
    let finished: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool.finished")
        .collect();
    assert_eq!(finished.len(), 2, "{all:#?}");
    let ran = finished
        .iter()
        .find(|e| e["status"] == "succeeded")
        .unwrap_or_else(|| panic!("{all:#?}"));
    let output = events
        .iter()
        .find(|e| e["type"] == "tool.output" && e["call_id"] == ran["call_id"])
        .unwrap_or_else(|| panic!("{all:#?}"));
    let got: Value = serde_json::from_str(output["part"]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        got,
        json!({"place": {"city": "Oslo", "days": 3}, "note": null, "hours": [6, 9], "tags": "rain"})
    );
    // days 0 is below the member's minimum and a box needs its size: never run.
    let refused = finished
        .iter()
        .find(|e| e["status"] == "failed")
        .unwrap_or_else(|| panic!("{all:#?}"));
    assert_eq!(refused["error_kind"], "validation_error", "{all:#?}");
    assert_eq!(events.last().unwrap()["status"], "completed", "{all:#?}");
}
