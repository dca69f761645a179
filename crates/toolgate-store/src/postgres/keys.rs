//! Issued keys on PostgreSQL: created with only the SHA-256 of the secret stored (a
//! taken name refused, also when two workers create it at once), listed without it,
//! revoked by name, and looked up by the hash of what a caller presents; times by the
//! database's clock.

use tokio_postgres::Row;

use super::clock::NOW_MS;
use super::prepared::Prepared;
use super::{PgStore, StoreError};
use crate::sqlite::keys::KeyChange;
use crate::sqlite::keys::{list_to_store, stored_list};
use crate::{KeyInfo, KeyLookup, NewKey, Refusal};
use toolgate_protocol::identity::{Allow, Identity};

/// The update of a key's columns: `$1` its name, then the change's parts (a flag
/// before each that may be set to NULL), as on SQLite.
const UPDATE: &str = "UPDATE api_keys SET role = COALESCE($2, role), groups = COALESCE($3, groups), \
     agents = CASE WHEN $4 THEN $5 ELSE agents END, tools = CASE WHEN $6 THEN $7 ELSE tools END, \
     expires_at = CASE WHEN $8 THEN $9 ELSE expires_at END WHERE name = $1 AND revoked_at IS NULL";

const COLUMNS: &str =
    "id, name, role, tenant, groups, created_at, expires_at, revoked_at, agents, tools";

/// A key as listed, from a row of [`COLUMNS`].
fn info(r: &Row) -> Result<KeyInfo, tokio_postgres::Error> {
    let role: String = r.try_get(2)?;
    let groups: String = r.try_get(4)?;
    Ok(KeyInfo {
        id: r.try_get(0)?,
        name: r.try_get(1)?,
        roles: crate::sqlite::keys::stored_roles(&role),
        tenant: r.try_get(3)?,
        groups: serde_json::from_str(&groups).unwrap_or_default(),
        allow: Allow {
            agents: stored_list(r.try_get(8)?),
            tools: stored_list(r.try_get(9)?),
        },
        created_at: r.try_get(5)?,
        expires_at: r.try_get(6)?,
        revoked_at: r.try_get(7)?,
    })
}

/// The refusal of a key name already issued (names are never reused).
fn name_taken(name: &str) -> StoreError {
    StoreError::Refused(
        Refusal::NameTaken,
        format!("a key named '{name}' exists already (names are never reused)"),
    )
}

impl PgStore {
    /// Stores a new key; refused when the name is taken (a revoked key keeps its name).
    pub async fn create_key(&self, key: NewKey) -> Result<KeyInfo, StoreError> {
        self.open_for_writes()?;
        self.on_pool(|s| async move {
            let client = s.client().await?;
            let groups = serde_json::to_string(&key.groups).unwrap_or_else(|_| "[]".into());
            // One statement: a name taken, even by a worker inserting it right now, is
            // a conflict rather than an error.
            let row = client
                .query_opt(
                    &format!(
                        "INSERT INTO api_keys (id, name, hash, role, tenant, groups, created_at, expires_at, agents, tools)
                         VALUES ($1, $2, $3, $4, $5, $6, {NOW_MS}, $7, $8, $9)
                         ON CONFLICT (name) DO NOTHING RETURNING created_at"
                    ),
                    &[
                        &key.id,
                        &key.name,
                        &key.hash,
                        &key.roles.to_string(),
                        &key.tenant,
                        &groups,
                        &key.expires_at,
                        &list_to_store(key.allow.agents.as_ref()),
                        &list_to_store(key.allow.tools.as_ref()),
                    ],
                )
                .await
                .map_err(|e| s.error(e))?;
            let Some(row) = row else {
                return Err(name_taken(&key.name));
            };
            s.committed();
            Ok(KeyInfo {
                created_at: row.try_get(0).map_err(|e| s.error(e))?,
                id: key.id,
                name: key.name,
                roles: key.roles,
                tenant: key.tenant,
                groups: key.groups,
                allow: key.allow,
                expires_at: key.expires_at,
                revoked_at: None,
            })
        })
        .await
    }

