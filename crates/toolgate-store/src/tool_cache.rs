//! Kept results of read-only tools (`cache:` in a tool or source file): one entry per
//! key (tenant, user, tool and canonical arguments, hashed by the caller), shared by
//! every process on the database, bounded to [`MAX_ENTRIES`] (expired entries go first,
//! then the oldest).

/// The most entries kept, every tenant together.
pub const MAX_ENTRIES: i64 = 10_000;

/// One entry to keep.
#[derive(Debug, Clone)]
pub struct CacheEntry {
    pub key: String,
    pub tenant: String,
    pub tool: String,
    /// The tool's output as JSON.
    pub output: String,
    /// How long it is kept (milliseconds).
    pub ttl_ms: i64,
}
