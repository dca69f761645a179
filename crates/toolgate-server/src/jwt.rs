//! An app's own login: its JWTs accepted as bearer tokens, signed with a shared HS256
//! secret (`--jwt-secret-file`) or with keys of a JWKS (`--jwks FILE|URL`, RS256 or
//! ES256), `exp`/`nbf` and the configured `aud`/`iss` checked, and claims mapped to an
//! identity (`--jwt-claims sub=sub,tenant=org_id,roles=roles,groups=groups`; the
//! `agents` and `tools` claims, when a token has them, limit it as a key's allow-lists
//! do: `agents=allowed_agents,tools=allowed_tools` renames them). A JWKS
//! URL is read again every [`JWKS_REFRESH`], so that keys the app rotates in are taken.

/// How often a `--jwks URL` is read again.
pub const JWKS_REFRESH: std::time::Duration = std::time::Duration::from_secs(300);

use std::path::Path;

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode, decode_header};
use serde_json::Value;

use toolgate_protocol::identity::{Allow, Identity, Role, Roles};

/// Which claim holds each part of an identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimMap {
    pub sub: String,
    pub tenant: String,
    pub roles: String,
    pub groups: String,
    /// The agents it may start (absent: any).
    pub agents: String,
    /// The tools its runs may call (absent: any).
    pub tools: String,
}

impl Default for ClaimMap {
    fn default() -> Self {
        ClaimMap {
            sub: "sub".into(),
            tenant: "tenant".into(),
            roles: "roles".into(),
            groups: "groups".into(),
            agents: "agents".into(),
            tools: "tools".into(),
        }
    }
}

/// Why JWT authentication cannot be set up, or a token is refused; each the one line
/// shown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JwtError {
    /// `--jwt-claims` is not a claim map.
    #[error("{0}")]
    Claims(String),
    /// The keys (`--jwt-secret-file`, `--jwks`) cannot be read.
    #[error("{0}")]
    Keys(String),
    /// A token is not accepted.
    #[error("{0}")]
    Refused(String),
}

impl ClaimMap {
    /// `sub=sub,tenant=org_id,roles=roles,groups=groups` (any subset; the rest keep
    /// their default names).
    pub fn parse(text: &str) -> Result<ClaimMap, JwtError> {
        Self::parse_text(text).map_err(JwtError::Claims)
    }

    /// [`ClaimMap::parse`], its error the message.
    fn parse_text(text: &str) -> Result<ClaimMap, String> {
        let mut map = ClaimMap::default();
        for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (field, claim) = pair.split_once('=').ok_or_else(|| {
                format!(
                    "--jwt-claims: '{pair}' is not FIELD=CLAIM (fields: sub, tenant, roles, groups, agents, tools)"
                )
            })?;
            let claim = claim.trim().to_string();
            if claim.is_empty() {
                return Err(format!("--jwt-claims: '{pair}' names no claim"));
            }
            match field.trim() {
                "sub" => map.sub = claim,
                "tenant" => map.tenant = claim,
                "roles" => map.roles = claim,
                "groups" => map.groups = claim,
                "agents" => map.agents = claim,
                "tools" => map.tools = claim,
                other => {
                    return Err(format!(
                        "--jwt-claims: unknown field '{other}' (fields: sub, tenant, roles, groups, agents, tools)"
                    ));
                }
            }
        }
        Ok(map)
    }
}

/// The keys tokens are checked with.
enum Keys {
    Secret(DecodingKey),
    /// Each key with its `kid` (when it has one) and algorithm.
    Set(Vec<(Option<String>, Algorithm, DecodingKey)>),
}

/// Checks tokens and maps their claims.
pub struct JwtVerifier {
    keys: std::sync::RwLock<Keys>,
    source: KeySource,
    claims: ClaimMap,
    audience: Option<String>,
    issuer: Option<String>,
}

impl std::fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("claims", &self.claims)
            .field("audience", &self.audience)
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

/// Where the keys come from.
#[derive(Debug, Clone)]
pub enum KeySource {
    SecretFile(std::path::PathBuf),
    /// A JWKS file, or an `http(s)://` URL fetched at start.
    Jwks(String),
}

impl JwtVerifier {
    /// Reads the keys (fetching a JWKS URL once, now).
    pub async fn load(
        source: &KeySource,
        claims: ClaimMap,
        audience: Option<String>,
        issuer: Option<String>,
    ) -> Result<JwtVerifier, JwtError> {
        let keys = Self::read_keys(source).await.map_err(JwtError::Keys)?;
        Ok(JwtVerifier {
            keys: std::sync::RwLock::new(keys),
            source: source.clone(),
            claims,
            audience,
            issuer,
        })
    }

    /// The keys of `source`, or why they cannot be read.
    async fn read_keys(source: &KeySource) -> Result<Keys, String> {
        Ok(match source {
            KeySource::SecretFile(path) => Keys::Secret(secret_key(path)?),
            KeySource::Jwks(place) => Keys::Set(jwks_keys(&jwks_text(place).await?, place)?),
        })
    }

