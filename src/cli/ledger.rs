//! `grid ledger`: the findings ledger over several grids (`compare::ledger`
//! gathers it; this loads the grids and prints).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::{Failure, load_grid_at, runtime, usage};
use grid_cache::Cache;
use grid_pipeline::{compare, dag};

/// `--crowd` and `--study`: answers to a crowd study of the first grid.
pub(super) struct CrowdAnswers {
    pub answers: PathBuf,
    pub study: Option<PathBuf>,
}

#[allow(clippy::too_many_arguments)] // one per option of the subcommand
pub(super) fn ledger(
    grids: &[PathBuf],
    mut files: Vec<PathBuf>,
    aliases: &[(String, String)],
    crowd: Option<CrowdAnswers>,
    cache: &Cache,
    reports: &Path,
    data_root: Option<PathBuf>,
    with: &[PathBuf],
    set: &[String],
) -> Result<ExitCode, Failure> {
    if files.is_empty() {
        files = default_reference_files(&grids[0])?;
    }
    let options = dag::PlanOptions { data_root, ..Default::default() };
    let mut planned = Vec::new();
    // A grid that cannot be planned here (a file it reads is missing) is left
    // out with its reason, so one grid does not hide the others' findings.
    let mut unplanned = Vec::new();
    for path in grids {
        let grid = load_grid_at(path, with, set, cache.root(), dag::lock::LockMode::Read, false)?;
        match dag::plan(&grid, cache, &options) {
            Ok(plan) => planned.push((grid.name.clone(), plan)),
            Err(e) if grids.len() > 1 => unplanned.push(format!("{}: not planned here: {e}", path.display())),
            Err(e) => return Err(usage(e)),
        }
    }
    if planned.is_empty() {
        return Err(usage(anyhow::anyhow!("no grid could be planned: {}", unplanned.join("; "))));
    }
    // Imported as `grid crowd import` does (a cached step: the same answers
    // are scored once), its tables written beside the grid's.
    let imported = match crowd {
        None => None,
        Some(CrowdAnswers { answers, study }) => {
            let study = study.unwrap_or_else(|| super::crowd::default_study(reports, &planned[0].0));
            let options = grid_pipeline::crowd::import::ImportOptions { exclude_failed_checks: false };
            let outcome = grid_pipeline::crowd::run::import_answers(cache, &study, &answers, options, reports)
                .map_err(|e| usage(e.context(format!("--crowd {}", answers.display()))))?;
            Some(outcome.imported)
        }
    };
    let mut ledger = compare::ledger(&planned, cache, &files, aliases, imported.as_ref())
        .map_err(|e| if e.is_usage() { usage(e) } else { runtime(e) })?;
    ledger.notes.extend(unplanned);
    let text = grid_report::compare::ledger::render_ledger(&ledger);
    print!("{text}");
    std::fs::create_dir_all(reports).map_err(|e| runtime(anyhow::anyhow!("{}: {e}", reports.display())))?;
    let written = grid_report::write_text(reports, "ledger.md", &text).map_err(runtime)?;
    eprintln!("ledger written to {}", written.display());
    Ok(ExitCode::SUCCESS)
}

/// Every CSV in `reference/` beside the grid file, in name order.
fn default_reference_files(grid: &Path) -> Result<Vec<PathBuf>, Failure> {
    let dir = grid.parent().unwrap_or(Path::new(".")).join("reference");
    let entries = std::fs::read_dir(&dir)
        .map_err(|e| usage(anyhow::anyhow!("{}: {e} (name the published files with --compare FILE)", dir.display())))?;
    let mut files: Vec<PathBuf> =
        entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "csv")).collect();
    files.sort();
    Ok(files)
}
