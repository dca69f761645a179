//! The Responses endpoint against the official OpenAI Node SDK (npm `openai` 7.x) on
//! Node 22 (npm `node@22`, from tests/node/setup.sh; this test fails, never skips,
//! without it): every field the SDK's `Response` type requires, the strict stream
//! accumulator, `retrieve` with `stream: true`, `cancel`, `delete` and a declared
//! function tool answered with `function_call_output`
//! (tests/node/responses_sdk.mjs), against `toolgate serve` on the agents of
//! tests/fixtures/responses/.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::serving;

use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::Value;

const KEY: &str = "node-sdk-key";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_openai_node_sdk_creates_streams_retrieves_cancels_and_deletes() {
    let tools = serving::node_tools("the Node SDK test");
    let modules = tools.join("node_modules");

    let dir = tempfile::tempdir().unwrap();
    let fixtures = root().join("tests/fixtures/responses");
    let mut cmd = Command::new(serving::bin());
    cmd.args(["serve", "--addr", "127.0.0.1:0", "--agents"])
        .arg(fixtures.join("agents"))
        .arg("--tools")
        .arg(fixtures.join("tools"))
        .arg("--db")
        .arg(dir.path().join("toolgate.db"))
        .arg("--workspace")
        .arg(dir.path().join("ws"))
        .env("TOOLGATE_API_KEY", KEY)
        .env_remove("TOOLGATE_DB")
        .stderr(Stdio::inherit());
    let (mut child, base) = serving::listen(&mut cmd);

    // The script imports `openai` from the installed node_modules.
    let script = tools.join("responses_sdk.mjs");
    std::fs::copy(root().join("tests/node/responses_sdk.mjs"), &script).unwrap();
    let run = Command::new(modules.join("node/bin/node"))
        .arg(&script)
        .arg(format!("{base}/v1"))
        .arg(KEY)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "tests/node/responses_sdk.mjs failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let result: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"));
    assert!(result["streamed"].as_u64().unwrap() > 2, "{result}");
    assert_eq!(result["function_call"], "call_weather", "{result}");
    assert!(
        !dir.path().join("ws/approved.txt").exists(),
        "nothing ran after the cancel"
    );
}
