//! Keys toolgate issued: created with a random secret of which only the SHA-256 is
//! stored, listed without it, revoked by name, and looked up by the hash of what a
//! caller presents.

use rusqlite::{OptionalExtension, params};
use serde::Serialize;

use super::SqliteStore;
use super::runs::{Refusal, RunsError};
use toolgate_protocol::clock::now_ms;
use toolgate_protocol::identity::{Allow, Identity, Role, Roles};

/// An issued key as listed (never the key itself).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeyInfo {
    pub id: String,
    pub name: String,
    /// Its roles (`role` on the wire and in the database: `client,approver`).
    #[serde(rename = "role")]
    pub roles: Roles,
    pub tenant: String,
    pub groups: Vec<String>,
    /// The agents and tools it may use (`agents`, `tools`; absent: no limit).
    #[serde(flatten)]
    pub allow: Allow,
    /// Unix milliseconds.
    pub created_at: i64,
    pub expires_at: Option<i64>,
    pub revoked_at: Option<i64>,
}

/// A key to store: everything but the key, whose hash stands in for it.
#[derive(Debug, Clone)]
pub struct NewKey {
    pub id: String,
    pub name: String,
    /// Hex SHA-256 of the key.
    pub hash: String,
    pub roles: Roles,
    pub tenant: String,
    pub groups: Vec<String>,
    pub allow: Allow,
    pub expires_at: Option<i64>,
}

/// What an update changes of a key: each `Some` replaces its part (`Some(None)` for
/// an allow-list or the expiry: no limit).
#[derive(Debug, Clone, Default)]
pub struct KeyChange {
    pub roles: Option<Roles>,
    pub groups: Option<Vec<String>>,
    pub agents: Option<Option<Vec<String>>>,
    pub tools: Option<Option<Vec<String>>>,
    pub expires_at: Option<Option<i64>>,
}

/// The update of a key's columns: `?1` its name, then the change's parts (a flag before
/// each that may be set to NULL).
const UPDATE: &str = "UPDATE api_keys SET role = COALESCE(?2, role), groups = COALESCE(?3, groups), \
     agents = CASE WHEN ?4 THEN ?5 ELSE agents END, tools = CASE WHEN ?6 THEN ?7 ELSE tools END, \
     expires_at = CASE WHEN ?8 THEN ?9 ELSE expires_at END WHERE name = ?1 AND revoked_at IS NULL";

/// What a presented key turned out to be.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyLookup {
    Valid(Identity),
    Revoked(String),
    Expired(String),
    Unknown,
}

fn info(r: &rusqlite::Row<'_>) -> rusqlite::Result<KeyInfo> {
    let role: String = r.get(2)?;
    let groups: String = r.get(4)?;
    Ok(KeyInfo {
        id: r.get(0)?,
        name: r.get(1)?,
        roles: stored_roles(&role),
        tenant: r.get(3)?,
        groups: serde_json::from_str(&groups).unwrap_or_default(),
        allow: Allow {
            agents: stored_list(r.get(8)?),
            tools: stored_list(r.get(9)?),
        },
        created_at: r.get(5)?,
        expires_at: r.get(6)?,
        revoked_at: r.get(7)?,
    })
}

/// An allow-list as stored: a JSON array, or NULL for no limit. A value this version
/// cannot read allows nothing (it fails closed).
pub(crate) fn stored_list(text: Option<String>) -> Option<Vec<String>> {
    text.map(|t| serde_json::from_str(&t).unwrap_or_default())
}

/// An allow-list to store: a JSON array, or NULL for no limit.
pub(crate) fn list_to_store(list: Option<&Vec<String>>) -> Option<String> {
    list.map(|l| serde_json::to_string(l).unwrap_or_else(|_| "[]".into()))
}

/// A key's roles as stored (`client,approver`); a name this version does not know, or
/// none, reads as `client` (the least).
pub(crate) fn stored_roles(text: &str) -> Roles {
    Roles::parse(text)
        .ok()
        .filter(|r| !r.is_empty())
        .unwrap_or(Roles::of(&[Role::Client]))
}

const COLUMNS: &str =
    "id, name, role, tenant, groups, created_at, expires_at, revoked_at, agents, tools";