    /// Revokes key `name`; whether there was such a key not yet revoked.
    pub async fn revoke_key(&self, name: &str) -> Result<bool, StoreError> {
        self.open_for_writes()?;
        let name = name.to_string();
        self.on_pool(|s| async move {
            let client = s.client().await?;
            let n = client
                .execute(
                    &format!(
                        "UPDATE api_keys SET revoked_at = {NOW_MS} WHERE name = $1 AND revoked_at IS NULL"
                    ),
                    &[&name],
                )
                .await
                .map_err(|e| s.error(e))?;
            s.committed();
            Ok(n > 0)
        })
        .await
    }

    /// Changes key `name` (not revoked); whether there was such a key.
    pub async fn update_key(&self, name: &str, change: KeyChange) -> Result<bool, StoreError> {
        self.open_for_writes()?;
        let name = name.to_string();
        self.on_pool(|s| async move {
            let client = s.client().await?;
            let groups = change
                .groups
                .as_ref()
                .map(|g| serde_json::to_string(g).unwrap_or_else(|_| "[]".into()));
            let n = client
                .execute(
                    UPDATE,
                    &[
                        &name,
                        &change.roles.map(|r| r.to_string()),
                        &groups,
                        &change.agents.is_some(),
                        &list_to_store(change.agents.as_ref().and_then(Option::as_ref)),
                        &change.tools.is_some(),
                        &list_to_store(change.tools.as_ref().and_then(Option::as_ref)),
                        &change.expires_at.is_some(),
                        &change.expires_at.flatten(),
                    ],
                )
                .await
                .map_err(|e| s.error(e))?;
            s.committed();
            Ok(n > 0)
        })
        .await
    }

    /// Every issued key, revoked ones included, oldest first.
    pub async fn keys(&self) -> Result<Vec<KeyInfo>, StoreError> {
        self.on_pool(|s| async move {
            let client = s.client().await?;
            // Names in byte order, as SQLite sorts them (not the database's collation).
            let rows = client
                .query(
                    &format!(
                        "SELECT {COLUMNS} FROM api_keys ORDER BY created_at, name COLLATE \"C\""
                    ),
                    &[],
                )
                .await
                .map_err(|e| s.error(e))?;
            rows.iter()
                .map(info)
                .collect::<Result<_, _>>()
                .map_err(|e| s.error(e))
        })
        .await
    }

    /// Whether any issued key is still usable (then a server needs a key from
    /// everyone).
    pub async fn any_live_key(&self) -> Result<bool, StoreError> {
        self.on_pool(|s| async move {
            let client = s.client().await?;
            // Asked at every request: a prepared statement, not parsed again each time.
            let row = client
                .row(
                    &format!(
                        "SELECT EXISTS (SELECT 1 FROM api_keys WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > {NOW_MS}))"
                    ),
                    &[],
                )
                .await
                .map_err(|e| s.error(e))?;
            row.try_get(0).map_err(|e| s.error(e))
        })
        .await
    }

    /// The key whose SHA-256 (hex) is `hash`.
    pub async fn key_by_hash(&self, hash: &str) -> Result<KeyLookup, StoreError> {
        let hash = hash.to_string();
        self.on_pool(|s| async move {
            let client = s.client().await?;
            let row = client
                .row_opt(
                    &format!("SELECT {COLUMNS}, {NOW_MS} FROM api_keys WHERE hash = $1"),
                    &[&hash],
                )
                .await
                .map_err(|e| s.error(e))?;
            let Some(row) = row else {
                return Ok(KeyLookup::Unknown);
            };
            let key = info(&row).map_err(|e| s.error(e))?;
            let now: i64 = row.try_get(10).map_err(|e| s.error(e))?;
            Ok(match key {
                k if k.revoked_at.is_some() => KeyLookup::Revoked(k.name),
                k if k.expires_at.is_some_and(|t| t <= now) => KeyLookup::Expired(k.name),
                k => KeyLookup::Valid(Identity {
                    name: k.name,
                    key_id: Some(k.id),
                    roles: k.roles,
                    tenant: k.tenant,
                    groups: k.groups,
                    allow: k.allow,
                }),
            })
        })
        .await
    }
}
