//! `toolgate keys`: the keys this server accepts besides its one admin key. `create`
//! prints a new key once (only its SHA-256 is stored), `list` shows them without the
//! key, `revoke` ends one for good.

use super::Wait;
use std::path::Path;
use std::process::ExitCode;

use base64::Engine as _;
use clap::{Args, Subcommand};
use toolgate::identity::{Allow, Roles};
use toolgate::protocol::budget::Budget;
use toolgate::store::NewKey;

use super::out::{self, print, print_json, say};
use super::run::runtime;
use super::{Failure, open_existing_store, open_store, table};

#[derive(Args, Debug)]
pub struct KeysArgs {
    #[command(subcommand)]
    command: KeysCommand,
}

#[derive(Subcommand, Debug)]
enum KeysCommand {
    /// Issue a key: printed once, stored hashed.
    #[command(after_help = "Book: docs/src/howto/identities.md")]
    Create {
        /// Its name: what `decided_by` records for its decisions.
        #[arg(long)]
        name: String,
        /// client (start runs, answer client tools, read), approver (decide, read),
        /// admin (everything, every tenant), or several: client,approver.
        #[arg(long)]
        role: String,
        /// Its groups, for agents' `approvers:` (a,b).
        #[arg(long, value_delimiter = ',')]
        groups: Vec<String>,
        /// The only agents it may start (a,b); any agent of its tenant when absent.
        #[arg(long, value_name = "A,B")]
        agents: Option<String>,
        /// The only tools its runs may call (x,y; `github__*` for every tool of an MCP
        /// server); any tool when absent.
        #[arg(long, value_name = "X,Y")]
        tools: Option<String>,
        /// How long it lasts (e.g. 30d, 12h, 90m); forever when absent.
        #[arg(long)]
        expires: Option<String>,
        /// A spend limit on the runs it starts: AMOUNT(tokens|usd)/PER[:pause|fail|warn],
        /// PER one of run, conversation, day, month (e.g. 5usd/month:fail); repeatable.
        #[arg(long = "budget", value_name = "LIMIT")]
        budgets: Vec<String>,
        /// Print {"name", "role", "roles", "tenant", "groups", "agents", "tools", "key"}.
        #[arg(long)]
        json: bool,
    },
    /// List the issued keys (never the keys themselves).
    #[command(after_help = "Book: docs/src/howto/identities.md")]
    List {
        #[arg(long)]
        json: bool,
    },
    /// Revoke a key: it is refused from now on.
    #[command(after_help = "Book: docs/src/howto/identities.md")]
    Revoke { name: String },
}

/// A name, a tenant or a group: letters, digits, `_`, `-`, `.`, `@`.
fn check_word(what: &str, word: &str) -> Result<(), Failure> {
    if word.is_empty()
        || word.len() > 100
        || !word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '@'))
    {
        return Err(Failure::bad_input(format!(
            "'{word}' is not a {what}: use letters, digits, '_', '-', '.' and '@'"
        )));
    }
    Ok(())
}

/// An allow-list as given (`a,b`): `None` when the flag is absent; each name letters,
/// digits, `_`, `-`, `.`, with an optional `*` at its end.
pub fn allow_list(flag: &str, text: Option<&str>) -> Result<Option<Vec<String>>, Failure> {
    let Some(text) = text else {
        return Ok(None);
    };
    let names = Allow::list(text);
    for n in &names {
        let stem = n.strip_suffix('*').unwrap_or(n);
        if !stem
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        {
            return Err(Failure::bad_input(format!(
                "{flag}: '{n}' is not a name: use letters, digits, '_', '-', '.' and a '*' at the end"
            )));
        }
    }
    Ok(Some(names))
}

/// An allow-list in a table: `*` for no limit, `-` for an empty one.
fn shown_list(list: Option<&[String]>) -> String {
    match list {
        None => "*".into(),
        Some([]) => "-".into(),
        Some(l) => l.join(","),
    }
}

