//! `toolgate tools validate [NAME|PROVIDER]` and `secrets set NAME --validate`: each
//! tool's (or Dify provider's) credential check run with the stored secrets, the
//! verdicts printed (the upstream's reason, never a credential) and kept as the tools'
//! last validation, which `tools list` shows.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

use toolgate::run::Runner;
use toolgate::run::validate::{CheckGroup, Checked, groups, groups_using};
use toolgate::store::{SecretScope, Store, ToolValidation};
use toolgate::tool::ToolLibrary;

use super::out::{self, print, print_json, say};
use super::run::runtime;
use super::{Failure, Wait, open_store, table};

/// Runs the checks `target` names (every tool with one when `None`) and prints them;
/// exit 1 when any was refused or could not run.
pub fn validate(
    lib: &ToolLibrary,
    target: Option<&str>,
    db: &Path,
    json: bool,
) -> Result<ExitCode, Failure> {
    let chosen = groups(lib, target).map_err(Failure::bad_input)?;
    if let (Some(t), [only]) = (target, chosen.as_slice())
        && !only.tools.iter().any(|tool| tool.checks_credentials())
    {
        return Err(Failure::bad_input(format!(
            "'{t}' has no credential check: an http tool's `validate:` request or a Dify provider's `_validate_credentials` is one"
        )));
    }
    let results = run_checks(chosen, db)?;
    show(&results, json)
}

/// After `secrets set NAME`: the checks of every tool whose credentials name it.
pub fn after_secret(lib: &ToolLibrary, name: &str, db: &Path) -> Result<ExitCode, Failure> {
    let chosen = groups_using(lib, name).map_err(Failure::bad_input)?;
    if chosen.is_empty() {
        say!(
            "toolgate: no tool with a credential check uses the secret {name}: nothing to validate"
        );
        return Ok(ExitCode::SUCCESS);
    }
    let results = run_checks(chosen, db)?;
    show(&results, false)
}

fn run_checks(chosen: Vec<CheckGroup>, db: &Path) -> Result<Vec<Checked>, Failure> {
    let store = open_store(db)?;
    let runner = Runner::new(store, toolgate::tool::sources::standard());
    let here = std::env::current_dir()
        .map_err(|e| Failure::other(format!("cannot read the current folder: {e}")))?;
    runtime()?
        .block_on(runner.validate(chosen, super::tenant(), here))
        .map_err(super::store_failure)
}

fn show(results: &[Checked], json: bool) -> Result<ExitCode, Failure> {
    if json {
        print_json(&mut out::stdout(), &results, false)?;
    } else {
        let rows: Vec<Vec<String>> = results
            .iter()
            .map(|c| {
                vec![
                    c.provider.clone().unwrap_or_else(|| c.tools.join(", ")),
                    c.status.to_string(),
                    c.reason.clone().unwrap_or_default(),
                ]
            })
            .collect();
        print(&table::render(&["TOOL", "CREDENTIALS", "REASON"], &rows))?;
    }
    let all_valid = results.iter().all(|c| c.status == "valid");
    Ok(if all_valid {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Each tool's last validation, by tool name (none when there is no database yet).
pub fn last_checks(db: &Path) -> BTreeMap<String, ToolValidation> {
    if toolgate::store::postgres_url(db).is_none() && !db.exists() {
        return BTreeMap::new();
    }
    let Ok(store) = Store::open(db) else {
        return BTreeMap::new();
    };
    store
        .validations(SecretScope::of(super::tenant()))
        .wait()
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default()
        .into_iter()
        .map(|v| (v.tool.clone(), v))
        .collect()
}

/// A last validation in a word: `valid`, `invalid`, or `-` when there is none.
pub fn word(check: Option<&ToolValidation>) -> String {
    match check {
        Some(v) if v.valid => "valid".into(),
        Some(_) => "invalid".into(),
        None => "-".into(),
    }
}
