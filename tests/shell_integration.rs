//! What a shell user installs: `toolgate --version` (version and commit), completion
//! scripts (bash's run for real: `toolgate ap<TAB>` and an agent file argument) and the
//! manual pages (rendered by man's own formatter).

use std::path::Path;
use std::process::Command;

use toolgate_test_support::{launching::output, toolgate};

#[test]
fn version_names_the_commit_it_was_built_from() {
    let dir = tempfile::tempdir().unwrap();
    let out = output(&["--version"], dir.path());
    assert!(out.status.success());
    let line = String::from_utf8(out.stdout).unwrap();
    let want = format!("toolgate {} (", env!("CARGO_PKG_VERSION"));
    assert!(line.starts_with(&want), "{line}");
    // Built in this clone: the commit git names, as `git log` writes it (build.rs).
    let git = Command::new("git")
        .args(["log", "-1", "--format=%h %cs", "--abbrev=12"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output();
    match git {
        Ok(g) if g.status.success() => {
            let commit = String::from_utf8(g.stdout).unwrap();
            assert_eq!(line.trim(), format!("{want}{})", commit.trim()));
        }
        // No git here: the build said so rather than inventing a commit.
        _ => assert_eq!(line.trim(), format!("{want}commit unknown)")),
    }
}

/// What bash's completion function offers for `words` (the last one being completed),
/// with the script `toolgate completions bash` printed, in `dir`.
fn bash_complete(dir: &Path, words: &[&str]) -> Vec<String> {
    let script = output(&["completions", "bash"], dir);
    assert!(script.status.success());
    std::fs::write(dir.join("toolgate.bash"), &script.stdout).unwrap();
    let line = words.join(" ");
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let driver = format!(
        "source ./toolgate.bash\n\
         COMP_WORDS=({words}); COMP_CWORD={cword}; COMP_LINE='{line}'; COMP_POINT=${{#COMP_LINE}}\n\
         _toolgate toolgate '{cur}' '{prev}'\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        words = quoted.join(" "),
        cword = words.len() - 1,
        cur = words[words.len() - 1],
        prev = words[words.len() - 2],
    );
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &driver])
        .current_dir(dir)
        .output()
        .expect("bash must be there");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut offered: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    offered.sort();
    offered
}

#[test]
fn bash_completes_subcommands_and_agent_files() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(bash_complete(dir.path(), &["toolgate", "ap"]), ["approve"]);
    assert_eq!(
        bash_complete(dir.path(), &["toolgate", "c"]),
        ["calls", "cancel", "completions"]
    );
    std::fs::create_dir(dir.path().join("agents")).unwrap();
    for f in ["assistant.yaml", "assistant.replies.yaml", "other.yaml"] {
        std::fs::write(dir.path().join("agents").join(f), "name: a\n").unwrap();
    }
    assert_eq!(
        bash_complete(dir.path(), &["toolgate", "run", "--agent", "agents/as"]),
        ["agents/assistant.replies.yaml", "agents/assistant.yaml"]
    );
    // After the agent file, the options of `run`.
    let options = bash_complete(
        dir.path(),
        &["toolgate", "run", "--agent", "agents/other.yaml", "--mo"],
    );
    assert_eq!(options, ["--model"]);
}

#[test]
fn zsh_and_fish_scripts_name_every_command() {
    let dir = tempfile::tempdir().unwrap();
    for shell in ["zsh", "fish"] {
        let out = output(&["completions", shell], dir.path());
        assert!(out.status.success(), "{shell}");
        let script = String::from_utf8(out.stdout).unwrap();
        for command in ["approve", "run", "serve", "completions", "man"] {
            assert!(script.contains(command), "{shell} script lacks {command}");
        }
    }
    let bad = output(&["completions", "tcsh"], dir.path());
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn man_pages_render_with_man() {
    let dir = tempfile::tempdir().unwrap();
    let pages = dir.path().join("man1");
    let out = output(&["man", "--dir", pages.to_str().unwrap()], dir.path());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut names: Vec<String> = std::fs::read_dir(&pages)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for page in [
        "toolgate.1",
        "toolgate-run.1",
        "toolgate-approve.1",
        "toolgate-tools-list.1",
    ] {
        assert!(
            names.iter().any(|n| n == page),
            "{page} missing from {names:?}"
        );
    }
    assert!(
        !names.iter().any(|n| n.starts_with("toolgate-docs")),
        "{names:?}"
    );
    // man's own formatter reads the page: the run page names the --agent option.
    let rendered = Command::new("man")
        .args(["-l", "-P", "cat"])
        .arg(pages.join("toolgate-run.1"))
        .env("MANWIDTH", "100")
        .output()
        .expect("man must be there (Debian: apt-get install man-db)");
    assert!(
        rendered.status.success(),
        "{}",
        String::from_utf8_lossy(&rendered.stderr)
    );
    let text = String::from_utf8_lossy(&rendered.stdout);
    assert!(text.contains("--agent"), "{text}");
    // Without --dir: the top page on stdout, listing the commands.
    let top = toolgate(dir.path()).arg("man").output().unwrap();
    let top = String::from_utf8(top.stdout).unwrap();
    assert!(
        top.starts_with(".ie") || top.contains(".TH toolgate 1"),
        "{top}"
    );
    assert!(top.contains("approve"));
}
