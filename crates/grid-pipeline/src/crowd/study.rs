//! A crowd study as exported: every task a person answers, the batches the
//! tasks are dealt into, and the attention checks mixed in. `study.json` holds
//! it; `grid crowd import` scores answers against it, so the study, not the
//! grid, is what answers are checked by.
//!
//! Dealing follows Lu et al.: each task is answered `answers_per_task` times,
//! and one batch (what one person answers) never shows an example twice, so no
//! one answers a task from the memory of the same text with more words shown.
//! Each round of answers is its own set of batches: per example, its tasks are
//! shuffled and dealt one per batch, so a batch holds one task of every example.

use std::collections::BTreeMap;

use anyhow::{Result, bail, ensure};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::tasks::{render, task_id, top_k_words};
pub use crate::spec::Subset;

pub const FILE: &str = "study.json";
/// Bumped when the file's meaning changes; import refuses other versions.
pub const VERSION: u32 = 1;

/// What a task shows and where it comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TaskKind {
    /// Method `method`'s top-`k` words of example `example` of model cell `cell`.
    Salience { cell: String, example: usize, method: String, k: usize },
    /// "Please choose X": answered wrongly, it marks a careless worker.
    AttentionCheck,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    pub id: String,
    #[serde(flatten)]
    pub kind: TaskKind,
    /// The words shown, hidden ones as dots.
    pub text: String,
    /// The true label (a salience task) or the label asked for (a check).
    pub label: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Study {
    pub version: u32,
    pub grid: String,
    pub seed: u64,
    /// Top-k settings, ascending.
    pub ks: Vec<usize>,
    pub answers_per_task: usize,
    /// Answer options, by label index; "don't know" is always offered too.
    pub labels: Vec<String>,
    /// The salience configs, in the grid's order.
    pub methods: Vec<String>,
    /// Which examples the grid explained: all, those the model classifies
    /// correctly (Lu et al.'s main study), or those it misclassifies (their
    /// Tables 8–9).
    #[serde(default)]
    pub subset: Subset,
    pub tasks: Vec<Task>,
    /// Task ids per batch, in a fixed order (the questionnaire shuffles per worker).
    pub batches: Vec<Vec<String>>,
}

impl Study {
    pub fn task(&self, id: &str) -> Option<&Task> {
        self.tasks.iter().find(|t| t.id == id)
    }

    pub fn salience_tasks(&self) -> impl Iterator<Item = &Task> {
        self.tasks.iter().filter(|t| matches!(t.kind, TaskKind::Salience { .. }))
    }
}

