//! `toolgate parse --jsonl`: one model output per input line, streamed with bounded
//! memory. A reader thread cuts the input at line ends (memchr) into batches held in a
//! fixed pool of reused buffers, workers (one per core) parse whole batches with reused
//! per-line state, and the calling thread writes the batches' results in input order.
//! The pool is the bound: memory is a few batches, or the longest line, not the input.

mod batch;
mod decode;
mod encode;
mod special;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, Sender, channel};

use toolgate::parse::ParseOptions;

use super::super::Failure;
use super::super::out;
use batch::{Slot, Worker};

/// Bytes of complete lines parsed as one batch (more when one line is longer).
const BATCH: usize = 256 << 10;
/// Batches in flight per worker: one being parsed, one queued, one being written.
const SLOTS_PER_WORKER: usize = 3;

/// How the lines are parsed and printed.
#[derive(Clone, Copy)]
pub(super) struct Settings<'a> {
    pub opts: &'a ParseOptions,
    pub stream: Option<usize>,
    pub pretty: bool,
}

/// Parses every line of `input`, writing one result per line to `out` in input order;
/// returns the numbers of the lines that could not be read.
pub(super) fn run(
    input: impl Read + Send,
    out: &mut impl Write,
    settings: Settings<'_>,
) -> Result<Vec<usize>, Failure> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    let (pool_tx, pool_rx) = channel::<Slot>();
    for _ in 0..workers * SLOTS_PER_WORKER {
        // Cannot fail: the receiver is alive.
        let _ = pool_tx.send(Slot::default());
    }
    let (work_tx, work_rx) = channel::<Slot>();
    let work_rx = Mutex::new(work_rx);
    let (done_tx, done_rx) = channel::<Slot>();
    std::thread::scope(|s| {
        let reader = s.spawn(move || read_batches(input, &pool_rx, &work_tx));
        let mut handles = Vec::with_capacity(workers);
        for _ in 0..workers {
            let (work_rx, done_tx) = (&work_rx, done_tx.clone());
            handles.push(s.spawn(move || work(work_rx, &done_tx, settings)));
        }
        drop(done_tx);
        let written = write_in_order(done_rx, pool_tx, out);
        let read = reader
            .join()
            .unwrap_or_else(|_| Err(Failure::other("the input reader failed")));
        for h in handles {
            // A worker catches a panic per line; nothing else in it can panic.
            let _ = h.join();
        }
        let bad = written?;
        read?;
        Ok(bad)
    })
}

/// The reader: fills free slots with complete lines and hands them to the workers.
fn read_batches(
    mut input: impl Read,
    pool: &Receiver<Slot>,
    work: &Sender<Slot>,
) -> Result<(), Failure> {
    let read_failure =
        |e: std::io::Error| Failure::bad_input(format!("cannot read the input: {e}"));
    // The start of a line whose end is not read yet.
    let mut carry: Vec<u8> = Vec::new();
    let mut seq = 0u64;
    let mut next_line = 1usize;
    let mut eof = false;
    while !eof {
        // No free slot: the writer stopped (stdout closed), so reading is over.
        let Ok(mut slot) = pool.recv() else {
            return Ok(());
        };
        let buf = &mut slot.input;
        buf.clear();
        buf.extend_from_slice(&carry);
        carry.clear();
        let mut scanned = 0;
        let end = loop {
            let want = BATCH.saturating_sub(buf.len()).max(BATCH / 4);
            let got = input
                .by_ref()
                .take(want as u64)
                .read_to_end(buf)
                .map_err(read_failure)?;
            if got < want {
                eof = true;
                break buf.len();
            }
            if buf.len() >= BATCH {
                // Only the bytes added since the last look can hold the last line end.
                match memchr::memrchr(b'\n', &buf[scanned..]) {
                    Some(i) => break scanned + i + 1,
                    // One line longer than a batch: read on until it ends.
                    None => scanned = buf.len(),
                }
            }
        };
        carry.extend_from_slice(&buf[end..]);
        buf.truncate(end);
        if buf.is_empty() {
            // Nothing after the last line end; return nothing to the pool: reading is over.
            break;
        }
        let mut lines = memchr::memchr_iter(b'\n', buf).count();
        if buf.last() != Some(&b'\n') {
            lines += 1;
        }
        slot.seq = seq;
        slot.first_line = next_line;
        seq += 1;
        next_line += lines;
        if work.send(slot).is_err() {
            return Ok(());
        }
    }
    Ok(())
}

/// A worker: parses the slots it takes until the reader is done.
fn work(queue: &Mutex<Receiver<Slot>>, done: &Sender<Slot>, settings: Settings<'_>) {
    let mut worker = Worker::new(settings);
    loop {
        let next = match queue.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(mut slot) = next else { return };
        worker.batch(&mut slot);
        if done.send(slot).is_err() {
            return;
        }
    }
}

/// The writer: the parsed slots in input order to `out`, each then back to the pool.
fn write_in_order(
    done: Receiver<Slot>,
    pool: Sender<Slot>,
    out: &mut impl Write,
) -> Result<Vec<usize>, Failure> {
    let mut bad = Vec::new();
    let mut waiting: BTreeMap<u64, Slot> = BTreeMap::new();
    let mut next = 0u64;
    for slot in done {
        waiting.insert(slot.seq, slot);
        while let Some(mut slot) = waiting.remove(&next) {
            next += 1;
            out.write_all(&slot.out).map_err(out::write_failure)?;
            bad.append(&mut slot.bad);
            if out::stdout_closed() {
                return Ok(bad);
            }
            slot.recycle(BATCH);
            // The reader may be done: then the slot is not needed.
            let _ = pool.send(slot);
        }
    }
    Ok(bad)
}
