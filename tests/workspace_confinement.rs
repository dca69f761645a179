//! The file tools (`read_file`, `write_file`, `list_dir`) against an attacker who can
//! change the workspace while calls run: a symlink flipped between a safe target and an
//! outside file, hard links to outside files, and the paths that must always be refused
//! (`..`, absolute, NUL, overlong, a root that is itself a symlink).
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolgate::tool::{ToolContext, ToolError, ToolLibrary, ToolOutput, workspace};

async fn call(
    lib: &ToolLibrary,
    ctx: &ToolContext,
    tool: &str,
    args: Value,
) -> Result<ToolOutput, ToolError> {
    let args = args.as_object().unwrap().clone();
    lib.get(tool).unwrap().invoke(ctx, args).await
}

fn ctx(dir: &Path) -> ToolContext {
    ToolContext::new(workspace::canonical_root(dir).unwrap())
}

/// One name in the workspace that an attacker keeps swapping between a real file or
/// folder inside (which any check would pass) and a symlink to the same thing outside.
struct Swapped {
    name: PathBuf,
    /// Where the real file or folder waits while the name is a symlink.
    stash: PathBuf,
    outside: PathBuf,
}

impl Swapped {
    /// The name becomes a symlink to the outside target.
    fn to_link(&self) {
        let _ = std::fs::rename(&self.name, &self.stash);
        let tmp = self.name.with_extension("tmp");
        let _ = std::fs::remove_file(&tmp);
        symlink(&self.outside, &tmp).unwrap();
        if std::fs::rename(&tmp, &self.name).is_err() {
            // A call created a folder of that name in the gap.
            let _ = std::fs::remove_dir_all(&self.name);
            let _ = std::fs::rename(&tmp, &self.name);
        }
    }

    /// The name is the real file or folder again.
    fn to_real(&self) {
        if std::fs::rename(&self.stash, &self.name).is_err() {
            // A folder cannot be renamed over a symlink: remove the link first.
            let _ = std::fs::remove_file(&self.name);
            let _ = std::fs::remove_dir_all(&self.name);
            let _ = std::fs::rename(&self.stash, &self.name);
        }
    }
}

