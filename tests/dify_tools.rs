//! Dify providers read as they are: a plugin folder (tests/fixtures/dify/weather)
//! dropped into the tools folder loads, its `llm` parameters are the model's, its
//! `form` parameters and credentials come from `toolgate secrets set` or the
//! environment, and its Python tool runs through toolgate's adapter with python3 and
//! no Dify installed. The credential never reaches the model's schema, the record,
//! the output or the database in clear.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Output;
use toolgate_test_support::toolgate;

use base64::Engine as _;
use serde_json::Value;

use crate::launching;
use launching::{all, with_tools};

const KEY: &str = "wx-key-3f9a61c2d0";
const STATION: &str = "station-token-77b1";

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn cli(dir: &Path, args: &[&str], stdin: Option<&str>, env: &[(&str, &str)]) -> Output {
    let mut cmd = toolgate(dir);
    cmd.args(args)
        .env_remove("TOOLGATE_PYTHON")
        .env_remove("DIFY_WEATHER_API_KEY")
        .env_remove("DIFY_WEATHER_FORECAST_UNITS")
        .envs(env.iter().copied());
    launching::feed(cmd, stdin)
}

/// A folder with tools/weather (the fixture plugin).
fn site() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dify/weather");
    copy_dir(&fixture, &dir.path().join("tools/weather"));
    dir
}

#[test]
fn a_provider_folder_loads_and_its_schema_holds_only_llm_parameters() {
    let dir = site();
    let d = dir.path();
    let out = cli(d, &["tools", "check"], None, &[]);
    assert!(out.status.success(), "{}", all(&out));
    assert!(
        all(&out).contains("ok      weather__forecast"),
        "{}",
        all(&out)
    );

    let out = cli(d, &["tools", "list", "--json"], None, &[]);
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let t = list
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "weather__forecast")
        .unwrap();
    assert_eq!(t["entry"], "dify:weather");
    assert_eq!(t["permission"], "confirm");
    assert_eq!(
        t["description"],
        "Gets the weather forecast for a city for the next few days."
    );
    // What people see: the tool's label, the provider's icon from _assets/ (inline),
    // the human description as help; none of it reaches the model.
    assert_eq!(t["label"], serde_json::json!({"en_US": "Forecast"}));
    let icon = std::fs::read(d.join("tools/weather/_assets/icon.svg")).unwrap();
    let inline = base64::engine::general_purpose::STANDARD.encode(icon);
    assert_eq!(t["icon"], format!("data:image/svg+xml;base64,{inline}"));
    assert_eq!(
        t["help"]["en_US"],
        "The weather for the next days in a city."
    );
    let out = cli(d, &["tools", "show", "weather__forecast"], None, &[]);
    assert!(all(&out).contains("label:      Forecast"), "{}", all(&out));

    let out = cli(d, &["prompt", "--openai", "weather__forecast"], None, &[]);
    assert!(out.status.success(), "{}", all(&out));
    let tools: Value = serde_json::from_slice(&out.stdout).unwrap();
    let params = &tools[0]["function"]["parameters"];
    let names: Vec<&String> = params["properties"].as_object().unwrap().keys().collect();
    assert_eq!(names, ["city", "days", "detail"], "{params}");
    assert_eq!(params["required"], serde_json::json!(["city"]));
    assert_eq!(params["properties"]["days"]["minimum"], 1.0);
    assert_eq!(params["properties"]["days"]["maximum"], 7.0);
    assert_eq!(params["properties"]["days"]["default"], 3);
    assert_eq!(
        params["properties"]["city"]["description"],
        "The city to forecast, e.g. Oslo"
    );
}

