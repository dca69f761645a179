//! The OpenAPI 3 document, generated from the handlers and their types, and the routes
//! it describes.

use std::sync::Arc;

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{AppState, records, responses, runs};

#[derive(OpenApi)]
#[openapi(
    info(title = "toolgate", description = "The toolgate run API: agent runs with gated tool calls, durable pauses, decisions and records."),
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
        .routes(routes!(runs::watch_run))
        .routes(routes!(runs::approve))
        .routes(routes!(runs::deny))
        .routes(routes!(runs::submit))
        .routes(routes!(runs::resume))
        .routes(routes!(runs::cancel))
        .routes(routes!(records::calls))
        .routes(routes!(records::conversation_stats))
        .routes(routes!(records::global_stats))
        .routes(routes!(records::tool_stats))
        .routes(routes!(records::tools))
        .routes(routes!(records::agents))
        .routes(routes!(records::health))
        .merge(responses::routes());
    cross_field_rules(router.get_openapi_mut());
    router
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

/// The document alone (for `toolgate serve --openapi`, tests and tools).
pub fn openapi() -> utoipa::openapi::OpenApi {
    routes().into_openapi()
}
