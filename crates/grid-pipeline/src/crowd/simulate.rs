//! A simulated annotator: the explained model itself reads only the words a
//! task shows (the hidden ones dropped) and answers as a person of the study
//! would — one simulated worker per batch, so every task gets its
//! `answers_per_task` answers. A worker draws a label from the model's
//! softmax over the shown words, and says "don't know" when the drawn label's
//! probability is within `unsure_margin` of chance (1/C). Attention checks it
//! answers as asked. The answers are written as a platform would give them
//! back, by workers named `simulated-<batch>`, so `grid crowd import` scores
//! them like people's and labels every table as simulated.
//!
//! It is a cheap proxy, not a person: it shows whether a method's top words
//! carry the model's own evidence (a faithfulness reading), where people show
//! whether the words make sense to them.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, ensure};
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::import::SIMULATED_PREFIX;
use super::study::{Study, TaskKind};
use super::tasks::HIDDEN;
use crate::dag::Plan;
use crate::step_kind::StepKind;
use grid_cache::Cache;
use grid_core::backend::Compute;
use grid_core::model::checkpoint;
use grid_core::model::predict::logits;
use grid_methods::salience::perturb::class_probability;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimulateOptions {
    pub seed: u64,
    /// "Don't know" when the drawn label's probability is below 1/C + this.
    pub unsure_margin: f64,
}

impl Default for SimulateOptions {
    fn default() -> Self {
        SimulateOptions { seed: 0, unsure_margin: 0.1 }
    }
}

/// The trained model of every cell the study explains: the train step its
/// attribute steps read, which must be in the cache.
pub fn model_dirs(plan: &Plan, cache: &Cache, study: &Study) -> Result<BTreeMap<String, PathBuf>> {
    let mut dirs = BTreeMap::new();
    for task in study.salience_tasks() {
        let TaskKind::Salience { cell, method, .. } = &task.kind else { continue };
        if dirs.contains_key(cell) {
            continue;
        }
        let label = format!("attribute/{cell}/{method}");
        let step =
            plan.steps.iter().find(|s| s.label == label).with_context(|| {
                format!("the grid plans no `{label}`: is this the grid the study was exported from?")
            })?;
        let train = step
            .inputs
            .iter()
            .map(|&i| &plan.steps[i])
            .find(|s| s.kind == StepKind::Train)
            .with_context(|| format!("`{label}` reads no trained model"))?;
        ensure!(
            cache.lookup(StepKind::Train, &train.key)?.is_some(),
            "{} is not in the cache (or fails its checksum): run `grid run` first",
            train.label
        );
        dirs.insert(cell.clone(), cache.step_dir(StepKind::Train, &train.key));
    }
    Ok(dirs)
}

/// Writes simulated answers (`simulate`'s CSV) to `out`, creating its folder.
pub fn write_answers(csv: &str, out: &Path) -> Result<()> {
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(out, csv).with_context(|| format!("writing {}", out.display()))
}

/// The answers file (`worker,batch,task,answer,seconds`).
pub fn simulate(
    study: &Study,
    models: &BTreeMap<String, PathBuf>,
    compute: Compute,
    options: SimulateOptions,
) -> Result<String> {
    let probabilities = grid_core::with_autodiff_backend!(compute, |B, device| {
        probabilities_on::<<B as AutodiffBackend>::InnerBackend>(study, models, &device)
    })?;
    let mut rng = ChaCha8Rng::seed_from_u64(options.seed);
    let chance = 1.0 / study.labels.len() as f64;
    let mut csv = "worker,batch,task,answer,seconds\n".to_string();
    for (b, batch) in study.batches.iter().enumerate() {
        for id in batch {
            let task = study.task(id).with_context(|| format!("batch {b} names task {id}, which the study lacks"))?;
            let answer = match &task.kind {
                TaskKind::AttentionCheck => task.label.to_string(),
                TaskKind::Salience { .. } => {
                    let p = &probabilities[id.as_str()];
                    let label = draw(p, rng.random::<f64>());
                    if p[label] < chance + options.unsure_margin { "dont_know".into() } else { label.to_string() }
                }
            };
            let _ = writeln!(csv, "{SIMULATED_PREFIX}{b},{b},{id},{answer},0");
        }
    }
    Ok(csv)
}

/// The label whose cumulative probability first exceeds `u` ∈ [0, 1).
fn draw(p: &[f64], u: f64) -> usize {
    let mut total = 0.0;
    for (label, &q) in p.iter().enumerate() {
        total += q;
        if u < total {
            return label;
        }
    }
    p.len() - 1
}

/// The words a task shows, the hidden ones dropped: what the model reads.
fn shown_words(text: &str) -> String {
    text.split(' ').filter(|w| *w != HIDDEN && !w.is_empty()).collect::<Vec<_>>().join(" ")
}

/// Per salience task, the model's class probabilities on its shown words.
fn probabilities_on<B: Backend>(
    study: &Study,
    models: &BTreeMap<String, PathBuf>,
    device: &B::Device,
) -> Result<BTreeMap<String, Vec<f64>>> {
    let mut out = BTreeMap::new();
    for (cell, dir) in models {
        let checkpoint = checkpoint::load::<B>(dir, device)
            .with_context(|| format!("loading the model of {cell} from {}", dir.display()))?;
        let tasks: Vec<_> = study
            .salience_tasks()
            .filter(|t| matches!(&t.kind, TaskKind::Salience { cell: c, .. } if c == cell))
            .collect();
        let max_length = checkpoint.config.max_length();
        let sequences: Vec<Vec<u32>> =
            tasks.iter().map(|t| checkpoint.encoder.encode(&shown_words(&t.text), max_length).ids).collect();
        let rows = logits(&checkpoint.model, &sequences, 64, checkpoint.encoder.pad_id(), device);
        for (task, row) in tasks.iter().zip(rows) {
            // One logit is a binary model's (sigmoid); more are a softmax's.
            let classes = if row.len() == 1 { 2 } else { row.len() };
            ensure!(
                classes == study.labels.len(),
                "the model of {cell} has {classes} classes, the study {} labels",
                study.labels.len()
            );
            let p = (0..classes as u32).map(|c| class_probability(&row, c)).collect();
            out.insert(task.id.clone(), p);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_follow_the_cumulative_probabilities() {
        let p = [0.2, 0.5, 0.3];
        assert_eq!(draw(&p, 0.0), 0);
        assert_eq!(draw(&p, 0.19), 0);
        assert_eq!(draw(&p, 0.2), 1);
        assert_eq!(draw(&p, 0.69), 1);
        assert_eq!(draw(&p, 0.99), 2);
    }

    #[test]
    fn the_model_reads_only_the_shown_words() {
        assert_eq!(shown_words("… good … … bad …"), "good bad");
        assert_eq!(shown_words("… … …"), "");
    }
}