/// A thread that swaps every name until `stop` is set; returns how many swaps it made.
fn swapper(names: Vec<Swapped>, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let mut swaps = 0;
        while !stop.load(Ordering::Relaxed) {
            for name in &names {
                if swaps % 2 == 0 {
                    name.to_link();
                } else {
                    name.to_real();
                }
            }
            swaps += 1;
            std::thread::yield_now();
        }
        swaps
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlink_swapped_in_during_calls_never_lets_one_escape() {
    let lib = ToolLibrary::builtin(&toolgate::tool::sources::standard());
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let stash = tempfile::tempdir_in(ws.path()).unwrap();
    let root = workspace::canonical_root(ws.path()).unwrap();
    let out = outside.path();
    std::fs::write(out.join("secret.txt"), "OUTSIDE-SECRET").unwrap();
    std::fs::write(out.join("victim.txt"), "ORIGINAL").unwrap();
    std::fs::write(out.join("only_outside.txt"), "").unwrap();
    std::fs::write(root.join("f.txt"), "inside").unwrap();
    std::fs::write(root.join("w.txt"), "inside").unwrap();
    std::fs::create_dir(root.join("d")).unwrap();
    std::fs::write(root.join("d/secret.txt"), "inside").unwrap();
    std::fs::write(root.join("d/victim.txt"), "inside").unwrap();
    // A file to read, a file to write, a folder: each swapped with a symlink out.
    let names = ["f.txt", "w.txt", "d"]
        .into_iter()
        .zip([
            out.join("secret.txt"),
            out.join("victim.txt"),
            out.to_path_buf(),
        ])
        .map(|(name, outside)| Swapped {
            name: root.join(name),
            stash: stash.path().join(name),
            outside,
        })
        .collect();
    let ctx = ToolContext::new(root.clone());
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = swapper(names, Arc::clone(&stop));

    let (mut escaped_reads, mut escaped_lists, mut ok_reads, mut refused) = (0, 0, 0, 0);
    let mut calls = 0;
    let until = Instant::now() + Duration::from_millis(1500);
    while Instant::now() < until {
        for path in ["f.txt", "d/secret.txt"] {
            match call(&lib, &ctx, "read_file", json!({"path": path})).await {
                Ok(out) if out.to_text().contains("OUTSIDE") => escaped_reads += 1,
                Ok(_) => ok_reads += 1,
                Err(_) => refused += 1,
            }
        }
        for path in ["w.txt", "d/victim.txt", "d/new.txt"] {
            let _ = call(
                &lib,
                &ctx,
                "write_file",
                json!({"path": path, "content": "PWNED"}),
            )
            .await;
        }
        if let Ok(listed) = call(&lib, &ctx, "list_dir", json!({"path": "d"})).await
            && listed.to_text().contains("only_outside")
        {
            escaped_lists += 1;
        }
        calls += 6;
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swaps.join().unwrap();

    let mut outside_now: Vec<String> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    outside_now.sort();
    let victim = std::fs::read_to_string(out.join("victim.txt")).unwrap();
    eprintln!(
        "{calls} calls, {swaps} swaps: {ok_reads} reads inside, {refused} refused, \
         {escaped_reads} escaped, {escaped_lists} listings outside"
    );
    assert_eq!(
        escaped_reads, 0,
        "{escaped_reads} reads escaped out of {calls} calls"
    );
    assert_eq!(escaped_lists, 0, "{escaped_lists} listings escaped");
    assert_eq!(victim, "ORIGINAL", "a write escaped");
    assert_eq!(
        outside_now,
        ["only_outside.txt", "secret.txt", "victim.txt"],
        "a file was created outside"
    );
    // The race was real: calls saw both states.
    assert!(swaps > 100, "only {swaps} swaps");
    assert!(ok_reads > 0, "no read ever went through");
    assert!(refused > 0, "no read was ever refused");
}

#[tokio::test]
async fn hard_links_to_outside_files_are_neither_read_nor_written() {
    let lib = ToolLibrary::builtin(&toolgate::tool::sources::standard());
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("target.txt");
    std::fs::write(&target, "OUTSIDE-SECRET").unwrap();
    std::fs::hard_link(&target, ws.path().join("hl.txt")).unwrap();
    let ctx = ctx(ws.path());

    let err = call(&lib, &ctx, "read_file", json!({"path": "hl.txt"}))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("2 hard links"), "{err}");
    assert!(!err.contains("OUTSIDE"), "{err}");
    for append in [false, true] {
        let err = call(
            &lib,
            &ctx,
            "write_file",
            json!({"path": "hl.txt", "content": "PWNED", "append": append}),
        )
        .await
        .unwrap_err()
        .to_string();
        assert!(err.contains("2 hard links"), "{err}");
        assert!(err.contains("outside the workspace"), "{err}");
    }
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "OUTSIDE-SECRET");

    // A file with one link is read and written as before.
    std::fs::remove_file(&target).unwrap();
    call(
        &lib,
        &ctx,
        "write_file",
        json!({"path": "hl.txt", "content": "mine"}),
    )
    .await
    .unwrap();
    let read = call(&lib, &ctx, "read_file", json!({"path": "hl.txt"}))
        .await
        .unwrap();
    assert_eq!(read.to_text(), "mine");
}

