//! `toolgate doctor`: what this machine can confine — the kernel's Landlock ABI and
//! each feature a sandbox may need, seccomp, the user tools run as — and whether a
//! program actually starts in the default sandbox. Exit 1 when it does not. With
//! `--model`, a model server's probe instead (`doctor_model`).

use std::io::Write;
use std::process::ExitCode;

use clap::Args;
use serde_json::{Value, json};
use toolgate::sandbox::{self, Feature, Fs, Launch, Rules, SandboxPolicy};

use super::Failure;
use super::out::{self, print_json};

#[derive(Args, Debug)]
pub struct DoctorArgs {
    /// Print the report as one JSON object.
    #[arg(long)]
    json: bool,
    /// Ask this model one probe question with a tool instead, and say in which form it
    /// writes calls and what to put in the agent file: an OpenAI-compatible server's
    /// URL (`http://127.0.0.1:8080/v1`) or a model spec (`openai:NAME`).
    #[arg(long, value_name = "URL_OR_SPEC")]
    model: Option<String>,
}

pub fn run(args: DoctorArgs) -> Result<ExitCode, Failure> {
    if let Some(target) = &args.model {
        return super::doctor_model::run(target, args.json);
    }
    let support = sandbox::support();
    let default = SandboxPolicy::default();
    let ready = default
        .rules()
        .map_or(Ok(()), |r| support.check("the default sandbox", r));
    let started = match &ready {
        Ok(()) => start_true(),
        Err(e) => Err(e.to_string()),
    };
    let ok = started.is_ok();
    let mut out = out::stdout();
    if args.json {
        let features: serde_json::Map<String, Value> = Feature::ALL
            .iter()
            .map(|f| (f.name().to_string(), json!(support.has(*f))))
            .collect();
        let report = json!({
            "kernel": kernel(),
            "landlock_abi": support.landlock_abi,
            "landlock_abi_lowered": support.abi_capped,
            "features": features,
            "root": support.root,
            "tool_user": support.root.then(|| json!({"uid": support.tool_user.0, "gid": support.tool_user.1})),
            "default_sandbox": default.to_json(),
            "default_sandbox_starts": ok,
            "problem": started.err(),
        });
        print_json(&mut out, &report, true)?;
    } else {
        let mut text = format!("kernel: Linux {}\n", kernel());
        text.push_str(&match support.landlock_abi {
            0 => "Landlock: not available\n".to_string(),
            n if support.abi_capped => {
                format!("Landlock: ABI {n} (lowered by TOOLGATE_SANDBOX_ABI)\n")
            }
            n => format!("Landlock: ABI {n}\n"),
        });
        for f in Feature::ALL {
            let need = match f.abi() {
                0 => String::new(),
                n => format!(" (ABI {n})"),
            };
            let mark = if support.has(f) { "yes" } else { "no " };
            text.push_str(&format!("  {mark}  {}{need}: {}\n", f.name(), use_of(f)));
        }
        text.push_str(&if support.root {
            format!(
                "tools run as: uid {} gid {} (toolgate runs as root), with only CAP_DAC_READ_SEARCH\n",
                support.tool_user.0, support.tool_user.1
            )
        } else {
            "tools run as: toolgate's own user\n".to_string()
        });
        text.push_str(&format!("default sandbox: {}\n", default.to_json()));
        text.push_str(&match &started {
            Ok(()) => "a program starts in the default sandbox: yes\n".to_string(),
            Err(why) => format!("a program starts in the default sandbox: no: {why}\n"),
        });
        out.write_all(text.as_bytes()).map_err(out::write_failure)?;
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        super::exit::code(super::exit::FAILED)
    })
}

/// What a feature is for, in the settings' words.
fn use_of(f: Feature) -> &'static str {
    match f {
        Feature::FsRules => "fs: workspace-write, workspace-read",
        Feature::TcpRules => "network: false",
        Feature::Scoping => "network: false; signals to the server when not root",
        Feature::UnixSocketRules => "Unix sockets only in allowed folders (else file permissions)",
        Feature::Seccomp => "network: false (UDP, raw, netlink)",
    }
}

fn kernel() -> String {
    rustix::system::uname()
        .release()
        .to_string_lossy()
        .into_owned()
}

/// Starts `true` in the default sandbox (the workspace read-only: nothing here is
/// touched) and waits for it.
fn start_true() -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let workspace = std::env::current_dir().map_err(|e| e.to_string())?;
    let policy = SandboxPolicy::On(Rules {
        fs: Fs::WorkspaceRead,
        ..Rules::default()
    });
    runtime.block_on(async {
        let mut cmd = tokio::process::Command::new("true");
        let launch = Launch {
            who: "the doctor's check",
            workspace: &workspace,
            program: None,
            env: &[],
        };
        let _confined = sandbox::confine(&mut cmd, &policy, &launch).map_err(|e| e.to_string())?;
        let status = cmd
            .status()
            .await
            .map_err(|e| format!("cannot start true: {e}"))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("true ended with {status}"))
        }
    })
}
