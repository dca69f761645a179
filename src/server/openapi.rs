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
    OpenApiRouter::with_openapi(ApiDoc::openapi())
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
        .merge(responses::routes())
}

/// The document alone (for `toolgate serve --openapi`, tests and tools).
pub fn openapi() -> utoipa::openapi::OpenApi {
    routes().into_openapi()
}
