//! The consent URL: the authorization request (RFC 6749 §4.1.1) with a `state` that is
//! 256 random bits and a PKCE S256 challenge (RFC 7636) of a verifier kept by the
//! server until the callback.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use sha2::{Digest, Sha256};

use super::{Endpoints, OAuthError, OAuthProvider};

/// A started consent: the URL the user opens, and what the callback needs back.
pub struct Consent {
    pub url: String,
    /// Unguessable; the callback finds the consent by it, once.
    pub state: String,
    /// The PKCE verifier sent with the code.
    pub verifier: String,
}

impl std::fmt::Debug for Consent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consent")
            .field("url", &"[consent url]")
            .finish_non_exhaustive()
    }
}

impl Consent {
    /// A new consent for `provider` at `endpoints` as client `client_id`, coming back
    /// to `redirect_uri`. The scopes are the provider's, else those the resource
    /// supports; the resource, when there is one, is named (RFC 8707).
    pub fn begin(
        provider: &OAuthProvider,
        endpoints: &Endpoints,
        client_id: &str,
        redirect_uri: &str,
    ) -> Result<Consent, OAuthError> {
        let state = random_token()?;
        let verifier = random_token()?;
        let mut url = url::Url::parse(&endpoints.authorize).map_err(|e| {
            OAuthError::Declaration(format!("the authorization endpoint is not a URL: {e}"))
        })?;
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("response_type", "code")
                .append_pair("client_id", client_id)
                .append_pair("redirect_uri", redirect_uri)
                .append_pair("state", &state)
                .append_pair("code_challenge", &challenge_of(&verifier))
                .append_pair("code_challenge_method", "S256");
            let scopes = if provider.scopes.is_empty() {
                &endpoints.scopes
            } else {
                &provider.scopes
            };
            if !scopes.is_empty() {
                q.append_pair("scope", &scopes.join(" "));
            }
            if let Some(resource) = &endpoints.resource {
                q.append_pair("resource", resource);
            }
        }
        Ok(Consent {
            url: url.into(),
            state,
            verifier,
        })
    }
}

/// 32 random bytes, base64url without padding (43 characters).
pub fn random_token() -> Result<String, OAuthError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| OAuthError::Declaration(format!("no randomness for a state: {e}")))?;
    Ok(B64.encode(bytes))
}

/// The S256 challenge of a PKCE verifier.
pub fn challenge_of(verifier: &str) -> String {
    B64.encode(Sha256::digest(verifier.as_bytes()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The value Python's hashlib and base64 give (an independent implementation).
    #[test]
    fn the_challenge_is_sha256_in_base64url() {
        assert_eq!(
            challenge_of("dBjftJeZ4CVP-mJ92K9PBLIHB4iSUi42EPg_Vu2tE6M"),
            "mXLofd7LK2GNo3Ix7vsqtD8-C3c6wZ2XoBsBgG-USWQ"
        );
    }

    #[test]
    fn states_are_long_and_new_each_time() {
        let (a, b) = (random_token().unwrap(), random_token().unwrap());
        assert_eq!(a.len(), 43);
        assert_ne!(a, b);
    }
}
