//! The OpenAPI 3 document, generated from the handlers and their types, and the routes
//! it describes.

use std::sync::Arc;

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use toolgate_protocol::RunEvent;

use super::{
    AppState, feed, files, keys_http, knowledge, limits, records, responses, runs, scope,
    secrets_http, spend, timeline,
};

#[derive(OpenApi)]
#[openapi(
    info(title = "toolgate", description = "The toolgate run API: agent runs with gated tool calls, durable pauses, decisions and records."),
    components(schemas(RunEvent)),
    modifiers(&BearerAuth),
    security(("bearer" = []))
)]
struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// Every documented route.
pub fn routes() -> OpenApiRouter<Arc<AppState>> {
    let mut router = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(runs::create_run, runs::list_runs))
        .routes(routes!(runs::get_run))
        .routes(routes!(runs::run_tree))
        .routes(routes!(runs::watch_run))
        .routes(routes!(timeline::timeline))
        .routes(routes!(feed::all_events))
        .routes(routes!(runs::approve))
        .routes(routes!(runs::deny))
        .routes(routes!(runs::submit))
        .routes(routes!(runs::resume))
        .routes(routes!(runs::cancel))
        .routes(routes!(records::calls))
        .routes(routes!(records::conversation_stats))
        .routes(routes!(records::global_stats))
        .routes(routes!(spend::spend))
        .routes(routes!(records::tool_stats))
        .routes(routes!(records::tools))
        .routes(routes!(super::tool_checks::validate))
        .routes(routes!(super::catalogue_checks::validate_agent))
        .routes(routes!(super::catalogue_checks::reload))
        .routes(routes!(records::agents))
        .routes(routes!(records::health))
        .routes(routes!(limits::limits))
        .routes(routes!(files::get_file))
        .routes(routes!(files::get_file_content))
        .routes(routes!(scope::whoami))
        .routes(routes!(knowledge::list_bases, knowledge::create_base))
        .routes(routes!(knowledge::get_base, knowledge::remove_base))
        .routes(routes!(knowledge::add_document, knowledge::remove_document))
        .routes(routes!(knowledge::search))
        .routes(routes!(keys_http::list_keys, keys_http::create_key))
        .routes(routes!(keys_http::revoke_key, keys_http::update_key))
        .routes(routes!(
            secrets_http::list_secrets,
            secrets_http::set_secret
        ))
        .routes(routes!(secrets_http::remove_secret))
        .routes(routes!(super::tool_checks::validate_secret))
        .routes(routes!(super::oauth::callback))
        .routes(routes!(super::oauth_http::list_connections))
        .routes(routes!(super::oauth_http::revoke_connection))
        .merge(responses::routes());
    cross_field_rules(router.get_openapi_mut());
    let events = run_events(router.get_openapi_mut());
    event_streams(router.get_openapi_mut(), &events);
    identity_answers(router.get_openapi_mut());
    router
}

/// What every guarded operation may also answer: 403 when the caller's role may not
/// use it, 429 (with `Retry-After`) over a rate limit.
fn identity_answers(doc: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::{RefOr, ResponseBuilder, content::ContentBuilder};
    let error = || -> RefOr<utoipa::openapi::Response> {
        ResponseBuilder::new()
            .description("The error")
            .content(
                "application/json",
                ContentBuilder::new()
                    .schema(Some(RefOr::Ref(utoipa::openapi::Ref::from_schema_name(
                        "ErrorBody",
                    ))))
                    .build(),
            )
            .build()
            .into()
    };
    for (path, item) in doc.paths.paths.iter_mut() {
        if !path.starts_with("/v1/") {
            continue;
        }
        for op in [
            &mut item.get,
            &mut item.post,
            &mut item.put,
            &mut item.delete,
            &mut item.patch,
        ]
        .into_iter()
        .flatten()
        {
            for (status, what) in [
                ("403", "This caller's role may not do this"),
                ("429", "Over a rate limit; see Retry-After"),
            ] {
                if !op.responses.responses.contains_key(status) {
                    let mut answer = error();
                    if let RefOr::T(r) = &mut answer {
                        r.description = what.to_string();
                    }
                    op.responses.responses.insert(status.to_string(), answer);
                }
            }
        }
    }
}

