//! The database's clock: the one every worker on the database reads, whatever host it
//! runs on, for times that workers compare (deadlines, expiries, leases).

/// Now, in Unix milliseconds, by the database server's clock (an SQL expression).
pub(super) const NOW_MS: &str = "(extract(epoch from clock_timestamp()) * 1000)::bigint";
