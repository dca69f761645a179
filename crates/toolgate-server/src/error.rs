//! The server's errors: one JSON shape, `{"error": {"type", "message"}}`, with the HTTP
//! status chosen from the error's kind, never from its text.

use axum::Json;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use toolgate_runtime::run::RunError;
use toolgate_store::StoreError;

/// What every failed request answers.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// A stable kind for code: `bad_request`, `unauthorized`, `not_found`,
    /// `unknown_tool`, `invalid_arguments`, `lease_held`, `not_resumable`,
    /// `decision_conflict`, `store`, ...
    #[serde(rename = "type")]
    pub kind: String,
    /// What went wrong, for people.
    pub message: String,
}

/// A failed request: its status and body.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub kind: String,
    pub message: String,
    /// Seconds for a `Retry-After` header (429).
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(status: StatusCode, kind: &str, message: impl Into<String>) -> Self {
        Self {
            status,
            kind: kind.to_string(),
            message: message.into(),
            retry_after: None,
        }
    }

    /// The same error, answered with `Retry-After: seconds`.
    pub fn retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }

    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            error: ErrorDetail {
                kind: self.kind.clone(),
                message: self.message.clone(),
            },
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.status.is_server_error() {
            tracing::error!(kind = %self.kind, message = %self.message, "request failed");
        }
        let mut response = (self.status, Json(self.body())).into_response();
        if let Some(s) = self.retry_after
            && let Ok(v) = axum::http::HeaderValue::from_str(&s.to_string())
        {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, v);
        }
        response
    }
}

impl From<RunError> for ApiError {
    fn from(e: RunError) -> Self {
        let status = match &e {
            RunError::BadInput(_) | RunError::UnknownTool(_) => StatusCode::BAD_REQUEST,
            RunError::InvalidArguments(_) => StatusCode::UNPROCESSABLE_ENTITY,
            RunError::NotFound(_) => StatusCode::NOT_FOUND,
            RunError::Refused { .. } => StatusCode::CONFLICT,
            RunError::Store(_) | RunError::Corrupt(_) | RunError::Secret(_) => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
        };
        ApiError::new(status, e.kind(), e.to_string())
    }
}

impl From<StoreError> for ApiError {
    /// As the run's error: a run not found is a 404, a refusal a 409, the database 500.
    fn from(e: StoreError) -> Self {
        ApiError::from(RunError::from(e))
    }
}

impl From<JsonRejection> for ApiError {
    fn from(e: JsonRejection) -> Self {
        ApiError::bad_request(e.body_text())
    }
}

impl From<QueryRejection> for ApiError {
    fn from(e: QueryRejection) -> Self {
        ApiError::bad_request(e.body_text())
    }
}

/// A JSON object body whose rejection is an [`ApiError`], not axum's plain text. Every
/// body the API takes is an object: any other JSON value (an array, which serde would
/// otherwise read field by field, a string, `null`) is refused.
pub struct ApiJson<T>(pub T);

impl<T, S> FromRequest<S> for ApiJson<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, ApiError> {
        let Json(value) = Json::<serde_json::Value>::from_request(req, state).await?;
        if !value.is_object() {
            return Err(ApiError::bad_request(format!(
                "the request body must be a JSON object, not {}",
                match value {
                    serde_json::Value::Array(_) => "an array",
                    serde_json::Value::String(_) => "a string",
                    serde_json::Value::Number(_) => "a number",
                    serde_json::Value::Bool(_) => "a boolean",
                    _ => "null",
                }
            )));
        }
        // Read again as T through axum, for its messages naming the field at fault.
        let bytes = serde_json::to_vec(&value)
            .map_err(|e| ApiError::bad_request(format!("the body could not be read: {e}")))?;
        let Json(body) = Json::<T>::from_bytes(&bytes)?;
        Ok(ApiJson(body))
    }
}

/// One path parameter naming something (a run, a conversation, a tool, an agent): text
/// of at most 256 characters and no control character, or the API's 400 (a path that
/// is not UTF-8 included), never axum's plain-text rejection.
pub struct PathId(pub String);

impl<S: Send + Sync> FromRequestParts<S> for PathId {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, Self::Rejection> {
        let axum::extract::Path(id) =
            axum::extract::Path::<String>::from_request_parts(parts, state)
                .await
                .map_err(|e| ApiError::bad_request(e.body_text()))?;
        if id.is_empty() || id.chars().count() > 256 || id.chars().any(char::is_control) {
            return Err(ApiError::bad_request(
                "a path names an id, a name or a conversation: 1 to 256 characters, no control characters",
            ));
        }
        Ok(PathId(id))
    }
}

/// A query string whose rejection is an [`ApiError`].
#[derive(FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub struct ApiQuery<T>(pub T);
