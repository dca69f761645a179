//! Every fenced shell example (```` ```sh ````, `bash`, `console`) of the book and the
//! READMEs runs against the built binary: each page's examples in order, as one script,
//! in a fresh folder holding a copy of `examples/`, `tools/` and `prompts/`, with the
//! built `toolgate` first on PATH and a home of its own.
//!
//! Conventions the pages follow:
//! - a command that is meant to end with another exit code than 0 says so in its
//!   comment, `# exit 3` (a paused run); any other failure fails the example;
//! - port 8080 is the example's port: the test gives each page a free port instead (in
//!   the text, and as `TOOLGATE_ADDR`); a server started with `&` is stopped when the
//!   page's script ends;
//! - the few examples that cannot run here (a network, a key, a model server, minutes
//!   of benchmarks) are ```` ```sh,no_run ```` with `<!-- no_run: REASON -->` on the
//!   line before; there are at most [`MAX_NO_RUN`] of them.

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::markdown::{Block, blocks};
use super::{Page, pages, root};
use toolgate_test_support::CLEARED_ENV;

/// The info strings whose blocks are shell examples.
const SHELLS: &[&str] = &["sh", "bash", "shell", "console"];

/// How many examples may be marked `no_run`: a handful, each with its reason.
const MAX_NO_RUN: usize = 14;

/// How long one page's examples may take together.
const PAGE_LIMIT: Duration = Duration::from_secs(180);

/// The marker printed before each example, so that a failure names its line.
const MARKER: &str = "@@ example ";

/// The reason an example does not run, from `<!-- no_run: REASON -->`.
fn no_run_reason(block: &Block) -> Option<&str> {
    let reason = block
        .before
        .strip_prefix("<!-- no_run:")?
        .strip_suffix("-->")?
        .trim();
    (!reason.is_empty()).then_some(reason)
}

/// Where the comment of a shell line starts: the first `#` after whitespace, outside
/// quotes.
fn comment_start(line: &str) -> Option<usize> {
    let (mut single, mut double, mut prev_space) = (false, false, true);
    for (i, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && prev_space => return Some(i),
            _ => {}
        }
        prev_space = c.is_whitespace();
    }
    None
}

/// `line` as the script runs it: a command whose comment says `# exit N` must end
/// with N.
fn command_line(line: &str) -> String {
    let Some(at) = comment_start(line) else {
        return line.to_string();
    };
    let (cmd, comment) = (line[..at].trim_end(), &line[at..]);
    let code = comment.split("# exit ").nth(1).and_then(|rest| {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse::<u8>().ok()
    });
    match code {
        Some(n) if !cmd.is_empty() => format!(
            "{cmd} && __rc=0 || __rc=$?; [ \"$__rc\" = {n} ] || \
             {{ echo \"expected exit code {n}, got $__rc\" >&2; exit 1; }}"
        ),
        _ => line.to_string(),
    }
}

/// The commands of a block: every line of a `sh` block; the `$ ` lines (and their
/// continuations) of a `console` block.
fn commands(block: &Block) -> Vec<String> {
    if block.lang() != "console" {
        return block.body.clone();
    }
    let mut out = Vec::new();
    let mut continued = false;
    for line in &block.body {
        if let Some(cmd) = line.strip_prefix("$ ") {
            out.push(cmd.to_string());
        } else if continued {
            out.push(line.clone());
        } else {
            continue;
        }
        continued = line.ends_with('\\');
    }
    out
}

/// One page's runnable examples as a bash script.
fn script(runnable: &[&Block], port: u16) -> String {
    let mut s = String::from(
        "set -eo pipefail\n\
         trap 'for p in $(jobs -p); do kill \"$p\" 2>/dev/null || true; done; wait || true' EXIT\n",
    );
    for block in runnable {
        let _ = writeln!(s, "printf '\\n{MARKER}%s\\n' '{}'", block.line);
        for line in commands(block) {
            s.push_str(&command_line(&line.replace(":8080", &format!(":{port}"))));
            s.push('\n');
        }
    }
    s
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), &dest).unwrap();
        }
    }
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Runs `script` in a fresh folder; `Err` is the failure report.
fn run_page(page: &Page, runnable: &[&Block]) -> Result<Duration, String> {
    let tmp = tempfile::tempdir().unwrap();
    let (work, home) = (tmp.path().join("work"), tmp.path().join("home"));
    for dir in ["examples", "tools", "prompts"] {
        copy_tree(&root().join(dir), &work.join(dir));
    }
    std::fs::create_dir_all(&home).unwrap();
    let port = free_port();
    let script_path = tmp.path().join("examples.sh");
    std::fs::write(&script_path, script(runnable, port)).unwrap();
    let log_path = tmp.path().join("output.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_toolgate")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new("bash");
    cmd.arg(&script_path)
        .current_dir(&work)
        .env("PATH", path)
        .env("HOME", &home)
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("TOOLGATE_ADDR", format!("127.0.0.1:{port}"))
        // examples/demo.sh builds toolgate unless it names one already built.
        .env("TOOLGATE_BIN", env!("CARGO_BIN_EXE_toolgate"))
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log);
    for name in CLEARED_ENV {
        cmd.env_remove(name);
    }
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let start = Instant::now();
    let mut child = cmd.spawn().unwrap();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > PAGE_LIMIT {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = std::fs::read_to_string(&log_path).unwrap_or_default();
    match status {
        Some(s) if s.success() => Ok(start.elapsed()),
        other => Err(report(
            page,
            &output,
            other.map_or("timed out".into(), |s| s.to_string()),
        )),
    }
}

