//! Who is asking: an authenticated identity (a key toolgate issued, the server's one
//! admin key, an app's JWT, or the loopback user of a server without keys), its role,
//! its tenant and its groups; and what each role may do.

use serde::{Deserialize, Serialize};

pub use crate::allow::Allow;

/// The tenant of data created before tenants existed, and of callers that name none.
pub const DEFAULT_TENANT: &str = "default";

/// What a caller may do.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Role {
    /// Start runs, answer its runs' client tools, read its tenant's runs.
    Client,
    /// Decide approvals, and read its tenant's runs.
    Approver,
    /// Everything, in every tenant.
    Admin,
}

impl Role {
    /// Every role, in order.
    pub const ALL: &'static [Role] = <Role as strum::VariantArray>::VARIANTS;

    /// Its name in keys, tokens and on the wire (`FromStr` reads it back).
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// The roles a caller holds: a set, not a ladder (a key may be a client and an
/// approver). Written as the names joined by commas (`client,approver`), in role order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Roles(u8);

/// A role name that is not `client`, `approver` or `admin`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not a role (client, approver or admin)")]
pub struct UnknownRole(pub String);

impl Roles {
    /// The set holding `roles`.
    pub fn of(roles: &[Role]) -> Roles {
        Roles(roles.iter().fold(0, |bits, r| bits | Self::bit(*r)))
    }

    fn bit(role: Role) -> u8 {
        1 << role as u8
    }

    pub fn has(self, role: Role) -> bool {
        self.0 & Self::bit(role) != 0
    }

    /// Whether any of `roles` is held.
    pub fn any_of(self, roles: &[Role]) -> bool {
        roles.iter().any(|r| self.has(*r))
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The roles held, in role order.
    pub fn iter(self) -> impl Iterator<Item = Role> {
        Role::ALL.iter().copied().filter(move |r| self.has(*r))
    }

    /// The names, in role order.
    pub fn names(self) -> Vec<&'static str> {
        self.iter().map(Role::as_str).collect()
    }

    /// Reads `client,approver` (spaces allowed around names; an empty list is an
    /// empty set).
    pub fn parse(text: &str) -> Result<Roles, UnknownRole> {
        let mut roles = Vec::new();
        for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            roles.push(name.parse().map_err(|_| UnknownRole(name.to_string()))?);
        }
        Ok(Roles::of(&roles))
    }
}

impl std::fmt::Display for Roles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.names().join(","))
    }
}

impl Serialize for Roles {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

/// An authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The key's name, the JWT's subject, `api-key` or `local`: what `decided_by` says.
    pub name: String,
    /// The issued key's id (`key_...`), when the caller came with one.
    pub key_id: Option<String>,
    /// Every role it holds (a set: each role's doors are open to it).
    pub roles: Roles,
    pub tenant: String,
    pub groups: Vec<String>,
    /// The agents and tools it may use: its own allow-list met with its tenant's.
    pub allow: Allow,
}

impl Identity {
    /// The admin of the default tenant: the server's `TOOLGATE_API_KEY`, the loopback
    /// user of a server without keys, and the CLI on a local database.
    pub fn admin(name: &str) -> Identity {
        Identity {
            name: name.to_string(),
            key_id: None,
            roles: Roles::of(&[Role::Admin]),
            tenant: DEFAULT_TENANT.to_string(),
            groups: Vec::new(),
            allow: Allow::default(),
        }
    }

    /// The tenant whose data alone this caller sees; `None` for an admin (every tenant).
    pub fn scope(&self) -> Option<&str> {
        (!self.roles.has(Role::Admin)).then_some(self.tenant.as_str())
    }

    /// Whether this caller sees data of `tenant`.
    pub fn sees(&self, tenant: &str) -> bool {
        self.scope().is_none_or(|t| t == tenant)
    }

    /// What `decided_by` records: the name, with the key id when there is one.
    pub fn decided_by(&self) -> String {
        match &self.key_id {
            Some(id) => format!("{} ({id})", self.name),
            None => self.name.clone(),
        }
    }
}