impl SqliteStore {
    /// Stores a new key; refused when the name is taken (a revoked key keeps its name).
    pub async fn create_key(&self, key: NewKey) -> Result<KeyInfo, RunsError> {
        self.transact(move |tx| {
            let taken: Option<String> = tx
                .query_row("SELECT id FROM api_keys WHERE name = ?1", [&key.name], |r| r.get(0))
                .optional()?;
            if taken.is_some() {
                return Err(RunsError::Refused(
                    Refusal::NameTaken,
                    format!("a key named '{}' exists already (names are never reused)", key.name),
                ));
            }
            let groups = serde_json::to_string(&key.groups).unwrap_or_else(|_| "[]".into());
            let now = now_ms();
            tx.execute(
                "INSERT INTO api_keys (id, name, hash, role, tenant, groups, created_at, expires_at, agents, tools) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    key.id, key.name, key.hash, key.roles.to_string(), key.tenant, groups, now, key.expires_at,
                    list_to_store(key.allow.agents.as_ref()), list_to_store(key.allow.tools.as_ref())
                ],
            )?;
            Ok(KeyInfo {
                id: key.id,
                name: key.name,
                roles: key.roles,
                tenant: key.tenant,
                groups: key.groups,
                allow: key.allow,
                created_at: now,
                expires_at: key.expires_at,
                revoked_at: None,
            })
        })
        .await
    }

    /// Revokes key `name`; whether there was such a key not yet revoked.
    pub async fn revoke_key(&self, name: &str) -> Result<bool, RunsError> {
        let name = name.to_string();
        self.transact(move |tx| {
            Ok(tx.execute(
                "UPDATE api_keys SET revoked_at = ?2 WHERE name = ?1 AND revoked_at IS NULL",
                params![name, now_ms()],
            )? > 0)
        })
        .await
    }

    /// Changes key `name` (not revoked); whether there was such a key.
    pub async fn update_key(&self, name: &str, change: KeyChange) -> Result<bool, RunsError> {
        let name = name.to_string();
        self.transact(move |tx| {
            let groups = change
                .groups
                .as_ref()
                .map(|g| serde_json::to_string(g).unwrap_or_else(|_| "[]".into()));
            Ok(tx.execute(
                UPDATE,
                params![
                    name,
                    change.roles.map(|r| r.to_string()),
                    groups,
                    change.agents.is_some(),
                    list_to_store(change.agents.as_ref().and_then(Option::as_ref)),
                    change.tools.is_some(),
                    list_to_store(change.tools.as_ref().and_then(Option::as_ref)),
                    change.expires_at.is_some(),
                    change.expires_at.flatten(),
                ],
            )? > 0)
        })
        .await
    }

    /// Every issued key, revoked ones included, oldest first.
    pub fn keys(&self) -> Result<Vec<KeyInfo>, RunsError> {
        self.read_runs(|conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM api_keys ORDER BY created_at, name"
            ))?;
            let rows = stmt
                .query_map([], info)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })
    }

    /// Whether any issued key is still usable (then a server needs a key from
    /// everyone).
    pub fn any_live_key(&self) -> Result<bool, RunsError> {
        self.read_runs(|conn| {
            Ok(conn
                .prepare_cached("SELECT EXISTS (SELECT 1 FROM api_keys WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?1))")?
                .query_row([now_ms()], |r| r.get(0))?)
        })
    }

    /// The key whose SHA-256 (hex) is `hash`.
    pub fn key_by_hash(&self, hash: &str) -> Result<KeyLookup, RunsError> {
        self.read_runs(|conn| {
            let found = conn
                .prepare_cached(&format!("SELECT {COLUMNS} FROM api_keys WHERE hash = ?1"))?
                .query_row([hash], info)
                .optional()?;
            Ok(match found {
                None => KeyLookup::Unknown,
                Some(k) if k.revoked_at.is_some() => KeyLookup::Revoked(k.name),
                Some(k) if k.expires_at.is_some_and(|t| t <= now_ms()) => {
                    KeyLookup::Expired(k.name)
                }
                Some(k) => KeyLookup::Valid(Identity {
                    name: k.name,
                    key_id: Some(k.id),
                    roles: k.roles,
                    tenant: k.tenant,
                    groups: k.groups,
                    allow: k.allow,
                }),
            })
        })
    }
}
