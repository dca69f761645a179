//! Binary results become files and images (issue 45, item 4). A real FastAPI app
//! (tests/py/media_api.py) answers a PNG and a PDF through its own OpenAPI document; an
//! agent calls both through `/v1/responses`, driven by the official `openai` Python
//! package (tests/py/test_file_results.py): the PNG reaches the model as an image, the
//! PDF is saved in the tenant's workspace, shown to the model as a file it can read,
//! listed on the run object, cited on the response's message, served by
//! `GET /v1/files/{id}` with its content type, and a 404 to another tenant.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use toolgate_test_support::serving::identity::keys_create;
use toolgate_test_support::serving::{Server, Site, python, ran};

/// The media API on a free port; killed when dropped.
struct Api {
    child: Child,
    port: u16,
}

impl Drop for Api {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn script(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/py")
        .join(name)
}

async fn start_api(python: &Path) -> (Api, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(python)
        .arg(script("media_api.py"))
        .arg(port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let api = Api { child, port };
    let start = Instant::now();
    let url = format!("http://127.0.0.1:{port}/openapi.json");
    loop {
        if let Ok(resp) = reqwest::get(&url).await
            && resp.status().is_success()
        {
            return (api, resp.text().await.unwrap());
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the API did not start"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A site whose agent `media` calls both operations in one turn, then answers.
fn site(document: &str, port: u16) -> Site {
    let site = Site::new();
    let root = site.path();
    std::fs::write(root.join("tools/media.json"), document).unwrap();
    std::fs::write(
        root.join("tools/media.yaml"),
        format!("openapi: media.json\nname: media\nbase_url: http://127.0.0.1:{port}\n"),
    )
    .unwrap();
    site.agent(
        "media",
        "[media__getPhoto, media__getCard]",
        "  - content: Fetching.\n    tool_calls:\n      - {id: call_photo, name: media__getPhoto, arguments: {pet_id: 1}}\n      - {id: call_card, name: media__getCard, arguments: {pet_id: 1}}\n  - content: Here are the photo and the card.\n",
    );
    site
}

#[tokio::test(flavor = "multi_thread")]
async fn binary_results_become_images_and_files_a_client_fetches() {
    let python = python("tests/file_results.rs");
    let (api, document) = start_api(&python).await;
    let site = site(&document, api.port);
    let acme = keys_create(&site, "acme", "acme-client", "client", "");
    let globex = keys_create(&site, "globex", "globex-client", "client", "");
    let admin = "admin-key-4d1c0b";
    let server = Server::start_env(
        &site,
        Some(admin),
        &[],
        &[("TOOLGATE_HTTP_ALLOW", "127.0.0.1")],
    );
    let card = site.path().join("card-1.pdf");
    let printed = Command::new(&python)
        .arg(script("media_api.py"))
        .args(["--print-card", "1"])
        .output()
        .unwrap();
    assert!(printed.status.success(), "{printed:?}");
    std::fs::write(&card, &printed.stdout).unwrap();

    let out = Command::new(&python)
        .arg(script("test_file_results.py"))
        .env("TOOLGATE_BASE_URL", server.url("/v1"))
        .env("ACME_KEY", &acme)
        .env("GLOBEX_KEY", &globex)
        .env("CARD_FILE", &card)
        .output()
        .unwrap();
    let stdout = ran("test_file_results.py", out);
    let ids: Value = serde_json::from_str(stdout.trim().lines().last().unwrap()).unwrap();
    let (run_id, file_id) = (
        ids["run_id"].as_str().unwrap(),
        ids["file_id"].as_str().unwrap(),
    );

    // The run object lists the file; it lies in acme's workspace, as its bytes.
    let run: Value = server
        .client
        .get(server.url(&format!("/v1/runs/{run_id}")))
        .bearer_auth(&acme)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let files = run["files"].as_array().unwrap();
    assert_eq!(files.len(), 1, "{run}");
    assert_eq!(files[0]["id"], file_id);
    assert_eq!(files[0]["mime"], "application/pdf");
    assert_eq!(files[0]["tool"], "media__getCard");
    assert_eq!(files[0]["call_id"], "call_card");
    let saved = site
        .path()
        .join("ws/tenants/acme")
        .join(files[0]["path"].as_str().unwrap());
    assert_eq!(std::fs::read(saved).unwrap(), std::fs::read(&card).unwrap());
    assert_eq!(files[0]["bytes"], std::fs::metadata(&card).unwrap().len());

    // The photo's record keeps a reference to the image, not its data; the card's
    // record carries the file part.
    let calls: Value = server
        .client
        .get(server.url(&format!("/v1/calls?run_id={run_id}")))
        .bearer_auth(&acme)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let text = calls.to_string();
    assert!(
        text.contains("[image image/png, 70 bytes, sha256:"),
        "{text}"
    );
    assert!(text.contains(file_id), "{text}");

    // GET /v1/files/{id} itself: the bytes with their type; another tenant: 404.
    let got = server
        .client
        .get(server.url(&format!("/v1/files/{file_id}")))
        .bearer_auth(&acme)
        .send()
        .await
        .unwrap();
    assert_eq!(got.status().as_u16(), 200);
    assert_eq!(got.headers()["content-type"], "application/pdf");
    assert_eq!(
        got.bytes().await.unwrap().as_ref(),
        std::fs::read(&card).unwrap()
    );
    let walled = server
        .client
        .get(server.url(&format!("/v1/files/{file_id}")))
        .bearer_auth(&globex)
        .send()
        .await
        .unwrap();
    assert_eq!(walled.status().as_u16(), 404);
}

/// The server-everything entry point, installed by tests/mcp/setup.sh.
fn everything() -> std::path::PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(root.join("tests/mcp/setup.sh"))
        .stderr(Stdio::inherit())
        .output()
        .expect("cannot run tests/mcp/setup.sh");
    assert!(out.status.success(), "tests/mcp/setup.sh failed");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("everything="))
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| panic!("tests/mcp/setup.sh printed no everything=: {text}"))
}

#[test]
fn an_mcp_blob_resource_is_decoded_by_its_kind() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("tools")).unwrap();
    std::fs::write(
        dir.path().join("tools/mcp.json"),
        serde_json::json!({"mcpServers": {"everything": {"command": "node", "args": [everything()]}}})
            .to_string(),
    )
    .unwrap();
    let args = r#"{"resourceType": "Blob", "resourceId": 2}"#;
    let out = crate::launching::output(
        &[
            "tools",
            "call",
            "everything__get-resource-reference",
            "--args",
            args,
            "--json",
        ],
        dir.path(),
    );
    let r: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", crate::launching::stderr(&out)));
    // The blob (base64, typed text/plain) arrives as its text, not as a bare link.
    let parts = r["output"]["parts"].as_array().unwrap();
    assert!(
        parts.iter().any(|p| p["type"] == "text"
            && p["text"]
                .as_str()
                .unwrap()
                .starts_with("Resource 2: This is a base64 blob created at")),
        "{r}"
    );
}
