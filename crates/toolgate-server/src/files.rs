//! `GET /v1/files/{id}` (and `/v1/files/{id}/content`, where OpenAI's SDKs read a
//! file's bytes): a file saved from a tool's binary result, served with its content
//! type to callers who see its run's tenant (another tenant's file is a 404, like an
//! unknown one).

use std::sync::Arc;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use super::AppState;
use super::error::{ApiError, ErrorBody, PathId};
use super::scope::Caller;
use toolgate_protocol::file::run_of;

/// A saved file's bytes, with its content type and name.
#[utoipa::path(get, path = "/v1/files/{id}", tag = "files",
    params(("id" = String, Path, description = "A file id, as run objects and tool results name it")),
    responses((status = 200, description = "The file's bytes, with its content type", content_type = "application/octet-stream", body = Vec<u8>),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody), (status = 500, body = ErrorBody)))]
pub async fn get_file(
    State(state): State<Arc<AppState>>,
    Caller(who): Caller,
    PathId(id): PathId,
) -> Result<Response, ApiError> {
    serve(&state, &who, &id).await
}

/// The same bytes, where OpenAI's `files.content(id)` reads them.
#[utoipa::path(get, path = "/v1/files/{id}/content", tag = "files",
    params(("id" = String, Path, description = "A file id")),
    responses((status = 200, description = "The file's bytes, with its content type", content_type = "application/octet-stream", body = Vec<u8>),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody), (status = 500, body = ErrorBody)))]
pub async fn get_file_content(
    State(state): State<Arc<AppState>>,
    Caller(who): Caller,
    PathId(id): PathId,
) -> Result<Response, ApiError> {
    serve(&state, &who, &id).await
}

async fn serve(
    state: &AppState,
    who: &toolgate_protocol::identity::Identity,
    id: &str,
) -> Result<Response, ApiError> {
    let missing = || ApiError::not_found(format!("there is no file '{id}'"));
    let run_id = run_of(id).ok_or_else(missing)?;
    // A run this caller may not see is a 404 for its files too.
    let run = state.run_for(who, run_id).await.map_err(|_| missing())?;
    let (file, bytes) = state.runner.file(&run.id, id).await?.ok_or_else(missing)?;
    let disposition = format!(
        "inline; filename=\"{}\"",
        file.name.replace(['"', '\\', '\r', '\n'], "_")
    );
    Ok((
        [
            (header::CONTENT_TYPE, file.mime),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        bytes,
    )
        .into_response())
}
