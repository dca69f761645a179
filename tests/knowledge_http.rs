//! `/v1/knowledge` on a server with issued keys: an admin of a tenant creates a base
//! and uploads Markdown and a PDF, that tenant's client searches it, an approver may
//! not, a client may not write, another tenant sees no such base (404), and the OpenAPI
//! document lists the routes.

use base64::Engine;
use serde_json::{Value, json};
use toolgate_test_support::serving::identity::keys_create;
use toolgate_test_support::serving::{Server, Site};

use crate::knowledge_corpus::{DOCUMENTS, PDF_PAGES, pdf};

async fn call(
    server: &Server,
    cred: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = server
        .client
        .request(method, server.url(path))
        .bearer_auth(cred);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tenants_admin_writes_its_clients_search_and_other_tenants_see_nothing() {
    let site = Site::new();
    let admin = keys_create(&site, "acme", "acme-admin", "admin", "");
    let client = keys_create(&site, "acme", "acme-client", "client", "");
    let approver = keys_create(&site, "acme", "acme-approver", "approver", "");
    let other = keys_create(&site, "globex", "globex-client", "client", "");
    let server = site.serve(Some("the-servers-own-admin-key-1"));
    let post = reqwest::Method::POST;

    let (status, body) = call(
        &server,
        &client,
        post.clone(),
        "/v1/knowledge",
        Some(json!({"name": "docs"})),
    )
    .await;
    assert_eq!(status, 403, "a client does not write: {body}");
    let (status, body) = call(
        &server,
        &admin,
        post.clone(),
        "/v1/knowledge",
        Some(json!({"name": "docs", "chunk": 200, "overlap": 40})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["tenant"], "acme");
    let (status, _) = call(
        &server,
        &admin,
        post.clone(),
        "/v1/knowledge",
        Some(json!({"name": "docs"})),
    )
    .await;
    assert_eq!(status, 409);

    let (source, text) = DOCUMENTS[1];
    let (status, body) = call(
        &server,
        &admin,
        post.clone(),
        "/v1/knowledge/docs/documents",
        Some(json!({"source": source, "text": text})),
    )
    .await;
    assert_eq!(
        (status, body["stored"].as_str()),
        (200, Some("added")),
        "{body}"
    );
    let encoded = base64::engine::general_purpose::STANDARD.encode(pdf(PDF_PAGES));
    let (status, body) = call(
        &server,
        &admin,
        post.clone(),
        "/v1/knowledge/docs/documents",
        Some(json!({"source": "manual.pdf", "base64": encoded})),
    )
    .await;
    assert_eq!(
        (status, body["stored"].as_str()),
        (200, Some("added")),
        "{body}"
    );
    let (status, body) = call(
        &server,
        &admin,
        post.clone(),
        "/v1/knowledge/docs/documents",
        Some(json!({"source": source, "text": text})),
    )
    .await;
    assert_eq!(
        (status, body["stored"].as_str()),
        (200, Some("unchanged")),
        "{body}"
    );

    let search = json!({"query": "How do I reset the router?", "top_k": 2});
    let (status, body) = call(
        &server,
        &client,
        post.clone(),
        "/v1/knowledge/docs/search",
        Some(search.clone()),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["passages"][0]["source"], "manual.pdf", "{body}");
    assert_eq!(body["passages"][0]["section"], "page 2", "{body}");
    let (status, _) = call(
        &server,
        &approver,
        post.clone(),
        "/v1/knowledge/docs/search",
        Some(search.clone()),
    )
    .await;
    assert_eq!(status, 403, "approvers decide calls; they do not search");
    let (status, listed) = call(
        &server,
        &approver,
        reqwest::Method::GET,
        "/v1/knowledge/docs",
        None,
    )
    .await;
    assert_eq!(
        (status, listed["sources"].as_array().map(Vec::len)),
        (200, Some(2)),
        "{listed}"
    );

    let (status, _) = call(
        &server,
        &other,
        post.clone(),
        "/v1/knowledge/docs/search",
        Some(search),
    )
    .await;
    assert_eq!(status, 404, "another tenant's base is unknown");
    let (status, listed) = call(&server, &other, reqwest::Method::GET, "/v1/knowledge", None).await;
    assert_eq!((status, listed), (200, json!([])));

    let (status, _) = call(
        &server,
        &client,
        reqwest::Method::DELETE,
        "/v1/knowledge/docs",
        None,
    )
    .await;
    assert_eq!(status, 403);
    let (status, _) = call(
        &server,
        &admin,
        reqwest::Method::DELETE,
        "/v1/knowledge/docs/documents?source=manual.pdf",
        None,
    )
    .await;
    assert_eq!(status, 204);
    let (status, _) = call(
        &server,
        &admin,
        reqwest::Method::DELETE,
        "/v1/knowledge/docs",
        None,
    )
    .await;
    assert_eq!(status, 204);
    let (status, _) = call(
        &server,
        &client,
        reqwest::Method::GET,
        "/v1/knowledge/docs",
        None,
    )
    .await;
    assert_eq!(status, 404);

    let (_, doc) = server.get("/openapi.json").await;
    for path in [
        "/v1/knowledge",
        "/v1/knowledge/{name}",
        "/v1/knowledge/{name}/documents",
        "/v1/knowledge/{name}/search",
    ] {
        assert!(
            doc["paths"].get(path).is_some(),
            "{path} missing from the OpenAPI document"
        );
    }
}
