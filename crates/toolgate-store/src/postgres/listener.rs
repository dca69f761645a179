//! The change feed's listener on PostgreSQL: one connection of its own per store (not
//! from the pool: LISTEN lasts as long as its session), `LISTEN toolgate_changes`, each
//! notification's payload (the change, as the schema's triggers write it) handed to
//! every watcher. A dropped connection is made again (after 100 ms, doubling up to 2 s);
//! changes made meanwhile were not heard, so the listener then tells of every run that
//! may have changed (see [`resync`]) and watchers read those runs again. It ends when
//! the store is dropped.

use std::sync::Weak;
use std::time::Duration;

use futures_util::future::poll_fn;
use serde::Deserialize;
use tokio::sync::broadcast;
use tokio_postgres::{AsyncMessage, Client, NoTls};

use super::Inner;
use super::run_rows::NOW_MS;
use crate::{Change, ChangeKind};
use toolgate_protocol::RunStatus;

/// The channel the triggers notify on.
pub(super) const CHANNEL: &str = "toolgate_changes";
/// The listener's connection's name, as `pg_stat_activity` shows it.
pub(super) const APPLICATION_NAME: &str = "toolgate-feed";
/// Changes a slow watcher may fall behind by before it misses some.
pub(super) const BACKLOG: usize = 4096;
/// How long the first watcher waits for the listener to be listening.
const FIRST_WAIT: Duration = Duration::from_secs(5);
/// The first wait before connecting again, doubled each failure up to [`BACKOFF_MAX`].
const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(2);
/// How often an idle listener asks the database the time: to find a dead connection,
/// and to know from when changes may have been missed if it dies.
const HEARTBEAT: Duration = Duration::from_secs(5);
/// Connecting, or a heartbeat, taking longer than this counts as a dead connection.
const PATIENCE: Duration = Duration::from_secs(10);
/// How far before the last heartbeat a resync looks (a run's change is stamped when its
/// transaction starts, and heard when it commits).
const RESYNC_MARGIN_MS: i64 = 10_000;
/// Most runs a resync tells of.
const RESYNC_CAP: i64 = 4096;

/// The payload the schema's `toolgate_change` function sends.
#[derive(Deserialize)]
struct Payload {
    seq: i64,
    run_id: String,
    tenant: String,
    kind: String,
    status: String,
    origin: Option<String>,
}

/// The change a notification's payload tells of (`None`: not one of ours).
fn parse(payload: &str) -> Option<Change> {
    let p: Payload = serde_json::from_str(payload).ok()?;
    Some(Change {
        seq: p.seq,
        run_id: p.run_id,
        tenant: p.tenant,
        kind: p.kind.parse().unwrap_or(ChangeKind::Saved),
        status: p.status.parse().unwrap_or(RunStatus::InProgress),
        origin: p.origin,
    })
}

/// Starts the listener of the store `inner` (on `rt`, the store's runtime), handing
/// changes to `tx`; waits (at most [`FIRST_WAIT`]) until it listens, so that a watcher
/// hears every change committed after `watch` returned.
pub(super) fn start(
    rt: &tokio::runtime::Handle,
    inner: Weak<Inner>,
    config: tokio_postgres::Config,
    tx: broadcast::Sender<Change>,
) {
    let mut config = config;
    config.application_name(APPLICATION_NAME);
    let (ready, listening) = std::sync::mpsc::channel();
    rt.spawn(listen(inner, config, tx, ready));
    if listening.recv_timeout(FIRST_WAIT).is_err() {
        tracing::warn!(
            "the change feed is not listening yet (the database is not reachable); it keeps trying, and tells watchers to read again once it listens"
        );
    }
}

/// How a session on one connection ended.
enum Ended {
    /// The store was dropped: the listener stops.
    StoreGone,
    /// The connection failed; `listened` says whether it had listened (changes may have
    /// been missed since the last heartbeat).
    Failed { listened: bool, why: String },
}

/// Listens until the store is dropped, connecting again after each failure.
async fn listen(
    inner: Weak<Inner>,
    config: tokio_postgres::Config,
    tx: broadcast::Sender<Change>,
    ready: std::sync::mpsc::Sender<()>,
) {
    let mut ready = Some(ready);
    let mut backoff = BACKOFF_MIN;
    // The database's time from which changes may not have been heard, once some may
    // have been missed (`None` while every change was heard).
    let mut missed_since: Option<i64> = None;
    // The database's time at the last heartbeat.
    let mut heard_until: Option<i64> = None;
    // This host's time now: the database's, give or take the margin.
    let started = toolgate_protocol::clock::now_ms();
    loop {
        if inner.strong_count() == 0 {
            return;
        }
        let ended = session(
            &inner,
            &config,
            &tx,
            &mut ready,
            &mut missed_since,
            &mut heard_until,
        )
        .await;
        match ended {
            Ended::StoreGone => return,
            Ended::Failed { listened, why } => {
                if listened {
                    backoff = BACKOFF_MIN;
                }
                if listened || missed_since.is_none() {
                    // From the last time all was heard (or, never having listened, from
                    // the start: a watcher may be waiting since then).
                    missed_since = Some(heard_until.unwrap_or(started) - RESYNC_MARGIN_MS);
                }
                tracing::warn!(
                    error = %why,
                    retry_ms = backoff.as_millis() as u64,
                    "the change feed lost its connection to the database; changes made meanwhile are told once it is back"
                );
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(BACKOFF_MAX);
            }
        }
    }
}

