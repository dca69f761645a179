//! The OpenAPI document says what the handlers do: the findings of the schemathesis run
//! (tests/py/schemathesis.sh) kept as regression checks, against the built binary.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::serving;

use serde_json::{Value, json};
use serving::Site;
use toolgate::protocol::RunEvent;

fn check(got: (u16, Value), status: u16, kind: &str) {
    assert_eq!(got.0, status, "{}", got.1);
    assert_eq!(got.1["error"]["type"], kind, "{}", got.1);
}

#[tokio::test]
async fn the_document_states_what_the_handlers_take() {
    let site = Site::new();
    let server = site.serve(Some("k3y"));
    let (status, doc) = server.get("/openapi.json").await;
    assert_eq!(status, 200);

    // /healthz is open, and documented so (an empty security requirement).
    assert_eq!(doc["paths"]["/healthz"]["get"]["security"], json!([{}]));

    // Status filters are the enums; counts have their ranges.
    let params = |path: &str| doc["paths"][path]["get"]["parameters"].clone();
    let param = |path: &str, name: &str| {
        params(path)
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .cloned()
            .unwrap()
    };
    assert_eq!(
        param("/v1/runs", "status")["schema"]["$ref"],
        "#/components/schemas/RunStatus"
    );
    assert_eq!(
        param("/v1/calls", "status")["schema"]["$ref"],
        "#/components/schemas/CallStatus"
    );
    assert_eq!(param("/v1/runs", "limit")["schema"]["maximum"], 1000);
    assert_eq!(param("/v1/calls", "limit")["schema"]["minimum"], 1);

    let schemas = &doc["components"]["schemas"];
    // A blank input is refused, and the document says so.
    assert!(schemas["CreateRun"]["properties"]["input"]["pattern"].is_string());
    // Edited arguments name their call.
    assert_eq!(
        schemas["ApproveBody"]["then"]["required"],
        json!(["call_id"])
    );
    // The Responses input is a string or items, never any object; instructions only null.
    assert!(schemas["InputDoc"]["oneOf"].is_array());
    assert_eq!(
        schemas["CreateResponse"]["properties"]["instructions"]["type"],
        "null"
    );
    // SSE answers are events whose data is JSON, the run object under `event: run`.
    let sse = &doc["paths"]["/v1/runs/{id}/events"]["get"]["responses"]["200"]["content"]["text/event-stream"]
        ["schema"]["$ref"];
    assert_eq!(sse, "#/components/schemas/RunStreamEvent");
    assert_eq!(
        schemas["RunStreamEvent"]["properties"]["data"]["contentMediaType"],
        "application/json"
    );
    // Every run event has its schema, named by its `type`: RunEvent is one of them, and
    // a run stream's event of that name carries it.
    let run_event = &schemas["RunEvent"];
    assert_eq!(run_event["discriminator"]["propertyName"], "type");
    assert_eq!(
        run_event["oneOf"].as_array().unwrap().len(),
        RunEvent::NAMES.len()
    );
    let rules = schemas["RunStreamEvent"]["allOf"].as_array().unwrap();
    for name in RunEvent::NAMES {
        let reference = &run_event["discriminator"]["mapping"][name];
        let schema = reference
            .as_str()
            .and_then(|r| r.strip_prefix("#/components/schemas/"))
            .unwrap_or_else(|| panic!("{name}: no schema in {run_event}"));
        assert!(schemas[schema].is_object(), "{name}: {schema} is missing");
        assert!(
            rules
                .iter()
                .any(|r| r["if"]["properties"]["event"]["const"] == *name
                    && r["then"]["properties"]["data"]["contentSchema"]["$ref"] == *reference),
            "{name}: not in RunStreamEvent"
        );
    }
    // A new run links to what reads and decides it.
    assert_eq!(
        doc["paths"]["/v1/runs"]["post"]["responses"]["200"]["links"]["Approve"]["parameters"]["id"],
        "$response.body#/id"
    );
}

#[tokio::test]
async fn requests_the_document_refuses_are_refused_and_those_it_allows_are_not() {
    let site = Site::new();
    let server = site.serve(None);
    // An unknown route answers the API's error shape, not an empty 404.
    check(
        server.get("/v1/conversations/stats").await,
        404,
        "not_found",
    );
    check(server.get("/v1/nothing").await, 404, "not_found");
    // An empty status is not a status; counts outside their range are refused.
    check(server.get("/v1/runs?status=").await, 400, "bad_request");
    check(server.get("/v1/calls?status=").await, 400, "bad_request");
    check(server.get("/v1/runs?limit=0").await, 400, "bad_request");
    check(server.get("/v1/calls?limit=1001").await, 400, "bad_request");
    check(
        server.get("/v1/calls?offset=9223372036854775808").await,
        400,
        "bad_request",
    );
    assert_eq!(server.get("/v1/runs?limit=1000").await.0, 200);
    assert_eq!(server.get("/v1/calls?limit=1&offset=5").await.0, 200);
    // A model override needs a name after openai:.
    check(
        server
            .post(
                "/v1/runs",
                json!({"agent": "assistant", "input": "hi", "model": "openai: "}),
            )
            .await,
        400,
        "bad_request",
    );
    // A resume body may be null (the document's `ResumeBody` or null): the run is
    // looked up, not the body refused.
    let r = reqwest::Client::new()
        .post(server.url("/v1/runs/run_nope/resume"))
        .header("content-type", "application/json")
        .body("null")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);
}