/// `RunEvent` as a `oneOf` of the events' own schemas with `type` as its discriminator,
/// each event's schema naming its `type` (derived, each variant is an `allOf` of its
/// struct and an object holding the `type` alone: a client would see the struct without
/// its name). Returns each event's name and schema, in the enum's order.
fn run_events(doc: &mut utoipa::openapi::OpenApi) -> Vec<(String, String)> {
    use utoipa::openapi::schema::Discriminator;
    use utoipa::openapi::{ObjectBuilder, Ref, RefOr, Schema, Type};
    const PREFIX: &str = "#/components/schemas/";
    let components = doc.components.get_or_insert_with(Default::default);
    let Some(RefOr::T(Schema::OneOf(one_of))) = components.schemas.get_mut("RunEvent") else {
        return Vec::new();
    };
    let mut events = Vec::new();
    for item in &mut one_of.items {
        let RefOr::T(Schema::AllOf(all)) = item else {
            continue;
        };
        let [RefOr::Ref(event), RefOr::T(Schema::Object(tag))] = all.items.as_slice() else {
            continue;
        };
        let name = match tag.properties.get("type") {
            Some(RefOr::T(Schema::Object(t))) => t
                .enum_values
                .as_ref()
                .and_then(|v| v.first())
                .and_then(|v| v.as_str())
                .map(str::to_string),
            _ => None,
        };
        let (Some(name), Some(schema)) = (name, event.ref_location.strip_prefix(PREFIX)) else {
            continue;
        };
        let mut reference = Ref::from_schema_name(schema);
        reference.description = all.description.clone().unwrap_or_default();
        events.push((name, schema.to_string()));
        *item = RefOr::Ref(reference);
    }
    one_of.discriminator = Some(Discriminator::with_mapping(
        "type",
        events
            .iter()
            .map(|(name, schema)| (name.clone(), format!("{PREFIX}{schema}"))),
    ));
    for (name, schema) in &events {
        let Some(mut object) = event_object(components, schema) else {
            continue;
        };
        let tag = ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some([name.as_str()]))
            .description(Some("The event's name"))
            .build();
        let rest = std::mem::take(&mut object.properties);
        object.properties.insert("type".into(), tag.into());
        object.properties.extend(rest);
        object.required.insert(0, "type".into());
        components
            .schemas
            .insert(schema.clone(), RefOr::T(Schema::Object(object)));
    }
    events
}

/// An event's schema as one object. A struct with a flattened field (the approval
/// events' item) is derived as an `allOf` of its own fields and the item's; here its
/// fields and then the item's, its own first where both have one (the event's `run_id`
/// is always a string; a sub-agent's item repeats it with the run that holds the item),
/// so that a client generator does not have to merge a required string with an
/// optional one.
fn event_object(
    components: &utoipa::openapi::Components,
    schema: &str,
) -> Option<utoipa::openapi::Object> {
    use utoipa::openapi::{RefOr, Schema};
    let all = match components.schemas.get(schema)? {
        RefOr::T(Schema::Object(object)) => return Some(object.clone()),
        RefOr::T(Schema::AllOf(all)) => all,
        _ => return None,
    };
    let mut merged = all.items.iter().find_map(|i| match i {
        RefOr::T(Schema::Object(object)) => Some(object.clone()),
        _ => None,
    })?;
    merged.description = all.description.clone();
    for item in &all.items {
        let RefOr::Ref(r) = item else {
            continue;
        };
        let name = r.ref_location.rsplit('/').next().unwrap_or_default();
        let Some(RefOr::T(Schema::Object(flattened))) = components.schemas.get(name) else {
            return None;
        };
        for (field, property) in &flattened.properties {
            if !merged.properties.contains_key(field) {
                merged.properties.insert(field.clone(), property.clone());
            }
        }
        for field in &flattened.required {
            if !merged.required.contains(field) {
                merged.required.push(field.clone());
            }
        }
    }
    Some(merged)
}

