//! `web_fetch` end to end (issue 44, item 2): an agent run with the scripted model
//! fetches from a local HTTP server an HTML article (Markdown: main content, links
//! absolute, scripts and navigation gone), a PDF the test writes (its text), JSON (as
//! JSON), a PNG (an image part, kept in the record as a reference), a 302 to 127.0.0.1
//! and one to the cloud metadata address (refused before connecting, the target never
//! asked), a response over `TOOLGATE_FETCH_MAX_BYTES` (HTML cut with a note, a PDF
//! refused), a slow one (the call's timeout), and a type it does not read.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::launching;

/// The bytes a response may have in these runs.
const CAP: usize = 64 * 1024;

const ARTICLE: &str = r#"<!doctype html><html><head><title>Otters | Zoo</title>
<script>window.track = "SCRIPT-MARK";</script></head>
<body><nav><a href="/home">Home</a> <a href="/shop">NAV-MARK shop</a></nav>
<article><h1>Otters</h1>
<p>Sea otters hold hands while they sleep so that they do not drift apart. They live
in the northern Pacific and eat sea urchins, crabs and clams, which they open with
stones they keep in a pouch of skin under their forelegs.</p>
<p>Read the <a href="/care/otters">care guide</a> for more about their habits, their
dens, their young and the long days they spend grooming their thick fur coats, which
hold more hairs per square centimetre than any other animal's.</p>
<h2>Diet</h2><ul><li>Urchins</li><li>Crabs</li></ul></article>
<footer>FOOTER-MARK copyright</footer></body></html>"#;

/// A one-page PDF showing `lines` in Helvetica, written object by object with its
/// cross-reference table (what any PDF writer produces for a page of text).
pub fn pdf(lines: &[&str]) -> Vec<u8> {
    let mut ops = String::from("BT /F1 12 Tf 72 720 Td");
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            ops.push_str(" 0 -16 Td");
        }
        ops.push_str(&format!(" ({line}) Tj"));
    }
    ops.push_str(" ET");
    let objects = [
        "<< /Type /Catalog /Pages 2 0 R >>".to_string(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_string(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>".to_string(),
        format!("<< /Length {} >>\nstream\n{ops}\nendstream", ops.len()),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
            .to_string(),
    ];
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend(format!("{} 0 obj\n{body}\nendobj\n", i + 1).bytes());
    }
    let xref = out.len();
    out.extend(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).bytes());
    for at in offsets {
        out.extend(format!("{at:010} 00000 n \n").bytes());
    }
    out.extend(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .bytes(),
    );
    out
}

/// A small PNG: its signature and arbitrary bytes (no model decodes it here).
fn png() -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    bytes.extend(0..120u8);
    bytes
}

async fn mount(server: &MockServer, at: &str, response: ResponseTemplate) {
    Mock::given(method("GET"))
        .and(path(at))
        .respond_with(response)
        .mount(server)
        .await;
}

fn typed(body: impl Into<Vec<u8>>, media: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body.into(), media)
}

/// The local site every row fetches from.
async fn site() -> MockServer {
    let server = MockServer::start().await;
    let port = server.address().port();
    let big_page = format!(
        "<html><body><main><p>{}</p><p>TAIL-MARK</p></main></body></html>",
        "otters swim. ".repeat(CAP / 8)
    );
    let redirect = |to: String| ResponseTemplate::new(302).insert_header("Location", to);
    let routes: Vec<(&str, ResponseTemplate)> = vec![
        ("/otters", typed(ARTICLE, "text/html; charset=utf-8")),
        (
            "/paper.pdf",
            typed(
                pdf(&["Quarterly otter census", "Total otters counted: 4217"]),
                "application/pdf",
            ),
        ),
        (
            "/data",
            typed(
                r#"{"species": "sea otter", "count": 4217}"#,
                "application/json",
            ),
        ),
        ("/logo.png", typed(png(), "image/png")),
        (
            "/moved",
            redirect(format!("http://127.0.0.1:{port}/secret")),
        ),
        (
            "/metadata",
            redirect("http://169.254.169.254/latest/meta-data/".into()),
        ),
        ("/secret", typed("SECRET-MARK", "text/plain")),
        ("/big", typed(big_page, "text/html")),
        ("/big.pdf", typed(vec![b'%'; CAP * 2], "application/pdf")),
        (
            "/slow",
            typed("late", "text/plain").set_delay(Duration::from_secs(10)),
        ),
        (
            "/archive.zip",
            typed(b"PK\x03\x04zip".to_vec(), "application/zip"),
        ),
        (
            "/gone",
            ResponseTemplate::new(404).set_body_raw(
                "<html><body><p>No such otter.</p></body></html>",
                "text/html",
            ),
        ),
    ];
    for (at, response) in routes {
        mount(&server, at, response).await;
    }
    server
}

