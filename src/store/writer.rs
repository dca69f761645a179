//! The writer thread: it owns the only writing connection and commits in groups. Every
//! batch sent while a transaction is being written joins the next one, so many callers
//! share one commit; each is answered only once its records are committed.

use std::sync::mpsc::{Receiver, TryRecvError};

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::StoreError;
use super::record::{CallRecord, INSERT, insert};

/// Most batches in one transaction.
const GROUP_MAX: usize = 512;

pub(crate) enum Msg {
    /// Records to insert; the answer comes after the commit.
    Calls(Vec<CallRecord>, oneshot::Sender<Result<(), StoreError>>),
    /// Work that needs a transaction of its own (run state, decisions); it answers
    /// through its own channel.
    Exec(Box<dyn FnOnce(&mut Connection) + Send>),
}

type Ack = oneshot::Sender<Result<(), StoreError>>;

/// Runs until every sender is gone.
pub(crate) fn run(
    mut conn: Connection,
    rx: Receiver<Msg>,
    describe: impl Fn(rusqlite::Error) -> StoreError,
) {
    while let Ok(first) = rx.recv() {
        let mut batches: Vec<(Vec<CallRecord>, Ack)> = Vec::new();
        let mut next = Some(first);
        while let Some(msg) = next.take() {
            match msg {
                Msg::Calls(records, ack) => batches.push((records, ack)),
                Msg::Exec(job) => {
                    // Records sent before this job are committed before it runs.
                    commit(&mut conn, std::mem::take(&mut batches), &describe);
                    job(&mut conn);
                }
            }
            if batches.len() < GROUP_MAX {
                match rx.try_recv() {
                    Ok(m) => next = Some(m),
                    Err(TryRecvError::Empty | TryRecvError::Disconnected) => {}
                }
            }
        }
        commit(&mut conn, batches, &describe);
    }
}

fn commit(
    conn: &mut Connection,
    batches: Vec<(Vec<CallRecord>, Ack)>,
    describe: &impl Fn(rusqlite::Error) -> StoreError,
) {
    if batches.is_empty() {
        return;
    }
    let result = write(conn, &batches).map_err(describe);
    for (_, ack) in batches {
        // A caller that stopped waiting does not need the answer.
        let _ = ack.send(result.clone());
    }
}

fn write(conn: &mut Connection, group: &[(Vec<CallRecord>, Ack)]) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    {
        let mut stmt = tx.prepare_cached(INSERT)?;
        for (records, _) in group {
            for r in records {
                insert(&mut stmt, r)?;
            }
        }
    }
    tx.commit()
}
