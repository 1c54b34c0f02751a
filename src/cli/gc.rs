//! `grid gc`: removes what no grid plans (`dag::gc` chooses; this prints).

use std::path::PathBuf;
use std::process::ExitCode;

use super::{Failure, overrides, runtime, usage};
use grid_cache::Cache;
use grid_pipeline::dag;
use grid_pipeline::spec::Grid;

/// `grid gc`: the keys every grid plans, under every precision, are kept.
pub(super) fn gc(
    grids: &[PathBuf],
    cache: &Cache,
    data_root: Option<PathBuf>,
    set: Vec<String>,
    options: grid_cache::gc::GcOptions,
) -> Result<ExitCode, Failure> {
    let settings = overrides(&set)?;
    let grids =
        grids.iter().map(|grid| Grid::load_with(grid, &settings)).collect::<Result<Vec<_>, _>>().map_err(usage)?;
    let collected = dag::gc::collect(cache, &grids, data_root, options).map_err(|e| match e {
        dag::gc::GcError::Plan(e) => usage(e),
        dag::gc::GcError::Cache(e) => runtime(e),
    })?;
    let (summary, frozen, remote) = (collected.steps, collected.frozen, collected.remote);
    let verb = if options.dry_run { "would remove" } else { "removed" };
    let grace_days = grid_cache::FROZEN_GRACE.as_secs() / 86_400;
    for path in &frozen {
        eprintln!("{verb} grid text {} (no run used it for {grace_days} days)", path.display());
    }
    for (kind, dir) in &summary.removed {
        eprintln!("{verb} {kind} {}", dir.display());
    }
    for dir in &summary.busy {
        eprintln!("left {} (being computed)", dir.display());
    }
    for dir in &summary.leftovers {
        eprintln!("{verb} {} (left by an interrupted step)", dir.display());
    }
    let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    let kept = match (grids.is_empty(), options.older_than.is_some()) {
        (false, false) => "that the grids plan",
        (true, _) => "finished since the date",
        (false, true) => "that the grids plan, finished since the date",
    };
    eprintln!(
        "{verb} {} steps ({:.1} MiB); kept {} {kept}",
        summary.removed.len(),
        mib(summary.removed_bytes),
        summary.kept
    );
    if let (Some(remote), Some(location)) = (remote, cache.remote().map(|r| r.location())) {
        for (kind, label) in &remote.removed {
            eprintln!("{verb} {kind} {label} from {location}");
        }
        for folder in &remote.orphans {
            eprintln!("{verb} {location}/{folder} (an upload no record names, over a day old)");
        }
        for object in &remote.set_aside {
            eprintln!("{verb} {location}/{object} (a damaged record set aside, over a day old)");
        }
        for object in &remote.unreadable {
            eprintln!("left {location}/{object} (not a step record grid can read)");
        }
        eprintln!(
            "{verb} {} steps from {location} ({:.1} MiB); kept {} {kept}",
            remote.removed.len(),
            mib(remote.removed_bytes),
            remote.kept
        );
    }
    if summary.kernel_bytes > 0 {
        let what = if summary.kernels_removed { verb } else { "kept (--kernels removes them)" };
        eprintln!("compiled kernels, {:.1} MiB: {what}", mib(summary.kernel_bytes));
    }
    Ok(ExitCode::SUCCESS)
}

/// `--older-than`: a date (`2026-11-01`, midnight UTC) or `N` days before now
/// (`30d`), as seconds since the Unix epoch.
pub(super) fn cutoff(text: &str) -> Result<u64, String> {
    if let Some(days) = text.strip_suffix('d') {
        let days: u64 = days.parse().map_err(|_| "expected a date like 2026-11-01 or days like 30d".to_string())?;
        let now = grid_cache::clock::unix_now();
        return Ok(now.saturating_sub(days * 86_400));
    }
    let date = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .map_err(|e| format!("expected a date like 2026-11-01 or days like 30d ({e})"))?;
    let midnight = date.and_hms_opt(0, 0, 0).ok_or("not a time of day")?.and_utc().timestamp();
    u64::try_from(midnight).map_err(|_| "a date before 1970".to_string())
}
