//! `toolgate parse` through the binary, as scripts use it: the JSON contract, stdin
//! and files, `--stream`, `--jsonl`, `--tools`, `--strict`, `--dialect`, exit codes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use toolgate_test_support::toolgate;

use std::io::Write;
use std::path::Path;
use std::process::{Output, Stdio};

use serde_json::{Value, json};

fn cli(args: &[&str], stdin: &[u8], dir: &Path) -> Output {
    toolgate_streamed(args, stdin.to_vec(), dir)
}

fn json_lines(out: &Output) -> Vec<Value> {
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

const CALL: &str = "Let me search.\n<tool_call><name>web_search</name><params><query><![CDATA[rust]]></query><max_results>5</max_results></params></tool_call>\nDone.";

#[test]
fn prints_the_contract_object_from_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let out = cli(&["parse"], CALL.as_bytes(), dir.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let v = &json_lines(&out)[0];
    assert_eq!(v["text"], "Let me search.\n\nDone.");
    assert_eq!(
        v["calls"][0],
        json!({"id": "call_1", "name": "web_search", "arguments": {"query": "rust", "max_results": 5}})
    );
    assert_eq!(v["problems"], json!([]));
}

#[test]
fn reasoning_is_its_own_array_and_never_a_call() {
    let dir = tempfile::tempdir().unwrap();
    let input = "<think>Maybe <tool_call><name>rm</name></tool_call>.</think>Searching.\n\
                 <tool_call><name>web_search</name><params><query>rust</query></params></tool_call>";
    let out = cli(&["parse"], input.as_bytes(), dir.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let v = &json_lines(&out)[0];
    assert_eq!(v["text"], "Searching.\n");
    assert_eq!(
        v["reasoning"],
        json!([{"text": "Maybe <tool_call><name>rm</name></tool_call>.", "start": 7, "end": 52}])
    );
    assert_eq!(v["calls"].as_array().unwrap().len(), 1);
    assert_eq!(v["calls"][0]["name"], "web_search");

    // Mistral's [THINK], cut off while thinking: all reasoning, no call.
    let cut = "[THINK]I would run [TOOL_CALLS]rm[ARGS]{\"path\": \"/\"}";
    let out = cli(
        &["parse", "--dialect", "mistral"],
        cut.as_bytes(),
        dir.path(),
    );
    let v = &json_lines(&out)[0];
    assert_eq!(v["text"], "");
    assert_eq!(v["calls"], json!([]));
    assert_eq!(
        v["reasoning"][0]["text"],
        "I would run [TOOL_CALLS]rm[ARGS]{\"path\": \"/\"}"
    );

    // A template that opened <think> in the prompt.
    let lead = "Check the file first.</think>Done.";
    let out = cli(
        &["parse", "--reasoning-opened"],
        lead.as_bytes(),
        dir.path(),
    );
    let v = &json_lines(&out)[0];
    assert_eq!(v["text"], "Done.");
    assert_eq!(v["reasoning"][0]["text"], "Check the file first.");
    // Without it (and not under deepseek / kimi-k2) the closer is only text.
    let out = cli(&["parse"], lead.as_bytes(), dir.path());
    let v = &json_lines(&out)[0];
    assert_eq!(v["text"], lead);
    assert!(v.get("reasoning").is_none(), "no reasoning, no field: {v}");
}

#[test]
fn reads_a_file_and_strips_a_leading_bom() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out.txt");
    std::fs::write(&file, format!("\u{feff}{CALL}")).unwrap();
    let out = cli(&["parse", file.to_str().unwrap()], b"", dir.path());
    assert!(out.status.success());
    assert_eq!(json_lines(&out)[0]["text"], "Let me search.\n\nDone.");
}

#[test]
fn stream_flag_gives_the_same_output_for_every_chunk_size() {
    let dir = tempfile::tempdir().unwrap();
    let tools = common::tools_dir();
    for case in common::cases()
        .iter()
        .filter(|c| c.input.len() < 2000)
        .step_by(7)
    {
        let mut base = vec!["parse", "--tools", tools.to_str().unwrap()];
        let dialect = case.dialect.clone().unwrap_or_else(|| "auto".into());
        base.extend(["--dialect", dialect.as_str()]);
        if case.strict {
            base.push("--strict");
        }
        let whole = cli(&base, case.input.as_bytes(), dir.path());
        for n in ["1", "3", "64"] {
            let mut args = base.clone();
            args.extend(["--stream", n]);
            let streamed = cli(&args, case.input.as_bytes(), dir.path());
            assert_eq!(
                streamed.stdout, whole.stdout,
                "case {} with --stream {n}",
                case.name
            );
        }
    }
}

#[test]
fn jsonl_prints_one_result_per_line_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let input = [
        json!({"text": "<tool_call><name>a</name></tool_call>"}).to_string(),
        String::new(),
        json!({"text": "plain", "meta": 1}).to_string(),
        json!({"text": "<tool_call>{\"name\": \"b\", \"arguments\": {}}</tool_call>"}).to_string(),
    ]
    .join("\n");
    let out = cli(&["parse", "--jsonl"], input.as_bytes(), dir.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["calls"][0]["name"], "a");
    assert_eq!(lines[1]["text"], "plain");
    assert_eq!(lines[2]["calls"][0]["name"], "b");
}

