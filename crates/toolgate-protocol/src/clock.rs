//! Wall-clock time as toolgate stores it: unix milliseconds.

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, in unix milliseconds (0 on a clock set before 1970).
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
