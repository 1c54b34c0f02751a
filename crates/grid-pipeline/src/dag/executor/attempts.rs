//! What the interrupted attempts of a step spent before the one that
//! finished it, kept in its resume folder beside its snapshots: a training
//! resumed run after run reports its whole time to the estimates
//! (`dag::estimate`), not its last run's (an IMDB BiLSTM trained over six
//! sessions recorded its last 40 minutes of 3 hours). A snapshot that could
//! not be used (training began again) leaves its attempt counted.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::io::{read_json, write_json};

const FILE: &str = "earlier_attempts.json";

/// The seconds earlier attempts ran, waited for a CPU in them, and were
/// stopped in them ([`super::pauses`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Earlier {
    pub seconds: f64,
    #[serde(default)]
    pub waited_seconds: f64,
    #[serde(default)]
    pub paused_seconds: f64,
}

impl Earlier {
    /// What the attempts before this one left in `resume`, if any.
    pub fn read(resume: &Path) -> Option<Earlier> {
        read_json(&resume.join(FILE)).ok()
    }

    /// Adds an interrupted attempt to `resume`, where it kept something to
    /// resume from (else the next attempt starts over, and this one's time
    /// is not part of its work). Best effort: a record lost costs an
    /// estimate, never a result.
    pub fn add(resume: &Path, attempt: Earlier) {
        if !resume.is_dir() {
            return;
        }
        let mut earlier = Earlier::read(resume).unwrap_or_default();
        earlier.seconds += attempt.seconds;
        earlier.waited_seconds += attempt.waited_seconds;
        earlier.paused_seconds += attempt.paused_seconds;
        let _ = write_json(&resume.join(FILE), &earlier);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interrupted_attempts_add_up_where_they_left_a_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let resume = dir.path().join("resume");
        let attempt = |seconds, waited_seconds, paused_seconds| Earlier { seconds, waited_seconds, paused_seconds };
        Earlier::add(&resume, attempt(10.0, 1.0, 0.0));
        assert_eq!(Earlier::read(&resume), None, "nothing to resume from: nothing kept");
        std::fs::create_dir(&resume).unwrap();
        Earlier::add(&resume, attempt(10.0, 1.0, 0.0));
        Earlier::add(&resume, attempt(5.5, 0.5, 2.0));
        assert_eq!(Earlier::read(&resume), Some(attempt(15.5, 1.5, 2.0)));
        // A record written before pauses were measured reads as none paused.
        std::fs::write(resume.join(FILE), r#"{"seconds": 3.0, "waited_seconds": 1.0}"#).unwrap();
        assert_eq!(Earlier::read(&resume), Some(attempt(3.0, 1.0, 0.0)));
    }
}