/// One explained example, word by word, with every method's word scores.
#[derive(Debug, Clone, PartialEq)]
pub struct ExplainedExample {
    pub cell: String,
    /// Its index in the test set the cell explains.
    pub index: usize,
    pub label: u32,
    pub words: Vec<String>,
    /// Punctuation is never shown as a top word (Lu et al. leave it out).
    pub rankable: Vec<bool>,
    /// One score per word, per method, in `ExportOptions::methods` order.
    pub scores: Vec<Vec<f32>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ExportOptions {
    pub grid: String,
    pub methods: Vec<String>,
    pub ks: Vec<usize>,
    /// Examples per cell, balanced over the labels as far as the cell allows.
    pub examples: usize,
    pub answers_per_task: usize,
    pub labels: Vec<String>,
    /// Attention checks per batch.
    pub checks: usize,
    /// Salience tasks per batch at most (what one person answers).
    pub batch_size: usize,
    pub seed: u64,
    pub subset: Subset,
}

/// The study: tasks for a balanced, seeded choice of `examples` per cell,
/// dealt into batches, with the attention checks.
pub fn build(explained: &[ExplainedExample], options: &ExportOptions) -> Result<Study> {
    ensure!(!options.methods.is_empty(), "a study needs at least one method");
    ensure!(!options.ks.is_empty(), "a study needs at least one k");
    ensure!(options.answers_per_task > 0, "answers per task must be at least 1");
    ensure!(options.examples > 0, "a study needs at least one example per cell");
    ensure!(options.labels.len() >= 2, "a study needs at least two labels");
    let mut ks = options.ks.clone();
    ks.sort_unstable();
    ks.dedup();
    ensure!(ks[0] > 0, "k must be at least 1");
    let mut rng = ChaCha8Rng::seed_from_u64(options.seed);

    let mut by_cell: BTreeMap<&str, Vec<&ExplainedExample>> = BTreeMap::new();
    for example in explained {
        ensure!(
            example.scores.len() == options.methods.len(),
            "example {} of {}: {} score lists for {} methods",
            example.index,
            example.cell,
            example.scores.len(),
            options.methods.len()
        );
        if example.label as usize >= options.labels.len() {
            bail!(
                "example {} of {} has label {}, but the study names only {} labels ({})",
                example.index,
                example.cell,
                example.label,
                options.labels.len(),
                options.labels.join(", ")
            );
        }
        by_cell.entry(&example.cell).or_default().push(example);
    }
    ensure!(!by_cell.is_empty(), "no explained examples to build a study from");

    let mut tasks = Vec::new();
    // Per chosen example, its salience task ids: the unit the dealing works on.
    let mut groups: Vec<Vec<String>> = Vec::new();
    for (cell, examples) in by_cell {
        for example in balanced_choice(examples, options.examples, options.labels.len(), &mut rng) {
            let words: Vec<&str> = example.words.iter().map(String::as_str).collect();
            let mut group = Vec::new();
            for (method, scores) in options.methods.iter().zip(&example.scores) {
                let scored: Vec<(usize, f32)> = scores.iter().copied().enumerate().collect();
                for &k in &ks {
                    let shown = top_k_words(&scored, |w| example.rankable.get(w).copied().unwrap_or(false), k);
                    let id = task_id(cell, example.index, method, k);
                    group.push(id.clone());
                    tasks.push(Task {
                        id,
                        kind: TaskKind::Salience {
                            cell: cell.to_string(),
                            example: example.index,
                            method: method.clone(),
                            k,
                        },
                        text: render(&words, &shown),
                        label: example.label,
                    });
                }
            }
            groups.push(group);
        }
    }
    let checks = attention_checks(&options.labels);
    let batches = deal(&groups, options.answers_per_task, &checks, options.checks, options.batch_size, &mut rng);
    tasks.extend(checks);
    Ok(Study {
        version: VERSION,
        grid: options.grid.clone(),
        seed: options.seed,
        ks,
        answers_per_task: options.answers_per_task,
        labels: options.labels.clone(),
        methods: options.methods.clone(),
        subset: options.subset,
        tasks,
        batches,
    })
}

/// Up to `n` examples, as even over the labels as the cell allows (Lu et al.:
/// 50 negative and 50 positive reviews), in ascending index order.
fn balanced_choice<'a>(
    mut examples: Vec<&'a ExplainedExample>,
    n: usize,
    labels: usize,
    rng: &mut ChaCha8Rng,
) -> Vec<&'a ExplainedExample> {
    examples.sort_by_key(|e| e.index);
    examples.shuffle(rng);
    let mut by_label: Vec<Vec<&ExplainedExample>> = vec![Vec::new(); labels];
    for e in examples {
        by_label[e.label as usize].push(e);
    }
    // Round-robin over the labels: each takes one in turn while it has any.
    let mut chosen = Vec::new();
    let mut next = vec![0usize; labels];
    while chosen.len() < n {
        let before = chosen.len();
        for (label, pool) in by_label.iter().enumerate() {
            if chosen.len() < n && next[label] < pool.len() {
                chosen.push(pool[next[label]]);
                next[label] += 1;
            }
        }
        if chosen.len() == before {
            break;
        }
    }
    chosen.sort_by_key(|e| e.index);
    chosen
}

/// One attention check per label: "choose X".
fn attention_checks(labels: &[String]) -> Vec<Task> {
    labels
        .iter()
        .enumerate()
        .map(|(label, name)| Task {
            id: format!("check{label}"),
            kind: TaskKind::AttentionCheck,
            text: format!("This is an attention check. Please choose “{name}”."),
            label: label as u32,
        })
        .collect()
}

