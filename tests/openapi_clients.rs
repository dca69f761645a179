//! The OpenAPI document against the tools people generate clients with (issue 31,
//! point 2): `openapi-spec-validator` validates `/openapi.json` as OpenAPI 3.1;
//! `openapi-python-client` generates a Python client that imports whole and drives a run
//! (start, approve, submit, get: tests/py/openapi_client_run.py); `openapi-typescript`
//! generates types that `tsc --strict` compiles with openapi-fetch into a client driving
//! the same run on Node 22 (tests/node/openapi_client_run.ts). The tools come from
//! tests/py/setup.sh and tests/node/setup.sh; these tests fail, never skip, without them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::serving;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use serving::Site;

const KEY: &str = "openapi-clients-key";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The served document, written to `dir/openapi.json`.
async fn document(server: &serving::Server, dir: &Path) -> (Value, PathBuf) {
    let (status, doc) = server.get("/openapi.json").await;
    assert_eq!(status, 200, "{doc}");
    let file = dir.join("openapi.json");
    std::fs::write(&file, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    (doc, file)
}

fn last_json(stdout: &str) -> Value {
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("the last line is not JSON ({e}): {stdout}"))
}

#[tokio::test]
async fn the_document_is_valid_openapi_3_1_and_a_generated_python_client_drives_a_run() {
    let python = serving::python("the generated-client tests");
    let site = Site::new();
    let server = site.serve(Some(KEY));
    let work = tempfile::tempdir().unwrap();
    let (doc, file) = document(&server, work.path()).await;
    assert_eq!(doc["openapi"], "3.1.0");

    let validator = python.with_file_name("openapi-spec-validator");
    serving::ran(
        "openapi-spec-validator",
        Command::new(&validator).arg(&file).output().unwrap(),
    );

    // post_hooks off: the formatter (ruff) is not what is tested.
    let config = work.path().join("generator.yaml");
    std::fs::write(&config, "post_hooks: []\n").unwrap();
    let generated = work.path().join("gen");
    std::fs::create_dir(&generated).unwrap();
    let package = generated.join("toolgate_client");
    let out = Command::new(python.with_file_name("openapi-python-client"))
        .args(["generate", "--meta", "none", "--overwrite", "--path"])
        .arg(&file)
        .arg("--output-path")
        .arg(&package)
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "openapi-python-client failed: {said}");
    // Nothing dropped: the generator warns about every schema it could not use.
    assert!(
        !said.contains("Unable to"),
        "openapi-python-client dropped parts: {said}"
    );

    // Every generated module imports.
    let import_all = "import importlib, pkgutil, sys\nsys.path.insert(0, sys.argv[1])\n\
        import toolgate_client\n\
        for m in pkgutil.walk_packages(toolgate_client.__path__, 'toolgate_client.'):\n    importlib.import_module(m.name)\n\
        print('imported')";
    serving::ran(
        "importing the generated client",
        Command::new(&python)
            .args(["-c", import_all])
            .arg(&generated)
            .output()
            .unwrap(),
    );

    let stdout = serving::ran(
        "tests/py/openapi_client_run.py",
        Command::new(&python)
            .arg(root().join("tests/py/openapi_client_run.py"))
            .arg(&generated)
            .arg(&server.base)
            .arg(KEY)
            .output()
            .unwrap(),
    );
    let result = last_json(&stdout);
    assert_eq!(result["status"], "completed", "{result}");
    let (_, run) = server
        .get(&format!("/v1/runs/{}", result["run"].as_str().unwrap()))
        .await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(
        std::fs::read_to_string(site.path().join("ws/result.txt")).unwrap(),
        "14\n"
    );
}

#[tokio::test]
async fn openapi_typescript_types_compile_strict_and_drive_a_run() {
    let tools = serving::node_tools("the generated-client tests");
    let modules = tools.join("node_modules");
    let node = modules.join("node/bin/node");
    let site = Site::new();
    let server = site.serve(Some(KEY));
    let work = tempfile::tempdir().unwrap();
    let (doc, file) = document(&server, work.path()).await;

    let types = work.path().join("api.d.ts");
    serving::ran(
        "openapi-typescript",
        Command::new(&node)
            .arg(modules.join("openapi-typescript/bin/cli.js"))
            .arg(&file)
            .arg("-o")
            .arg(&types)
            .output()
            .unwrap(),
    );
    let typed = std::fs::read_to_string(&types).unwrap();
    // Free-form objects are maps, not `Record<string, never>` (the response metadata).
    let metadata = typed
        .lines()
        .find(|l| l.trim_start().starts_with("metadata:"))
        .expect("ResponseObject.metadata is typed");
    assert!(!metadata.contains("never"), "{metadata}");
    assert!(
        doc["components"]["schemas"]["JsonObject"]["additionalProperties"] == true,
        "{}",
        doc["components"]["schemas"]["JsonObject"]
    );

    std::fs::copy(
        root().join("tests/node/openapi_client_run.ts"),
        work.path().join("openapi_client_run.ts"),
    )
    .unwrap();
    std::fs::write(
        work.path().join("package.json"),
        r#"{"name": "openapi-client-run", "private": true, "type": "module"}"#,
    )
    .unwrap();
    std::os::unix::fs::symlink(&modules, work.path().join("node_modules")).unwrap();
    std::fs::write(
        work.path().join("tsconfig.json"),
        r#"{"compilerOptions": {"strict": true, "noUncheckedIndexedAccess": true,
            "target": "es2022", "module": "nodenext", "moduleResolution": "nodenext",
            "types": ["node"], "skipLibCheck": true, "outDir": "out"},
            "files": ["openapi_client_run.ts", "api.d.ts"]}"#,
    )
    .unwrap();
    serving::ran(
        "tsc --strict",
        Command::new(&node)
            .arg(modules.join("typescript/bin/tsc"))
            .arg("-p")
            .arg(work.path())
            .current_dir(work.path())
            .output()
            .unwrap(),
    );
    let stdout = serving::ran(
        "the compiled TypeScript client",
        Command::new(&node)
            .arg(work.path().join("out/openapi_client_run.js"))
            .arg(&server.base)
            .arg(KEY)
            .current_dir(work.path())
            .output()
            .unwrap(),
    );
    let result = last_json(&stdout);
    assert_eq!(result["status"], "completed", "{result}");
}
