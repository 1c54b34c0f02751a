//! `hf://` checkpoints a plan's train steps need, fetched before any step runs.

use crate::spec::Grid;
use grid_cache::Cache;

use super::hub_inputs::Unreachable;
use super::{Plan, Verbosity};

/// Downloads the `hf://` checkpoints that train steps still need, here in the
/// parent with a visible progress bar, before worker processes (whose output is
/// not a terminal) would. A failure is only reported: the train steps that need
/// the checkpoint then fail with it, and every other branch still runs. An
/// unreachable Hub stops the run before any step, naming what it lacks.
pub fn download(grid: &Grid, plan: &Plan, cache: &Cache, verbosity: Verbosity) -> Result<(), Unreachable> {
    let mut sources: Vec<&grid_core::model::hub::CheckpointSource> = Vec::new();
    for step in &plan.steps {
        if let crate::steps::Work::Train { assets: grid_core::model::ModelAssets::Checkpoint { source, .. }, .. } =
            &step.work
            && matches!(source, grid_core::model::hub::CheckpointSource::Hub { .. })
            && !sources.contains(&source)
            && !matches!(cache.lookup(step.kind, &step.key), Ok(Some(_)))
        {
            sources.push(source);
        }
    }
    for source in sources {
        if source.dir(cache.root()).is_dir() {
            continue;
        }
        let bar = grid_core::model::hub::download_bar(verbosity > Verbosity::Quiet);
        if verbosity > Verbosity::Quiet {
            eprintln!("downloading {source}");
        }
        let result = grid_core::model::hub::resolve(source, cache.root(), &grid_core::model::hub::bar_progress(&bar));
        bar.finish_and_clear();
        match result {
            Err(e) if e.is_unreachable() => {
                let why = e.to_string();
                return Err(Unreachable::check(grid, cache.root(), &why).unwrap_or_else(|| Unreachable {
                    grid: grid.path.clone(),
                    why,
                    missing: Vec::new(),
                }));
            }
            Err(e) => eprintln!("warning: {source}: {e}"),
            Ok(_) => {}
        }
    }
    Ok(())
}
