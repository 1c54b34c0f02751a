//! Wall-clock time as the cache records it: whole seconds since the Unix epoch.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch now; 0 on a clock set before 1970, so that
/// bookkeeping (manifests, failure records, gc ages) never fails a run.
pub fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_now_is_after_this_code_was_written() {
        // 2026-01-01T00:00:00Z: a clock reading earlier than this is wrong.
        assert!(unix_now() > 1_767_225_600);
    }
}