/// One connection: listen, tell of what may have been missed, then hand on every
/// notification until the connection fails or the store is dropped.
async fn session(
    inner: &Weak<Inner>,
    config: &tokio_postgres::Config,
    tx: &broadcast::Sender<Change>,
    ready: &mut Option<std::sync::mpsc::Sender<()>>,
    missed_since: &mut Option<i64>,
    heard_until: &mut Option<i64>,
) -> Ended {
    let failed = |listened: bool, why: String| Ended::Failed { listened, why };
    let (client, mut connection) = match tokio::time::timeout(PATIENCE, config.connect(NoTls)).await
    {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => return failed(false, e.to_string()),
        Err(_) => return failed(false, "no connection within 10 s".into()),
    };
    // The connection's own task: every notification to the watchers, in commit order.
    let forward = tx.clone();
    let mut driver = tokio::spawn(async move {
        loop {
            match poll_fn(|cx| connection.poll_message(cx)).await {
                Some(Ok(AsyncMessage::Notification(n))) => match parse(n.payload()) {
                    // No watcher now: nothing to hand on.
                    Some(change) => drop(forward.send(change)),
                    None => tracing::warn!(
                        payload = n.payload(),
                        "the change feed heard a notification it cannot read"
                    ),
                },
                Some(Ok(_)) => {}
                Some(Err(e)) => return e.to_string(),
                None => return "the database closed the connection".to_string(),
            }
        }
    });
    let listened = async {
        client
            .batch_execute(&format!("LISTEN {CHANNEL}"))
            .await
            .map_err(|e| e.to_string())?;
        now(&client).await
    };
    let now_ms = match tokio::time::timeout(PATIENCE, listened).await {
        Ok(Ok(t)) => t,
        Ok(Err(why)) => {
            driver.abort();
            return failed(false, why);
        }
        Err(_) => {
            driver.abort();
            return failed(false, "LISTEN did not answer within 10 s".into());
        }
    };
    *heard_until = Some(now_ms);
    if let Some(since) = missed_since.take()
        && let Err(why) = resync(&client, since, tx).await
    {
        *missed_since = Some(since);
        driver.abort();
        return failed(false, why);
    }
    if let Some(ready) = ready.take() {
        let _ = ready.send(());
    }
    loop {
        tokio::select! {
            ended = &mut driver => {
                let why = ended.unwrap_or_else(|e| format!("the connection's task stopped: {e}"));
                return failed(true, why);
            }
            _ = tokio::time::sleep(HEARTBEAT) => {
                if inner.strong_count() == 0 {
                    driver.abort();
                    return Ended::StoreGone;
                }
                match tokio::time::timeout(PATIENCE, now(&client)).await {
                    Ok(Ok(t)) => *heard_until = Some(t),
                    Ok(Err(why)) => {
                        driver.abort();
                        return failed(true, why);
                    }
                    Err(_) => {
                        driver.abort();
                        return failed(true, "the database did not answer within 10 s".into());
                    }
                }
            }
        }
    }
}

/// The database's clock.
async fn now(client: &Client) -> Result<i64, String> {
    let row = client
        .query_one(&format!("SELECT {NOW_MS}"), &[])
        .await
        .map_err(|e| e.to_string())?;
    row.try_get(0).map_err(|e| e.to_string())
}

/// Tells watchers of every run that may have changed while nobody listened: each run
/// changed since `since` (by the database's clock), and each in progress (a lease given
/// back changes a status without a time), as a status change to its status now. A
/// watcher reads such a run again, as after falling behind.
async fn resync(client: &Client, since: i64, tx: &broadcast::Sender<Change>) -> Result<(), String> {
    let rows = client
        .query(
            "SELECT id, tenant, status, lease_owner, nextval('toolgate_change_seq') FROM runs
             WHERE updated_at >= $1 OR status = 'in_progress'
             ORDER BY updated_at DESC LIMIT $2",
            &[&since, &RESYNC_CAP],
        )
        .await
        .map_err(|e| e.to_string())?;
    if rows.len() as i64 == RESYNC_CAP {
        tracing::warn!(
            told = RESYNC_CAP,
            "the change feed tells of the newest runs changed while it was away; older ones are not told"
        );
    }
    let mut told = Vec::with_capacity(rows.len());
    for row in rows.iter().rev() {
        let status: String = row.try_get(2).map_err(|e| e.to_string())?;
        told.push(Change {
            seq: row.try_get(4).map_err(|e| e.to_string())?,
            run_id: row.try_get(0).map_err(|e| e.to_string())?,
            tenant: row.try_get(1).map_err(|e| e.to_string())?,
            kind: ChangeKind::Status,
            status: status.parse().unwrap_or(RunStatus::InProgress),
            origin: row.try_get(3).map_err(|e| e.to_string())?,
        });
    }
    tracing::info!(
        runs = told.len(),
        "the change feed is back; telling of the runs that may have changed meanwhile"
    );
    for change in told {
        let _ = tx.send(change);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_payload_is_read_as_the_change_it_tells_of() {
        let c = parse(r#"{"seq":7,"run_id":"run_1","tenant":"t","kind":"decided","status":"requires_action","origin":null}"#).unwrap();
        assert_eq!(
            c,
            Change {
                seq: 7,
                run_id: "run_1".into(),
                tenant: "t".into(),
                kind: ChangeKind::Decided,
                status: RunStatus::RequiresAction,
                origin: None,
            }
        );
        // A kind or status of a newer toolgate still tells of the run.
        let c = parse(r#"{"seq":8,"run_id":"run_1","tenant":"t","kind":"later","status":"later","origin":"1/h/n.1"}"#).unwrap();
        assert_eq!(
            (c.kind, c.status),
            (ChangeKind::Saved, RunStatus::InProgress)
        );
        assert_eq!(c.origin.as_deref(), Some("1/h/n.1"));
        assert!(parse("not json").is_none());
        assert!(parse(r#"{"run_id":"run_1"}"#).is_none());
    }
}