#[test]
fn jsonl_bad_line_keeps_its_place_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let input = "{\"text\": \"one\"}\nnot json\n{\"no_text\": 1}\n{\"text\": \"four\"}\n";
    let out = cli(&["parse", "--jsonl"], input.as_bytes(), dir.path());
    assert_eq!(out.status.code(), Some(2));
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[0]["text"], "one");
    assert_eq!(lines[1]["line"], 2);
    assert!(lines[2]["error"].as_str().unwrap().contains("text"));
    assert_eq!(lines[3]["text"], "four");
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("2 input line(s)"), "{err}");
}

#[test]
fn tools_folder_guides_coercion_and_broken_files_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools");
    std::fs::create_dir(&tools).unwrap();
    std::fs::write(
        tools.join("lookup.yaml"),
        "name: lookup\ndescription: Look up.\nparameters:\n  type: object\n  properties:\n    code: {type: string}\n    limit: {type: integer}\n",
    )
    .unwrap();
    std::fs::write(tools.join("broken.yaml"), "name: broken\nparameters: [\n").unwrap();
    let input = "<tool_call><name>lookup</name><params><code>007</code><limit>3</limit></params></tool_call>";
    // ./tools is the default folder.
    let out = cli(&["parse"], input.as_bytes(), dir.path());
    assert!(out.status.success());
    assert_eq!(
        json_lines(&out)[0]["calls"][0]["arguments"],
        json!({"code": "007", "limit": 3})
    );
    let err = stderr(&out);
    assert!(
        err.contains("broken.yaml") && err.contains("warning"),
        "{err}"
    );
    // Without the schema, the heuristic applies.
    let other = tempfile::tempdir().unwrap();
    let out = cli(&["parse"], input.as_bytes(), other.path());
    assert_eq!(
        json_lines(&out)[0]["calls"][0]["arguments"],
        json!({"code": "007", "limit": 3})
    );
    let input = "<tool_call><name>lookup</name><params><code>42</code></params></tool_call>";
    let out = cli(&["parse"], input.as_bytes(), other.path());
    assert_eq!(
        json_lines(&out)[0]["calls"][0]["arguments"],
        json!({"code": 42})
    );
    let out = cli(
        &["parse", "--tools", tools.to_str().unwrap()],
        input.as_bytes(),
        other.path(),
    );
    assert_eq!(
        json_lines(&out)[0]["calls"][0]["arguments"],
        json!({"code": "42"})
    );
}

#[test]
fn strict_mode_reports_and_drops() {
    let dir = tempfile::tempdir().unwrap();
    let input = "<tool_call><name>a</name><params><x>1</params></tool_call>";
    let lenient = json_lines(&cli(&["parse"], input.as_bytes(), dir.path()))[0].clone();
    assert_eq!(lenient["calls"].as_array().unwrap().len(), 1);
    let strict = json_lines(&cli(&["parse", "--strict"], input.as_bytes(), dir.path()))[0].clone();
    assert_eq!(strict["calls"], json!([]));
    assert_eq!(strict["text"], input);
    assert!(
        strict["problems"][0]["message"]
            .as_str()
            .unwrap()
            .contains("strict")
    );
}

#[test]
fn output_cut_inside_a_call_is_no_call_in_either_mode() {
    let dir = tempfile::tempdir().unwrap();
    let input = "<tool_call>\n<function=write_file>\n<parameter=content>\nrm -rf /tmp/build";
    for args in [&["parse"][..], &["parse", "--strict"][..]] {
        let turn = json_lines(&cli(args, input.as_bytes(), dir.path()))[0].clone();
        assert_eq!(turn["calls"], json!([]), "{args:?}");
        assert_eq!(turn["text"], input);
        assert_eq!(turn["problems"][0]["kind"], "truncated_call");
        assert_eq!(turn["problems"][0]["tool"], "write_file");
    }
}

