//! Changing an issued key in place: its roles, groups, allow-lists, expiry and budgets
//! (never its name, tenant or secret: a key for another tenant is a new key). The one
//! implementation behind `toolgate keys update` and `PATCH /v1/keys/{name}`; each part
//! given replaces the key's, checked as `keys create` checks it.

use toolgate_protocol::budget::Budget;
use toolgate_store::{KeyChange, KeyInfo, Store};

use super::manage_keys::{
    KeyError, check_allow, check_groups, now_ms, parse_budgets, parse_expiry, parse_roles,
};

/// What to change; `None` leaves a part as it is.
#[derive(Debug, Clone, Default)]
pub struct KeyUpdate {
    /// `client`, `approver`, `admin` or several.
    pub role: Option<String>,
    pub groups: Option<Vec<String>>,
    /// `Some(None)`: no limit.
    pub agents: Option<Option<Vec<String>>>,
    pub tools: Option<Option<Vec<String>>>,
    /// From now (`30d`, `12h`); `Some(None)`: never expires.
    pub expires: Option<Option<String>>,
    /// Replaces every budget of the key (an empty list removes them).
    pub budgets: Option<Vec<String>>,
}

impl KeyUpdate {
    /// Nothing to change.
    pub fn is_empty(&self) -> bool {
        self.role.is_none()
            && self.groups.is_none()
            && self.agents.is_none()
            && self.tools.is_none()
            && self.expires.is_none()
            && self.budgets.is_none()
    }
}

/// Changes the active key `name` as `update` says; its row and budgets afterwards.
pub async fn update(
    store: &Store,
    name: &str,
    update: KeyUpdate,
) -> Result<(KeyInfo, Vec<Budget>), KeyError> {
    if update.is_empty() {
        return Err(KeyError::Invalid(
            "nothing to change: give a role, groups, agents, tools, expires or budgets".into(),
        ));
    }
    let change = KeyChange {
        roles: update.role.as_deref().map(parse_roles).transpose()?,
        groups: update.groups.map(check_groups).transpose()?,
        agents: update
            .agents
            .map(|a| check_allow("agents", a))
            .transpose()?,
        tools: update.tools.map(|t| check_allow("tools", t)).transpose()?,
        expires_at: match update.expires {
            None => None,
            Some(None) => Some(None),
            Some(Some(e)) => Some(Some(now_ms().saturating_add(parse_expiry(&e)?))),
        },
    };
    let budgets = update.budgets.as_deref().map(parse_budgets).transpose()?;
    if !store.update_key(name, change).await? {
        return Err(KeyError::NoKey(name.to_string()));
    }
    if let Some(budgets) = &budgets {
        store.set_key_budgets(name, budgets).await?;
    }
    let info = store
        .keys()
        .await?
        .into_iter()
        .find(|k| k.name == name)
        .ok_or_else(|| KeyError::NoKey(name.to_string()))?;
    let budgets = store.key_budgets(name).await?;
    Ok((info, budgets))
}
