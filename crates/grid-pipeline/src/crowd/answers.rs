//! Reading a platform's answers file (CSV, `crowd::csv`): one row per answer
//! with the columns `worker`, `task` and `answer` (`worker_id` / `task_id`
//! also do; other columns are ignored). An answer is a label's index or name,
//! or "don't know" (`dont_know`, `unknown`, `?`).
//!
//! A row that cannot be an answer to this study (an unknown task id, an answer
//! that is no label, an empty field) is an error naming its line: such a file
//! is for another study or broken, and scoring it would mislead. A worker
//! answering one task twice is a warning; the first answer counts.

use std::collections::HashSet;
use std::path::Path;

use anyhow::{Context, Result, bail};

use super::score::Answer;
use super::study::Study;

#[derive(Debug, Clone, PartialEq)]
pub struct AnswerRow {
    pub worker: String,
    pub task: String,
    pub answer: Answer,
    /// 1-based line in the file (the header is line 1).
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Answers {
    pub rows: Vec<AnswerRow>,
    /// Things the study can still be scored with, counted.
    pub warnings: Vec<String>,
}

/// Reads and checks `path` against `study`.
pub fn read(path: &Path, study: &Study) -> Result<Answers> {
    let table = super::csv::TextTable::read(path)?;
    let column = |names: &[&str]| table.column(names);
    let workers = column(&["worker", "worker_id", "WorkerId"])?;
    let tasks = column(&["task", "task_id"])?;
    let answers = column(&["answer"])?;

    let mut out = Answers::default();
    let mut seen = HashSet::new();
    let mut repeated = 0usize;
    for (row, ((worker, task), answer)) in workers.into_iter().zip(tasks).zip(answers).enumerate() {
        let line = table.line(row);
        let at = || format!("{}:{line}", path.display());
        let field = |value: Option<String>, name: &str| -> Result<String> {
            value.ok_or_else(|| anyhow::anyhow!("{}: empty `{name}`", at()))
        };
        let (worker, task, answer) = (field(worker, "worker")?, field(task, "task")?, field(answer, "answer")?);
        if study.task(&task).is_none() {
            bail!("{}: task `{task}` is not in this study (answers for another export?)", at());
        }
        let answer = parse_answer(&answer, &study.labels).with_context(at)?;
        if !seen.insert((worker.clone(), task.clone())) {
            repeated += 1;
            continue;
        }
        out.rows.push(AnswerRow { worker, task, answer, line });
    }
    if repeated > 0 {
        out.warnings.push(format!("{repeated} repeated answers (same worker, same task): the first of each counts"));
    }
    Ok(out)
}

/// A label's index or name (any case), or one of the ways to say "don't know".
pub fn parse_answer(text: &str, labels: &[String]) -> Result<Answer> {
    let t = text.trim();
    let lower = t.to_lowercase().replace('’', "'");
    if ["dont_know", "don't know", "dont know", "unknown", "?", "i don't know"].contains(&lower.as_str()) {
        return Ok(Answer::DontKnow);
    }
    if let Ok(index) = t.parse::<u32>()
        && (index as usize) < labels.len()
    {
        return Ok(Answer::Label(index));
    }
    if let Some(index) = labels.iter().position(|l| l.to_lowercase() == lower) {
        return Ok(Answer::Label(index as u32));
    }
    bail!(
        "answer `{t}` is neither a label ({}, or their indices 0–{}) nor \"dont_know\"",
        labels.join(", "),
        labels.len() - 1
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crowd::study::{Task, TaskKind, VERSION};

    pub(crate) fn study() -> Study {
        let task = |id: &str, label| Task {
            id: id.into(),
            kind: TaskKind::Salience { cell: "c".into(), example: 0, method: "m".into(), k: 5 },
            text: "…".into(),
            label,
        };
        Study {
            version: VERSION,
            grid: "g".into(),
            seed: 0,
            ks: vec![5],
            answers_per_task: 2,
            labels: vec!["negative".into(), "positive".into()],
            methods: vec!["m".into()],
            subset: Default::default(),
            tasks: vec![task("t1", 0), task("t2", 1)],
            batches: vec![vec!["t1".into(), "t2".into()]],
        }
    }

    fn read_text(text: &str) -> Result<Answers> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("answers.csv");
        std::fs::write(&path, text).unwrap();
        read(&path, &study()).map_err(|e| anyhow::anyhow!("{e:#}"))
    }

    #[test]
    fn labels_by_index_or_name_and_dont_know() {
        let a = read_text("worker,task,answer,seconds\nw1,t1,0,3\nw1,t2,Positive,2\nw2,t1,dont_know,1\nw2,t1,1,1\n")
            .unwrap();
        let answers: Vec<Answer> = a.rows.iter().map(|r| r.answer).collect();
        assert_eq!(answers, [Answer::Label(0), Answer::Label(1), Answer::DontKnow]);
        assert_eq!(a.rows[2].line, 4);
        assert_eq!(a.warnings.len(), 1, "{:?}", a.warnings);
        assert!(a.warnings[0].starts_with("1 repeated"), "{:?}", a.warnings);
    }

    #[test]
    fn rows_that_cannot_be_answers_name_their_line() {
        let e = read_text("worker,task,answer\nw1,t1,0\nw1,t9,0\n").unwrap_err().to_string();
        assert!(e.contains("answers.csv:3") && e.contains("`t9` is not in this study"), "{e}");
        let e = read_text("worker,task,answer\nw1,t1,maybe\n").unwrap_err().to_string();
        assert!(e.contains("answers.csv:2") && e.contains("`maybe`") && e.contains("negative, positive"), "{e}");
        let e = read_text("worker,task,answer\nw1,,0\n").unwrap_err().to_string();
        assert!(e.contains("answers.csv:2") && e.contains("empty `task`"), "{e}");
        let e = read_text("worker,answer\nw1,0\n").unwrap_err().to_string();
        assert!(e.contains("no `task` column") && e.contains("worker, answer"), "{e}");
        let e = read_text("worker,task,answer\nw1,t1,2\n").unwrap_err().to_string();
        assert!(e.contains("`2`"), "{e}");
    }
}
