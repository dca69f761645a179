//! `/v1/knowledge`: a tenant's knowledge bases over HTTP. Everyone reads the list and a
//! base; clients and admins search; admins create, upload documents and remove (the
//! table in `roles.rs`). Another tenant's base is a 404, like an unknown one.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use base64::Engine;
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use toolgate_knowledge::{
    BaseDetail, BaseRow, ChunkSize, Imported, Knowledge, KnowledgeError, Mode, Passage, Query,
    parse_spec,
};

use super::scope::Caller;
use super::{ApiError, ApiJson, ApiQuery, AppState, ErrorBody, PathId};

/// A knowledge base to create.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateBase {
    pub name: String,
    /// `openai:MODEL` for semantic and hybrid search, or `none` (the default).
    #[serde(default)]
    pub embeddings: Option<String>,
    /// Characters per chunk (default 800) and shared by neighbours (default 100).
    #[serde(default)]
    pub chunk: Option<usize>,
    #[serde(default)]
    pub overlap: Option<usize>,
}

/// A document to add: its name (the extension says its kind) and its content, as text
/// or, for a PDF, base64.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UploadDocument {
    pub source: String,
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub base64: Option<String>,
}

/// A search.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchRequest {
    pub query: String,
    #[serde(default)]
    pub top_k: Option<usize>,
    /// The lowest score kept, 0 to 1 (the same scale in every mode).
    #[serde(default)]
    pub threshold: Option<f64>,
    #[serde(default)]
    pub mode: Option<Mode>,
    /// A rerank model (the server's rerank endpoint).
    #[serde(default)]
    pub rerank: Option<String>,
}

/// The passages found, best first.
#[derive(Debug, serde::Serialize, ToSchema)]
pub struct SearchAnswer {
    pub passages: Vec<Passage>,
}

/// Which source to remove.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SourceQuery {
    /// The source, as the base lists it.
    pub source: String,
}

/// A knowledge error as the API's: an unknown base 404, bad input 400, a name taken
/// 409, an embeddings or rerank endpoint failing 502.
fn api_error(e: KnowledgeError) -> ApiError {
    match e {
        KnowledgeError::NoBase(_) => {
            ApiError::new(StatusCode::NOT_FOUND, "not_found", e.to_string())
        }
        KnowledgeError::Invalid(_) => ApiError::bad_request(e.to_string()),
        KnowledgeError::Endpoint(_) => {
            ApiError::new(StatusCode::BAD_GATEWAY, "upstream", e.to_string())
        }
        KnowledgeError::Store(s) => s.into(),
    }
}

fn bases(state: &AppState, who: &toolgate_protocol::identity::Identity) -> Knowledge {
    Knowledge::new(state.runner.store.clone(), &who.tenant)
}

/// The caller's tenant's knowledge bases.
#[utoipa::path(get, path = "/v1/knowledge", tag = "knowledge",
    responses((status = 200, body = Vec<BaseRow>), (status = 401, body = ErrorBody), (status = 500, body = ErrorBody)))]
pub async fn list_bases(
    State(state): State<Arc<AppState>>,
    Caller(who): Caller,
) -> Result<Json<Vec<BaseRow>>, ApiError> {
    Ok(Json(bases(&state, &who).list().await.map_err(api_error)?))
}

/// Creates a knowledge base (admins).
#[utoipa::path(post, path = "/v1/knowledge", tag = "knowledge", request_body = CreateBase,
    responses((status = 201, body = BaseRow), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 409, description = "The tenant has a base of that name", body = ErrorBody), (status = 500, body = ErrorBody)))]
pub async fn create_base(
    State(state): State<Arc<AppState>>,
    Caller(who): Caller,
    ApiJson(req): ApiJson<CreateBase>,
) -> Result<(StatusCode, Json<BaseRow>), ApiError> {
    let defaults = ChunkSize::default();
    let size = ChunkSize::new(
        req.chunk.unwrap_or(defaults.size),
        req.overlap.unwrap_or(defaults.overlap),
    )
    .map_err(ApiError::bad_request)?;
    let model = parse_spec(req.embeddings.as_deref().unwrap_or("none")).map_err(api_error)?;
    let base = bases(&state, &who)
        .create(&req.name, model, size)
        .await
        .map_err(api_error)?;
    Ok((StatusCode::CREATED, Json(base)))
}

