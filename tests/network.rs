//! The network rule of HTTP tools (issue 11, item 6): loopback, private, link-local
//! and the other non-public ranges are refused by default, in every spelling, before
//! any connection, on every redirect hop; a host name is resolved once and the
//! request goes to that address; the allow-list (tool file or `TOOLGATE_HTTP_ALLOW`)
//! opens what local development needs; retries on 429/5xx follow the tool file.
//!
//! Every request these tests send goes to a loopback address: the refused cases are
//! checked before any connection, and the servers they name are asserted untouched.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use toolgate::tool::http::{self, Request, Retry};
use toolgate::tool::net::{AllowList, Resolve, blocked_range, check};
use toolgate::tool::{ToolContext, ToolError, ToolLibrary, ToolOutput, workspace};
use wiremock::matchers::{body_json, header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn args(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

/// A library holding one tool file written from `yaml`.
fn library_with(yaml: &str) -> (tempfile::TempDir, ToolLibrary) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tool.yaml"), yaml).unwrap();
    let lib = ToolLibrary::load(dir.path(), &toolgate::tool::sources::standard()).unwrap();
    assert!(lib.errors().is_empty(), "{:?}", lib.errors());
    (dir, lib)
}

async fn call(lib: &ToolLibrary, name: &str, a: Value) -> Result<ToolOutput, ToolError> {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(workspace::canonical_root(dir.path()).unwrap());
    lib.get(name).unwrap().invoke(&ctx, args(a)).await
}

/// An `http` tool named `t` for `url`, with more entry keys in `extra` (YAML flow).
fn http_tool(url: &str, extra: &str) -> (tempfile::TempDir, ToolLibrary) {
    library_with(&format!(
        "name: t\ndescription: x\nentry: {{type: http, url: \"{url}\"{extra}}}\n"
    ))
}

async fn requests(server: &MockServer) -> usize {
    server.received_requests().await.unwrap().len()
}

/// A resolver that answers from a table and counts its lookups; anything else is an
/// error (no test ever asks the system's DNS).
#[derive(Default)]
struct Table {
    answers: Mutex<Vec<(String, Vec<IpAddr>)>>,
    lookups: AtomicUsize,
}

impl Table {
    fn with(entries: &[(&str, &[&str])]) -> Self {
        let t = Table::default();
        for (name, addrs) in entries {
            t.answers.lock().unwrap().push((
                name.to_string(),
                addrs.iter().map(|a| a.parse().unwrap()).collect(),
            ));
        }
        t
    }
}

#[async_trait]
impl Resolve for Table {
    /// The first entry for `host` answers, and is used up when another follows it
    /// (so a second lookup of a name can get a different answer).
    async fn lookup(&self, host: &str, port: u16) -> std::io::Result<Vec<SocketAddr>> {
        self.lookups.fetch_add(1, Ordering::SeqCst);
        let mut answers = self.answers.lock().unwrap();
        let found: Vec<usize> = (0..answers.len())
            .filter(|&i| answers[i].0 == host)
            .collect();
        let Some(&first) = found.first() else {
            return Err(std::io::Error::other(format!("no such host {host}")));
        };
        let addrs = answers[first].1.clone();
        if found.len() > 1 {
            answers.remove(first);
        }
        Ok(addrs
            .into_iter()
            .map(|ip| SocketAddr::new(ip, port))
            .collect())
    }
}

// --- the rule, on addresses and URLs, with no connection at all ---------------------

#[test]
fn every_non_public_range_is_refused_and_public_ones_pass() {
    let rows: &[(&str, Option<&str>)] = &[
        ("127.0.0.1", Some("loopback")),
        ("127.255.255.254", Some("loopback")),
        ("10.0.0.1", Some("private")),
        ("172.16.0.1", Some("private")),
        ("172.31.255.255", Some("private")),
        ("192.168.1.1", Some("private")),
        ("169.254.169.254", Some("link-local")),
        ("169.254.0.1", Some("link-local")),
        ("0.0.0.0", Some("unspecified")),
        ("0.1.2.3", Some("this-network")),
        ("100.64.0.1", Some("shared address space")),
        ("100.127.255.255", Some("shared address space")),
        ("255.255.255.255", Some("broadcast")),
        ("224.0.0.1", Some("multicast")),
        ("239.255.255.250", Some("multicast")),
        ("240.0.0.1", Some("reserved")),
        ("192.0.0.8", Some("reserved")),
        ("198.18.0.1", Some("benchmarking")),
        ("::1", Some("loopback")),
        ("::", Some("unspecified")),
        ("fc00::1", Some("private")),
        ("fd12:3456:789a::1", Some("private")),
        ("fe80::1", Some("link-local")),
        ("febf:ffff::1", Some("link-local")),
        ("fec0::1", Some("site-local")),
        ("ff02::1", Some("multicast")),
        ("::ffff:127.0.0.1", Some("loopback")),
        ("::ffff:169.254.169.254", Some("link-local")),
        ("::ffff:10.0.0.1", Some("private")),
        ("::ffff:100.64.0.1", Some("shared address space")),
        ("::ffff:0:127.0.0.1", Some("loopback")),
        ("::127.0.0.1", Some("reserved")),
        ("64:ff9b::7f00:1", Some("loopback")),
        ("64:ff9b::a9fe:a9fe", Some("link-local")),
        ("2002:7f00:1::1", Some("loopback")),
        ("2002:c0a8:101::1", Some("private")),
        ("100::1", Some("discard-only")),
        // Public: passes.
        ("8.8.8.8", None),
        ("93.184.216.34", None),
        ("172.32.0.1", None),
        ("100.128.0.1", None),
        ("169.255.0.1", None),
        ("::ffff:8.8.8.8", None),
        ("64:ff9b::808:808", None),
        ("2002:808:808::1", None),
        ("2606:4700:4700::1111", None),
    ];
    let wrong: Vec<String> = rows
        .iter()
        .filter_map(|(addr, want)| {
            let got = blocked_range(addr.parse().unwrap());
            let ok = match (got, want) {
                (Some(g), Some(w)) => g.starts_with(w),
                (None, None) => true,
                _ => false,
            };
            (!ok).then(|| format!("{addr}: got {got:?}, want {want:?}"))
        })
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[tokio::test]
async fn every_spelling_of_a_refused_address_is_refused_before_connecting() {
    // `localhost` is answered by the table: these checks ask no DNS at all.
    let resolver = Table::with(&[
        ("localhost", &["127.0.0.1"]),
        ("localhost.", &["127.0.0.1"]),
    ]);
    let rows = [
        ("http://127.0.0.1:9/", "127.0.0.1"),
        ("http://127.1:9/", "127.0.0.1"),
        ("http://0x7f.1:9/", "127.0.0.1"),
        ("http://[::1]:9/", "::1"),
        ("http://localhost:9/", "127.0.0.1"),
        ("http://2130706433:9/", "127.0.0.1"),
        ("http://0177.0.0.1/", "127.0.0.1"),
        ("http://LOCALHOST./", "127.0.0.1"),
        ("http://[::ffff:127.0.0.1]/", "::ffff:127.0.0.1"),
        ("http://[::ffff:7f00:1]/", "::ffff:127.0.0.1"),
        (
            "http://169.254.169.254/latest/meta-data/",
            "169.254.169.254",
        ),
        ("http://[fe80::1]/", "fe80::1"),
        ("http://0.0.0.0:8080/", "0.0.0.0"),
        ("http://0/", "0.0.0.0"),
        ("http://10.0.0.1/", "10.0.0.1"),
        ("http://192.168.0.1/", "192.168.0.1"),
        ("http://100.64.0.1/", "100.64.0.1"),
        ("https://[fd00::1]/", "fd00::1"),
    ];
    let mut wrong = Vec::new();
    for (url, address) in rows {
        let parsed = http::parse_url(url).unwrap();
        match check(&parsed, &AllowList::default(), &resolver).await {
            Err(e @ ToolError::BlockedAddress { .. }) => {
                let text = e.to_string();
                if e.kind() != "blocked_address"
                    || !text.contains(address)
                    || !text.contains("TOOLGATE_HTTP_ALLOW")
                    || !text.contains("allow_hosts")
                {
                    wrong.push(format!("{url}: {text}"));
                }
            }
            other => wrong.push(format!("{url}: not refused: {other:?}")),
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    // A public address passes the check (nothing is sent to it here).
    let public = http::parse_url("http://93.184.216.34/").unwrap();
    assert_eq!(
        check(&public, &AllowList::default(), &resolver)
            .await
            .unwrap(),
        vec!["93.184.216.34:80".parse::<SocketAddr>().unwrap()]
    );
}

#[tokio::test]
async fn a_name_that_resolves_to_public_and_refused_addresses_keeps_only_the_public_ones() {
    let resolver = Table::with(&[("mixed.test", &["10.0.0.5", "93.184.216.34", "::1"])]);
    let url = http::parse_url("https://mixed.test/").unwrap();
    let passed = check(&url, &AllowList::default(), &resolver).await.unwrap();
    assert_eq!(
        passed,
        vec!["93.184.216.34:443".parse::<SocketAddr>().unwrap()]
    );
    let err = check(
        &http::parse_url("http://inside.test/").unwrap(),
        &AllowList::default(),
        &Table::with(&[("inside.test", &["169.254.169.254"])]),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), "blocked_address");
    assert!(err.to_string().contains("inside.test"), "{err}");
    assert!(err.to_string().contains("169.254.169.254"), "{err}");
    assert!(err.to_string().contains("link-local"), "{err}");
}

#[tokio::test]
async fn allow_list_entries_open_exactly_what_they_name() {
    let resolver = Table::with(&[
        ("localhost", &["127.0.0.1"]),
        ("db.internal", &["10.1.2.3"]),
    ]);
    // (allow-list, URL, allowed?)
    let rows: &[(&[&str], &str, bool)] = &[
        (&["127.0.0.1"], "http://127.0.0.1:8080/", true),
        (&["127.0.0.1"], "http://127.1/", true),
        (&["127.0.0.1"], "http://localhost:3000/", true),
        (&["127.0.0.1:8080"], "http://127.0.0.1:8080/", true),
        (&["127.0.0.1:8080"], "http://127.0.0.1:8081/", false),
        (&["127.0.0.0/8"], "http://127.9.9.9/", true),
        (&["localhost"], "http://localhost:1234/", true),
        (&["localhost:1234"], "http://localhost:1234/", true),
        (&["localhost:1234"], "http://localhost:1235/", false),
        (&["localhost"], "http://127.0.0.1/", false),
        (&["LocalHost"], "http://localhost/", true),
        (&["::1"], "http://[::1]:80/", true),
        (&["[::1]:8080"], "http://[::1]:8080/", true),
        (&["[::1]:8080"], "http://[::1]:8081/", false),
        (&["::1"], "http://[::ffff:127.0.0.1]/", false),
        (&["127.0.0.1"], "http://[::ffff:127.0.0.1]/", true),
        (&["fc00::/7"], "http://[fd00::1]/", true),
        (&["10.0.0.0/8"], "http://db.internal/", true),
        (&["db.internal"], "http://db.internal/", true),
        (&["10.0.0.0/8"], "http://169.254.169.254/", false),
        (&["192.168.0.0/16"], "http://10.0.0.1/", false),
        (&[], "http://127.0.0.1/", false),
    ];
    let mut wrong = Vec::new();
    for (entries, url, want) in rows {
        let allow = AllowList::parse(entries.iter()).unwrap();
        let got = check(&http::parse_url(url).unwrap(), &allow, &resolver)
            .await
            .is_ok();
        if got != *want {
            wrong.push(format!("{entries:?} {url}: allowed {got}, want {want}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn allow_list_entries_that_mean_nothing_are_refused() {
    for bad in [
        "10.0.0.0/33",
        "::/129",
        "10.0.0.0/x",
        "localhost:99999",
        "localhost:http",
        "127.1",
        "2130706433",
        "[::1",
        "[nope]",
        "a b",
        "http://localhost",
    ] {
        let err = AllowList::parse([bad]).expect_err(bad);
        assert!(err.to_string().contains(bad), "{bad}: {err}");
    }
    assert!(AllowList::parse(["", " localhost "]).is_ok());
}

#[test]
fn a_tool_file_with_a_bad_allow_list_or_retry_setting_does_not_load() {
    for (entry, says) in [
        ("allow_hosts: [\"10.0.0.0/40\"]", "allow_hosts"),
        ("retries: 50", "retries must be at most 10"),
        ("backoff: -1", "backoff"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("t.yaml"),
            format!("name: t\ndescription: x\nentry:\n  type: http\n  url: \"https://api.test/\"\n  {entry}\n"),
        )
        .unwrap();
        let lib = ToolLibrary::load(dir.path(), &toolgate::tool::sources::standard()).unwrap();
        let errors: Vec<String> = lib.errors().iter().map(ToString::to_string).collect();
        assert_eq!(errors.len(), 1, "{entry}: {errors:?}");
        assert!(errors[0].contains(says), "{entry}: {errors:?}");
    }
}

// --- the tools, against servers on loopback ----------------------------------------

/// The reproduction: an `http` tool and `http_request` pointed at a live
/// server on loopback, in the six spellings tried. Refused, and nothing arrives.
#[tokio::test]
async fn http_tools_refuse_loopback_by_default_and_send_nothing() {
    assert!(
        std::env::var_os("TOOLGATE_HTTP_ALLOW").is_none(),
        "unset TOOLGATE_HTTP_ALLOW to run this test"
    );
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_string("secret"))
        .mount(&server)
        .await;
    let port = server.address().port();
    let spellings = [
        format!("http://127.0.0.1:{port}/x"),
        format!("http://127.1:{port}/x"),
        format!("http://0x7f.1:{port}/x"),
        format!("http://[::1]:{port}/x"),
        format!("http://localhost:{port}/x"),
        format!("http://2130706433:{port}/x"),
    ];
    let builtin = ToolLibrary::builtin(&toolgate::tool::sources::standard());
    for url in &spellings {
        let (_d, lib) = http_tool(url, "");
        for (lib, name, a) in [
            (&lib, "t", json!({})),
            (&builtin, "http_request", json!({"url": url})),
        ] {
            let err = call(lib, name, a).await.unwrap_err();
            assert_eq!(err.kind(), "blocked_address", "{name} {url}: {err}");
        }
    }
    assert_eq!(
        requests(&server).await,
        0,
        "a refused request reached the server"
    );
}

#[tokio::test]
async fn allow_hosts_in_the_tool_file_opens_a_local_server() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/x"))
        .respond_with(ResponseTemplate::new(200).set_body_string("hello"))
        .mount(&server)
        .await;
    let port = server.address().port();
    let url = format!("http://127.0.0.1:{port}/x");
    for allow in [
        format!("127.0.0.1:{port}"),
        "127.0.0.1".to_string(),
        "127.0.0.0/8".to_string(),
    ] {
        let (_d, lib) = http_tool(&url, &format!(", allow_hosts: [\"{allow}\"]"));
        let out = call(&lib, "t", json!({})).await.unwrap();
        assert_eq!(out.to_text(), "hello", "{allow}");
    }
    // `localhost` by name, resolved by the system (its hosts file: no DNS query).
    let (_d, lib) = http_tool(
        &format!("http://localhost:{port}/x"),
        ", allow_hosts: [localhost]",
    );
    assert_eq!(call(&lib, "t", json!({})).await.unwrap().to_text(), "hello");
    // Another port of the same address stays closed.
    let (_d, lib) = http_tool(&url, ", allow_hosts: [\"127.0.0.1:1\"]");
    assert_eq!(
        call(&lib, "t", json!({})).await.unwrap_err().kind(),
        "blocked_address"
    );
}

/// A server on loopback that the tool may reach (`open`), and one it may not (`closed`).
async fn two_servers() -> (MockServer, MockServer) {
    (MockServer::start().await, MockServer::start().await)
}

fn redirect(to: &str) -> ResponseTemplate {
    ResponseTemplate::new(302).insert_header("location", to)
}

#[tokio::test]
async fn every_redirect_hop_is_checked_before_it_connects() {
    let (open, closed) = two_servers().await;
    let closed_url = format!("http://127.0.0.1:{}/secret", closed.address().port());
    let cases = [
        ("/to-closed", closed_url.clone()),
        (
            "/to-closed-by-name",
            format!("http://localhost:{}/secret", closed.address().port()),
        ),
        (
            "/to-closed-v6",
            format!("http://[::1]:{}/secret", closed.address().port()),
        ),
    ];
    for (from, to) in &cases {
        Mock::given(path(*from))
            .respond_with(redirect(to))
            .mount(&open)
            .await;
    }
    Mock::given(path("/secret"))
        .respond_with(ResponseTemplate::new(200).set_body_string("secret"))
        .mount(&closed)
        .await;
    let allow = format!(", allow_hosts: [\"127.0.0.1:{}\"]", open.address().port());
    for (from, to) in &cases {
        let (_d, lib) = http_tool(&format!("{}{from}", open.uri()), &allow);
        let err = call(&lib, "t", json!({})).await.unwrap_err();
        assert_eq!(err.kind(), "blocked_address", "{from} -> {to}: {err}");
    }
    assert_eq!(
        requests(&closed).await,
        0,
        "a redirect reached a refused server"
    );
    assert_eq!(requests(&open).await, cases.len());
}

#[tokio::test]
async fn allowed_redirects_are_followed_with_methods_and_credentials_handled() {
    let (a, b) = two_servers().await;
    let b_port = b.address().port();
    // Same origin, relative Location.
    Mock::given(path("/start"))
        .respond_with(redirect("/final"))
        .mount(&a)
        .await;
    Mock::given(method("GET"))
        .and(path("/final"))
        .respond_with(ResponseTemplate::new(200).set_body_string("final"))
        .mount(&a)
        .await;
    // 303 after a POST continues as GET.
    Mock::given(method("POST"))
        .and(path("/submit"))
        .respond_with(ResponseTemplate::new(303).insert_header("location", "/final"))
        .mount(&a)
        .await;
    // 307 keeps the method and the body.
    Mock::given(method("POST"))
        .and(path("/moved"))
        .respond_with(ResponseTemplate::new(307).insert_header("location", "/new"))
        .mount(&a)
        .await;
    Mock::given(method("POST"))
        .and(path("/new"))
        .and(body_json(json!({"n": 1})))
        .respond_with(ResponseTemplate::new(201).set_body_string("created"))
        .mount(&a)
        .await;
    // To another origin: the credential header stays behind.
    Mock::given(path("/away"))
        .respond_with(redirect(&format!("http://127.0.0.1:{b_port}/landing")))
        .mount(&a)
        .await;
    Mock::given(path("/landing"))
        .respond_with(ResponseTemplate::new(200).set_body_string("landed"))
        .mount(&b)
        .await;
    Mock::given(path("/loop"))
        .respond_with(redirect("/loop"))
        .mount(&a)
        .await;
    Mock::given(path("/file"))
        .respond_with(redirect("file:///etc/passwd"))
        .mount(&a)
        .await;
    let yaml = |p: &str, m: &str, extra: &str| {
        format!(
            "name: t\ndescription: x\nparameters: {{type: object, properties: {{n: {{type: integer}}}}}}\nentry:\n  type: http\n  method: {m}\n  url: \"{}{p}\"\n  allow_hosts: [\"127.0.0.1\"]\n  headers: {{X-Key: k1}}\n{extra}",
            a.uri()
        )
    };
    let run = |p: &'static str, m: &'static str, extra: &'static str, a: Value| {
        let y = yaml(p, m, extra);
        async move {
            let (_d, lib) = library_with(&y);
            call(&lib, "t", a).await
        }
    };
    assert_eq!(
        run("/start", "GET", "", json!({})).await.unwrap().to_text(),
        "final"
    );
    assert_eq!(
        run("/submit", "POST", "  body: json\n", json!({"n": 1}))
            .await
            .unwrap()
            .to_text(),
        "final"
    );
    assert_eq!(
        run("/moved", "POST", "  body: json\n", json!({"n": 1}))
            .await
            .unwrap()
            .to_text(),
        "created"
    );
    assert_eq!(
        run("/away", "GET", "", json!({})).await.unwrap().to_text(),
        "landed"
    );
    let landed = &b.received_requests().await.unwrap()[0];
    assert!(
        landed.headers.get("x-key").is_none(),
        "the credential followed the redirect"
    );
    let first = a
        .received_requests()
        .await
        .unwrap()
        .into_iter()
        .find(|r| r.url.path() == "/away")
        .unwrap();
    assert_eq!(first.headers.get("x-key").unwrap(), "k1");
    let err = run("/loop", "GET", "", json!({})).await.unwrap_err();
    assert!(
        err.to_string().contains("redirected more than 10 times"),
        "{err}"
    );
    let err = run("/file", "GET", "", json!({})).await.unwrap_err();
    assert!(err.to_string().contains("only http and https"), "{err}");
}

#[tokio::test]
async fn a_host_name_is_resolved_once_and_the_request_goes_to_that_address() {
    // The server listens on 127.0.0.2 only. The resolver's first answer for the name
    // is 127.0.0.2 (allowed); any later one would be 127.0.0.3 (refused, and nothing
    // listens there); the system's own answer would be 127.0.0.1. Only a request that
    // connects to the address that was checked reaches the server.
    let listener = std::net::TcpListener::bind("127.0.0.2:0").unwrap();
    let server = MockServer::builder().listener(listener).start().await;
    Mock::given(method("GET"))
        .and(path("/x"))
        .respond_with(ResponseTemplate::new(200).set_body_string("pinned"))
        .mount(&server)
        .await;
    let port = server.address().port();
    let resolver = Table::with(&[("localhost", &["127.0.0.2"]), ("localhost", &["127.0.0.3"])]);
    let req = Request {
        method: reqwest::Method::GET,
        url: http::parse_url(&format!("http://localhost:{port}/x")).unwrap(),
        headers: vec![],
        body: None,
        timeout: Duration::from_secs(10),
        max_response: 1024,
        allow: AllowList::parse(["127.0.0.2"]).unwrap(),
        retry: Retry::default(),
        files: None,
    };
    let out = http::send_with(req, &resolver).await.unwrap();
    assert_eq!(out.to_text(), "pinned");
    assert_eq!(resolver.lookups.load(Ordering::SeqCst), 1);
    let got = &server.received_requests().await.unwrap()[0];
    assert_eq!(
        got.headers.get("host").unwrap(),
        &format!("localhost:{port}"),
        "the request still names its host"
    );
}

// --- retries -------------------------------------------------------------------------

/// A server whose `/flaky` fails `failures` times with `status`, then answers 200.
async fn flaky(status: u16, failures: u64) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(path("/flaky"))
        .respond_with(ResponseTemplate::new(status).insert_header("retry-after", "0"))
        .up_to_n_times(failures)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(path("/flaky"))
        .respond_with(ResponseTemplate::new(200).set_body_string("ok"))
        .with_priority(2)
        .mount(&server)
        .await;
    server
}

#[tokio::test]
async fn retries_follow_the_tool_file() {
    // (method, extra entry keys, status, failures, answered ok, requests seen)
    let rows: &[(&str, &str, u16, u64, bool, usize)] = &[
        ("GET", "", 503, 1, false, 1),
        ("GET", ", retries: 2, backoff: 0.01", 503, 1, true, 2),
        ("GET", ", retries: 2, backoff: 0.01", 429, 2, true, 3),
        ("GET", ", retries: 2, backoff: 0.01", 500, 5, false, 3),
        ("PUT", ", retries: 1, backoff: 0.01", 502, 1, true, 2),
        ("DELETE", ", retries: 1, backoff: 0.01", 504, 1, true, 2),
        ("POST", ", retries: 3, backoff: 0.01", 503, 1, false, 1),
        ("PATCH", ", retries: 3, backoff: 0.01", 503, 1, false, 1),
        (
            "POST",
            ", retries: 3, backoff: 0.01, retry_non_idempotent: true",
            503,
            1,
            true,
            2,
        ),
        ("GET", ", retries: 3, backoff: 0.01", 404, 1, false, 1),
    ];
    let mut wrong = Vec::new();
    for &(m, extra, status, failures, ok, seen) in rows {
        let server = flaky(status, failures).await;
        let (_d, lib) = http_tool(
            &format!("{}/flaky", server.uri()),
            &format!(", method: {m}, allow_hosts: [\"127.0.0.1\"]{extra}"),
        );
        let out = call(&lib, "t", json!({})).await.unwrap();
        let got = (!out.is_error, requests(&server).await);
        if got != (ok, seen) {
            wrong.push(format!(
                "{m} {extra} {status}x{failures}: got ok={} requests={}, want ok={ok} requests={seen}",
                got.0, got.1
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[tokio::test]
async fn the_timeout_bounds_every_retry_together() {
    let server = MockServer::start().await;
    Mock::given(path("/flaky"))
        .respond_with(ResponseTemplate::new(503))
        .mount(&server)
        .await;
    let (_d, lib) = library_with(&format!(
        "name: t\ndescription: x\ntimeout: 0.5\nentry: {{type: http, url: \"{}/flaky\", allow_hosts: [\"127.0.0.1\"], retries: 10, backoff: 0.2}}\n",
        server.uri()
    ));
    let started = std::time::Instant::now();
    let err = call(&lib, "t", json!({})).await.unwrap_err();
    assert_eq!(err.kind(), "timeout");
    assert!(started.elapsed() < Duration::from_secs(3));
}

// --- through the binary: the environment's allow-list --------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn toolgate_http_allow_opens_loopback_for_http_request() {
    let server = MockServer::start().await;
    Mock::given(method("PUT"))
        .and(path("/items/1"))
        .and(header("x-trace", "abc"))
        .and(body_json(json!({"v": 2})))
        .respond_with(ResponseTemplate::new(200).set_body_string("updated"))
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let port = server.address().port();
    let arguments = json!({
        "url": format!("http://localhost:{port}/items/1"), "method": "PUT",
        "headers": {"X-Trace": "abc"}, "body": {"v": 2}
    })
    .to_string();
    let tools_call = |allow: Option<String>| {
        let mut cmd = tokio::process::Command::new(toolgate_test_support::bin());
        cmd.args([
            "tools",
            "call",
            "http_request",
            "--json",
            "--args",
            &arguments,
        ])
        .current_dir(dir.path())
        .env_remove("TOOLGATE_DB")
        .env_remove("TOOLGATE_TOOLS")
        .env_remove("TOOLGATE_HTTP_ALLOW");
        if let Some(allow) = allow {
            cmd.env("TOOLGATE_HTTP_ALLOW", allow);
        }
        cmd.output()
    };
    let refused = tools_call(None).await.unwrap();
    assert_eq!(refused.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&refused.stdout).unwrap();
    assert_eq!(v["error"]["kind"], "blocked_address", "{v}");
    assert_eq!(requests(&server).await, 0);

    let allowed = tools_call(Some(format!("example.org, localhost:{port}")))
        .await
        .unwrap();
    let v: Value = serde_json::from_slice(&allowed.stdout).unwrap();
    assert_eq!(allowed.status.code(), Some(0), "{v}");
    assert_eq!(v["output"]["parts"][0]["text"], "updated");

    let broken = tools_call(Some("10.0.0.0/99".into())).await.unwrap();
    let v: Value = serde_json::from_slice(&broken.stdout).unwrap();
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("TOOLGATE_HTTP_ALLOW"),
        "{v}"
    );
}