/// For whom a run runs: its tenant, the identity that started it, and what that
/// identity may call. Tools see the first two (`TOOLGATE_TENANT`, `TOOLGATE_USER`,
/// `${context:...}`); the gate refuses a call to a tool `allow` does not name, at every
/// step of the run, whoever continues it; sub-agent runs inherit it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunOwner {
    pub tenant: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    #[serde(default, skip_serializing_if = "Allow::is_open")]
    pub allow: Allow,
    /// The spend limits of its key and its tenant (the agent's own come from its file).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub budgets: Vec<crate::budget::OwnedBudget>,
}

impl RunOwner {
    /// The owner of the runs `who` starts.
    pub fn of(who: &Identity) -> RunOwner {
        RunOwner {
            tenant: who.tenant.clone(),
            user: Some(who.name.clone()),
            allow: who.allow.clone(),
            budgets: Vec::new(),
        }
    }
}

/// Who decides an agent's calls (`approvers:` and `four_eyes:` in its file).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DecisionRule {
    /// Groups any one of which the decider must be in (empty: any approver).
    pub approvers: Vec<String>,
    /// The identity that started the run may not decide its calls.
    pub four_eyes: bool,
}

impl DecisionRule {
    /// The rule for a tool's calls under an agent with this rule: the tool's groups
    /// when it names some, else the agent's; four eyes when either asks for it.
    pub fn with(&self, tool: &DecisionRule) -> DecisionRule {
        DecisionRule {
            approvers: if tool.approvers.is_empty() {
                self.approvers.clone()
            } else {
                tool.approvers.clone()
            },
            four_eyes: self.four_eyes || tool.four_eyes,
        }
    }

    /// Why `who` may not decide a call of a run started by `starter`, or `None` when it
    /// may. An admin is bound by the same rule: it names people, not roles.
    pub fn refuses(&self, who: &Identity, starter: Option<&str>) -> Option<String> {
        if !who.roles.any_of(&[Role::Approver, Role::Admin]) {
            return Some("a client key may not decide approvals".to_string());
        }
        if self.four_eyes && starter.is_some_and(|s| s == who.decided_by() || s == who.name) {
            return Some(format!(
                "four eyes: {} started this run and may not approve its calls",
                who.name
            ));
        }
        if !self.approvers.is_empty() && !self.approvers.iter().any(|g| who.groups.contains(g)) {
            return Some(format!(
                "only the group(s) {} decide these calls; {} is not in one",
                self.approvers.join(", "),
                who.name
            ));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn who(role: Role, groups: &[&str]) -> Identity {
        Identity {
            name: "ann".into(),
            key_id: Some("key_1".into()),
            roles: Roles::of(&[role]),
            tenant: "a".into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            allow: Allow::default(),
        }
    }

    #[test]
    fn roles_are_a_set_written_in_role_order() {
        let both = Roles::parse(" approver, client ").unwrap_or_default();
        assert!(both.has(Role::Client) && both.has(Role::Approver) && !both.has(Role::Admin));
        assert_eq!(both.to_string(), "client,approver");
        assert_eq!(Roles::parse("client,root"), Err(UnknownRole("root".into())));
        assert_eq!(Roles::parse(""), Ok(Roles::default()));
        let mut ann = who(Role::Client, &[]);
        ann.roles = both;
        // A client that is also an approver decides, and still sees only its tenant.
        assert_eq!(DecisionRule::default().refuses(&ann, None), None);
        assert!(!ann.sees("b"));
    }

    #[test]
    fn admins_see_every_tenant_others_their_own() {
        assert!(who(Role::Admin, &[]).sees("b"));
        assert!(who(Role::Client, &[]).sees("a"));
        assert!(!who(Role::Approver, &[]).sees("b"));
    }

    #[test]
    fn rules_name_groups_and_the_starter() {
        let rule = DecisionRule {
            approvers: vec!["finance".into()],
            four_eyes: true,
        };
        assert!(
            rule.refuses(&who(Role::Approver, &["finance"]), Some("bob"))
                .is_none()
        );
        assert!(
            rule.refuses(&who(Role::Approver, &["sales"]), Some("bob"))
                .is_some()
        );
        let own = rule.refuses(&who(Role::Approver, &["finance"]), Some("ann (key_1)"));
        assert!(own.is_some_and(|m| m.contains("four eyes")));
        assert!(
            DecisionRule::default()
                .refuses(&who(Role::Client, &[]), None)
                .is_some()
        );
        assert!(
            DecisionRule::default()
                .refuses(&who(Role::Admin, &[]), None)
                .is_none()
        );
    }
}
