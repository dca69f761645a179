//! The size of the SQLite write-ahead log, read at each scrape: a WAL that keeps
//! growing means checkpoints cannot keep up (a reader held open, a stuck process), and
//! the database's readers slow down with it. On PostgreSQL, whose WAL its own
//! monitoring covers, it reads 0.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::gauge::ConstGauge;

use toolgate_store::Store;

/// The gauge's name (prefixed `toolgate_` as exposed) and help.
pub const WAL_BYTES: (&str, &str) = (
    "store_wal_bytes",
    "Size of the SQLite write-ahead log file now (0 on PostgreSQL).",
);

/// The scrape-time collector of the WAL's size.
pub struct Wal {
    pub store: Store,
}

impl std::fmt::Debug for Wal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Wal")
    }
}

impl Wal {
    /// The WAL file's size in bytes (0 when there is none, or on PostgreSQL).
    fn bytes(&self) -> i64 {
        if self.store.is_shared() {
            return 0;
        }
        let mut wal = self.store.path().as_os_str().to_owned();
        wal.push("-wal");
        std::fs::metadata(wal).map_or(0, |m| i64::try_from(m.len()).unwrap_or(i64::MAX))
    }
}

impl Collector for Wal {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        ConstGauge::new(self.bytes()).encode(encoder.encode_descriptor(
            WAL_BYTES.0,
            WAL_BYTES.1,
            None,
            MetricType::Gauge,
        )?)
    }
}