    /// Whether the keys come from a URL (and are worth reading again).
    pub fn refreshes(&self) -> bool {
        matches!(&self.source, KeySource::Jwks(p) if p.starts_with("http://") || p.starts_with("https://"))
    }

    /// Reads a JWKS URL again; on failure the keys in hand stay (and the reason is
    /// returned).
    pub async fn refresh(&self) -> Result<(), JwtError> {
        self.refresh_text().await.map_err(JwtError::Keys)
    }

    /// [`JwtVerifier::refresh`], its error the message.
    async fn refresh_text(&self) -> Result<(), String> {
        let KeySource::Jwks(place) = &self.source else {
            return Ok(());
        };
        let keys = Keys::Set(jwks_keys(&jwks_text(place).await?, place)?);
        match self.keys.write() {
            Ok(mut held) => {
                *held = keys;
                Ok(())
            }
            Err(_) => Err("the JWKS lock is poisoned".into()),
        }
    }

    /// The identity a token stands for, or why it is refused (one line).
    pub fn verify(&self, token: &str) -> Result<Identity, JwtError> {
        self.verify_text(token).map_err(JwtError::Refused)
    }

    /// [`JwtVerifier::verify`], its error the message.
    fn verify_text(&self, token: &str) -> Result<Identity, String> {
        let header = decode_header(token).map_err(|e| format!("the token is not a JWT: {e}"))?;
        let keys = self
            .keys
            .read()
            .map_err(|_| "the JWKS lock is poisoned".to_string())?;
        let (alg, key) = match &*keys {
            Keys::Secret(k) => (Algorithm::HS256, k),
            Keys::Set(keys) => keys
                .iter()
                .find(|(kid, alg, _)| {
                    *alg == header.alg
                        && (header.kid.is_none() || kid.as_deref() == header.kid.as_deref())
                })
                .map(|(_, alg, k)| (*alg, k))
                .ok_or_else(|| {
                    format!(
                        "no key of the JWKS fits the token (alg {:?}, kid {})",
                        header.alg,
                        header.kid.as_deref().unwrap_or("none")
                    )
                })?,
        };
        if header.alg != alg {
            return Err(format!(
                "the token is signed with {:?}; this server takes {alg:?}",
                header.alg
            ));
        }
        let mut validation = Validation::new(alg);
        validation.validate_nbf = true;
        validation.leeway = 30;
        match &self.audience {
            Some(aud) => validation.set_audience(&[aud]),
            None => validation.validate_aud = false,
        }
        if let Some(iss) = &self.issuer {
            validation.set_issuer(&[iss]);
        }
        let data = decode::<Value>(token, key, &validation).map_err(|e| {
            use jsonwebtoken::errors::ErrorKind as K;
            match e.kind() {
                K::ExpiredSignature => "the token has expired".to_string(),
                K::ImmatureSignature => "the token is not valid yet (nbf)".to_string(),
                K::InvalidAudience => "the token is for another audience (aud)".to_string(),
                K::InvalidIssuer => "the token is from another issuer (iss)".to_string(),
                K::InvalidSignature => "the token's signature is wrong".to_string(),
                K::MissingRequiredClaim(c) => format!("the token has no '{c}' claim"),
                _ => format!("the token is refused: {e}"),
            }
        })?;
        self.identity(&data.claims)
    }

    fn identity(&self, claims: &Value) -> Result<Identity, String> {
        let text = |name: &str| claims.get(name).and_then(Value::as_str).map(str::to_string);
        let list = |name: &str| -> Vec<String> {
            match claims.get(name) {
                Some(Value::String(s)) => s
                    .split([',', ' '])
                    .filter(|x| !x.is_empty())
                    .map(str::to_string)
                    .collect(),
                Some(Value::Array(a)) => a
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect(),
                _ => Vec::new(),
            }
        };
        let sub = text(&self.claims.sub)
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| format!("the token has no '{}' claim (its subject)", self.claims.sub))?;
        let tenant = text(&self.claims.tenant)
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| {
                format!(
                    "the token has no '{}' claim (its tenant)",
                    self.claims.tenant
                )
            })?;
        let roles = Roles::of(
            &list(&self.claims.roles)
                .iter()
                .filter_map(|r| r.trim().parse::<Role>().ok())
                .collect::<Vec<_>>(),
        );
        if roles.is_empty() {
            return Err(format!(
                "the token's '{}' claim names no role (client, approver or admin)",
                self.claims.roles
            ));
        }
        // An allow-list claim, when present, limits; one that is not a list (or a
        // string of names) allows nothing.
        let limit = |name: &str| claims.get(name).map(|_| list(name));
        Ok(Identity {
            name: sub,
            key_id: None,
            roles,
            tenant,
            groups: list(&self.claims.groups),
            allow: Allow {
                agents: limit(&self.claims.agents),
                tools: limit(&self.claims.tools),
            },
        })
    }
}