/// Every `text/event-stream` answer documented as what it carries: events whose `data`
/// is JSON, each run event under its name (`events`: name and schema), the run object
/// under `event: run` and the error under `event: error` (run streams), a Responses
/// stream event otherwise. Each event is checked against this schema by clients and
/// testers that read SSE (OpenAPI 3.1 `contentMediaType` and `contentSchema`).
fn event_streams(doc: &mut utoipa::openapi::OpenApi, events: &[(String, String)]) {
    use serde_json::json;
    use utoipa::openapi::{ObjectBuilder, RefOr, Schema, Type};
    let json_data = |content_schema: Option<serde_json::Value>| {
        let mut data = ObjectBuilder::new()
            .schema_type(Type::String)
            .description(Some("The event's JSON"))
            .build();
        let ext = data.extensions.get_or_insert_with(Default::default);
        ext.insert("contentMediaType".into(), json!("application/json"));
        if let Some(schema) = content_schema {
            ext.insert("contentSchema".into(), schema);
        }
        data
    };
    let event = |description: &str, data, rules: Option<serde_json::Value>| {
        let mut object = ObjectBuilder::new()
            .schema_type(Type::Object)
            .description(Some(description))
            .property(
                "event",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .description(Some("The event's name")),
            )
            .property("data", data)
            .required("data")
            .build();
        if let Some(rules) = rules {
            object
                .extensions
                .get_or_insert_with(Default::default)
                .insert("allOf".into(), rules);
        }
        RefOr::T(Schema::Object(object))
    };
    let when = |name: &str, schema: &str| {
        json!({
            "if": {"required": ["event"], "properties": {"event": {"const": name}}},
            "then": {"properties": {"data": {
                "contentMediaType": "application/json",
                "contentSchema": {"$ref": format!("#/components/schemas/{schema}")}
            }}}
        })
    };
    let run_stream = event(
        "One event of a run stream: a run event by its name (`run.started`, `text.delta`, ..., as `run --json` prints them), `run` (the run object) or `error`",
        json_data(Some(json!({"type": "object"}))),
        Some(serde_json::Value::Array(
            events
                .iter()
                .map(|(name, schema)| when(name, schema))
                .chain([when("run", "RunObject"), when("error", "ErrorBody")])
                .collect(),
        )),
    );
    let response_stream = event(
        "One event of a Responses stream (`response.created` ... `response.completed`): its `data` carries the same `type`",
        json_data(Some(json!({"type": "object", "required": ["type"]}))),
        None,
    );
    let components = doc.components.get_or_insert_with(Default::default);
    components
        .schemas
        .insert("RunStreamEvent".into(), run_stream);
    components
        .schemas
        .insert("ResponseStreamEvent".into(), response_stream);
    for (path, item) in doc.paths.paths.iter_mut() {
        let target = if path.starts_with("/v1/responses") {
            "ResponseStreamEvent"
        } else {
            "RunStreamEvent"
        };
        for operation in [&mut item.get, &mut item.post].into_iter().flatten() {
            for response in operation.responses.responses.values_mut() {
                if let RefOr::T(response) = response
                    && let Some(RefOr::T(content)) = response.content.get_mut("text/event-stream")
                {
                    content.schema =
                        Some(RefOr::Ref(utoipa::openapi::Ref::from_schema_name(target)));
                }
            }
        }
    }
}

