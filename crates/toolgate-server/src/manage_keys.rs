//! Issued keys, managed: the one implementation behind `toolgate keys` and the admin
//! routes `/v1/keys`. A new key is `tg_` and 32 random bytes, shown once and stored as
//! its SHA-256; names, tenants, groups, allow-lists, expiry and budgets are checked
//! here, so the command line and the API refuse the same things with the same words.

use base64::Engine as _;

use toolgate_protocol::budget::Budget;
use toolgate_protocol::identity::{Allow, Roles};
use toolgate_store::{KeyInfo, NewKey, Store, StoreError};

/// A key to issue, as the caller gave it.
#[derive(Debug, Clone, Default)]
pub struct KeyRequest {
    pub name: String,
    /// `client`, `approver`, `admin` or several (`client,approver`).
    pub role: String,
    pub tenant: String,
    pub groups: Vec<String>,
    /// The only agents and tools it may use; any when `None`.
    pub agents: Option<Vec<String>>,
    pub tools: Option<Vec<String>>,
    /// `30d`, `12h`, `90m`, `45s`, `2w`; forever when `None`.
    pub expires: Option<String>,
    /// Short-form budgets (`5usd/month:fail`).
    pub budgets: Vec<String>,
}

/// A key just issued: what was stored, and the key itself (never stored, never shown
/// again).
#[derive(Debug, Clone)]
pub struct IssuedKey {
    pub info: KeyInfo,
    pub key: String,
    pub budgets: Vec<Budget>,
}

/// Why a key could not be issued or revoked.
#[derive(Debug)]
pub enum KeyError {
    /// Bad input: which field and why.
    Invalid(String),
    /// No active key of that name.
    NoKey(String),
    /// The store refused (a name taken) or failed.
    Store(StoreError),
}

impl std::fmt::Display for KeyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyError::Invalid(m) => f.write_str(m),
            KeyError::NoKey(name) => write!(
                f,
                "there is no active key named '{name}' (toolgate keys list)"
            ),
            KeyError::Store(e) => write!(f, "{e}"),
        }
    }
}

impl From<StoreError> for KeyError {
    fn from(e: StoreError) -> Self {
        KeyError::Store(e)
    }
}

/// A name, a tenant or a group: letters, digits, `_`, `-`, `.`, `@`.
pub fn check_word(what: &str, word: &str) -> Result<(), KeyError> {
    if word.is_empty()
        || word.len() > 100
        || !word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '@'))
    {
        return Err(KeyError::Invalid(format!(
            "'{word}' is not a {what}: use letters, digits, '_', '-', '.' and '@'"
        )));
    }
    Ok(())
}

/// An allow-list's names checked: letters, digits, `_`, `-`, `.`, with an optional `*`
/// at the end; `what` names the field in the error.
pub fn check_allow(
    what: &str,
    names: Option<Vec<String>>,
) -> Result<Option<Vec<String>>, KeyError> {
    let Some(names) = names else {
        return Ok(None);
    };
    let names: Vec<String> = names
        .into_iter()
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .collect();
    for n in &names {
        let stem = n.strip_suffix('*').unwrap_or(n);
        if !stem
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        {
            return Err(KeyError::Invalid(format!(
                "{what}: '{n}' is not a name: use letters, digits, '_', '-', '.' and a '*' at the end"
            )));
        }
    }
    Ok(Some(names))
}

/// `30d`, `12h`, `90m`, `45s`, `2w` (a bare number is days) as milliseconds.
pub fn parse_expiry(text: &str) -> Result<i64, KeyError> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let bad = || {
        KeyError::Invalid(format!(
            "expires '{text}' is not a duration such as 30d, 12h or 90m"
        ))
    };
    let n: i64 = number.parse().map_err(|_| bad())?;
    let unit_ms: i64 = match unit {
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" | "" => 86_400_000,
        "w" => 7 * 86_400_000,
        _ => return Err(bad()),
    };
    n.checked_mul(unit_ms).filter(|ms| *ms > 0).ok_or_else(bad)
}

/// Roles as given: `client`, `approver`, `admin` or several (`client,approver`).
pub fn parse_roles(text: &str) -> Result<Roles, KeyError> {
    Roles::parse(text)
        .ok()
        .filter(|r| !r.is_empty())
        .ok_or_else(|| {
            KeyError::Invalid(format!(
                "role '{text}' is not client, approver, admin or a list of them (client,approver)"
            ))
        })
}

