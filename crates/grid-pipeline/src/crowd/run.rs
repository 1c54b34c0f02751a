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
use crate::dag::Plan;
use crate::spec::Grid;
use crate::step_kind::StepKind;
use grid_cache::{Cache, StepKey};

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
    /// Model cells scored by this import, and cells whose tasks and counted
    /// answers were scored before and came from the cache.
    pub cells_scored: usize,
    pub cells_cached: usize,
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
    let (mut cells_scored, mut cells_cached) = (0, 0);
    let (imported, cached) = match cache.lookup(StepKind::Crowd, &key)? {
        Some(_) => (read_cached(cache, &key, IMPORTED)?, true),
        None => {
            let started = Instant::now();
            let rows = answers::read(answers_path, &study)?;
            let imported = import::score_study_with(&study, &rows, options, |input| {
                let (outcome, cached) = score_cell_cached(cache, &study.grid, input)?;
                *(if cached { &mut cells_cached } else { &mut cells_scored }) += 1;
                Ok(outcome)
            })?;
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
    Ok(ImportOutcome { imported, cached, cells_scored, cells_cached, files })
}

const CELL: &str = "cell.json";

/// One cell's scores, from the cache when its tasks and counted answers were
/// scored before (by an import of any answers file), else scored and cached.
fn score_cell_cached(cache: &Cache, grid: &str, input: &import::CellInput) -> Result<(import::CellOutcome, bool)> {
    let digest = hex::encode(Sha256::digest(serde_json::to_vec(input)?));
    let params = serde_json::json!({ "cell_input_sha256": digest });
    let key = StepKey::compute(StepKind::Crowd, &params, &[]);
    if cache.lookup(StepKind::Crowd, &key)?.is_some() {
        return Ok((read_cached(cache, &key, CELL)?, true));
    }
    let started = Instant::now();
    let outcome = import::score_cell(input)?;
    let _lock = cache.lock(StepKind::Crowd, &key)?;
    let staging = cache.begin(StepKind::Crowd, &key)?;
    std::fs::write(staging.dir.join(CELL), serde_json::to_vec_pretty(&outcome)?)
        .context("writing a cell's crowd scores into the cache")?;
    let label = format!("crowd/{grid}/cells/{}", input.cell);
    cache.publish(staging, &label, &params, Vec::new(), started.elapsed().as_secs_f64(), "cpu")?;
    Ok((outcome, false))
}

/// A crowd entry's JSON payload (the cache checked it against its manifest).
fn read_cached<T: serde::de::DeserializeOwned>(cache: &Cache, key: &StepKey, file: &str) -> Result<T> {
    let path = cache.step_dir(StepKind::Crowd, key).join(file);
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{}: not what an import writes", path.display()))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crowd::study::{Task, TaskKind, VERSION};

    /// Two model cells, two examples each (labels 1 and 0), one method, k ∈ {5, 10}.
    fn study() -> Study {
        let mut tasks = Vec::new();
        for cell in ["sst2/natural/a", "sst2/natural/b"] {
            for (example, label) in [(0, 1), (1, 0)] {
                for k in [5, 10] {
                    tasks.push(Task {
                        id: format!("{}{example}k{k}", &cell[cell.len() - 1..]),
                        kind: TaskKind::Salience { cell: cell.into(), example, method: "m".into(), k },
                        text: String::new(),
                        label,
                    });
                }
            }
        }
        Study {
            version: VERSION,
            grid: "g".into(),
            seed: 0,
            ks: vec![5, 10],
            answers_per_task: 1,
            labels: vec!["negative".into(), "positive".into()],
            methods: vec!["m".into()],
            subset: Default::default(),
            tasks,
            batches: Vec::new(),
        }
    }

    /// Worker w1 answers every task: right, except `wrong`.
    fn answers(study: &Study, wrong: &[&str]) -> String {
        let mut csv = String::from("worker,task,answer\n");
        for task in study.salience_tasks() {
            let answer = if wrong.contains(&task.id.as_str()) { 1 - task.label } else { task.label };
            csv.push_str(&format!("w1,{},{answer}\n", task.id));
        }
        csv
    }

    /// A second answers file that changes one cell's answers scores that cell
    /// and takes the other from the cache; the result is what a fresh import
    /// of that file gives.
    #[test]
    fn a_new_answers_file_rescores_only_the_cells_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path().join("cache")).unwrap();
        let study = study();
        let study_path = dir.path().join("study.json");
        std::fs::write(&study_path, serde_json::to_vec(&study).unwrap()).unwrap();
        let import = |cache: &Cache, name: &str, wrong: &[&str]| {
            let path = dir.path().join(name);
            std::fs::write(&path, answers(&study, wrong)).unwrap();
            import_answers(cache, &study_path, &path, ImportOptions::default(), &dir.path().join("reports")).unwrap()
        };

        let first = import(&cache, "first.csv", &[]);
        assert_eq!((first.cached, first.cells_scored, first.cells_cached), (false, 2, 0));
        let again = import(&cache, "first.csv", &[]);
        assert!(again.cached, "the same file: the whole import from the cache");

        let second = import(&cache, "second.csv", &["b0k10"]);
        assert_eq!((second.cached, second.cells_scored, second.cells_cached), (false, 1, 1));
        let accuracy = |outcome: &ImportOutcome, cell: usize| outcome.imported.cells[cell].methods[0].accuracy.clone();
        assert_eq!(accuracy(&second, 0), [(5, 1.0), (10, 1.0)]);
        assert_eq!(accuracy(&second, 1), [(5, 1.0), (10, 0.5)]);
        assert_eq!(second.imported.cells[1].methods[0].flips, 1);

        let fresh_cache = Cache::open(dir.path().join("fresh")).unwrap();
        let fresh = import(&fresh_cache, "second.csv", &["b0k10"]);
        assert_eq!(fresh.cells_scored, 2);
        assert_eq!(fresh.imported, second.imported);
    }
}