/// Runs an agent whose scripted model fetches each `(call id, arguments)` in one turn,
/// then answers; returns each call's record by id.
fn run_fetches(dir: &Path, port: u16, calls: &[(&str, Value)]) -> HashMap<String, Value> {
    let tool_calls: Vec<Value> = calls
        .iter()
        .map(|(id, args)| json!({"id": id, "name": "web_fetch", "arguments": args}))
        .collect();
    let replies = json!({"replies": [
        {"content": "Fetching.", "tool_calls": tool_calls},
        {"content": "Read them all."}
    ]});
    std::fs::write(dir.join("replies.json"), replies.to_string()).unwrap();
    std::fs::write(
        dir.join("agent.yaml"),
        "name: reader\nmodel: scripted:replies.json\ntools: [web_fetch]\n",
    )
    .unwrap();
    let mut cmd = launching::command(
        &["run", "--agent", "agent.yaml", "--json", "Read these"],
        dir,
        "0",
    );
    // The site is on loopback: only its own host name and port are opened, so the
    // redirects to 127.0.0.1 and 169.254.169.254 meet the rule.
    cmd.env("TOOLGATE_HTTP_ALLOW", format!("localhost:{port}"))
        .env("TOOLGATE_FETCH_MAX_BYTES", CAP.to_string());
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", launching::stderr(&out));
    let calls = launching::output(&["calls", "--json"], dir);
    let page: Value = serde_json::from_slice(&calls.stdout).unwrap();
    page["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["call_id"].as_str().unwrap().to_string(), c.clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn fetches_read_each_kind_and_the_network_rule_holds() {
    let server = site().await;
    let port = server.address().port();
    let url = |p: &str| format!("http://localhost:{port}{p}");
    let dir = tempfile::tempdir().unwrap();
    let calls = [
        ("html", json!({"url": url("/otters")})),
        ("pdf", json!({"url": url("/paper.pdf")})),
        ("json", json!({"url": url("/data")})),
        ("png", json!({"url": url("/logo.png")})),
        ("moved", json!({"url": url("/moved")})),
        ("metadata", json!({"url": url("/metadata")})),
        ("big", json!({"url": url("/big"), "max_chars": 200000})),
        ("big_pdf", json!({"url": url("/big.pdf")})),
        ("slow", json!({"url": url("/slow"), "timeout": 1})),
        ("zip", json!({"url": url("/archive.zip")})),
        ("gone", json!({"url": url("/gone")})),
        (
            "window",
            json!({"url": url("/otters"), "max_chars": 100, "start": 10}),
        ),
    ];
    let records = tokio::task::spawn_blocking({
        let dir = dir.path().to_path_buf();
        move || run_fetches(&dir, port, &calls)
    })
    .await
    .unwrap();
    let result = |id: &str| -> String {
        // What the model read: the output, or the error.
        let r = &records[id];
        r["result"]
            .as_str()
            .or(r["error_message"].as_str())
            .unwrap_or_default()
            .to_string()
    };
    let status = |id: &str| records[id]["status"].as_str().unwrap().to_string();
    let kind = |id: &str| records[id]["error_kind"].as_str().unwrap_or("").to_string();

    // HTML: the article as Markdown, links absolute, the page's chrome gone.
    let html = result("html");
    assert_eq!(status("html"), "succeeded", "{html}");
    assert!(html.contains("Title: Otters | Zoo"), "{html}");
    assert!(html.contains("hold hands while they sleep"), "{html}");
    assert!(
        html.contains(&format!(
            "[care guide](http://localhost:{port}/care/otters)"
        )),
        "{html}"
    );
    assert!(html.contains("## Diet"), "{html}");
    for mark in ["SCRIPT-MARK", "NAV-MARK", "FOOTER-MARK"] {
        assert!(!html.contains(mark), "{mark}: {html}");
    }

    // PDF: its text.
    let pdf = result("pdf");
    assert_eq!(status("pdf"), "succeeded", "{pdf}");
    assert!(pdf.contains("Quarterly otter census"), "{pdf}");
    assert!(pdf.contains("Total otters counted: 4217"), "{pdf}");

    // JSON as JSON.
    let data: Value = serde_json::from_str(&result("json")).unwrap();
    assert_eq!(data, json!({"species": "sea otter", "count": 4217}));

    // The image: a part the model gets; the record keeps a reference, not the data.
    let png = result("png");
    assert_eq!(status("png"), "succeeded", "{png}");
    assert!(
        png.contains("[image image/png, 128 bytes, sha256:"),
        "{png}"
    );

    // Redirects to internal addresses: refused, and the target never asked.
    for id in ["moved", "metadata"] {
        assert_eq!(kind(id), "blocked_address", "{id}: {}", result(id));
    }
    assert!(result("moved").contains("127.0.0.1"), "{}", result("moved"));
    assert!(
        result("metadata").contains("169.254.169.254"),
        "{}",
        result("metadata")
    );
    let asked: Vec<String> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| r.url.path().to_string())
        .collect();
    assert!(!asked.contains(&"/secret".to_string()), "{asked:?}");

    // Over the cap: HTML is cut and says so; a PDF cut short is refused.
    let big = result("big");
    assert_eq!(status("big"), "succeeded", "{}", &big[..200]);
    assert!(
        big.contains(&format!("larger than {CAP} bytes")),
        "{}",
        &big[big.len() - 300..]
    );
    assert!(!big.contains("TAIL-MARK"));
    assert!(
        result("big_pdf").contains("larger than web_fetch reads"),
        "{}",
        result("big_pdf")
    );

    // Slow: the call's own timeout.
    assert_eq!(kind("slow"), "timeout", "{}", result("slow"));

    // A type it does not read, and an error status with the page's words.
    assert!(
        result("zip").contains("application/zip"),
        "{}",
        result("zip")
    );
    assert_eq!(status("gone"), "failed", "{}", result("gone"));
    assert!(result("gone").contains("HTTP 404"), "{}", result("gone"));
    assert!(
        result("gone").contains("No such otter."),
        "{}",
        result("gone")
    );

    // A window of the text, and where the rest is.
    let window = result("window");
    assert!(window.contains("[characters 10 to 110 of "), "{window}");
    assert!(window.contains("call again with start: 110"), "{window}");
}
