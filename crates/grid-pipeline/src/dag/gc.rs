//! `grid gc`: what the given grids still need, then the cache's collection.
//! The keep set is every step the grids plan under every precision (a key
//! differs by precision) and the frozen grid texts they use; with no grids,
//! only `--older-than` decides. With a remote cache (`--remote`), the remote
//! is collected by the same keep set.

use std::collections::HashSet;
use std::path::PathBuf;

use crate::spec::Grid;
use grid_cache::gc::{GcOptions, GcSummary};
use grid_cache::{Cache, CacheError, FrozenPolicy, collect_frozen};
use grid_core::backend::Precision;

use super::{PlanError, PlanOptions, plan};
use crate::step_kind::StepKind;

/// What a collection removed (or, dry, would remove).
#[derive(Debug)]
pub struct Collected {
    pub steps: GcSummary<StepKind>,
    /// Frozen grid texts no run has used for [`grid_cache::FROZEN_GRACE`].
    pub frozen: Vec<PathBuf>,
    /// The remote cache's collection, when the cache has one (`--remote`).
    pub remote: Option<grid_cache::remote::gc::RemoteGcSummary<StepKind>>,
}

#[derive(Debug, thiserror::Error)]
pub enum GcError {
    /// A grid could not be planned: nothing was removed.
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Cache(#[from] CacheError),
}

/// Removes from `cache` every step no grid of `grids` plans (all of them when
/// `grids` is empty and `options.older_than` says so), and the frozen texts
/// of grids no run used lately. Every grid is planned before anything goes.
pub fn collect(
    cache: &Cache,
    grids: &[Grid],
    data_root: Option<PathBuf>,
    options: GcOptions,
) -> Result<Collected, GcError> {
    let mut keep = HashSet::new();
    let mut keep_frozen = HashSet::new();
    for grid in grids {
        keep_frozen.insert(cache.frozen_grid_path(&grid.text));
        for precision in [Precision::F32, Precision::Bf16Mixed, Precision::Bf16] {
            let options = PlanOptions { data_root: data_root.clone(), precision };
            keep.extend(plan(grid, cache, &options)?.steps.into_iter().map(|s| s.key));
        }
    }
    let keep_steps = (!grids.is_empty()).then_some(&keep);
    let steps = grid_cache::gc::collect(cache, keep_steps, options)?;
    let policy = FrozenPolicy {
        keep: (!grids.is_empty()).then_some(&keep_frozen),
        older_than: options.older_than,
        now: grid_cache::clock::unix_now(),
        dry_run: options.dry_run,
    };
    let frozen = collect_frozen(cache, policy)?;
    let remote = match cache.remote() {
        Some(remote) => Some(remote.collect(grid_cache::remote::gc::RemoteGcOptions {
            keep: keep_steps,
            older_than: options.older_than,
            dry_run: options.dry_run,
            now: grid_cache::clock::unix_now(),
        })?),
        None => None,
    };
    Ok(Collected { steps, frozen, remote })
}
