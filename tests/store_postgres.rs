//! The PostgreSQL backend's own opening: migrations (also by many workers at once), a
//! database of a newer toolgate or with foreign tables refused untouched, and a bad URL
//! or a dead server as one clear error.

use std::path::Path;

use toolgate::store::{Store, StoreError};

use crate::databases::{TestDb, fresh_postgres_database, sql};

#[test]
fn workers_opening_a_new_database_at_once_migrate_it_once() {
    let url = fresh_postgres_database();
    let opened: Vec<_> = (0..6)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || Store::open(Path::new(&url)).map(drop))
        })
        .collect();
    for o in opened {
        o.join().unwrap().unwrap();
    }
    // And again, on a database already up to date.
    let db = TestDb::Postgres { url };
    let store = db.open();
    assert!(store.is_shared());
    assert!(
        store
            .path()
            .display()
            .to_string()
            .starts_with("postgres://"),
        "{}",
        store.path().display()
    );
}

#[test]
fn a_newer_or_foreign_database_is_refused_untouched() {
    let url = fresh_postgres_database();
    Store::open(Path::new(&url)).unwrap();
    sql(
        &url,
        "INSERT INTO toolgate_schema (version, applied_at) VALUES (999, 0)",
    );
    match Store::open(Path::new(&url)) {
        Err(StoreError::TooNew { found: 999, .. }) => {}
        other => panic!("expected TooNew, got {:?}", other.map(drop)),
    }

    let url = fresh_postgres_database();
    sql(&url, "CREATE TABLE runs (id TEXT)");
    match Store::open(Path::new(&url)) {
        Err(e @ StoreError::Foreign { .. }) => {
            assert!(e.to_string().contains("runs"), "{e}");
        }
        other => panic!("expected Foreign, got {:?}", other.map(drop)),
    }
}

#[test]
fn a_dead_server_or_a_bad_url_is_one_clear_error_without_the_password() {
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://someone:hunter2@127.0.0.1:{port}/toolgate");
    let e = Store::open(Path::new(&url)).map(drop).unwrap_err();
    let text = e.to_string();
    assert!(!text.contains("hunter2"), "{text}");
    assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
    assert!(text.to_lowercase().contains("connect"), "{text}");

    let e = Store::open(Path::new("postgres://[::1"))
        .map(drop)
        .unwrap_err();
    assert!(e.to_string().contains("URL"), "{e}");
}