fn secret_key(path: &Path) -> Result<DecodingKey, String> {
    let text = std::fs::read(path)
        .map_err(|e| format!("cannot read --jwt-secret-file {}: {e}", path.display()))?;
    let secret = text.trim_ascii();
    if secret.len() < 32 {
        return Err(format!(
            "--jwt-secret-file {}: an HS256 secret needs at least 32 bytes",
            path.display()
        ));
    }
    Ok(DecodingKey::from_secret(secret))
}

async fn jwks_text(place: &str) -> Result<String, String> {
    if place.starts_with("http://") || place.starts_with("https://") {
        let response = reqwest::Client::new()
            .get(place)
            .timeout(std::time::Duration::from_secs(10))
            .send()
            .await
            .map_err(|e| format!("cannot fetch --jwks {place}: {e}"))?;
        if !response.status().is_success() {
            return Err(format!("--jwks {place} answered {}", response.status()));
        }
        return response
            .text()
            .await
            .map_err(|e| format!("cannot read --jwks {place}: {e}"));
    }
    std::fs::read_to_string(place).map_err(|e| format!("cannot read --jwks {place}: {e}"))
}

fn jwks_keys(
    text: &str,
    place: &str,
) -> Result<Vec<(Option<String>, Algorithm, DecodingKey)>, String> {
    let set: JwkSet =
        serde_json::from_str(text).map_err(|e| format!("--jwks {place} is not a JWKS: {e}"))?;
    let mut keys = Vec::new();
    for jwk in &set.keys {
        use jsonwebtoken::jwk::AlgorithmParameters as P;
        let alg = match &jwk.algorithm {
            P::RSA(_) => Algorithm::RS256,
            P::EllipticCurve(_) => Algorithm::ES256,
            _ => continue,
        };
        let key = DecodingKey::from_jwk(jwk)
            .map_err(|e| format!("--jwks {place}: a key cannot be read: {e}"))?;
        keys.push((jwk.common.key_id.clone(), alg, key));
    }
    if keys.is_empty() {
        return Err(format!("--jwks {place} holds no RS256 or ES256 key"));
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A key the app rotates in is taken at the next refresh of a JWKS URL.
    #[tokio::test]
    async fn a_refreshed_jwks_takes_rotated_keys() {
        use base64::Engine as _;
        use wiremock::matchers::path;
        use wiremock::{Mock, MockServer, ResponseTemplate};
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let jwks = |pair: &rcgen::KeyPair, kid: &str| {
            let p = pair.public_key_raw();
            serde_json::json!({"keys": [{"kty": "EC", "crv": "P-256", "kid": kid, "alg": "ES256",
                "x": b64.encode(&p[1..33]), "y": b64.encode(&p[33..65])}]})
        };
        let token = |pair: &rcgen::KeyPair, kid: &str| {
            let mut header = jsonwebtoken::Header::new(Algorithm::ES256);
            header.kid = Some(kid.into());
            let exp = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs()
                + 600;
            jsonwebtoken::encode(
                &header,
                &serde_json::json!({"sub": "u", "tenant": "a", "roles": "client", "exp": exp}),
                &jsonwebtoken::EncodingKey::from_ec_pem(pair.serialize_pem().as_bytes()).unwrap(),
            )
            .unwrap()
        };
        let old = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let new = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let idp = MockServer::start().await;
        Mock::given(path("/jwks"))
            .respond_with(ResponseTemplate::new(200).set_body_json(jwks(&old, "k1")))
            .mount(&idp)
            .await;
        let source = KeySource::Jwks(format!("{}/jwks", idp.uri()));
        let verifier = JwtVerifier::load(&source, ClaimMap::default(), None, None)
            .await
            .unwrap();
        assert!(verifier.refreshes());
        assert!(verifier.verify(&token(&old, "k1")).is_ok());
        assert!(verifier.verify(&token(&new, "k2")).is_err());
        idp.reset().await;
        Mock::given(path("/jwks"))
            .respond_with(ResponseTemplate::new(200).set_body_json(jwks(&new, "k2")))
            .mount(&idp)
            .await;
        verifier.refresh().await.unwrap();
        assert_eq!(verifier.verify(&token(&new, "k2")).unwrap().name, "u");
        assert!(verifier.verify(&token(&old, "k1")).is_err());
        // A failed read keeps the keys in hand.
        idp.reset().await;
        assert!(verifier.refresh().await.is_err());
        assert!(verifier.verify(&token(&new, "k2")).is_ok());
    }

    #[test]
    fn claim_maps_name_fields() {
        let m = ClaimMap::parse("sub=sub,tenant=org_id,roles=roles,groups=groups").unwrap();
        assert_eq!(m.tenant, "org_id");
        assert!(ClaimMap::parse("who=x").is_err());
        assert!(ClaimMap::parse("tenant").is_err());
    }
}
