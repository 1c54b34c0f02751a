//! Answers against a study: attention checks per worker, answer counts per
//! task, and per model cell Lu et al.'s numbers (A_ijk by strict majority,
//! p_jk, s_j, Flips, Aids).

use std::collections::{BTreeMap, BTreeSet, HashSet};

use anyhow::{Result, anyhow};
use serde::{Deserialize, Serialize};

use super::answers::Answers;
use super::score::{self, Answer, MethodScore, TaskOutcome};
use super::study::{Study, TaskKind};

/// Workers whose id starts with this answered by `grid crowd simulate`.
pub const SIMULATED_PREFIX: &str = "simulated-";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerChecks {
    pub worker: String,
    /// Salience tasks answered.
    pub answered: usize,
    pub checks_seen: usize,
    pub checks_failed: usize,
    /// Left out of the scores (`--exclude-failed-checks`).
    pub excluded: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellScores {
    /// `dataset/regime/model`.
    pub cell: String,
    pub methods: Vec<MethodScore>,
}

/// One salience task's outcome: A_ijk and how many answers made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    pub task: String,
    pub correct: bool,
    pub answers: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Imported {
    pub grid: String,
    /// The study's examples: all, correctly classified, or misclassified.
    #[serde(default)]
    pub subset: super::study::Subset,
    /// Every answer came from simulated workers.
    pub simulated: bool,
    pub answers: usize,
    pub workers: Vec<WorkerChecks>,
    pub cells: Vec<CellScores>,
    /// Per salience task, in the study's order.
    #[serde(default)]
    pub tasks: Vec<TaskResult>,
    /// What the study could still be scored with, counted.
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ImportOptions {
    /// Drop every answer of a worker who failed an attention check.
    pub exclude_failed_checks: bool,
}

/// One model cell's salience tasks with the answers that count (after
/// `--exclude-failed-checks`): all its scores depend on, so a new answers file
/// that leaves a cell's input as it was leaves its scores as they were.
#[derive(Debug, Serialize)]
pub struct CellInput<'a> {
    pub cell: &'a str,
    pub answers_per_task: usize,
    /// The study's method order, which the rows follow.
    pub method_order: &'a [String],
    pub tasks: Vec<TaskInput<'a>>,
}

#[derive(Debug, Serialize)]
pub struct TaskInput<'a> {
    pub id: &'a str,
    pub label: u32,
    pub example: usize,
    pub method: &'a str,
    pub k: usize,
    pub answers: Vec<Answer>,
}

/// A cell's scores, its tasks' outcomes, and how many tasks had no answer,
/// fewer or more answers than asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellOutcome {
    pub scores: CellScores,
    pub tasks: Vec<TaskResult>,
    pub unanswered: usize,
    pub fewer: usize,
    pub more: usize,
}

/// Lu et al.'s numbers for one cell.
pub fn score_cell(input: &CellInput) -> Result<CellOutcome> {
    let expected = input.answers_per_task;
    let (mut unanswered, mut fewer, mut more) = (0, 0, 0);
    let mut outcomes = Vec::new();
    let mut tasks = Vec::new();
    for task in &input.tasks {
        match task.answers.len() {
            0 => unanswered += 1,
            n if n < expected => fewer += 1,
            n if n > expected => more += 1,
            _ => {}
        }
        let correct = score::majority_correct(&task.answers, task.label);
        tasks.push(TaskResult { task: task.id.to_string(), correct, answers: task.answers.len() });
        outcomes.push(TaskOutcome { example: task.example, method: task.method.to_string(), k: task.k, correct });
    }
    let mut methods = score::score(&outcomes).map_err(|e| anyhow!("{}: {e}", input.cell))?;
    // The study's method order, not first appearance.
    methods.sort_by_key(|m| input.method_order.iter().position(|x| *x == m.method));
    Ok(CellOutcome { scores: CellScores { cell: input.cell.to_string(), methods }, tasks, unanswered, fewer, more })
}

pub fn score_study(study: &Study, answers: &Answers, options: ImportOptions) -> Result<Imported> {
    score_study_with(study, answers, options, score_cell)
}

