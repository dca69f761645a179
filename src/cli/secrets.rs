//! `toolgate secrets`: the named credentials tool files ask for, stored sealed in the
//! database (`set` reads the value from stdin or an environment variable, never from
//! the command line), listed by name only, removed.

use std::io::Read;
use std::path::Path;
use std::process::ExitCode;
use toolgate::store::SecretScope;

use clap::{Args, Subcommand};
use toolgate::secrets::Keyring;
use toolgate::server::manage_secrets::{self, SecretError};

use super::out::{self, print, print_json, say};
use super::run::runtime;
use super::{Failure, open_existing_store, open_store, table};

#[derive(Args, Debug)]
pub struct SecretsArgs {
    #[command(subcommand)]
    command: SecretsCommand,
}

#[derive(Subcommand, Debug)]
enum SecretsCommand {
    /// Store a secret: its value from stdin (one line), or from --from-env VAR.
    #[command(after_help = "Book: docs/src/howto/secrets.md")]
    Set {
        /// The name tool files use (`credentials: {token: {secret: NAME}}`).
        name: String,
        /// Read the value from this environment variable instead of stdin.
        #[arg(long)]
        from_env: Option<String>,
        /// Then check it: the credential check of every tool that uses it (exit 1 if
        /// refused; the secret stays stored).
        #[arg(long)]
        validate: bool,
        /// Folder of tool files, for --validate [default: ./tools].
        #[arg(long, env = "TOOLGATE_TOOLS")]
        tools: Option<std::path::PathBuf>,
    },
    /// List the stored secrets' names (never their values).
    #[command(after_help = "Book: docs/src/howto/secrets.md")]
    List {
        #[arg(long)]
        json: bool,
    },
    /// Remove a stored secret.
    #[command(after_help = "Book: docs/src/howto/secrets.md")]
    Rm { name: String },
}

/// A secret error as the command's: bad input, or another failure.
fn failure(e: SecretError) -> Failure {
    match e {
        SecretError::Store(_) => Failure::other(e.to_string()),
        _ => Failure::bad_input(e.to_string()),
    }
}

pub fn run(args: SecretsArgs, db: &Path) -> Result<ExitCode, Failure> {
    match args.command {
        SecretsCommand::Set {
            name,
            from_env,
            validate,
            tools,
        } => {
            manage_secrets::check_name(&name).map_err(failure)?;
            let value = match from_env {
                Some(var) => std::env::var(&var).map_err(|_| {
                    Failure::bad_input(format!("the environment variable {var} is not set"))
                })?,
                None => {
                    let mut text = String::new();
                    std::io::stdin()
                        .read_to_string(&mut text)
                        .map_err(|e| Failure::bad_input(format!("cannot read the value: {e}")))?;
                    text.trim_end_matches(['\r', '\n']).to_string()
                }
            };
            let store = open_store(db)?;
            let keyring = Keyring::for_database(store.path());
            let scope = SecretScope::of(super::tenant());
            runtime()?
                .block_on(manage_secrets::set(&store, &keyring, scope, &name, &value))
                .map_err(failure)?;
            say!("toolgate: secret {name} stored (sealed)");
            if validate {
                let lib = super::load_tools(tools.as_deref())?;
                return super::validate::after_secret(&lib, &name, db);
            }
            Ok(ExitCode::SUCCESS)
        }
        SecretsCommand::List { json } => {
            let store = open_existing_store(db)?;
            let list = runtime()?
                .block_on(manage_secrets::list(
                    &store,
                    SecretScope::of(super::tenant()),
                ))
                .map_err(failure)?;
            if json {
                print_json(&mut out::stdout(), &list, false)?;
            } else {
                let rows: Vec<Vec<String>> = list
                    .iter()
                    .map(|s| vec![s.name.clone(), super::calls::show_time(s.updated_at)])
                    .collect();
                print(&table::render(&["NAME", "UPDATED"], &rows))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        SecretsCommand::Rm { name } => {
            let store = open_existing_store(db)?;
            let scope = SecretScope::of(super::tenant());
            runtime()?
                .block_on(manage_secrets::remove(&store, scope, &name))
                .map_err(failure)?;
            say!("toolgate: secret {name} removed");
            Ok(ExitCode::SUCCESS)
        }
    }
}