#[test]
fn openai_sse_recording() {
    let dir = tempfile::tempdir().unwrap();
    let sse = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c9\",\"function\":{\"name\":\"echo\",\"arguments\":\"{\\\"text\\\":\"}}]}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"hi\\\"}\"}}]}}]}\n\ndata: [DONE]\n";
    for dialect in ["openai", "auto"] {
        let out = cli(&["parse", "--dialect", dialect], sse.as_bytes(), dir.path());
        assert!(out.status.success());
        assert_eq!(
            json_lines(&out)[0]["calls"][0],
            json!({"id": "c9", "name": "echo", "arguments": {"text": "hi"}})
        );
    }
}

#[test]
fn bad_input_exits_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [&[&str]; 4] = [
        &["parse", "--dialect", "klingon"],
        &["parse", "/no/such/file.txt"],
        &["parse", "--stream", "0"],
        &["parse", "--tools", "/no/such/tools"],
    ];
    for args in cases {
        let out = cli(args, b"x", dir.path());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("toolgate: "), "{err}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn invalid_utf8_is_replaced_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let out = cli(
        &["parse", "--stream", "1"],
        b"a\xFFb<tool_call><name>e</name></tool_call>",
        dir.path(),
    );
    assert!(out.status.success());
    let v = &json_lines(&out)[0];
    assert_eq!(v["text"], "a\u{FFFD}b");
    assert_eq!(v["calls"][0]["name"], "e");
}

#[test]
fn jsonl_streams_many_batches_in_order_with_a_line_longer_than_a_batch() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = Vec::new();
    for i in 0..6000 {
        let text = match i % 3 {
            0 => format!("line {i} <tool_call><name>n{i}</name></tool_call>"),
            1 => format!("plain {i} with \"quotes\" and \\ escapes"),
            _ => format!("<tool_call>{{\"name\": \"h{i}\", \"arguments\": {{}}}}</tool_call>"),
        };
        lines.push(json!({"text": text}).to_string());
        if i == 2500 {
            // Longer than a batch (1 MB): read on until it ends.
            let big = "x".repeat(3 << 20);
            lines.push(json!({"text": format!("<tool_call><name>big</name><params><v><![CDATA[{big}]]></v></params></tool_call>")}).to_string());
        }
        if i == 4000 {
            lines.push("not json".to_string());
        }
    }
    let input = lines.join("\n");
    // From a file (a pipe written whole before reading would fill up: the command
    // streams its output while it reads).
    std::fs::write(dir.path().join("in.jsonl"), &input).unwrap();
    let out = cli(&["parse", "--jsonl", "in.jsonl"], b"", dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let got = json_lines(&out);
    assert_eq!(got.len(), lines.len());
    let mut k = 0;
    for i in 0..6000 {
        let v = &got[k];
        match i % 3 {
            0 => assert_eq!(v["calls"][0]["name"], format!("n{i}"), "line {k}"),
            1 => assert_eq!(
                v["text"],
                format!("plain {i} with \"quotes\" and \\ escapes")
            ),
            _ => assert_eq!(v["calls"][0]["name"], format!("h{i}"), "line {k}"),
        }
        k += 1;
        if i == 2500 {
            assert_eq!(
                got[k]["calls"][0]["arguments"]["v"].as_str().unwrap().len(),
                3 << 20
            );
            k += 1;
        }
        if i == 4000 {
            assert_eq!(got[k]["line"], k + 1);
            k += 1;
        }
    }
}

/// Runs with `stdin` written by another thread while stdout is read (large inputs
/// would fill both pipes otherwise); a closed stdin (the command stopped reading) is
/// fine.
fn toolgate_streamed(args: &[&str], stdin: Vec<u8>, dir: &Path) -> Output {
    let (child, writer) = spawn_fed(args, stdin, dir);
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

/// The command started, and the thread writing `stdin` to it.
fn spawn_fed(
    args: &[&str],
    stdin: Vec<u8>,
    dir: &Path,
) -> (std::process::Child, std::thread::JoinHandle<()>) {
    let mut child = toolgate(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let written = pipe.write_all(&stdin);
        assert!(ok_or_broken_pipe(&written), "{written:?}");
    });
    (child, writer)
}

