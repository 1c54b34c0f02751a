//! `grid pull`: every step of a grid that the remote cache holds and the
//! local one lacks, brought down now (a run pulls only what it reads). For a
//! machine about to go offline, or to look at every attribution locally.

use std::time::Instant;

use super::Plan;
use grid_cache::remote::Pulled;
use grid_cache::{Cache, CacheError};

/// What a pull brought down.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct PullSummary {
    pub pulled: usize,
    pub bytes: u64,
    pub seconds: f64,
    /// Steps already in the local cache.
    pub present: usize,
    /// Steps neither here nor on the remote (a run computes them).
    pub missing: Vec<String>,
    /// Steps whose remote copy failed its check (label and why).
    pub damaged: Vec<(String, String)>,
}

/// Pulls every step of `plan` that `cache`'s remote holds and it lacks, each
/// under its lock.
pub fn pull_all(plan: &Plan, cache: &Cache) -> Result<PullSummary, CacheError> {
    let Some(remote) = cache.remote() else {
        return Err(CacheError::Remote { location: String::new(), problem: "no remote cache given (--remote)".into() });
    };
    let started = Instant::now();
    let mut summary = PullSummary::default();
    for step in &plan.steps {
        let _lock = cache.lock(step.kind, &step.key)?;
        if cache.lookup(step.kind, &step.key)?.is_some() {
            summary.present += 1;
            continue;
        }
        match remote.pull(cache, step.kind, &step.key)? {
            Pulled::Installed { bytes, .. } => {
                summary.pulled += 1;
                summary.bytes += bytes;
            }
            Pulled::Missing => summary.missing.push(step.label.clone()),
            Pulled::Damaged { why, set_aside } => {
                let aside = grid_cache::remote::set_aside_note(set_aside.as_deref());
                summary.damaged.push((step.label.clone(), format!("{why}{aside}")))
            }
        }
    }
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}
