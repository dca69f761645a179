//! Where a database's key file lives when `TOOLGATE_SECRET_KEY` is not set: a key
//! already beside the database keeps working; a database in a folder outside any git
//! work tree gets `DB.key` beside it; a database inside a git work tree gets its key in
//! the per-user data folder, keyed by the database's absolute path, so that a
//! `git add .` never commits the key that opens every secret. A PostgreSQL database
//! (a URL, no file to sit beside) gets its key in the per-user data folder, named from
//! the URL's host, port and database (never its user or password).

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The environment variable naming the folder for per-user key files (default
/// `$XDG_DATA_HOME/toolgate/keys`, else `~/.local/share/toolgate/keys`).
pub const KEY_DIR_ENV: &str = "TOOLGATE_KEY_DIR";

/// The key file for the database at `db` (a file, or a PostgreSQL URL).
pub fn key_file(db: &Path) -> PathBuf {
    if let Some(url) = database_url(db) {
        let name = postgres_key_name(url);
        // No home to put it in: in the current folder, as a database file's would be.
        return user_key_dir().map_or_else(|| PathBuf::from(&name), |dir| dir.join(&name));
    }
    let beside = beside(db);
    if beside.exists() {
        return beside;
    }
    let db_abs = absolute_db(db);
    let folder = db_abs.parent().unwrap_or(Path::new("/"));
    if !inside_git_work_tree(folder) {
        return beside;
    }
    match user_key_dir() {
        Some(dir) => dir.join(format!("{}.key", database_id(&db_abs))),
        // No home to put it in: beside the database, as before.
        None => beside,
    }
}

/// `db` when it is a database server's URL (`scheme://...`), not a file.
fn database_url(db: &Path) -> Option<&str> {
    db.to_str().filter(|s| s.contains("://"))
}

/// `DB.key` beside the database (the only home before keys moved out of work trees).
fn beside(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".key");
    PathBuf::from(name)
}

/// The database's absolute path with its folder resolved (the file may not exist yet).
fn absolute_db(db: &Path) -> PathBuf {
    let abs = std::path::absolute(db).unwrap_or_else(|_| db.to_path_buf());
    match (abs.parent(), abs.file_name()) {
        (Some(parent), Some(name)) => parent
            .canonicalize()
            .map(|p| p.join(name))
            .unwrap_or(abs.clone()),
        _ => abs,
    }
}

/// Whether `folder` or one of its ancestors holds `.git` (a folder, or a file for a
/// linked worktree or submodule).
fn inside_git_work_tree(folder: &Path) -> bool {
    folder.ancestors().any(|a| a.join(".git").exists())
}

/// The per-user folder for key files, when a home can be found.
fn user_key_dir() -> Option<PathBuf> {
    let set = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(dir) = set(KEY_DIR_ENV) {
        return Some(dir);
    }
    let data = set("XDG_DATA_HOME").or_else(|| set("HOME").map(|h| h.join(".local/share")))?;
    Some(data.join("toolgate").join("keys"))
}

/// A stable name for a database: the file's name and a hash of its absolute path.
fn database_id(db_abs: &Path) -> String {
    let digest = Sha256::digest(db_abs.as_os_str().as_encoded_bytes());
    let hex: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
    let stem: String = db_abs
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{stem}-{hex}")
}

/// The key file's name for the PostgreSQL database at `url`:
/// `postgres-HOST-PORT-DATABASE.key`, with the defaults a client would use (port 5432,
/// the database named after the user), and any character that is not a letter, a digit,
/// `.` or `-` as `_`. The user and password do not count: one database, one key.
fn postgres_key_name(url: &str) -> String {
    let parsed = url::Url::parse(url).ok();
    let param = |name: &str| {
        parsed.as_ref().and_then(|u| {
            u.query_pairs()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        })
    };
    let host = parsed
        .as_ref()
        .and_then(|u| u.host_str().filter(|h| !h.is_empty()).map(str::to_string))
        .or_else(|| param("host"))
        .unwrap_or_else(|| "localhost".to_string());
    let port = parsed
        .as_ref()
        .and_then(url::Url::port)
        .map(|p| p.to_string())
        .or_else(|| param("port"))
        .unwrap_or_else(|| "5432".to_string());
    let user = parsed
        .as_ref()
        .map(|u| u.username().to_string())
        .filter(|u| !u.is_empty())
        .or_else(|| param("user"));
    let database = parsed
        .as_ref()
        .map(|u| u.path().trim_start_matches('/').to_string())
        .filter(|d| !d.is_empty())
        .or_else(|| param("dbname"))
        .or(user)
        .unwrap_or_else(|| "postgres".to_string());
    let clean = |part: &str| -> String {
        let decoded = percent_decode(part);
        decoded
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    format!(
        "postgres-{}-{}-{}.key",
        clean(&host),
        clean(&port),
        clean(&database)
    )
}

/// `%XX` escapes of a URL part decoded (a database named `my db` is `my%20db`).
fn percent_decode(part: &str) -> String {
    url::form_urlencoded::parse(format!("x={}", part.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_else(|| part.to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn beside_outside_a_work_tree_and_in_the_user_folder_inside_one() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain");
        std::fs::create_dir(&plain).unwrap();
        assert_eq!(key_file(&plain.join("a.db")), plain.join("a.db.key"));

        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("sub")).unwrap();
        let inside = key_file(&repo.join("sub/a.db"));
        assert!(!inside.starts_with(&repo), "{}", inside.display());
        assert!(inside.to_string_lossy().ends_with(".key"));
        // Keyed by the database: another database, another file.
        assert_ne!(inside, key_file(&repo.join("b.db")));

        // A key already beside the database keeps working.
        std::fs::write(repo.join("sub/a.db.key"), "x").unwrap();
        assert_eq!(key_file(&repo.join("sub/a.db")), repo.join("sub/a.db.key"));
    }

    #[test]
    fn a_postgres_database_has_its_key_in_the_user_folder_named_without_secrets() {
        let url = "postgres://alice:s3cret@db.example.com:6543/toolgate_prod?sslmode=require";
        let name = postgres_key_name(url);
        assert_eq!(name, "postgres-db.example.com-6543-toolgate_prod.key");
        // The user and password never reach the name: one database, one key.
        assert_eq!(
            postgres_key_name("postgresql://bob:other@db.example.com:6543/toolgate_prod"),
            name
        );
        // A client's defaults: port 5432, the database named after the user.
        assert_eq!(
            postgres_key_name("postgres://carol@localhost"),
            "postgres-localhost-5432-carol.key"
        );
        assert_eq!(
            postgres_key_name("postgres:///tg?host=/run/postgresql"),
            "postgres-_run_postgresql-5432-tg.key"
        );
        // Odd characters cannot leave the folder.
        assert_eq!(
            postgres_key_name("postgres://h:1/..%2F..%2Fetc"),
            "postgres-h-1-.._.._etc.key"
        );
        // Another database, another key.
        assert_ne!(
            postgres_key_name("postgres://db.example.com:6543/toolgate_test"),
            name
        );

        let file = key_file(Path::new(url));
        assert!(file.ends_with(&name), "{}", file.display());
        let shown = file.display().to_string();
        assert!(
            !shown.contains("s3cret") && !shown.contains("alice"),
            "{shown}"
        );
        assert!(!shown.starts_with("postgres:"), "{shown}");
        if let Some(dir) = user_key_dir() {
            assert_eq!(file, dir.join(&name));
        }
    }
}
