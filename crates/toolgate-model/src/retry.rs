//! Retries of one model request, for every provider: an attempt that failed in a way
//! worth retrying (a dropped stream, 429, 5xx, overloaded) waits and goes again, the
//! wait doubling up to 30 s; one the model refused fails at once (as "context length
//! exceeded" when the prompt was too long).

use std::time::Duration;

use super::{ModelError, ReplySink};

/// Why one attempt failed.
pub(super) enum Failure {
    /// Worth another attempt.
    Retry(String),
    /// Refused: another attempt would be refused too.
    Fatal(String),
    /// The prompt is longer than the model's window.
    TooLong(String),
}

/// Where a request's attempts stand.
pub(super) struct Retries {
    attempts: u32,
    made: u32,
    wait: Duration,
}

impl Retries {
    /// Up to `attempts` attempts (at least one), `backoff` first between them.
    pub fn new(attempts: u32, backoff: Duration) -> Retries {
        Retries {
            attempts: attempts.max(1),
            made: 0,
            wait: backoff,
        }
    }

    /// After a failed attempt: the error the request ends with, or `None` once the wait
    /// before the next attempt is over (`sink` told of the retry).
    pub async fn after(
        &mut self,
        failure: Failure,
        sink: &mut dyn ReplySink,
    ) -> Option<ModelError> {
        self.made += 1;
        let message = match failure {
            Failure::TooLong(message) => return Some(ModelError::ContextExceeded(message)),
            Failure::Fatal(message) => return Some(ModelError::Rejected(message)),
            Failure::Retry(message) => message,
        };
        if self.made >= self.attempts {
            let attempts = self.attempts;
            tracing::warn!(attempts, error = %message, "model request failed on its last attempt");
            return Some(ModelError::Unavailable {
                attempts,
                last: message,
            });
        }
        let (attempt, wait) = (self.made, self.wait);
        tracing::warn!(attempt, wait_ms = wait.as_millis() as u64, error = %message, "model request failed; retrying");
        sink.retrying(attempt, wait, &message);
        tokio::time::sleep(wait).await;
        self.wait = wait.saturating_mul(2).min(Duration::from_secs(30));
        None
    }
}
