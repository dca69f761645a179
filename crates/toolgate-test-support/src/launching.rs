//! The binary run the way a person runs it in a shell, for the cross-process tests: a
//! confirm `launch` command tool that notes each call it runs, the command builder,
//! and small readers of what a command left behind.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A confirm command tool that notes each call in launches.log, then takes
/// LAUNCH_SLEEP seconds.
pub const LAUNCH: &str = r#"name: launch
description: Launch something (noted in launches.log).
permission: confirm
parameters:
  - {name: target, type: string, required: true}
entry:
  type: command
  command: sh
  args: ["-c", "echo \"$TOOLGATE_CALL_ID\" >> launches.log; sleep ${LAUNCH_SLEEP:-0}; echo launched"]
  # The sandbox passes no variable the tool does not declare.
  env: {LAUNCH_SLEEP: "${LAUNCH_SLEEP:-0}"}
timeout: 120
"#;

/// A temporary folder with `tools/` holding `files` (name, content).
pub fn with_tools(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("tools")).unwrap();
    for (name, content) in files {
        std::fs::write(dir.path().join("tools").join(name), content).unwrap();
    }
    dir
}

/// `toolgate ARGS` in `dir`, with no inherited database, tools folder or API key, and
/// `launch` taking `sleep` seconds.
pub fn command(args: &[&str], dir: &Path, sleep: &str) -> Command {
    let mut cmd = crate::toolgate(dir);
    cmd.args(args).env("LAUNCH_SLEEP", sleep);
    cmd
}

/// Runs `toolgate ARGS` in `dir` to its end.
pub fn output(args: &[&str], dir: &Path) -> Output {
    command(args, dir, "0").output().unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The call ids `launch` ran with, in order.
pub fn launches(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("launches.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Polls `f` until it holds; fails the test after 30 s naming `what`.
pub fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `cmd` to its end with `stdin` written to it (an empty stdin without), stdout and
/// stderr captured.
pub fn feed(mut cmd: Command, stdin: Option<&str>) -> Output {
    use std::io::Write;
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    if let Some(text) = stdin {
        input.write_all(text.as_bytes()).unwrap();
    }
    drop(input);
    child.wait_with_output().unwrap()
}

/// stdout then stderr, as one text.
pub fn all(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}
