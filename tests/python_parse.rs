//! The parser's Python package (crates/toolgate-parse-py): its project script builds the
//! abi3 wheel with maturin from PyPI, installs it into the project's venv and runs its
//! pytest suite: the Rust corpus cases, whole equals streamed for random splits, the API,
//! the stubs, and `to_dict()` against this binary's `toolgate parse`.

use std::process::Command;

#[test]
fn python_package_builds_and_passes_its_tests() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let script = root.join("crates/toolgate-parse-py/tests/run.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg("-rs")
        .env("TOOLGATE_BIN", toolgate_test_support::bin())
        .output()
        .expect("bash must be there to run the Python package's script");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{} failed ({}):\n{stdout}\n{stderr}",
        script.display(),
        out.status
    );
    // Every test ran: nothing skipped, and the corpus was found (hundreds of cases).
    let summary = stdout.lines().last().unwrap_or_default();
    assert!(!summary.contains("skipped"), "{stdout}");
    let passed: usize = summary
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no pytest summary line:\n{stdout}"));
    assert!(
        passed >= 160,
        "only {passed} Python tests passed:\n{stdout}"
    );
    assert!(
        stderr.contains("abi3"),
        "the wheel built is not abi3:\n{stderr}"
    );
}
