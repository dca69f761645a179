//! `toolgate --help` and every command's help, subcommands included, end with
//! `Book: docs/src/PAGE.md`, a page of the book that exists.

use super::root;
use toolgate_test_support::toolgate;

/// The help of `toolgate ARGS --help`.
fn help(args: &[String]) -> String {
    let out = toolgate(root()).args(args).arg("--help").output().unwrap();
    assert!(out.status.success(), "toolgate {args:?} --help failed");
    String::from_utf8(out.stdout).unwrap()
}

/// The subcommands a help lists under `Commands:` (without `help`).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| l.trim() != "Commands:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// What is wrong with the end of `text`, the help of `toolgate ARGS`; `None` when it
/// names a page that exists.
fn check(text: &str) -> Option<String> {
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default();
    let Some(page) = last.trim().strip_prefix("Book: ") else {
        return Some(format!(
            "it ends with {last:?}, not `Book: docs/src/PAGE.md`"
        ));
    };
    if !page.starts_with("docs/src/") || !page.ends_with(".md") {
        return Some(format!("{page} is not a page of the book (docs/src/*.md)"));
    }
    (!root().join(page).is_file()).then(|| format!("{page} does not exist"))
}

#[test]
fn every_command_help_ends_with_its_book_page() {
    let mut todo: Vec<Vec<String>> = vec![vec![]];
    let mut seen = 0;
    let mut wrong = Vec::new();
    while let Some(args) = todo.pop() {
        let text = help(&args);
        seen += 1;
        if let Some(why) = check(&text) {
            wrong.push(format!("toolgate {} --help: {why}", args.join(" ")));
        }
        for sub in subcommands(&text) {
            let mut next = args.clone();
            next.push(sub);
            todo.push(next);
        }
    }
    assert!(
        seen > 20,
        "only {seen} helps read: is the Commands: reader broken?"
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