/// Names the failed example (page and line) with what it printed.
fn report(page: &Page, output: &str, status: String) -> String {
    let (line, tail) = match output.rfind(MARKER) {
        Some(at) => {
            let rest = &output[at + MARKER.len()..];
            let (line, tail) = rest.split_once('\n').unwrap_or((rest, ""));
            (line.to_string(), tail)
        }
        None => ("?".into(), output),
    };
    let lines: Vec<&str> = tail.lines().collect();
    let shown = lines[lines.len().saturating_sub(60)..].join("\n");
    format!(
        "{}:{line}: the example failed ({status}); its output:\n{shown}\n",
        page.path.display()
    )
}

#[test]
fn every_shell_example_runs() {
    let pages = pages();
    let mut no_run = Vec::new();
    let mut unexplained = Vec::new();
    let mut work = Vec::new();
    for page in &pages {
        let mut runnable = Vec::new();
        // The crates' READMEs show their own test commands: not examples of toolgate.
        if page.path.starts_with("crates") {
            continue;
        }
        for block in blocks(&page.text) {
            if !SHELLS.contains(&block.lang()) {
                continue;
            }
            let at = format!("{}:{}", page.path.display(), block.line);
            if block.has("no_run") {
                match no_run_reason(&block) {
                    Some(reason) => no_run.push(format!("{at}: {reason}")),
                    None => unexplained.push(at),
                }
            } else {
                runnable.push(block);
            }
        }
        if !runnable.is_empty() {
            work.push((page, runnable));
        }
    }
    assert!(
        unexplained.is_empty(),
        "no_run examples without `<!-- no_run: REASON -->` on the line before: {unexplained:?}"
    );
    assert!(
        no_run.len() <= MAX_NO_RUN,
        "{} no_run examples (at most {MAX_NO_RUN}):\n{}",
        no_run.len(),
        no_run.join("\n")
    );
    let examples: usize = work.iter().map(|(_, r)| r.len()).sum();
    assert!(
        examples > 20,
        "only {examples} runnable shell examples found"
    );
    let results: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = work
            .iter()
            .map(|(page, runnable)| {
                let refs: Vec<&Block> = runnable.iter().collect();
                s.spawn(move || (page.path.display().to_string(), run_page(page, &refs)))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut failures = Vec::new();
    for (page, result) in results {
        match result {
            Ok(took) => eprintln!("docs examples: {page} in {:.1} s", took.as_secs_f64()),
            Err(report) => failures.push(report),
        }
    }
    eprintln!(
        "docs examples: {examples} ran, {} not run:\n  {}",
        no_run.len(),
        no_run.join("\n  ")
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn an_exit_comment_checks_the_exit_code() {
    assert_eq!(
        command_line("echo hi   # a comment"),
        "echo hi   # a comment"
    );
    let line = command_line("toolgate run x  # the run pauses   # exit 3: paused");
    assert!(
        line.starts_with("toolgate run x && __rc=0 || __rc=$?; [ \"$__rc\" = 3 ]"),
        "{line}"
    );
    assert_eq!(command_line("echo '# exit 3'"), "echo '# exit 3'");
}

#[test]
fn a_failure_names_the_page_the_line_and_the_output() {
    let page = Page {
        path: "docs/src/x.md".into(),
        text: String::new(),
    };
    let output = format!("\n{MARKER}12\nfine\n\n{MARKER}40\nboom: no such file\n");
    let text = report(&page, &output, "exit status: 1".into());
    assert!(
        text.starts_with("docs/src/x.md:40: the example failed (exit status: 1)"),
        "{text}"
    );
    assert!(
        text.contains("boom: no such file") && !text.contains("fine"),
        "{text}"
    );
}
