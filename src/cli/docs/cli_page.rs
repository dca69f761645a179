//! `reference/cli.md`: every command, subcommand, argument and flag with its help,
//! read from the clap definition the binary parses with.

use clap::{Arg, Command};

use super::schema_md::cell;

/// The page: one section per command, depth first, hidden ones left out.
pub fn page(root: &Command) -> String {
    let mut root = root.clone();
    root.build();
    let mut out = String::from(
        "# Command line\n\n\
         Every command, argument and flag of `toolgate`, with the help `--help` prints. \
         The options of the first table (`--db`, `-v`, ...) are global: every command takes \
         them. Exit codes are in [Exit codes](exit-codes.md); the environment variables \
         flags read are also listed in [Environment variables](environment.md).\n\n",
    );
    section(&root, 2, &mut out);
    out
}

/// The section of `cmd` and its subcommands below, its heading at `depth`.
fn section(cmd: &Command, depth: usize, out: &mut String) {
    let name = cmd.get_bin_name().unwrap_or(cmd.get_name());
    out.push_str(&format!("{} `{name}`\n\n", "#".repeat(depth.min(6))));
    if let Some(about) = cmd.get_long_about().or(cmd.get_about()) {
        out.push_str(&format!("{}\n\n", about.to_string().trim()));
    }
    let usage = cmd.clone().render_usage().to_string();
    out.push_str(&format!("```text\n{}\n```\n\n", usage.trim()));
    let args: Vec<&Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set())
        .filter(|a| depth == 2 || !a.is_global_set())
        .filter(|a| !matches!(a.get_id().as_str(), "help" | "version"))
        .collect();
    if !args.is_empty() {
        out.push_str("| Argument | Description |\n|---|---|\n");
        for a in args {
            out.push_str(&format!(
                "| {} | {} |\n",
                cell(&spelling(a)),
                cell(&help(a))
            ));
        }
        out.push('\n');
    }
    let subs: Vec<&Command> = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
        .collect();
    if !subs.is_empty() && depth > 2 {
        let names: Vec<String> = subs.iter().map(|s| format!("`{}`", s.get_name())).collect();
        out.push_str(&format!("Subcommands: {}.\n\n", names.join(", ")));
    }
    for sub in subs {
        section(sub, depth + 1, out);
    }
}

/// How the argument is written: `--db <PATH>`, `-v, --verbose`, `<MESSAGE>`.
fn spelling(a: &Arg) -> String {
    let value = a
        .get_value_names()
        .map(|v| {
            v.iter()
                .map(|n| format!("<{n}>"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|| format!("<{}>", a.get_id().as_str().to_uppercase()));
    if a.is_positional() {
        return format!("`{value}`");
    }
    let takes = a.get_action().takes_values();
    let mut names = Vec::new();
    if let Some(s) = a.get_short() {
        names.push(format!("-{s}"));
    }
    if let Some(l) = a.get_long() {
        names.push(format!("--{l}"));
    }
    let names = names.join(", ");
    if takes {
        format!("`{names} {value}`")
    } else {
        format!("`{names}`")
    }
}

/// The argument's help, with its default, environment variable and possible values.
fn help(a: &Arg) -> String {
    let mut text = a
        .get_long_help()
        .or(a.get_help())
        .map(|h| h.to_string())
        .unwrap_or_default();
    let mut add = |s: String| {
        if !text.is_empty() && !text.ends_with(['.', ':', '!', '?']) {
            text.push('.');
        }
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(&s);
    };
    let values: Vec<String> = a
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| format!("`{}`", v.get_name()))
        .collect();
    if !values.is_empty() && a.get_action().takes_values() {
        add(format!("Values: {}.", values.join(", ")));
    }
    let defaults: Vec<String> = a
        .get_default_values()
        .iter()
        .map(|d| format!("`{}`", d.to_string_lossy()))
        .collect();
    if !defaults.is_empty() && a.get_action().takes_values() {
        add(format!("Default: {}.", defaults.join(", ")));
    }
    if let Some(env) = a.get_env() {
        add(format!("Environment: `{}`.", env.to_string_lossy()));
    }
    text
}