/// `30d`, `12h`, `90m`, `45s`, `2w` as milliseconds.
pub fn parse_expiry(text: &str) -> Result<i64, Failure> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let bad = || {
        Failure::bad_input(format!(
            "--expires '{text}' is not a duration such as 30d, 12h or 90m"
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

/// A new key: `tg_` and 32 random bytes, base64url.
fn new_key() -> Result<String, Failure> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| Failure::other(format!("no randomness: {e}")))?;
    Ok(format!(
        "tg_{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    ))
}

pub fn run(args: KeysArgs, db: &Path) -> Result<ExitCode, Failure> {
    match args.command {
        KeysCommand::Create {
            name,
            role,
            groups,
            agents,
            tools,
            expires,
            budgets,
            json,
        } => {
            let allow = Allow {
                agents: allow_list("--agents", agents.as_deref())?,
                tools: allow_list("--tools", tools.as_deref())?,
            };
            let budgets = budgets
                .iter()
                .map(|b| {
                    Budget::parse_short(b).map_err(|e| Failure::bad_input(format!("--budget: {e}")))
                })
                .collect::<Result<Vec<_>, _>>()?;
            let key_name = name.clone();
            let created = create(db, name, &role, groups, allow, expires, json)?;
            if !budgets.is_empty() {
                open_store(db)?
                    .set_key_budgets(&key_name, &budgets)
                    .wait()?
                    .map_err(|e| Failure::other(e.to_string()))?;
            }
            Ok(created)
        }
        KeysCommand::List { json } => list(db, json),
        KeysCommand::Revoke { name } => revoke(db, &name),
    }
}

/// `keys create`: a new key in the tenant of `--tenant`, shown only this once.
fn create(
    db: &Path,
    name: String,
    role: &str,
    groups: Vec<String>,
    allow: Allow,
    expires: Option<String>,
    json: bool,
) -> Result<ExitCode, Failure> {
    // `--tenant T` (global): the tenant the key acts in.
    let tenant = super::tenant()
        .unwrap_or(toolgate::identity::DEFAULT_TENANT)
        .to_string();
    check_word("key name", &name)?;
    check_word("tenant", &tenant)?;
    let groups: Vec<String> = groups
        .into_iter()
        .map(|g| g.trim().to_string())
        .filter(|g| !g.is_empty())
        .collect();
    for g in &groups {
        check_word("group", g)?;
    }
    let roles = Roles::parse(role)
        .ok()
        .filter(|r| !r.is_empty())
        .ok_or_else(|| {
            Failure::bad_input(format!(
                "--role '{role}' is not client, approver, admin or a list of them (client,approver)"
            ))
        })?;
    let expires_at = match expires {
        Some(e) => Some(now_ms() + parse_expiry(&e)?),
        None => None,
    };
    let key = new_key()?;
    let store = open_store(db)?;
    let info = runtime()?
        .block_on(store.create_key(NewKey {
            id: toolgate::run::new_id("key"),
            name,
            hash: toolgate::server::key_hash(&key),
            roles,
            tenant,
            groups,
            allow,
            expires_at,
        }))
        .map_err(|e| Failure::bad_input(e.to_string()))?;
    if json {
        let shown = serde_json::json!({
            "name": info.name, "role": info.roles, "roles": info.roles.names(),
            "tenant": info.tenant, "groups": info.groups,
            "agents": info.allow.agents, "tools": info.allow.tools, "key": key,
        });
        print_json(&mut out::stdout(), &shown, false)?;
    } else {
        print(&format!("{key}\n"))?;
        say!(
            "toolgate: key {} ({}, tenant {}) created; it is shown only this once",
            info.name,
            info.roles,
            info.tenant
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `keys list`: every key with its role, tenant, groups and state.
fn list(db: &Path, json: bool) -> Result<ExitCode, Failure> {
    let store = open_existing_store(db)?;
    let keys = store
        .keys()
        .wait()?
        .map_err(|e| Failure::other(e.to_string()))?;
    if json {
        print_json(&mut out::stdout(), &keys, false)?;
    } else {
        let rows: Vec<Vec<String>> = keys
            .iter()
            .map(|k| {
                let state = match (k.revoked_at, k.expires_at) {
                    (Some(_), _) => "revoked".to_string(),
                    (None, Some(t)) if t <= now_ms() => "expired".into(),
                    (None, Some(t)) => format!("until {}", super::calls::show_time(t)),
                    (None, None) => "active".into(),
                };
                vec![
                    k.name.clone(),
                    k.roles.to_string(),
                    k.tenant.clone(),
                    k.groups.join(","),
                    shown_list(k.allow.agents.as_deref()),
                    shown_list(k.allow.tools.as_deref()),
                    state,
                ]
            })
            .collect();
        print(&table::render(
            &[
                "NAME", "ROLE", "TENANT", "GROUPS", "AGENTS", "TOOLS", "STATE",
            ],
            &rows,
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `keys revoke`: revokes the active key named `name`.
fn revoke(db: &Path, name: &str) -> Result<ExitCode, Failure> {
    let store = open_existing_store(db)?;
    let revoked = runtime()?
        .block_on(store.revoke_key(name))
        .map_err(|e| Failure::other(e.to_string()))?;
    if !revoked {
        return Err(Failure::bad_input(format!(
            "there is no active key named '{name}' (toolgate keys list)"
        )));
    }
    say!("toolgate: key {name} revoked");
    Ok(ExitCode::SUCCESS)
}

/// Unix milliseconds now.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