/// A knowledge base and its sources.
#[utoipa::path(get, path = "/v1/knowledge/{name}", tag = "knowledge",
    params(("name" = String, Path, description = "A knowledge base")),
    responses((status = 200, body = BaseDetail), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody), (status = 500, body = ErrorBody)))]
pub async fn get_base(
    State(state): State<Arc<AppState>>,
    Caller(who): Caller,
    PathId(name): PathId,
) -> Result<Json<BaseDetail>, ApiError> {
    Ok(Json(
        bases(&state, &who).show(&name).await.map_err(api_error)?,
    ))
}

/// Removes a knowledge base and everything in it (admins).
#[utoipa::path(delete, path = "/v1/knowledge/{name}", tag = "knowledge",
    params(("name" = String, Path, description = "A knowledge base")),
    responses((status = 204, description = "Removed"), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody), (status = 500, body = ErrorBody)))]
pub async fn remove_base(
    State(state): State<Arc<AppState>>,
    Caller(who): Caller,
    PathId(name): PathId,
) -> Result<StatusCode, ApiError> {
    bases(&state, &who).remove(&name).await.map_err(api_error)?;
    Ok(StatusCode::NO_CONTENT)
}

/// Adds (or replaces) one document (admins): unchanged content is left as it is.
#[utoipa::path(post, path = "/v1/knowledge/{name}/documents", tag = "knowledge", request_body = UploadDocument,
    params(("name" = String, Path, description = "A knowledge base")),
    responses((status = 200, body = Imported), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 502, body = ErrorBody), (status = 500, body = ErrorBody)))]
pub async fn add_document(
    State(state): State<Arc<AppState>>,
    Caller(who): Caller,
    PathId(name): PathId,
    ApiJson(req): ApiJson<UploadDocument>,
) -> Result<Json<Imported>, ApiError> {
    let bytes = match (req.text, req.base64) {
        (Some(text), None) => text.into_bytes(),
        (None, Some(b64)) => base64::engine::general_purpose::STANDARD
            .decode(b64.trim())
            .map_err(|e| ApiError::bad_request(format!("base64: {e}")))?,
        _ => {
            return Err(ApiError::bad_request(
                "give the document as text or as base64 (one of them)",
            ));
        }
    };
    if req.source.trim().is_empty() || req.source.chars().any(char::is_control) {
        return Err(ApiError::bad_request(
            "source must name the document (its extension says its kind)",
        ));
    }
    let kb = bases(&state, &who);
    let base = kb.base(&name).await.map_err(api_error)?;
    Ok(Json(
        kb.add_bytes(&base, &req.source, &bytes)
            .await
            .map_err(api_error)?,
    ))
}

/// Removes one source from a knowledge base (admins).
#[utoipa::path(delete, path = "/v1/knowledge/{name}/documents", tag = "knowledge",
    params(("name" = String, Path, description = "A knowledge base"), SourceQuery),
    responses((status = 204, description = "Removed"), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 500, body = ErrorBody)))]
pub async fn remove_document(
    State(state): State<Arc<AppState>>,
    Caller(who): Caller,
    PathId(name): PathId,
    ApiQuery(q): ApiQuery<SourceQuery>,
) -> Result<StatusCode, ApiError> {
    bases(&state, &who)
        .remove_source(&name, &q.source)
        .await
        .map_err(api_error)?;
    Ok(StatusCode::NO_CONTENT)
}

/// Searches a knowledge base (clients and admins).
#[utoipa::path(post, path = "/v1/knowledge/{name}/search", tag = "knowledge", request_body = SearchRequest,
    params(("name" = String, Path, description = "A knowledge base")),
    responses((status = 200, body = SearchAnswer), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 502, body = ErrorBody), (status = 500, body = ErrorBody)))]
pub async fn search(
    State(state): State<Arc<AppState>>,
    Caller(who): Caller,
    PathId(name): PathId,
    ApiJson(req): ApiJson<SearchRequest>,
) -> Result<Json<SearchAnswer>, ApiError> {
    let query = Query {
        text: req.query,
        top_k: req.top_k.unwrap_or(5),
        threshold: req.threshold.unwrap_or(0.0),
        mode: req.mode,
        rerank: req.rerank,
    };
    let passages = bases(&state, &who)
        .search(&name, &query)
        .await
        .map_err(api_error)?;
    Ok(Json(SearchAnswer { passages }))
}
