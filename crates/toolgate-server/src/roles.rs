//! Which roles may use which route: clients start runs, answer client tools, resume and
//! cancel; approvers decide; everyone reads their tenant; only admins read the
//! process-wide figures (`/metrics`, `/v1/limits`; stats are each tenant's own). One
//! table, checked before any handler.

use axum::http::Method;

use toolgate_protocol::identity::{Identity, Role};

/// Why `who` may not call `method path`, or `None` when it may.
pub fn refuses(method: &Method, path: &str, who: &Identity) -> Option<String> {
    let allowed = allowed(method, path);
    if who.roles.any_of(allowed) {
        return None;
    }
    let names: Vec<&str> = allowed.iter().map(|r| r.as_str()).collect();
    Some(format!(
        "{} is a {} key; {method} {path} needs the role {}",
        who.name,
        who.roles,
        names.join(" or ")
    ))
}

/// The roles that may call `method path`.
pub fn allowed(method: &Method, path: &str) -> &'static [Role] {
    const ANY: &[Role] = &[Role::Client, Role::Approver, Role::Admin];
    const CLIENT: &[Role] = &[Role::Client, Role::Admin];
    const APPROVER: &[Role] = &[Role::Approver, Role::Admin];
    const ADMIN: &[Role] = &[Role::Admin];
    // Process-wide: every tenant's activity in one figure.
    if path == "/metrics" || path == "/v1/limits" {
        return ADMIN;
    }
    // Management: issued keys and stored secrets, reads included (they name every
    // tenant's).
    let managed = |root: &str| path == root || path.starts_with(&format!("{root}/"));
    if managed("/v1/keys") || managed("/v1/secrets") {
        return ADMIN;
    }
    if path.starts_with("/mcp/") {
        return CLIENT;
    }
    // Everyone's own OAuth connections (the handler keeps others' to admins).
    if managed("/v1/oauth/connections") {
        return ANY;
    }
    if *method == Method::GET || *method == Method::HEAD {
        return ANY;
    }
    // Credential checks use the stored secrets: admins only; so do the agent checks and
    // the folders' reload (they name every agent's files and problems).
    if (path.starts_with("/v1/tools/") || path.starts_with("/v1/agents/"))
        && path.ends_with("/validate")
        || path == "/v1/reload"
    {
        return ADMIN;
    }
    // Knowledge bases: clients search them, admins write them.
    if path.starts_with("/v1/knowledge") && !path.ends_with("/search") {
        return ADMIN;
    }
    if path.starts_with("/v1/runs/") && (path.ends_with("/approve") || path.ends_with("/deny")) {
        return APPROVER;
    }
    // The Responses endpoint takes decisions too: the handler checks those itself.
    if path == "/v1/responses" {
        return ANY;
    }
    CLIENT
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolgate_protocol::identity::Roles;

    fn who(role: Role) -> Identity {
        Identity {
            name: "k".into(),
            key_id: None,
            roles: Roles::of(&[role]),
            tenant: "a".into(),
            groups: Vec::new(),
            allow: Default::default(),
        }
    }

    #[test]
    fn each_role_has_its_doors() {
        let post = Method::POST;
        assert!(refuses(&post, "/v1/runs", &who(Role::Client)).is_none());
        assert!(refuses(&post, "/v1/runs", &who(Role::Approver)).is_some());
        assert!(refuses(&post, "/v1/runs/run_1/approve", &who(Role::Client)).is_some());
        assert!(refuses(&post, "/v1/runs/run_1/deny", &who(Role::Approver)).is_none());
        assert!(refuses(&post, "/v1/runs/run_1/submit", &who(Role::Approver)).is_some());
        assert!(refuses(&Method::GET, "/v1/runs", &who(Role::Approver)).is_none());
        assert!(refuses(&Method::GET, "/metrics", &who(Role::Client)).is_some());
        let check = "/v1/tools/weather/validate";
        assert!(refuses(&post, check, &who(Role::Client)).is_some());
        assert!(refuses(&post, check, &who(Role::Admin)).is_none());
        assert!(refuses(&Method::GET, "/metrics", &who(Role::Admin)).is_none());
        assert!(refuses(&post, "/v1/knowledge/docs/search", &who(Role::Client)).is_none());
        assert!(refuses(&post, "/v1/knowledge/docs/documents", &who(Role::Client)).is_some());
        assert!(refuses(&post, "/v1/knowledge", &who(Role::Admin)).is_none());
    }

    #[test]
    fn a_key_with_two_roles_has_both_sets_of_doors() {
        let mut both = who(Role::Client);
        both.roles = Roles::of(&[Role::Client, Role::Approver]);
        let post = Method::POST;
        assert!(refuses(&post, "/v1/runs", &both).is_none());
        assert!(refuses(&post, "/v1/runs/run_1/approve", &both).is_none());
        assert!(refuses(&Method::GET, "/metrics", &both).is_some());
    }
}
