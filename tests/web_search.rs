//! `web_search` end to end (issue 44, item 3): an agent run with the scripted model
//! searches through each provider, a local server answering in that provider's real
//! response shape (SearXNG `format=json`, Brave `web.results`, Tavily `results`) and
//! checking the request it gets (parameters, the key in the provider's header, taken
//! from the secrets store); results come back as title, URL and plain snippet. A
//! provider that needs a key and has none, and no provider at all, are errors that say
//! what to set, to the model (the record) and to a person (`tools call`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};
use wiremock::matchers::{body_json, header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::launching;

const KEY: &str = "search-key-7f3a91";

/// SearXNG's answer to `/search?q=sea+otters&format=json`.
fn searxng_answer() -> Value {
    let result = |url: &str, title: &str, content: &str, engine: &str| {
        json!({"url": url, "title": title, "content": content, "publishedDate": null,
            "thumbnail": "", "engine": engine, "template": "default.html",
            "parsed_url": ["https", "en.wikipedia.org", "/wiki/Sea_otter", "", "", ""],
            "img_src": "", "priority": "", "engines": [engine], "positions": [1],
            "score": 1.0, "category": "general"})
    };
    json!({"query": "sea otters", "number_of_results": 0, "results": [
        result("https://en.wikipedia.org/wiki/Sea_otter", "Sea otter - Wikipedia",
            "The sea otter (Enhydra lutris) is a marine mammal native to the coasts of the northern and eastern North Pacific.", "wikipedia"),
        result("https://oceana.org/marine-life/sea-otter/", "Sea Otter | Oceana",
            "Sea otters hold hands &amp; float in groups called rafts.", "duckduckgo"),
        result("https://example.org/third", "Third", "Not wanted: max_results is 2.", "bing")
    ], "answers": [], "corrections": [], "infoboxes": [], "suggestions": ["sea otter facts"],
    "unresponsive_engines": []})
}

/// Brave's answer to `/res/v1/web/search?q=sea+otters&count=2`.
fn brave_answer() -> Value {
    let result = |title: &str, url: &str, description: &str| {
        json!({"title": title, "url": url, "is_source_local": false, "is_source_both": false,
            "description": description, "page_age": "2024-05-01T00:00:00",
            "profile": {"name": "Wikipedia", "url": url, "long_name": "en.wikipedia.org",
                "img": "https://imgs.search.brave.com/x.png"},
            "language": "en", "family_friendly": true, "type": "search_result",
            "subtype": "generic", "is_live": false,
            "meta_url": {"scheme": "https", "netloc": "en.wikipedia.org",
                "hostname": "en.wikipedia.org", "favicon": "https://imgs.search.brave.com/f.png",
                "path": "› wiki › Sea_otter"},
            "age": "May 1, 2024"})
    };
    json!({"query": {"original": "sea otters", "show_strict_warning": false,
            "is_navigational": false, "is_news_breaking": false, "spellcheck_off": true,
            "country": "us", "bad_results": false, "should_fallback": false,
            "postal_code": "", "city": "", "header_country": "", "more_results_available": true,
            "state": ""},
        "mixed": {"type": "mixed", "main": [{"type": "web", "index": 0, "all": false}],
            "top": [], "side": []},
        "type": "search",
        "web": {"type": "search", "results": [
            result("Sea otter - Wikipedia", "https://en.wikipedia.org/wiki/Sea_otter",
                "The <strong>sea otter</strong> (Enhydra lutris) is a marine mammal native to the coasts of the northern and eastern North Pacific."),
            result("Sea Otter | Oceana", "https://oceana.org/marine-life/sea-otter/",
                "<strong>Sea otters</strong> hold hands &amp; float in groups called rafts.")
        ], "family_friendly": true}})
}

/// Tavily's answer to `POST /search`.
fn tavily_answer() -> Value {
    json!({"query": "sea otters", "follow_up_questions": null, "answer": null, "images": [],
        "results": [
            {"url": "https://en.wikipedia.org/wiki/Sea_otter", "title": "Sea otter - Wikipedia",
             "content": "The sea otter (Enhydra lutris) is a marine mammal native to the coasts of the northern and eastern North Pacific.",
             "score": 0.98, "raw_content": null},
            {"url": "https://oceana.org/marine-life/sea-otter/", "title": "Sea Otter | Oceana",
             "content": "Sea otters hold hands & float in groups called rafts.",
             "score": 0.91, "raw_content": null}
        ],
        "response_time": 1.09, "request_id": "123e4567-e89b-12d3-a456-426614174000"})
}

/// A provider's fake: where it listens, how it must be asked, and what it answers.
struct Row {
    provider: &'static str,
    /// The endpoint path `TOOLGATE_SEARCH_URL` names.
    endpoint: &'static str,
    needs_key: bool,
}

const ROWS: [Row; 3] = [
    Row {
        provider: "searxng",
        endpoint: "/",
        needs_key: false,
    },
    Row {
        provider: "brave",
        endpoint: "/res/v1/web/search",
        needs_key: true,
    },
    Row {
        provider: "tavily",
        endpoint: "/search",
        needs_key: true,
    },
];

/// The fake for `row`: it answers only a request in the provider's own form.
async fn fake(row: &Row) -> MockServer {
    let server = MockServer::start().await;
    let mock = match row.provider {
        "searxng" => Mock::given(method("GET"))
            .and(path("/search"))
            .and(query_param("q", "sea otters"))
            .and(query_param("format", "json"))
            .respond_with(ResponseTemplate::new(200).set_body_json(searxng_answer())),
        "brave" => Mock::given(method("GET"))
            .and(path(row.endpoint))
            .and(query_param("q", "sea otters"))
            .and(query_param("count", "2"))
            .and(header("X-Subscription-Token", KEY))
            .respond_with(ResponseTemplate::new(200).set_body_json(brave_answer())),
        _ => Mock::given(method("POST"))
            .and(path(row.endpoint))
            .and(header("Authorization", format!("Bearer {KEY}").as_str()))
            .and(body_json(
                json!({"query": "sea otters", "max_results": 2, "search_depth": "basic"}),
            ))
            .respond_with(ResponseTemplate::new(200).set_body_json(tavily_answer())),
    };
    mock.mount(&server).await;
    server
}

/// `toolgate ARGS` in `dir` with `env`, `stdin` fed.
fn cli(dir: &Path, args: &[&str], env: &[(&str, String)], stdin: Option<&str>) -> Output {
    let mut cmd = toolgate_test_support::toolgate(dir);
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    launching::feed(cmd, stdin)
}

/// A run whose scripted model searches once, then answers; the call's record.
fn search_run(dir: &Path, env: &[(&str, String)]) -> Value {
    std::fs::write(
        dir.join("agent.yaml"),
        "name: searcher\nmodel: scripted:replies.yaml\ntools: [web_search]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("replies.yaml"),
        "replies:\n  - content: Searching.\n    tool_calls: [{id: s1, name: web_search, arguments: {query: sea otters, max_results: 2}}]\n  - content: Found them.\n",
    )
    .unwrap();
    let out = cli(
        dir,
        &["run", "--agent", "agent.yaml", "--json", "otters?"],
        env,
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", launching::all(&out));
    assert!(!launching::all(&out).contains(KEY));
    let calls = cli(dir, &["calls", "--json"], env, None);
    assert!(!launching::all(&calls).contains(KEY));
    let page: Value = serde_json::from_slice(&calls.stdout).unwrap();
    page["calls"][0].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn each_provider_answers_in_its_own_shape() {
    for row in &ROWS {
        let server = fake(row).await;
        let dir = tempfile::tempdir().unwrap();
        let env = vec![
            ("TOOLGATE_SEARCH_PROVIDER", row.provider.to_string()),
            (
                "TOOLGATE_SEARCH_URL",
                format!(
                    "http://127.0.0.1:{}{}",
                    server.address().port(),
                    row.endpoint
                ),
            ),
        ];
        let d = dir.path().to_path_buf();
        let record = tokio::task::spawn_blocking(move || {
            if row.needs_key {
                let out = cli(
                    &d,
                    &["secrets", "set", "web_search.api_key"],
                    &env,
                    Some(&format!("{KEY}\n")),
                );
                assert!(out.status.success(), "{}", launching::all(&out));
            }
            search_run(&d, &env)
        })
        .await
        .unwrap();
        let name = row.provider;
        assert_eq!(record["status"], "succeeded", "{name}: {record}");
        let result: Value = serde_json::from_str(record["result"].as_str().unwrap()).unwrap();
        assert_eq!(
            result,
            json!({"query": "sea otters", "provider": name, "results": [
                {"title": "Sea otter - Wikipedia", "url": "https://en.wikipedia.org/wiki/Sea_otter",
                 "snippet": "The sea otter (Enhydra lutris) is a marine mammal native to the coasts of the northern and eastern North Pacific."},
                {"title": "Sea Otter | Oceana", "url": "https://oceana.org/marine-life/sea-otter/",
                 "snippet": "Sea otters hold hands & float in groups called rafts."}
            ]}),
            "{name}"
        );
        assert_eq!(server.received_requests().await.unwrap().len(), 1, "{name}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_key_or_provider_says_what_to_set() {
    let server = fake(&ROWS[1]).await;
    let url = format!(
        "http://127.0.0.1:{}{}",
        server.address().port(),
        ROWS[1].endpoint
    );
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    tokio::task::spawn_blocking(move || {
        let brave = vec![
            ("TOOLGATE_SEARCH_PROVIDER", "brave".to_string()),
            ("TOOLGATE_SEARCH_URL", url),
        ];
        // To the model: the run goes on, the call's record says what is missing.
        let record = search_run(&d, &brave);
        assert_eq!(record["status"], "failed", "{record}");
        assert_eq!(record["error_kind"], "missing_credential", "{record}");
        let message = record["error_message"].as_str().unwrap();
        assert!(
            message.contains("toolgate secrets set web_search.api_key"),
            "{message}"
        );
        // To a person.
        let args = [
            "tools",
            "call",
            "web_search",
            "--args",
            r#"{"query": "otters"}"#,
        ];
        let out = cli(&d, &args, &brave, None);
        assert_eq!(out.status.code(), Some(1), "{}", launching::all(&out));
        assert!(
            launching::all(&out).contains("toolgate secrets set web_search.api_key"),
            "{}",
            launching::all(&out)
        );
        // No provider at all.
        let out = cli(&d, &args, &[], None);
        assert_eq!(out.status.code(), Some(1), "{}", launching::all(&out));
        let text = launching::all(&out);
        assert!(
            text.contains("TOOLGATE_SEARCH_PROVIDER") && text.contains("searxng, brave, tavily"),
            "{text}"
        );
    })
    .await
    .unwrap();
    // The provider was never asked without its key.
    assert!(server.received_requests().await.unwrap().is_empty());
}
