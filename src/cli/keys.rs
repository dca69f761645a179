//! `toolgate keys`: the keys this server accepts besides its one admin key. `create`
//! prints a new key once (only its SHA-256 is stored), `list` shows them without the
//! key, `update` changes one in place, `revoke` ends one for good.

use std::path::Path;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use toolgate::identity::Allow;
use toolgate::server::key_update::{self, KeyUpdate};
use toolgate::server::manage_keys::{self, IssuedKey, KeyError, KeyRequest, now_ms};
use toolgate::store::StoreError;

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
    /// Change a key in place: each flag given replaces that part (the others stay).
    #[command(after_help = "Book: docs/src/howto/identities.md")]
    Update {
        name: String,
        /// client, approver, admin, or several: client,approver.
        #[arg(long)]
        role: Option<String>,
        /// Its groups (a,b); an empty value removes them.
        #[arg(long, value_name = "A,B")]
        groups: Option<String>,
        /// The only agents it may start (a,b); `*` for any agent of its tenant.
        #[arg(long, value_name = "A,B")]
        agents: Option<String>,
        /// The only tools its runs may call (x,y); `*` for any tool.
        #[arg(long, value_name = "X,Y")]
        tools: Option<String>,
        /// How long it lasts from now (30d, 12h, 90m), or `never`.
        #[arg(long)]
        expires: Option<String>,
        /// Replaces its spend limits (repeatable): AMOUNT(tokens|usd)/PER[:pause|fail|warn].
        #[arg(long = "budget", value_name = "LIMIT", conflicts_with = "no_budgets")]
        budgets: Vec<String>,
        /// Removes its spend limits.
        #[arg(long)]
        no_budgets: bool,
        /// Print the key's row as `GET /v1/keys` shows it.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a key: it is refused from now on.
    #[command(after_help = "Book: docs/src/howto/identities.md")]
    Revoke { name: String },
}

/// An allow-list as given (`a,b`): `None` when the flag is absent.
fn allow_list(text: Option<&str>) -> Option<Vec<String>> {
    text.map(Allow::list)
}

/// An allow-list in a table: `*` for no limit, `-` for an empty one.
fn shown_list(list: Option<&[String]>) -> String {
    match list {
        None => "*".into(),
        Some([]) => "-".into(),
        Some(l) => l.join(","),
    }
}

/// A key error as the command's: bad input (a name taken included) or another failure.
fn failure(e: KeyError) -> Failure {
    match e {
        KeyError::Invalid(_) | KeyError::NoKey(_) => Failure::bad_input(e.to_string()),
        KeyError::Store(StoreError::Refused(..)) => Failure::bad_input(e.to_string()),
        KeyError::Store(_) => Failure::other(e.to_string()),
    }
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
            // `--tenant T` (global): the tenant the key acts in.
            let tenant = super::tenant()
                .unwrap_or(toolgate::identity::DEFAULT_TENANT)
                .to_string();
            let req = KeyRequest {
                name,
                role,
                tenant,
                groups,
                agents: allow_list(agents.as_deref()),
                tools: allow_list(tools.as_deref()),
                expires,
                budgets,
            };
            create(db, req, json)
        }
        KeysCommand::List { json } => list(db, json),
        KeysCommand::Revoke { name } => revoke(db, &name),
        KeysCommand::Update {
            name,
            role,
            groups,
            agents,
            tools,
            expires,
            budgets,
            no_budgets,
            json,
        } => {
            let change = KeyUpdate {
                role,
                groups: groups.map(|g| Allow::list(&g)),
                agents: agents.map(|a| (a.trim() != "*").then(|| Allow::list(&a))),
                tools: tools.map(|t| (t.trim() != "*").then(|| Allow::list(&t))),
                expires: expires.map(|e| (e.trim() != "never").then_some(e)),
                budgets: if no_budgets {
                    Some(Vec::new())
                } else {
                    (!budgets.is_empty()).then_some(budgets)
                },
            };
            update(db, &name, change, json)
        }
    }
}

/// `keys create`: a new key, shown only this once.
fn create(db: &Path, req: KeyRequest, json: bool) -> Result<ExitCode, Failure> {
    let store = open_store(db)?;
    let IssuedKey { info, key, .. } = runtime()?
        .block_on(manage_keys::issue(&store, req))
        .map_err(failure)?;
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
    let keys: Vec<_> = runtime()?
        .block_on(manage_keys::list(&store))
        .map_err(failure)?
        .into_iter()
        .map(|(info, _)| info)
        .collect();
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

/// `keys update`: changes the active key `name`; prints what it is now.
fn update(db: &Path, name: &str, change: KeyUpdate, json: bool) -> Result<ExitCode, Failure> {
    let store = open_existing_store(db)?;
    let (info, budgets) = runtime()?
        .block_on(key_update::update(&store, name, change))
        .map_err(failure)?;
    if json {
        let row = toolgate::server::keys_http::row(info, &budgets);
        print_json(&mut out::stdout(), &row, false)?;
    } else {
        say!(
            "toolgate: key {name} updated: {} in tenant {}, agents {}, tools {}",
            info.roles,
            info.tenant,
            shown_list(info.allow.agents.as_deref()),
            shown_list(info.allow.tools.as_deref())
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `keys revoke`: revokes the active key named `name`.
fn revoke(db: &Path, name: &str) -> Result<ExitCode, Failure> {
    let store = open_existing_store(db)?;
    runtime()?
        .block_on(manage_keys::revoke(&store, name))
        .map_err(failure)?;
    say!("toolgate: key {name} revoked");
    Ok(ExitCode::SUCCESS)
}
