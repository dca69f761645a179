//! The reference pages that are tables of constants the code uses: `exit-codes.md`
//! (`cli::exit`), `environment.md` (the flags' variables from the clap definition and
//! the ones the code reads, `cli::environment`) and `metrics.md` (the registered metrics
//! and the spans' attributes).

use clap::Command;

use super::schema_md::cell;

/// `exit-codes.md`.
pub fn exit_codes() -> String {
    let mut out = String::from(
        "# Exit codes\n\n\
         Every `toolgate` command ends with one of these codes (a contract: scripts read \
         them). A failure prints one line on stderr, `toolgate: ` and the reason.\n\n\
         | Code | Meaning |\n|---|---|\n",
    );
    for (code, meaning) in super::super::exit::CODES {
        out.push_str(&format!("| {code} | {} |\n", cell(meaning)));
    }
    out
}

/// `environment.md`.
pub fn environment(root: &Command) -> String {
    let mut out = String::from(
        "# Environment variables\n\n\
         ## Flags' defaults\n\n\
         A flag given on the command line wins over its variable.\n\n\
         | Variable | Flag | Commands |\n|---|---|---|\n",
    );
    let mut flags: Vec<(String, String, Vec<String>)> = Vec::new();
    collect_env(root, "toolgate", &mut flags);
    flags.sort();
    for (var, flag, commands) in flags {
        out.push_str(&format!(
            "| `{var}` | `--{flag}` | {} |\n",
            commands.join(", ")
        ));
    }
    out.push_str(
        "\n## Read by toolgate\n\n\
         | Variable | What it does |\n|---|---|\n",
    );
    let mut read = super::super::environment::READ.to_vec();
    read.sort();
    for (var, meaning) in read {
        out.push_str(&format!("| `{var}` | {} |\n", cell(meaning)));
    }
    out
}

/// Every flag of `cmd` (named `path`) and below that falls back to a variable: the
/// variable, the flag, and the commands that take it.
fn collect_env(cmd: &Command, path: &str, out: &mut Vec<(String, String, Vec<String>)>) {
    for a in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
        let (Some(env), Some(long)) = (a.get_env(), a.get_long()) else {
            continue;
        };
        let var = env.to_string_lossy().to_string();
        let command = if a.is_global_set() && path == "toolgate" {
            "every command".to_string()
        } else if a.is_global_set() {
            format!("`{path}` and its subcommands")
        } else {
            format!("`{path}`")
        };
        match out.iter_mut().find(|(v, f, _)| *v == var && f == long) {
            Some((_, _, commands)) if !commands.contains(&command) => commands.push(command),
            Some(_) => {}
            None => out.push((var, long.to_string(), vec![command])),
        }
    }
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        collect_env(sub, &format!("{path} {}", sub.get_name()), out);
    }
}

/// `metrics.md`: the metrics `/metrics` exposes and the attributes of the exported spans.
pub fn metrics() -> Result<String, String> {
    let mut out = String::from(
        "# Metrics and spans\n\n\
         `toolgate serve` exposes these metrics in Prometheus (OpenMetrics) text at \
         `/metrics` (or on `--metrics-addr`). Counters carry a `_total` suffix when scraped. \
         Label values are bounded: agents, tools, models and categories the process meets \
         (past a cap, `other`), never ids or arguments.\n\n\
         | Metric | Type | Help |\n|---|---|---|\n",
    );
    let counted = toolgate::telemetry::metrics::catalogue();
    for m in counted
        .iter()
        .chain(&toolgate::server::collect::described())
    {
        out.push_str(&format!(
            "| `{}` | {} | {} |\n",
            m.name,
            m.kind,
            cell(&m.help)
        ));
    }
    out.push_str(
        "\n## Spans\n\n\
         With `--otlp-endpoint`, spans are exported over OTLP/HTTP with the OpenTelemetry \
         GenAI names: a drive of a run is `invoke_agent AGENT`, a model request \
         `chat MODEL`, a tool call `execute_tool TOOL`; a run paused and resumed is one \
         trace. Their `tracing` names (`run`, `model_call`, `call`) are what the logs \
         show.\n\n",
    );
    for (name, fields) in spans() {
        out.push_str(&format!(
            "### `{name}`\n\n| Attribute | Meaning |\n|---|---|\n"
        ));
        for f in fields {
            let meaning = toolgate::telemetry::genai::ATTRIBUTES
                .iter()
                .find(|(a, _)| *a == f)
                .map(|(_, m)| *m)
                .ok_or_else(|| {
                    format!("span attribute '{f}' has no meaning in telemetry::genai::ATTRIBUTES")
                })?;
            out.push_str(&format!("| `{f}` | {} |\n", cell(meaning)));
        }
        out.push('\n');
    }
    Ok(out)
}

/// The spans a run makes, each with its attributes, as the code creates them.
fn spans() -> Vec<(String, Vec<String>)> {
    use toolgate::telemetry::genai;
    tracing::subscriber::with_default(tracing_subscriber::registry(), || {
        let run = genai::run_span("RUN", "AGENT", "CONVERSATION", "openai:MODEL");
        let model = genai::model_span("openai:MODEL");
        let call = genai::tool_span(&run, "CALL", "TOOL");
        [run, model, call]
            .iter()
            .filter_map(|s| s.metadata())
            .map(|m| {
                let fields = m.fields().iter().map(|f| f.name().to_string()).collect();
                (m.name().to_string(), fields)
            })
            .collect()
    })
}