fn ok_or_broken_pipe(written: &std::io::Result<()>) -> bool {
    match written {
        Ok(()) => true,
        Err(e) => e.kind() == std::io::ErrorKind::BrokenPipe,
    }
}

/// `s` as a JSON string with every non-ASCII character as `\uXXXX` (surrogate pairs
/// beyond the BMP), as Python's `json.dumps` writes it.
fn ascii_json(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if c.is_ascii() && !c.is_ascii_control() => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
        }
    }
    out.push('"');
    out
}

#[test]
fn jsonl_output_is_byte_identical_to_the_single_input_path() {
    let dir = tempfile::tempdir().unwrap();
    let tools = common::tools_dir();
    let tools = tools.to_str().unwrap();
    let cases: Vec<_> = common::cases()
        .iter()
        .filter(|c| c.dialect.is_none() && !c.strict && c.input.len() < 4000)
        .step_by(5)
        .collect();
    assert!(cases.len() >= 20, "{}", cases.len());
    // Each text three ways: as serde_json writes it (read in place or unescaped), with
    // every non-ASCII character \u-escaped, and with a second field (serde_json's path).
    let mut input = String::new();
    for case in &cases {
        input.push_str(&json!({"text": case.input}).to_string());
        input.push('\n');
        input.push_str(&format!("{{ \"text\" : {} }}\r\n", ascii_json(&case.input)));
        input.push_str(&json!({"id": 1, "text": case.input}).to_string());
        input.push('\n');
    }
    let jsonl = toolgate_streamed(
        &["parse", "--tools", tools, "--jsonl"],
        input.clone().into_bytes(),
        dir.path(),
    );
    assert!(jsonl.status.success(), "{}", stderr(&jsonl));
    let got: Vec<&[u8]> = jsonl.stdout.split_inclusive(|&b| b == b'\n').collect();
    assert_eq!(got.len(), 3 * cases.len());
    for (i, case) in cases.iter().enumerate() {
        let single = cli(
            &["parse", "--tools", tools],
            case.input.as_bytes(),
            dir.path(),
        );
        assert!(single.status.success(), "{}", stderr(&single));
        for k in 0..3 {
            assert_eq!(
                String::from_utf8_lossy(got[3 * i + k]),
                String::from_utf8_lossy(&single.stdout),
                "case {} form {k}",
                case.name
            );
        }
    }
    // Fed to the parser in chunks, and pretty: the same results.
    let streamed = toolgate_streamed(
        &["parse", "--tools", tools, "--jsonl", "--stream", "7"],
        input.clone().into_bytes(),
        dir.path(),
    );
    assert_eq!(streamed.stdout, jsonl.stdout);
    let pretty = toolgate_streamed(
        &["parse", "--tools", tools, "--jsonl", "--pretty"],
        input.into_bytes(),
        dir.path(),
    );
    assert!(pretty.status.success());
    let first = cli(
        &["parse", "--tools", tools, "--pretty"],
        cases[0].input.as_bytes(),
        dir.path(),
    );
    assert!(pretty.stdout.starts_with(&first.stdout));
}

#[test]
fn jsonl_keeps_input_order_over_many_lines_and_counts_blank_lines() {
    let dir = tempfile::tempdir().unwrap();
    let mut input = String::new();
    let mut bad_line = 0;
    let mut line_no = 0;
    for i in 0..60_000 {
        // Lines of very different sizes, so batches end at different places.
        let pad = "p".repeat((i * 7919) % 3000);
        input.push_str(
            &json!({"text": format!("{pad}\n<tool_call><name>n{i}</name></tool_call>")})
                .to_string(),
        );
        input.push('\n');
        line_no += 1;
        if i % 1000 == 999 {
            input.push_str("\n  \t\r\n");
            line_no += 2;
        }
        if i == 45_000 {
            input.push_str("{\"text\": \"unterminated\n");
            line_no += 1;
            bad_line = line_no;
        }
    }
    assert!(input.len() > 80 << 20, "{}", input.len());
    let out = toolgate_streamed(&["parse", "--jsonl"], input.into_bytes(), dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "1 input line(s) could not be read, the first at line {bad_line}"
        )),
        "{}",
        stderr(&out)
    );
    let got = json_lines(&out);
    assert_eq!(got.len(), 60_001);
    for (i, v) in got[..=45_000].iter().chain(&got[45_002..]).enumerate() {
        assert_eq!(v["calls"][0]["name"], format!("n{i}"), "result {i}");
    }
    assert_eq!(got[45_001]["line"], bad_line);
    assert!(
        got[45_001]["error"]
            .as_str()
            .unwrap()
            .starts_with("not a JSON object: "),
        "{}",
        got[45_001]
    );
}