#[test]
fn its_tool_runs_with_a_stored_credential_that_is_never_shown() {
    let dir = site();
    let d = dir.path();
    // Without the credential the call says how to set it.
    let out = cli(
        d,
        &[
            "tools",
            "call",
            "weather__forecast",
            "--args",
            r#"{"city": "Oslo"}"#,
        ],
        None,
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", all(&out));
    assert!(
        all(&out).contains("toolgate secrets set weather.api_key"),
        "{}",
        all(&out)
    );
    let out = cli(
        d,
        &["secrets", "set", "weather.api_key"],
        Some(&format!("{KEY}\n")),
        &[],
    );
    assert!(out.status.success(), "{}", all(&out));
    let out = cli(
        d,
        &["secrets", "set", "weather.forecast.station"],
        Some(&format!("{STATION}\n")),
        &[],
    );
    assert!(out.status.success(), "{}", all(&out));

    let out = cli(
        d,
        &[
            "tools",
            "call",
            "weather__forecast",
            "--args",
            r#"{"city": "Oslo", "days": 2}"#,
            "--json",
        ],
        None,
        &[],
    );
    assert!(out.status.success(), "{}", all(&out));
    let text = all(&out);
    assert!(!text.contains(KEY) && !text.contains(STATION), "{text}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    // The messages the tool yielded, each a part of its kind: its text, then its JSON.
    let parts = &v["output"]["parts"];
    assert_eq!(parts[0]["type"], "text", "{v}");
    assert_eq!(
        parts[0]["text"],
        "Forecast for Oslo (degrees Celsius), key [secret]"
    );
    assert_eq!(parts[1]["type"], "json", "{v}");
    let json = &parts[1]["json"];
    assert_eq!(json["key_length"], KEY.len());
    assert_eq!(json["station_given"], true);
    assert_eq!(json["units"], "metric");
    assert_eq!(json["days"], 2);

    // A form parameter set in the environment wins over its default.
    let out = cli(
        d,
        &[
            "tools",
            "call",
            "weather__forecast",
            "--args",
            r#"{"city": "Oslo"}"#,
            "--json",
        ],
        None,
        &[("DIFY_WEATHER_FORECAST_UNITS", "imperial")],
    );
    assert!(out.status.success(), "{}", all(&out));
    assert!(all(&out).contains("degrees Fahrenheit"), "{}", all(&out));

    // An agent's run: the model asks, the tool runs, the record holds no credential.
    std::fs::write(
        d.join("agent.yaml"),
        "name: forecaster\nmodel: scripted:replies.yaml\ntools: [weather__forecast]\npermissions: {weather__forecast: auto}\nworkspace: .\n",
    )
    .unwrap();
    std::fs::write(
        d.join("replies.yaml"),
        "replies:\n  - content: Checking.\n    tool_calls: [{id: c1, name: weather__forecast, arguments: {city: Bergen, detail: true}}]\n  - content: Rain in Bergen.\n",
    )
    .unwrap();
    let out = cli(
        d,
        &["run", "--agent", "agent.yaml", "--json", "weather?"],
        None,
        &[],
    );
    assert!(out.status.success(), "{}", all(&out));
    let text = all(&out);
    assert!(text.contains(r#""status":"succeeded""#), "{text}");
    assert!(!text.contains(KEY) && !text.contains(STATION), "{text}");
    for args in [vec!["calls", "--json"], vec!["stats", "--json"]] {
        let out = cli(d, &args, None, &[]);
        assert!(out.status.success(), "{}", all(&out));
        assert!(!all(&out).contains(KEY) && !all(&out).contains(STATION));
    }
    let out = cli(d, &["calls", "--json"], None, &[]);
    assert!(all(&out).contains("Forecast for Bergen"), "{}", all(&out));
    for entry in std::fs::read_dir(d).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("toolgate.db") && !name.ends_with(".key") {
            let bytes = std::fs::read(&path).unwrap();
            for v in [KEY, STATION] {
                assert!(
                    !bytes.windows(v.len()).any(|w| w == v.as_bytes()),
                    "{v} in {name}"
                );
            }
        }
    }
}

#[test]
fn a_tool_needing_more_of_dify_plugin_says_so_in_one_line() {
    let dir = with_tools(&[
        (
            "upload.yaml",
            "identity: {name: upload, author: x, label: {en_US: Upload}}\ndescription: {human: {en_US: Up}, llm: Uploads a file.}\nparameters:\n  - {name: file, type: file, required: true, form: llm, llm_description: The file}\n",
        ),
        (
            "upload.py",
            "from dify_plugin import Tool\nfrom dify_plugin.file.file import File\n\nclass Upload(Tool):\n    def _invoke(self, p):\n        yield self.create_text_message('never')\n",
        ),
    ]);
    let d = dir.path();
    // A lone tool YAML whose Python file is missing is one line naming it.
    std::fs::write(
        d.join("tools/lost.yaml"),
        "identity: {name: lost}\ndescription: {llm: Lost.}\nparameters: []\n",
    )
    .unwrap();
    let out = cli(d, &["tools", "check"], None, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", all(&out));
    let text = all(&out);
    assert!(text.contains("ok      upload__upload"), "{text}");
    assert!(
        text.contains("lost.yaml") && text.contains("lost.py is not there"),
        "{text}"
    );

    let out = cli(
        d,
        &[
            "tools",
            "call",
            "upload__upload",
            "--args",
            r#"{"file": "a.txt"}"#,
        ],
        None,
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", all(&out));
    let text = all(&out);
    assert!(
        text.contains("needs the dify_plugin package")
            && text.contains("toolgate installs nothing"),
        "{text}"
    );
}

#[test]
fn a_dify_file_with_an_unknown_key_or_type_is_refused_with_its_line() {
    let dir = with_tools(&[
        ("odd.py", ""),
        (
            "odd.yaml",
            "identity: {name: odd}\ndescription: {llm: Odd.}\nparameters:\n  - name: when\n    type: datetime\n    form: llm\n",
        ),
        ("typo.py", ""),
        (
            "typo.yaml",
            "identity: {name: typo}\ndescription: {llm: Typo.}\nparamaters: []\n",
        ),
    ]);
    let d = dir.path();
    let out = cli(d, &["tools", "check"], None, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", all(&out));
    let text = all(&out);
    assert!(
        text.contains("odd.yaml") && text.contains("type 'datetime' is not supported"),
        "{text}"
    );
    assert!(
        text.contains("typo.yaml:3") && text.contains("paramaters"),
        "{text}"
    );
}
