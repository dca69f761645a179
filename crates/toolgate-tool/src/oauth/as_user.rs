//! A call made as the run's user: with the user's access token, and once more with a
//! refreshed one when the resource refuses it (a 401 the tool noted).

use super::OAuthProvider;
use crate::{ToolContext, ToolError, ToolOutput};

/// Sends a call that acts for the run's user through OAuth: `send` with the user's
/// access token, and, when the resource refuses it (401), once more with a refreshed
/// one. A user who has not connected (or whose grant was revoked) is an error result.
pub async fn as_user<F, Fut>(
    ctx: &ToolContext,
    tool: &str,
    provider: &OAuthProvider,
    send: F,
) -> Result<ToolOutput, ToolError>
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = Result<ToolOutput, ToolError>>,
{
    let tokens = ctx.user_tokens.as_ref().ok_or_else(|| {
        ToolError::Execution(format!(
            "'{tool}' acts for a user through OAuth ({}), and nothing here holds users' tokens",
            provider.name
        ))
    })?;
    let usable = |token: Result<Option<String>, String>| {
        token
            .map_err(|e| ToolError::Execution(format!("the user's {} token: {e}", provider.name)))?
            .ok_or_else(|| {
                ToolError::Execution(format!(
                    "the user has not connected {} (or its authorization was revoked); the call was not made",
                    provider.name
                ))
            })
    };
    let first = send(usable(tokens.token(provider, &ctx.run).await)?).await;
    if ctx.noted_status() != Some(401) {
        return first;
    }
    tracing::debug!(tool = %tool, provider = %provider.name, "the resource refused the user's token; refreshing it once");
    send(usable(tokens.after_unauthorized(provider, &ctx.run).await)?).await
}
