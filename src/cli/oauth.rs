//! `toolgate oauth`: the providers users have connected (per-user OAuth tokens, sealed
//! in the database), listed by user and provider, revoked, and connected from the
//! command line (`connect`, see oauth_connect.rs). Never prints a token.

use std::path::Path;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use toolgate::identity::DEFAULT_TENANT;
use toolgate::oauth::AtProvider;
use toolgate::store::oauth::OAuthOwner;

use super::out::{self, print, print_json, say};
use super::run::runtime;
use super::{Failure, open_existing_store, open_store, table};

#[derive(Args, Debug)]
pub struct OAuthArgs {
    #[command(subcommand)]
    command: OAuthCommand,
}

#[derive(Subcommand, Debug)]
enum OAuthCommand {
    /// List the connections of the tenant (`--tenant`, or `default`): user, provider,
    /// scope, when the access token expires.
    #[command(after_help = "Book: docs/src/howto/oauth.md")]
    List {
        /// Only this user's.
        #[arg(long)]
        user: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Revoke a user's connection to a provider: its tokens are deleted, and revoked at
    /// the provider too (RFC 7009) when `--tools` holds its declaration and it has a
    /// revocation endpoint; the next call that needs them pauses for consent again.
    #[command(after_help = "Book: docs/src/howto/oauth.md")]
    Revoke {
        /// The provider's name (`oauth: {name: ...}` in the tool file).
        provider: String,
        /// Whose connection.
        #[arg(long)]
        user: String,
        /// The tools folder that declares the provider, to revoke the tokens there too.
        #[arg(long, value_name = "DIR")]
        tools: Option<std::path::PathBuf>,
    },
    /// Complete a paused run's consent on this machine: print the consent URL, take the
    /// browser's redirect on the loopback callback (`http://localhost:8080/v1/oauth/callback`
    /// for runs of the command line), store the tokens, and continue the run.
    #[command(after_help = "Book: docs/src/howto/oauth.md")]
    Connect {
        /// The paused run (or a unique start of its id).
        run: String,
        /// Seconds to wait for the browser to come back.
        #[arg(long, default_value_t = 300)]
        timeout: u64,
        /// Print events as JSON lines, the run object last.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(args: OAuthArgs, db: &Path) -> Result<ExitCode, Failure> {
    let tenant = super::tenant().unwrap_or(DEFAULT_TENANT).to_string();
    match args.command {
        OAuthCommand::List { user, json } => {
            // As `toolgate runs`: a database not made yet lists nothing.
            let store = open_store(db)?;
            let grants = runtime()?
                .block_on(store.oauth_grants(&tenant, user.as_deref()))
                .map_err(|e| Failure::other(e.to_string()))?;
            if json {
                print_json(&mut out::stdout(), &grants, false)?;
                return Ok(ExitCode::SUCCESS);
            }
            let rows: Vec<Vec<String>> = grants
                .iter()
                .map(|g| {
                    vec![
                        g.user.clone(),
                        g.provider.clone(),
                        g.scope.clone().unwrap_or_default(),
                        g.expires_at
                            .map(super::calls::show_time)
                            .unwrap_or_default(),
                        super::calls::show_time(g.updated_at),
                    ]
                })
                .collect();
            print(&table::render(
                &["USER", "PROVIDER", "SCOPE", "EXPIRES", "UPDATED"],
                &rows,
            ))?;
            Ok(ExitCode::SUCCESS)
        }
        OAuthCommand::Connect { run, timeout, json } => {
            super::oauth_connect::connect(&run, timeout, json, db)
        }
        OAuthCommand::Revoke {
            provider,
            user,
            tools,
        } => {
            let store = open_existing_store(db)?;
            let owner = OAuthOwner {
                tenant: tenant.clone(),
                user: user.clone(),
                provider: provider.clone(),
            };
            let runner = super::run::runner(store);
            let declared = match &tools {
                Some(dir) => (runner.load_library)(Some(dir))
                    .map_err(|e| Failure::bad_input(e.to_string()))?
                    .tools()
                    .filter_map(|t| t.user_oauth())
                    .find(|p| p.name == provider),
                None => None,
            };
            let told = runtime()?
                .block_on(
                    runner
                        .oauth_broker(Some(tenant))
                        .revoke(declared.as_ref(), &owner),
                )
                .map_err(|e| Failure::other(e.to_string()))?;
            let Some(told) = told else {
                return Err(Failure::bad_input(format!(
                    "{user} has no connection to {provider}"
                )));
            };
            match told {
                AtProvider::Revoked => say!("toolgate: {provider} revoked the tokens too"),
                AtProvider::NoEndpoint => {
                    say!(
                        "toolgate: {provider} has no revocation endpoint; its tokens live until they expire"
                    )
                }
                AtProvider::NotDeclared => say!(
                    "toolgate: {provider} was not told (give --tools DIR, the folder that declares it, to revoke its tokens there too)"
                ),
                AtProvider::Failed(why) => {
                    say!("toolgate: warning: {provider} was not told: {why}")
                }
            }
            say!("toolgate: {user}'s connection to {provider} revoked");
            Ok(ExitCode::SUCCESS)
        }
    }
}