#[tokio::test]
async fn escaping_paths_are_refused_by_every_file_tool() {
    let lib = ToolLibrary::builtin(&toolgate::tool::sources::standard());
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let root = workspace::canonical_root(ws.path()).unwrap();
    std::fs::write(outside.path().join("secret.txt"), "OUTSIDE-SECRET").unwrap();
    std::fs::create_dir(root.join("sub")).unwrap();
    symlink(outside.path(), root.join("dir_out")).unwrap();
    symlink(outside.path().join("secret.txt"), root.join("file_out")).unwrap();
    symlink(
        outside.path().join("not_yet.txt"),
        root.join("dangling_out"),
    )
    .unwrap();
    symlink("../../", root.join("sub/up")).unwrap();
    // A link to a place inside, but written as an absolute path.
    symlink(root.join("sub"), root.join("abs_in")).unwrap();
    let ctx = ToolContext::new(root.clone());
    let secret = outside.path().join("secret.txt");
    let long_name = "a".repeat(300);
    let long_path = "d/".repeat(2100) + "f.txt";
    let paths: Vec<String> = vec![
        "..".into(),
        "../secret.txt".into(),
        "sub/../../secret.txt".into(),
        "missing/../../secret.txt".into(),
        "./../secret.txt".into(),
        "/etc/passwd".into(),
        secret.to_str().unwrap().into(),
        root.join("../secret.txt").to_str().unwrap().into(),
        "dir_out/secret.txt".into(),
        "dir_out/new.txt".into(),
        "file_out".into(),
        "dangling_out".into(),
        "sub/up/secret.txt".into(),
        "abs_in/x.txt".into(),
        "a\0b".into(),
        "sub/\0".into(),
        long_name.clone(),
        format!("sub/{long_name}"),
        long_path,
    ];
    for path in &paths {
        let shown: String = path.chars().take(40).collect();
        for (tool, args) in [
            ("read_file", json!({"path": path})),
            ("list_dir", json!({"path": path})),
            ("write_file", json!({"path": path, "content": "PWNED"})),
        ] {
            let err = call(&lib, &ctx, tool, args)
                .await
                .expect_err(&format!("{tool} {shown:?} was not refused"))
                .to_string();
            assert!(!err.contains("OUTSIDE"), "{tool} {shown:?}: {err}");
            assert!(
                err.len() < 400,
                "{tool} {shown:?}: the error echoes too much"
            );
        }
    }
    let outside_now: Vec<_> = std::fs::read_dir(outside.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(outside_now, ["secret.txt"]);
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "OUTSIDE-SECRET");
    // The escapes are named as such.
    for path in [
        "..",
        "../secret.txt",
        "dir_out/secret.txt",
        "file_out",
        "/etc/passwd",
    ] {
        let err = call(&lib, &ctx, "read_file", json!({"path": path}))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("outside the workspace"), "{path}: {err}");
    }
    let err = call(&lib, &ctx, "read_file", json!({"path": "a\0b"}))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("NUL"), "{err}");
    let err = call(&lib, &ctx, "read_file", json!({"path": long_name}))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("too long"), "{err}");

    // Inside the workspace, `..` that stays inside and an absolute path inside work.
    call(
        &lib,
        &ctx,
        "write_file",
        json!({"path": "sub/../in.txt", "content": "ok"}),
    )
    .await
    .unwrap();
    let abs = root.join("in.txt");
    let read = call(
        &lib,
        &ctx,
        "read_file",
        json!({"path": abs.to_str().unwrap()}),
    )
    .await
    .unwrap();
    assert_eq!(read.to_text(), "ok");
}

#[tokio::test]
async fn a_workspace_root_that_is_a_symlink_is_refused() {
    let lib = ToolLibrary::builtin(&toolgate::tool::sources::standard());
    let real = tempfile::tempdir().unwrap();
    let holder = tempfile::tempdir().unwrap();
    std::fs::write(real.path().join("a.txt"), "real").unwrap();
    let link = holder.path().join("ws");
    symlink(real.path(), &link).unwrap();

    let err = workspace::canonical_root(&link).unwrap_err().to_string();
    assert!(err.contains("symbolic link"), "{err}");

    let ctx = ToolContext::new(link.clone());
    for (tool, args) in [
        ("read_file", json!({"path": "a.txt"})),
        ("list_dir", json!({})),
        ("write_file", json!({"path": "b.txt", "content": "x"})),
    ] {
        let err = call(&lib, &ctx, tool, args).await.unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{tool}: {err}");
    }
    assert!(!real.path().join("b.txt").exists());
}

#[tokio::test]
async fn special_files_are_not_opened() {
    let lib = ToolLibrary::builtin(&toolgate::tool::sources::standard());
    let ws = tempfile::tempdir().unwrap();
    let mut ctx = ctx(ws.path());
    ctx.default_timeout = Duration::from_secs(3);
    let fifo = ws.path().join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    // Without the check, opening the pipe would block until the timeout.
    let started = Instant::now();
    for (tool, args) in [
        ("read_file", json!({"path": "pipe"})),
        ("write_file", json!({"path": "pipe", "content": "x"})),
    ] {
        let err = call(&lib, &ctx, tool, args).await.unwrap_err().to_string();
        assert!(err.contains("not a regular file"), "{tool}: {err}");
    }
    assert!(started.elapsed() < Duration::from_secs(5));
    let err = call(&lib, &ctx, "read_file", json!({"path": "."}))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("is a folder"), "{err}");
    let err = call(
        &lib,
        &ctx,
        "write_file",
        json!({"path": ".", "content": "x"}),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(err.contains("is a folder"), "{err}");
}
