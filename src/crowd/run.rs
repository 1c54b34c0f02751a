//! The two commands' work, between the command line and the modules:
//! exporting a study from a planned grid, and importing answers into Lu et
//! al.'s tables. An import is a cache entry keyed by the contents of the study
//! and the answers file (and its options), so importing the same file again
//! computes nothing, and the cache vouches for what it serves.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

use super::answers;
use super::export::{self, CliExport, Selection};
use super::import::{self, ImportOptions, Imported};
use super::study::{self, Study};
use super::tables;
use crate::cache::{Cache, StepKey, StepKind};
use crate::dag::Plan;
use crate::spec::Grid;

const IMPORTED: &str = "imported.json";

/// Builds the study from the cached attributions and writes its files to `out`.
pub fn export_study(
    grid: &Grid,
    plan: &Plan,
    cache: &Cache,
    selection: &Selection,
    asked: &CliExport,
    labels: &[String],
    out: &Path,
) -> Result<(Study, Vec<PathBuf>)> {
    let (methods, explained) = export::explained_examples(plan, cache, selection)?;
    let cells: Vec<String> = explained.iter().map(|e| e.cell.clone()).collect();
    let labels = export::label_names(grid, &cells, labels)?;
    let study = study::build(&explained, &export::options_for(grid, methods, labels, asked))?;
    let files = export::write(&study, out)?;
    Ok((study, files))
}

/// The import's outcome, whether it came from the cache, and the tables written.
pub struct ImportOutcome {
    pub imported: Imported,
    pub cached: bool,
    pub files: Vec<PathBuf>,
}

pub fn import_answers(
    cache: &Cache,
    study_path: &Path,
    answers_path: &Path,
    options: ImportOptions,
    reports: &Path,
) -> Result<ImportOutcome> {
    let study = export::read_study(study_path)?;
    let study_file = if study_path.is_dir() { study_path.join(study::FILE) } else { study_path.to_path_buf() };
    let params = serde_json::json!({
        "study_sha256": sha256_file(&study_file)?,
        "answers_sha256": sha256_file(answers_path)?,
        "exclude_failed_checks": options.exclude_failed_checks,
    });
    let key = StepKey::compute(StepKind::Crowd, &params, &[]);
    let (imported, cached) = match cache.lookup(StepKind::Crowd, &key)? {
        Some(_) => {
            let path = cache.step_dir(StepKind::Crowd, &key).join(IMPORTED);
            let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
            (serde_json::from_str(&text).with_context(|| format!("{}: not an import", path.display()))?, true)
        }
        None => {
            let started = Instant::now();
            let rows = answers::read(answers_path, &study)?;
            let imported = import::score_study(&study, &rows, options)?;
            let _lock = cache.lock(StepKind::Crowd, &key)?;
            let staging = cache.begin(StepKind::Crowd, &key)?;
            std::fs::write(staging.dir.join(IMPORTED), serde_json::to_vec_pretty(&imported)?)
                .context("writing the import into the cache")?;
            let label = format!("crowd/{}/{}", study.grid, answers_path.display());
            cache.publish(staging, &label, &params, Vec::new(), started.elapsed().as_secs_f64(), "cpu")?;
            (imported, false)
        }
    };
    let files = write_tables(&study, &imported, &reports.join(&study.grid).join("crowd"))?;
    Ok(ImportOutcome { imported, cached, files })
}

fn write_tables(study: &Study, imported: &Imported, dir: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut files = Vec::new();
    let mut put = |name: String, text: String| -> Result<()> {
        let path = dir.join(&name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        files.push(path);
        Ok(())
    };
    for cell in &imported.cells {
        let stem = format!("crowd_accuracy_{}", cell.cell.replace('/', "_"));
        put(format!("{stem}.md"), tables::accuracy_markdown(imported, cell))?;
        put(format!("{stem}.csv"), tables::accuracy_csv(cell))?;
        let examples = format!("crowd_examples_{}.md", cell.cell.replace('/', "_"));
        put(examples, tables::examples_markdown(study, imported, &cell.cell, 3))?;
    }
    put("crowd_workers.md".into(), tables::workers_markdown(imported))?;
    put("crowd.json".into(), serde_json::to_string_pretty(imported)?)?;
    Ok(files)
}

fn sha256_file(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("{}: cannot read", path.display()))?;
    Ok(hex::encode(Sha256::digest(&bytes)))
}