/// The rules between fields of one body that the derived schemas cannot say, added as
/// JSON Schema 2020-12 keywords (OpenAPI 3.1), so that a client (or a property-based
/// tester) reads every rule a handler enforces.
fn cross_field_rules(doc: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::{RefOr, Schema};
    let Some(components) = doc.components.as_mut() else {
        return;
    };
    // `instructions` is refused unless null: an agent's come from its file.
    if let Some(RefOr::T(Schema::Object(object))) = components.schemas.get_mut("CreateResponse") {
        object.properties.insert(
            "instructions".into(),
            utoipa::openapi::ObjectBuilder::new()
                .schema_type(utoipa::openapi::Type::Null)
                .description(Some(
                    "Refused unless null: an agent's instructions come from its agent file.",
                ))
                .into(),
        );
    }
    // A response needs input: a non-blank message, or items.
    if let Some(RefOr::T(Schema::Object(object))) = components.schemas.get_mut("CreateResponse")
        && !object.required.iter().any(|r| r == "input")
    {
        object.required.push("input".into());
    }
    if let Some(RefOr::T(Schema::OneOf(input))) = components.schemas.get_mut("InputDoc") {
        for item in &mut input.items {
            if let RefOr::T(Schema::Array(items)) = item {
                items.min_items = Some(1);
            }
        }
    }
    let mut add = |schema: &str, rules: serde_json::Value| {
        if let Some(RefOr::T(Schema::Object(object))) = components.schemas.get_mut(schema)
            && let serde_json::Value::Object(rules) = rules
        {
            object
                .extensions
                .get_or_insert_with(Default::default)
                .extend(rules);
        }
    };
    // Edited arguments name their call, and are not a standing approval.
    add(
        "ApproveBody",
        serde_json::json!({
            "if": {"required": ["arguments"], "properties": {"arguments": {"type": "object"}}},
            "then": {
                "required": ["call_id"],
                "properties": {"call_id": {"type": "string"}, "always": {"const": false}}
            }
        }),
    );
}

/// The document as derived from the handlers (before [`super::openapi_valid::finish`]).
pub fn openapi() -> utoipa::openapi::OpenApi {
    routes().into_openapi()
}

/// The document as served at `/openapi.json` (for `toolgate serve --openapi`, tests and
/// tools): valid OpenAPI 3.1, typed for client generators.
pub fn document() -> serde_json::Value {
    super::openapi_valid::finish(serde_json::to_value(openapi()).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn every_run_event_has_its_schema_and_its_json_meets_it() {
        let doc = document();
        let schemas = &doc["components"]["schemas"];
        let run_event = &schemas["RunEvent"];
        assert_eq!(run_event["discriminator"]["propertyName"], "type");
        assert_eq!(
            run_event["oneOf"].as_array().unwrap().len(),
            RunEvent::NAMES.len()
        );
        for name in RunEvent::NAMES {
            let reference = run_event["discriminator"]["mapping"][name]
                .as_str()
                .unwrap();
            let schema = reference.strip_prefix("#/components/schemas/").unwrap();
            let fields = match schemas[schema]["allOf"].as_array() {
                Some(all) => all.iter().find(|s| s["type"] == "object").unwrap(),
                None => &schemas[schema],
            };
            assert_eq!(
                fields["properties"]["type"]["enum"],
                serde_json::json!([name])
            );
            assert_eq!(fields["required"][0], "type", "{name}");
        }
        let mut root = serde_json::json!({"$ref": "#/components/schemas/RunEvent"});
        root["components"] = doc["components"].clone();
        let validator = jsonschema::validator_for(&root).unwrap();
        for (event, json) in toolgate_protocol::samples::every_event() {
            let value: serde_json::Value = serde_json::from_str(json).unwrap();
            let errors: Vec<String> = validator
                .iter_errors(&value)
                .map(|e| e.to_string())
                .collect();
            assert!(errors.is_empty(), "{}: {errors:?}", event.name());
            // And not an event of another name.
            let mut renamed = value.clone();
            renamed["type"] = "run.elsewhere".into();
            assert!(!validator.is_valid(&renamed), "{}", event.name());
        }
    }
}