#[test]
fn jsonl_edge_lines_bom_crlf_no_final_newline_empty_input() {
    let dir = tempfile::tempdir().unwrap();
    let out = toolgate_streamed(&["parse", "--jsonl"], Vec::new(), dir.path());
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    let out = toolgate_streamed(&["parse", "--jsonl"], b"\n\n \r\n".to_vec(), dir.path());
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    let input = "\u{feff}{\"text\": \"first\"}\r\n\r\n{\"text\": \"\\u00e9t\\u00e9 \\ud83d\\ude00\"}\n{\"text\": \"last\"}";
    let out = toolgate_streamed(&["parse", "--jsonl"], input.as_bytes().to_vec(), dir.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let got = json_lines(&out);
    let texts: Vec<_> = got.iter().map(|v| v["text"].as_str().unwrap()).collect();
    assert_eq!(texts, ["first", "été 😀", "last"]);
    // Bad lines of every kind keep their place; nothing after them is lost.
    let input = "{\"text\": 1}\n{\"text\": \"\\ud800\"}\n{\"text\": \"a\u{1}b\"}\n[1]\n{\"text\": \"ok\"}\n";
    let out = toolgate_streamed(&["parse", "--jsonl"], input.as_bytes().to_vec(), dir.path());
    assert_eq!(out.status.code(), Some(2));
    let got = json_lines(&out);
    assert_eq!(got.len(), 5);
    for (i, v) in got[..4].iter().enumerate() {
        assert_eq!(v["line"], i + 1, "{v}");
        assert!(!v["error"].as_str().unwrap().is_empty());
    }
    assert_eq!(got[4]["text"], "ok");
}

#[test]
fn jsonl_reads_a_line_far_longer_than_a_batch_from_stdin() {
    let dir = tempfile::tempdir().unwrap();
    // 24 MB of code with escapes every few bytes, in a call, between short lines.
    let code = "fn main() {\n    println!(\"{}\", \"x\\\\y\");\n}\n".repeat(24 << 20 >> 6);
    let text = format!(
        "Writing.\n<tool_call><name>write_file</name><params><content><![CDATA[{code}]]></content></params></tool_call>"
    );
    let input = format!(
        "{}\n{}\n{}\n",
        json!({"text": "before"}),
        json!({ "text": text }),
        json!({"text": "after"})
    );
    let out = toolgate_streamed(&["parse", "--jsonl"], input.into_bytes(), dir.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let got = json_lines(&out);
    assert_eq!(got.len(), 3);
    assert_eq!(got[0]["text"], "before");
    assert_eq!(got[1]["calls"][0]["arguments"]["content"], code.as_str());
    assert_eq!(got[1]["text"], "Writing.\n");
    assert_eq!(got[2]["text"], "after");
}

#[test]
fn jsonl_stops_quietly_when_stdout_closes_mid_stream() {
    let dir = tempfile::tempdir().unwrap();
    let input: String = (0..200_000)
        .map(|i| {
            format!(
                "{}\n",
                json!({"text": format!("line {i} <tool_call><name>echo</name></tool_call>")})
            )
        })
        .collect();
    let (mut child, writer) = spawn_fed(&["parse", "--jsonl"], input.into_bytes(), dir.path());
    // Like `| head -1`: one line, then the reader goes away.
    let mut first = String::new();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    std::io::BufRead::read_line(&mut stdout, &mut first).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&first).unwrap()["text"],
        "line 0 "
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
}

/// The parser crate's own tests read the corpus tools' schemas from its schemas.json;
/// `toolgate parse --tools` loads the tool files themselves: the two must agree.
#[test]
fn corpus_schemas_json_is_what_the_tool_files_load_to() {
    let loaded =
        toolgate::tool::load_dir(&common::tools_dir(), &toolgate::tool::sources::standard())
            .unwrap();
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let want = loaded.schemas();
    let sorted: std::collections::BTreeMap<_, _> = want.iter().collect();
    assert_eq!(
        *common::schemas(),
        want,
        "crates/toolgate-parse/tests/corpus/schemas.json should read:\n{}",
        serde_json::to_string_pretty(&sorted).unwrap()
    );
}