/// Batches: per round of answers, as many as an example has tasks; batch b
/// of a round takes one task of every example (after a seeded shuffle of each
/// example's tasks), cut into pieces of at most `batch_size` tasks (Lu et al.:
/// 100 per person), each with `checks_per_batch` attention checks.
fn deal(
    groups: &[Vec<String>],
    rounds: usize,
    checks: &[Task],
    checks_per_batch: usize,
    batch_size: usize,
    rng: &mut ChaCha8Rng,
) -> Vec<Vec<String>> {
    let per_round = groups.iter().map(Vec::len).max().unwrap_or(0);
    let mut batches = Vec::new();
    for _ in 0..rounds {
        let mut round: Vec<Vec<String>> = vec![Vec::new(); per_round];
        for group in groups {
            let mut shuffled = group.clone();
            shuffled.shuffle(rng);
            for (i, id) in shuffled.into_iter().enumerate() {
                round[i].push(id);
            }
        }
        // Which batch gets which example's first task varies by round too.
        round.shuffle(rng);
        for whole in round {
            for piece in whole.chunks(batch_size.max(1)) {
                let mut batch = piece.to_vec();
                for c in 0..checks_per_batch {
                    batch.push(checks[(c + batches.len()) % checks.len()].id.clone());
                }
                batches.push(batch);
            }
        }
    }
    batches
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn example(cell: &str, index: usize, label: u32) -> ExplainedExample {
        let words: Vec<String> = ["a", "good", "film", ",", "not", "bad"].iter().map(|w| w.to_string()).collect();
        ExplainedExample {
            cell: cell.into(),
            index,
            label,
            rankable: words.iter().map(|w| w != ",").collect(),
            words,
            // Method 0 ranks "good" first, method 1 "bad".
            scores: vec![vec![0.1, 0.9, 0.2, 5.0, 0.0, 0.3], vec![0.0, 0.1, 0.2, 0.0, 0.3, 0.9]],
        }
    }

    fn options() -> ExportOptions {
        ExportOptions {
            grid: "g".into(),
            methods: vec!["gxil".into(), "lime".into()],
            ks: vec![2, 1],
            examples: 4,
            answers_per_task: 3,
            labels: vec!["negative".into(), "positive".into()],
            checks: 1,
            batch_size: 100,
            seed: 5,
            subset: Subset::All,
        }
    }

    #[test]
    fn tasks_show_each_methods_top_words_in_place() {
        let study = build(&[example("sst2/natural/lstm", 7, 1)], &options()).unwrap();
        assert_eq!(study.ks, vec![1, 2]);
        let text = |method: &str, k: usize| {
            study
                .salience_tasks()
                .find(|t| matches!(&t.kind, TaskKind::Salience { method: m, k: kk, .. } if m == method && *kk == k))
                .map(|t| t.text.clone())
                .unwrap()
        };
        assert_eq!(text("gxil", 1), "… good … … … …", "the comma's 5.0 is never shown");
        assert_eq!(text("gxil", 2), "… good … … … bad");
        assert_eq!(text("lime", 1), "… … … … … bad");
        assert_eq!(study.salience_tasks().count(), 4);
        assert_eq!(study.tasks.len(), 6, "plus one attention check per label");
    }

    #[test]
    fn every_task_is_dealt_once_per_round_and_no_batch_repeats_an_example() {
        let explained: Vec<ExplainedExample> =
            (0..6).map(|i| example("c", i, (i % 2) as u32)).chain([example("d", 0, 0)]).collect();
        let study = build(&explained, &options()).unwrap();
        // c: 4 examples chosen (2 per label), d: its only one.
        let examples: HashSet<(String, usize)> = study
            .salience_tasks()
            .map(|t| match &t.kind {
                TaskKind::Salience { cell, example, .. } => (cell.clone(), *example),
                TaskKind::AttentionCheck => unreachable!(),
            })
            .collect();
        assert_eq!(examples.len(), 5);
        // 4 tasks per example (2 methods × 2 ks) → 4 batches per round, 3 rounds.
        assert_eq!(study.batches.len(), 12);
        let mut dealt: BTreeMap<&str, usize> = BTreeMap::new();
        for batch in &study.batches {
            let mut seen = HashSet::new();
            for id in batch {
                let task = study.task(id).unwrap();
                *dealt.entry(&task.id).or_default() += 1;
                if let TaskKind::Salience { cell, example, .. } = &task.kind {
                    assert!(seen.insert((cell, example)), "batch shows {cell}/{example} twice");
                }
            }
            assert_eq!(batch.iter().filter(|id| id.starts_with("check")).count(), 1);
        }
        for task in study.salience_tasks() {
            assert_eq!(dealt[task.id.as_str()], 3, "{} dealt {} times", task.id, dealt[task.id.as_str()]);
        }
        // Same seed, same study.
        assert_eq!(study, build(&explained, &options()).unwrap());
    }

    #[test]
    fn a_batch_holds_at_most_batch_size_tasks() {
        let explained: Vec<ExplainedExample> = (0..5).map(|i| example("c", i, (i % 2) as u32)).collect();
        let study = build(&explained, &ExportOptions { examples: 5, batch_size: 2, ..options() }).unwrap();
        // 4 tasks per example → 4 batches of 5 tasks per round, each cut into 2 + 2 + 1.
        assert_eq!(study.batches.len(), 3 * 4 * 3);
        assert!(study.batches.iter().all(|b| (2..=3).contains(&b.len())), "{:?}", study.batches);
        let salience: usize =
            study.batches.iter().map(|b| b.iter().filter(|id| !id.starts_with("check")).count()).sum();
        assert_eq!(salience, 3 * study.salience_tasks().count());
    }

    #[test]
    fn the_choice_is_balanced_over_labels() {
        let explained: Vec<ExplainedExample> = (0..10).map(|i| example("c", i, u32::from(i >= 8))).collect(); // 8 negative, 2 positive
        let study = build(&explained, &ExportOptions { examples: 6, ..options() }).unwrap();
        let labels: Vec<u32> = study
            .salience_tasks()
            .filter(|t| matches!(&t.kind, TaskKind::Salience { method, k: 1, .. } if method == "gxil"))
            .map(|t| t.label)
            .collect();
        assert_eq!(labels.len(), 6);
        assert_eq!(labels.iter().filter(|&&l| l == 1).count(), 2, "both positives, then negatives fill up");
    }

    #[test]
    fn bad_inputs_are_sentences() {
        let e = build(&[example("c", 0, 2)], &options()).unwrap_err().to_string();
        assert!(e.contains("label 2") && e.contains("negative, positive"), "{e}");
        let e = build(&[], &options()).unwrap_err().to_string();
        assert!(e.contains("no explained examples"), "{e}");
        let e = build(&[example("c", 0, 0)], &ExportOptions { examples: 0, ..options() }).unwrap_err().to_string();
        assert!(e.contains("at least one example"), "{e}");
    }
}
