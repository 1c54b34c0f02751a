//! `grid report --compare`: each published file beside the report step's
//! cells, as read back from the cache, written as `compare_<file stem>.{md,csv}`
//! next to the tables.

use std::path::{Path, PathBuf};

use crate::crowd::import::Imported;
use crate::step_kind::StepKind;
use crate::steps::report::{DATA, ReportData};
use grid_cache::Cache;
use grid_report::{ReportError, compare};

use crate::dag::Plan;

/// One published file compared and written.
#[derive(Debug)]
pub struct Written {
    pub markdown: String,
    pub markdown_path: PathBuf,
    pub csv_path: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error("the grid has no report step")]
    NoReportStep,
    /// Not a `source`: the message ends with advice, so the cause would be
    /// printed twice.
    #[error("{path}: {cause} (run the grid first: `grid run`)")]
    NotRun { path: PathBuf, cause: std::io::Error },
    #[error("{path}: {source}")]
    Corrupt { path: PathBuf, source: serde_json::Error },
    /// A published file that cannot be read or matched.
    #[error(transparent)]
    Published(compare::CompareError),
    #[error("{path}: {source}")]
    Folder { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Write(#[from] ReportError),
}

impl CompareError {
    /// Whether the user's input is at fault (the grid, a published file, a
    /// report not yet computed) rather than the machine.
    pub fn is_usage(&self) -> bool {
        match self {
            CompareError::NoReportStep | CompareError::NotRun { .. } | CompareError::Published(_) => true,
            CompareError::Corrupt { .. } | CompareError::Folder { .. } | CompareError::Write(_) => false,
        }
    }
}

/// Compares every file of `files` with the cells of `plan`'s report step in
/// `cache`, writing each comparison into `reports` and handing it to
/// `written` before the next file is read.
pub fn compare_with_published(
    plan: &Plan,
    cache: &Cache,
    reports: &Path,
    files: &[PathBuf],
    aliases: &[(String, String)],
    mut written: impl FnMut(Written),
) -> Result<(), CompareError> {
    let data = report_data(plan, cache)?;
    std::fs::create_dir_all(reports).map_err(|source| CompareError::Folder { path: reports.to_path_buf(), source })?;
    for file in files {
        let comparison = compare::compare_file(file, &data.cells, &data.verification, &data.images, aliases)
            .map_err(CompareError::Published)?;
        let stem = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "published".into());
        let markdown = compare::render_markdown(&comparison);
        let markdown_path = grid_report::write_text(reports, &format!("compare_{stem}.md"), &markdown)?;
        let mut frame = compare::frame(&comparison).clone();
        let csv_path = grid_report::write_csv(reports, &format!("compare_{stem}.csv"), &mut frame)?;
        written(Written { markdown, markdown_path, csv_path });
    }
    Ok(())
}

/// What the report step of `plan` wrote into `cache`.
fn report_data(plan: &Plan, cache: &Cache) -> Result<ReportData, CompareError> {
    let report = plan.report_step().ok_or(CompareError::NoReportStep)?;
    let dir = cache.step_dir(StepKind::Report, &plan.steps[report].key);
    let path = dir.join(DATA);
    let text = std::fs::read_to_string(&path).map_err(|cause| CompareError::NotRun { path: path.clone(), cause })?;
    serde_json::from_str(&text).map_err(|source| CompareError::Corrupt { path, source })
}

/// The findings ledger of `grids` (each a name and its plan): every published
/// file of `files` compared with each grid's report, and Lu et al.'s file with
/// `crowd`, an imported crowd study, when there is one. A file of a kind a
/// grid has no cells for adds nothing; a grid not run yet, or a file that is
/// not a table of published numbers `--compare` reads, is a note.
pub fn ledger(
    grids: &[(String, Plan)],
    cache: &Cache,
    files: &[PathBuf],
    aliases: &[(String, String)],
    crowd: Option<&Imported>,
) -> Result<compare::ledger::Ledger, CompareError> {
    let mut ledger = compare::ledger::Ledger::default();
    let mut published = Vec::new();
    let mut crowd_compared = false;
    for file in files {
        match compare::load(file) {
            Ok(p) => published.push((file, p)),
            Err(e) => match (crowd, crate::crowd::compare::read_published(file)) {
                (Some(imported), Ok(rows)) => {
                    add_crowd(&mut ledger, imported, &rows, file, aliases);
                    crowd_compared = true;
                }
                // Its message names the file already.
                _ => ledger.notes.push(e.to_string()),
            },
        }
    }
    if let (Some(imported), false) = (crowd, crowd_compared) {
        ledger.notes.push(format!(
            "the crowd study of `{}`: no Lu et al. file among those compared (experiments/reference/lu2024_crowd_accuracy.csv)",
            imported.grid
        ));
    }
    for (name, plan) in grids {
        let data = match report_data(plan, cache) {
            Ok(data) => data,
            Err(CompareError::NotRun { .. }) => {
                ledger.notes.push(format!("{name}: not run yet (`grid run` it, then the ledger reads its report)"));
                continue;
            }
            Err(e) => return Err(e),
        };
        for (file, p) in
            published.iter().filter(|(_, p)| compare::concerns(p, &data.cells, &data.verification, &data.images))
        {
            let mut comparison = compare::compare(p, &data.cells, &data.verification, &data.images, aliases)
                .map_err(CompareError::Published)?;
            comparison.source = file.display().to_string();
            ledger.add(name, &comparison);
        }
    }
    Ok(ledger)
}

/// Lu et al.'s findings on each cell of an imported study, as `grid crowd
/// import --compare` checks them; a cell no published dataset matches is a note.
fn add_crowd(
    ledger: &mut compare::ledger::Ledger,
    imported: &Imported,
    rows: &[crate::crowd::compare::PublishedRow],
    file: &Path,
    aliases: &[(String, String)],
) {
    let compared = crate::crowd::compare::compare(imported, rows, aliases);
    let who = if imported.simulated { "simulated annotators" } else { "people" };
    for cell in &compared {
        let grid = format!("{} ({}, {who}, vs {})", imported.grid, cell.cell, cell.published_dataset);
        ledger.add_findings(
            compare::ledger::Paper::Lu,
            &grid,
            &file.display().to_string(),
            cell.findings.iter().cloned(),
        );
    }
    for cell in imported.cells.iter().filter(|c| !compared.iter().any(|x| x.cell == c.cell)) {
        ledger.notes.push(format!(
            "crowd cell {}: no dataset of {} matches it (map it with --compare-as OURS=PUBLISHED)",
            cell.cell,
            file.display()
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_not_yet_computed_is_a_usage_error_that_names_its_cause_once() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let plan = crate::dag::test_plan(&[(StepKind::Report, &[])]);
        let e = compare_with_published(&plan, &cache, dir.path(), &[], &[], |_| {}).unwrap_err();
        assert!(e.is_usage());
        let line = grid_core::errors::one_line(&anyhow::Error::new(e));
        assert_eq!(line.matches("os error").count(), 1, "{line}");
        assert!(line.ends_with("(run the grid first: `grid run`)"), "{line}");

        let no_report = crate::dag::test_plan(&[(StepKind::Score, &[])]);
        let e = compare_with_published(&no_report, &cache, dir.path(), &[], &[], |_| {}).unwrap_err();
        assert!(e.is_usage() && e.to_string() == "the grid has no report step", "{e}");
    }
}
