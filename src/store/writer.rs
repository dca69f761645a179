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
}

/// Runs until every sender is gone.
pub(crate) fn run(
    mut conn: Connection,
    rx: Receiver<Msg>,
    describe: impl Fn(rusqlite::Error) -> StoreError,
) {
    while let Ok(first) = rx.recv() {
        let mut group = vec![first];
        while group.len() < GROUP_MAX {
            match rx.try_recv() {
                Ok(m) => group.push(m),
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
            }
        }
        let result = write(&mut conn, &group).map_err(&describe);
        for Msg::Calls(_, ack) in group {
            // A caller that stopped waiting does not need the answer.
            let _ = ack.send(result.clone());
        }
    }
}

fn write(conn: &mut Connection, group: &[Msg]) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    {
        let mut stmt = tx.prepare_cached(INSERT)?;
        for Msg::Calls(records, _) in group {
            for r in records {
                insert(&mut stmt, r)?;
            }
        }
    }
    tx.commit()
}
