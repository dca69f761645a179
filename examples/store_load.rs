//! Load on the record alone: TASKS tasks each commit STEPS batches of 10 call records
//! into a fresh database; prints records per second. For profiling the writer.
//!
//! Run: `cargo run --release --example store_load -- [TASKS] [STEPS]`
#![allow(clippy::too_many_lines, reason = "an example program reads best whole")]

use std::time::Instant;

use serde_json::json;
use toolgate::protocol::{CallStatus, CallerKind};
use toolgate::store::{CallRecord, Store};

fn main() {
    let mut args = std::env::args()
        .skip(1)
        .map(|a| a.parse::<usize>().unwrap_or(0));
    let tasks = args.next().filter(|&n| n > 0).unwrap_or(100);
    let steps = args.next().filter(|&n| n > 0).unwrap_or(20);
    let dir = std::env::temp_dir().join(format!("toolgate-store-load-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("load.db");
    let store = match Store::open(&path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let start = Instant::now();
    rt.block_on(async {
        let mut set = tokio::task::JoinSet::new();
        for t in 0..tasks {
            let store = store.clone();
            set.spawn(async move {
                for s in 0..steps {
                    let batch = (0..10)
                        .map(|i| CallRecord {
                            call_id: format!("c{s}_{i}"),
                            run_id: None,
                            conversation_id: format!("conv{t}"),
                            agent: None,
                            caller: CallerKind::Agent,
                            tool: "echo".into(),
                            arguments: json!({"text": "ping"}),
                            result: Some("ping".into()),
                            result_size: 4,
                            status: CallStatus::Succeeded,
                            error_kind: None,
                            error_message: None,
                            started_at: 0,
                            duration_ms: 0.01,
                            replaced: false,
                            attempts: Vec::new(),
                            cached: None,
                        })
                        .collect();
                    if let Err(e) = store.record_calls(batch).await {
                        eprintln!("{e}");
                        return;
                    }
                }
            });
        }
        while set.join_next().await.is_some() {}
    });
    let secs = start.elapsed().as_secs_f64();
    let n = tasks * steps * 10;
    println!(
        "{n} records in {secs:.3} s: {:.0} records/s",
        n as f64 / secs
    );
    let _ = std::fs::remove_dir_all(&dir);
}
