//! No permission toolgate gives a tool outlives the tool (issue 42, item 3). As root,
//! tools run as `nobody` and are lent write access to their workspace with POSIX ACL
//! entries; before, those stayed for good, so `nobody` could read a root-only file
//! in any folder a tool had once run in. Now every file's owner, mode and ACLs are
//! the same after a call as before it, after a normal end and after `kill -9` of
//! toolgate mid-call (the next toolgate to start puts them back).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What a path's permissions are: owner, group, mode, access ACL, default ACL.
type Perms = (u32, u32, u32, Option<Vec<u8>>, Option<Vec<u8>>);

fn xattr(path: &Path, name: &str) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; 4096];
    let n = rustix::fs::lgetxattr(path, name, &mut buf).ok()?;
    buf.truncate(n);
    Some(buf)
}

/// Every path under `dir` (itself included) with its permissions.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Perms> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(path) = todo.pop() {
        let meta = path.symlink_metadata().unwrap();
        out.insert(
            path.clone(),
            (
                meta.uid(),
                meta.gid(),
                meta.mode(),
                xattr(&path, "system.posix_acl_access"),
                xattr(&path, "system.posix_acl_default"),
            ),
        );
        if meta.is_dir() {
            todo.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        }
    }
    out
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// A folder as the issue found it: a root-only file, a subfolder with files of
/// several modes, and the tools folder of one tool that writes a new file and may wait.
fn world(line: &str) -> tempfile::TempDir {
    let w = tempfile::tempdir().unwrap();
    let dir = w.path();
    std::fs::write(dir.join("secret.txt"), "root only").unwrap();
    std::fs::set_permissions(dir.join("secret.txt"), PermissionsExt::from_mode(0o600)).unwrap();
    std::fs::create_dir(dir.join("sub")).unwrap();
    std::fs::set_permissions(dir.join("sub"), PermissionsExt::from_mode(0o750)).unwrap();
    for (name, mode) in [("a.txt", 0o644), ("b.sh", 0o700), ("c.txt", 0o400)] {
        std::fs::write(dir.join("sub").join(name), name).unwrap();
        std::fs::set_permissions(dir.join("sub").join(name), PermissionsExt::from_mode(mode))
            .unwrap();
    }
    let tools = tempfile::tempdir().unwrap().keep();
    let yaml = format!(
        "name: touch\ndescription: writes a file\nentry:\n  type: command\n  command: sh\n  args: [\"-c\", {}]\n",
        serde_json::to_string(line).unwrap()
    );
    std::fs::write(tools.join("touch.yaml"), yaml).unwrap();
    std::fs::write(dir.join(".tools-path"), tools.display().to_string()).unwrap();
    w
}

fn tools_of(dir: &Path) -> String {
    std::fs::read_to_string(dir.join(".tools-path")).unwrap()
}

fn tools_call(dir: &Path) -> Command {
    let db = tempfile::tempdir().unwrap().keep().join("t.db");
    let mut cmd = Command::new(toolgate_test_support::bin());
    cmd.args(["tools", "call", "touch", "--json", "--tools"])
        .arg(tools_of(dir))
        .arg("--db")
        .arg(db)
        .current_dir(dir)
        .env_remove("TOOLGATE_DB")
        .env_remove("TOOLGATE_TOOLS")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Whether `nobody` can read `path` (as the issue's `su nobody -c 'cat FILE'`).
fn nobody_reads(path: &Path) -> bool {
    Command::new("cat")
        .arg(path)
        .uid(65534)
        .gid(65534)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success()
}

/// Everything but the files the tool made itself.
fn before_paths(
    after: BTreeMap<PathBuf, Perms>,
    before: &BTreeMap<PathBuf, Perms>,
) -> BTreeMap<PathBuf, Perms> {
    after
        .into_iter()
        .filter(|(p, _)| before.contains_key(p))
        .collect()
}

#[test]
fn a_tool_call_as_root_leaves_every_owner_mode_and_acl_as_it_found_them() {
    assert!(
        is_root(),
        "this attack test needs root: tools run as nobody only then"
    );
    let w = world("echo made > made.txt");
    let dir = w.path();
    let before = snapshot(dir);
    assert!(
        !nobody_reads(&dir.join("secret.txt")),
        "the set-up is wrong"
    );
    let out = tools_call(dir).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The tool did write its workspace.
    let made = dir.join("made.txt");
    assert_eq!(std::fs::read_to_string(&made).unwrap(), "made\n");
    let after = snapshot(dir);
    assert_eq!(before_paths(after.clone(), &before), before);
    // What the tool made carries no entry for anyone either.
    assert_eq!(after[&made].3, None, "made.txt kept an ACL");
    assert!(
        !nobody_reads(&dir.join("secret.txt")),
        "nobody reads a root-only file after a tool ran beside it"
    );
}

#[test]
fn kill_9_of_toolgate_mid_call_leaves_its_grants_for_the_next_start_to_take_back() {
    assert!(
        is_root(),
        "this attack test needs root: tools run as nobody only then"
    );
    let w = world("echo started > started.txt; sleep 30");
    let dir = w.path();
    let before = snapshot(dir);
    let mut running = tools_call(dir).spawn().unwrap();
    let started = dir.join("started.txt");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !started.exists() {
        assert!(Instant::now() < deadline, "the call never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    // While the tool runs, nobody may write its workspace (that is the loan).
    assert!(
        nobody_reads(&dir.join("secret.txt")),
        "the loan was never made"
    );
    running.kill().unwrap();
    running.wait().unwrap();
    // Any toolgate that starts next takes the loan back.
    let out = Command::new(toolgate_test_support::bin())
        .args(["tools", "list", "--tools"])
        .arg(tools_of(dir))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = before_paths(snapshot(dir), &before);
    assert_eq!(after, before);
    assert!(!nobody_reads(&dir.join("secret.txt")));
}