/// Groups as given, trimmed (empty ones dropped) and checked.
pub fn check_groups(groups: Vec<String>) -> Result<Vec<String>, KeyError> {
    let groups: Vec<String> = groups
        .into_iter()
        .map(|g| g.trim().to_string())
        .filter(|g| !g.is_empty())
        .collect();
    for g in &groups {
        check_word("group", g)?;
    }
    Ok(groups)
}

/// Short-form budgets (`5usd/month:fail`) read.
pub fn parse_budgets(budgets: &[String]) -> Result<Vec<Budget>, KeyError> {
    budgets
        .iter()
        .map(|b| Budget::parse_short(b).map_err(|e| KeyError::Invalid(format!("budget: {e}"))))
        .collect()
}

/// The request checked and made into what the store keeps, with the new key.
fn prepare(req: KeyRequest) -> Result<(NewKey, String, Vec<Budget>), KeyError> {
    check_word("key name", &req.name)?;
    check_word("tenant", &req.tenant)?;
    let groups = check_groups(req.groups)?;
    let roles = parse_roles(&req.role)?;
    let allow = Allow {
        agents: check_allow("agents", req.agents)?,
        tools: check_allow("tools", req.tools)?,
    };
    let expires_at = match req.expires.as_deref() {
        Some(e) => Some(now_ms().saturating_add(parse_expiry(e)?)),
        None => None,
    };
    let budgets = parse_budgets(&req.budgets)?;
    let key = new_key()?;
    let stored = NewKey {
        id: toolgate_runtime::run::new_id("key"),
        name: req.name,
        hash: super::key_hash(&key),
        roles,
        tenant: req.tenant,
        groups,
        allow,
        expires_at,
    };
    Ok((stored, key, budgets))
}

/// Issues a key: checked, stored hashed with its budgets, returned once.
pub async fn issue(store: &Store, req: KeyRequest) -> Result<IssuedKey, KeyError> {
    let (stored, key, budgets) = prepare(req)?;
    let info = store.create_key(stored).await?;
    if !budgets.is_empty() {
        store.set_key_budgets(&info.name, &budgets).await?;
    }
    Ok(IssuedKey { info, key, budgets })
}

/// Every issued key with its budgets, revoked ones included, oldest first.
pub async fn list(store: &Store) -> Result<Vec<(KeyInfo, Vec<Budget>)>, KeyError> {
    let mut out = Vec::new();
    for info in store.keys().await? {
        let budgets = store.key_budgets(&info.name).await?;
        out.push((info, budgets));
    }
    Ok(out)
}

/// Revokes the active key `name`: refused from now on.
pub async fn revoke(store: &Store, name: &str) -> Result<(), KeyError> {
    if store.revoke_key(name).await? {
        Ok(())
    } else {
        Err(KeyError::NoKey(name.to_string()))
    }
}

/// A key's state at `now`: `revoked`, `expired` or `active`.
pub fn state(info: &KeyInfo, now: i64) -> &'static str {
    match (info.revoked_at, info.expires_at) {
        (Some(_), _) => "revoked",
        (None, Some(t)) if t <= now => "expired",
        _ => "active",
    }
}

/// A new key: `tg_` and 32 random bytes, base64url.
fn new_key() -> Result<String, KeyError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| KeyError::Store(StoreError::Corrupt(format!("no randomness: {e}"))))?;
    Ok(format!(
        "tg_{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    ))
}

/// Unix milliseconds now.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_input_is_refused_before_the_store() {
        let ok = KeyRequest {
            name: "app".into(),
            role: "client".into(),
            tenant: "a".into(),
            ..Default::default()
        };
        assert!(prepare(ok.clone()).is_ok());
        for bad in [
            KeyRequest {
                name: "a b".into(),
                ..ok.clone()
            },
            KeyRequest {
                role: "owner".into(),
                ..ok.clone()
            },
            KeyRequest {
                tools: Some(vec!["x/y".into()]),
                ..ok.clone()
            },
            KeyRequest {
                expires: Some("3 fortnights".into()),
                ..ok.clone()
            },
            KeyRequest {
                budgets: vec!["lots".into()],
                ..ok.clone()
            },
        ] {
            assert!(matches!(prepare(bad), Err(KeyError::Invalid(_))));
        }
        assert!(matches!(parse_expiry("2h"), Ok(7_200_000)));
    }
}