/// [`score_study`], each cell scored by `score` (which may take it from a cache).
pub fn score_study_with(
    study: &Study,
    answers: &Answers,
    options: ImportOptions,
    mut score: impl FnMut(&CellInput) -> Result<CellOutcome>,
) -> Result<Imported> {
    let mut warnings = answers.warnings.clone();
    // Attention checks, per worker.
    let mut workers: BTreeMap<&str, WorkerChecks> = BTreeMap::new();
    for row in &answers.rows {
        let task = study.task(&row.task).ok_or_else(|| anyhow!("task {} vanished from the study", row.task))?;
        let entry = workers.entry(&row.worker).or_insert_with(|| WorkerChecks {
            worker: row.worker.clone(),
            answered: 0,
            checks_seen: 0,
            checks_failed: 0,
            excluded: false,
        });
        match task.kind {
            TaskKind::AttentionCheck => {
                entry.checks_seen += 1;
                entry.checks_failed += usize::from(row.answer != Answer::Label(task.label));
            }
            TaskKind::Salience { .. } => entry.answered += 1,
        }
    }
    let excluded: HashSet<&str> = if options.exclude_failed_checks {
        answers
            .rows
            .iter()
            .map(|r| r.worker.as_str())
            .filter(|w| workers.get(w).is_some_and(|c| c.checks_failed > 0))
            .collect()
    } else {
        HashSet::new()
    };
    for w in workers.values_mut() {
        w.excluded = excluded.contains(w.worker.as_str());
    }
    if !excluded.is_empty() {
        warnings.push(format!("{} workers failed an attention check: their answers are left out", excluded.len()));
    }

    let mut by_task: BTreeMap<&str, Vec<Answer>> = BTreeMap::new();
    for row in answers.rows.iter().filter(|r| !excluded.contains(r.worker.as_str())) {
        by_task.entry(&row.task).or_default().push(row.answer);
    }
    let mut inputs: BTreeMap<&str, CellInput> = BTreeMap::new();
    for task in study.salience_tasks() {
        let TaskKind::Salience { cell, example, method, k } = &task.kind else { continue };
        let input = inputs.entry(cell).or_insert_with(|| CellInput {
            cell,
            answers_per_task: study.answers_per_task,
            method_order: &study.methods,
            tasks: Vec::new(),
        });
        input.tasks.push(TaskInput {
            id: &task.id,
            label: task.label,
            example: *example,
            method,
            k: *k,
            answers: by_task.get(task.id.as_str()).cloned().unwrap_or_default(),
        });
    }
    let (mut none, mut fewer, mut more) = (0, 0, 0);
    let mut cells = Vec::new();
    let mut results: BTreeMap<String, TaskResult> = BTreeMap::new();
    for input in inputs.values() {
        let outcome = score(input)?;
        (none, fewer, more) = (none + outcome.unanswered, fewer + outcome.fewer, more + outcome.more);
        results.extend(outcome.tasks.into_iter().map(|t| (t.task.clone(), t)));
        cells.push(outcome.scores);
    }
    let expected = study.answers_per_task;
    if none > 0 {
        warnings.push(format!("{none} tasks have no answer: each counts as not recognised (A = 0)"));
    }
    if fewer > 0 {
        warnings.push(format!("{fewer} tasks have fewer than the {expected} answers asked for"));
    }
    if more > 0 {
        warnings.push(format!("{more} tasks have more than the {expected} answers asked for: all count"));
    }
    let results = study.salience_tasks().filter_map(|t| results.remove(&t.id)).collect();
    let answered: BTreeSet<&str> = answers.rows.iter().map(|r| r.worker.as_str()).collect();
    Ok(Imported {
        grid: study.grid.clone(),
        subset: study.subset,
        tasks: results,
        simulated: !answered.is_empty() && answered.iter().all(|w| w.starts_with(SIMULATED_PREFIX)),
        answers: answers.rows.len(),
        workers: workers.into_values().collect(),
        cells,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crowd::answers::AnswerRow;
    use crate::crowd::study::{Task, VERSION};

    /// Two examples (labels 1 and 0), methods a and b, k ∈ {5, 10}, 3 answers
    /// per task, one attention check.
    fn study() -> Study {
        let mut tasks = Vec::new();
        for (example, label) in [(0, 1), (1, 0)] {
            for method in ["a", "b"] {
                for k in [5, 10] {
                    tasks.push(Task {
                        id: format!("{method}{example}k{k}"),
                        kind: TaskKind::Salience { cell: "sst2/natural/m".into(), example, method: method.into(), k },
                        text: String::new(),
                        label,
                    });
                }
            }
        }
        tasks.push(Task { id: "check1".into(), kind: TaskKind::AttentionCheck, text: String::new(), label: 1 });
        Study {
            version: VERSION,
            grid: "g".into(),
            seed: 0,
            ks: vec![5, 10],
            answers_per_task: 3,
            labels: vec!["negative".into(), "positive".into()],
            methods: vec!["b".into(), "a".into()],
            subset: Default::default(),
            tasks,
            batches: Vec::new(),
        }
    }

    fn rows(list: &[(&str, &str, Answer)]) -> Answers {
        Answers {
            rows: list
                .iter()
                .enumerate()
                .map(|(i, &(w, t, a))| AnswerRow { worker: w.into(), task: t.into(), answer: a, line: i + 2 })
                .collect(),
            warnings: Vec::new(),
        }
    }

    #[test]
    fn scores_by_hand_with_checks_and_counts() {
        use Answer::{DontKnow, Label};
        // Method a: example 0 (label 1) right at 5 (2 of 3), wrong at 10 (tie) → flip;
        // example 1 (label 0) right at both → always right.
        // Method b: example 0 wrong at 5 (don't know wins), right at 10 → aided;
        // example 1: no answers at 5 (A = 0), right at 10 → aided.
        let answers = rows(&[
            ("w1", "a0k5", Label(1)),
            ("w2", "a0k5", Label(1)),
            ("w3", "a0k5", Label(0)),
            ("w1", "a0k10", Label(1)),
            ("w2", "a0k10", Label(0)),
            ("w3", "a0k10", DontKnow),
            ("w1", "a1k5", Label(0)),
            ("w2", "a1k5", Label(0)),
            ("w3", "a1k5", Label(0)),
            ("w1", "a1k10", Label(0)),
            ("w2", "a1k10", Label(0)),
            ("w3", "a1k10", Label(1)),
            ("w1", "b0k5", DontKnow),
            ("w2", "b0k5", DontKnow),
            ("w3", "b0k5", Label(1)),
            ("w1", "b0k10", Label(1)),
            ("w2", "b0k10", Label(1)),
            ("w3", "b0k10", Label(1)),
            ("w4", "b0k10", Label(0)),
            ("w1", "b1k10", Label(0)),
            ("w2", "b1k10", Label(0)),
            ("w3", "b1k10", Label(0)),
            ("w1", "check1", Label(1)),
            ("w3", "check1", Label(0)),
        ]);
        let imported = score_study(&study(), &answers, ImportOptions::default()).unwrap();
        assert!(!imported.simulated);
        let [cell] = &imported.cells[..] else { panic!("{imported:?}") };
        let [b, a] = &cell.methods[..] else { panic!("{cell:?}") };
        assert_eq!((a.method.as_str(), b.method.as_str()), ("a", "b"), "the study's order");
        assert_eq!(a.accuracy, [(5, 1.0), (10, 0.5)]);
        assert_eq!(b.accuracy, [(5, 0.0), (10, 1.0)]);
        // Column sums: k5 1.0, k10 1.5; total 2.5, K² = 4: w5 = 0.625, w10 = 2.5/6.
        let (w5, w10) = (2.5 / 4.0, 2.5 / 6.0);
        assert!((a.score.unwrap() - (w5 + 0.5 * w10)).abs() < 1e-12);
        assert!((b.score.unwrap() - w10).abs() < 1e-12);
        assert_eq!((a.flips, a.aids), (1, 0));
        assert_eq!((b.flips, b.aids), (0, 2));
        assert_eq!(
            imported.warnings,
            [
                "1 tasks have no answer: each counts as not recognised (A = 0)",
                "1 tasks have more than the 3 answers asked for: all count"
            ]
        );
        let w3 = imported.workers.iter().find(|w| w.worker == "w3").unwrap();
        assert_eq!((w3.answered, w3.checks_seen, w3.checks_failed, w3.excluded), (7, 1, 1, false));

        // Without w3, a's example 0 at k = 5 keeps its majority (1 vs 0 of 2 left: 2 for label 1).
        let strict = score_study(&study(), &answers, ImportOptions { exclude_failed_checks: true }).unwrap();
        assert!(strict.workers.iter().find(|w| w.worker == "w3").unwrap().excluded);
        let a = strict.cells[0].methods.iter().find(|m| m.method == "a").unwrap();
        // a0k10: w1 says 1, w2 says 0: a tie, still wrong; a1k10: 2 of 2 right.
        assert_eq!(a.accuracy, [(5, 1.0), (10, 0.5)]);
        assert!(strict.warnings.iter().any(|w| w.starts_with("1 workers failed")), "{:?}", strict.warnings);
    }

    #[test]
    fn simulated_only_when_every_worker_is() {
        let answers = rows(&[("simulated-1", "a0k5", Answer::Label(1)), ("simulated-2", "check1", Answer::Label(1))]);
        assert!(score_study(&study(), &answers, ImportOptions::default()).unwrap().simulated);
        let answers = rows(&[("simulated-1", "a0k5", Answer::Label(1)), ("ann", "a0k5", Answer::Label(1))]);
        assert!(!score_study(&study(), &answers, ImportOptions::default()).unwrap().simulated);
    }
}
