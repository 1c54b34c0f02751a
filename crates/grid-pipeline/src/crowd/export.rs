//! `grid crowd export`: the grid's cached attributions become a study —
//! `study.json` (what import scores against), `questionnaire.html` (for people,
//! no server) and `tasks.csv` (for a crowdsourcing platform's import).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};

use super::html;
use super::study::{self, ExplainedExample, ExportOptions, Study, TaskKind};
use crate::dag::Plan;
use crate::io::read_jsonl;
use crate::step_kind::StepKind;
use crate::steps::attribute::{self, AttributedExample};
use grid_cache::Cache;
use grid_methods::metrics::{WordAggregation, words};

pub const TASKS_CSV: &str = "tasks.csv";

/// Which cached attributions to read.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Model names (`[[models]] name`); all when empty.
    pub models: Vec<String>,
    /// Method configs; the grid's own when empty.
    pub methods: Vec<String>,
}

/// `attribute/<dataset>/<regime>/<model>/<method>` → (cell, model, method).
fn parse_label(label: &str) -> Option<(String, &str, &str)> {
    let parts: Vec<&str> = label.split('/').collect();
    match parts[..] {
        ["attribute", dataset, regime, model, method] => Some((format!("{dataset}/{regime}/{model}"), model, method)),
        _ => None,
    }
}

/// Every selected cell's examples, word by word, with each method's word
/// scores (summed over a word's tokens), in `methods` order. Each selected
/// attribute step must be in the cache, checked.
pub fn explained_examples(
    plan: &Plan,
    cache: &Cache,
    selection: &Selection,
) -> Result<(Vec<String>, Vec<ExplainedExample>)> {
    // cell → method → attributions
    let mut cells: BTreeMap<String, BTreeMap<String, Vec<AttributedExample>>> = BTreeMap::new();
    let mut methods: Vec<String> = Vec::new();
    for step in plan.steps.iter().filter(|s| s.kind == StepKind::Attribute) {
        let Some((cell, model, method)) = parse_label(&step.label) else { continue };
        if !selection.models.is_empty() && !selection.models.iter().any(|m| m == model) {
            continue;
        }
        if !selection.methods.is_empty() && !selection.methods.iter().any(|m| m == method) {
            continue;
        }
        if cache.lookup(StepKind::Attribute, &step.key)?.is_none() {
            bail!("{} is not in the cache (or fails its checksum): run `grid run` first", step.label);
        }
        let path = cache.step_dir(StepKind::Attribute, &step.key).join(attribute::FILE);
        let examples: Vec<AttributedExample> = read_jsonl(&path).with_context(|| step.label.clone())?;
        if !methods.iter().any(|m| m == method) {
            methods.push(method.to_string());
        }
        cells.entry(cell).or_default().insert(method.to_string(), examples);
    }
    for wanted in selection.models.iter().chain(&selection.methods) {
        let found = cells.keys().any(|c| c.rsplit('/').next() == Some(wanted.as_str())) || methods.contains(wanted);
        ensure!(found, "the grid plans no attribution for `{wanted}`");
    }
    ensure!(!cells.is_empty(), "the grid plans no attribution step");
    if !selection.methods.is_empty() {
        methods = selection.methods.clone();
    }

    let mut explained = Vec::new();
    for (cell, by_method) in cells {
        let lists: Vec<&Vec<AttributedExample>> = methods
            .iter()
            .map(|m| by_method.get(m).with_context(|| format!("{cell} has no attributions of `{m}`")))
            .collect::<Result<_>>()?;
        let by_index: Vec<BTreeMap<usize, &AttributedExample>> =
            lists.iter().map(|l| l.iter().map(|e| (e.index, e)).collect()).collect();
        for (&index, &first) in &by_index[0] {
            let Some(row) = by_index.iter().map(|m| m.get(&index).copied()).collect::<Option<Vec<_>>>() else {
                continue;
            };
            if row.iter().any(|e| e.word_of_token != first.word_of_token) {
                continue;
            }
            let (words, rankable) = words_of(first);
            let scores: Vec<Vec<f32>> = row
                .iter()
                .map(|e| words::aggregate(&e.scores, &e.word_of_token, &[], WordAggregation::Sum).scores)
                .collect();
            explained.push(ExplainedExample { cell: cell.clone(), index, label: first.label, words, rankable, scores });
        }
    }
    Ok((methods, explained))
}

/// The words of an example as its tokens spell them (word pieces joined,
/// subword markers dropped), in the order `words::aggregate` scores them, and
/// whether each can be ranked (not only punctuation).
pub fn words_of(example: &AttributedExample) -> (Vec<String>, Vec<bool>) {
    let mut order: Vec<usize> = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut rankable: Vec<bool> = Vec::new();
    for (token, word) in example.tokens.iter().zip(&example.word_of_token) {
        let Some(word) = *word else { continue };
        let piece = token.trim_start_matches("##").trim_start_matches(['Ġ', '▁']);
        let punctuation = crate::steps::agreement::is_punctuation(token);
        if order.last() == Some(&word) {
            words.last_mut().expect("a word per entry").push_str(piece);
            *rankable.last_mut().expect("a flag per word") |= !punctuation;
        } else {
            order.push(word);
            words.push(piece.to_string());
            rankable.push(!punctuation);
        }
    }
    (words, rankable)
}

/// Writes `study.json`, `questionnaire.html` and `tasks.csv` into `dir`.
pub fn write(study: &Study, dir: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let files = [
        (study::FILE, serde_json::to_string_pretty(study)?),
        (html::FILE, html::render(study)),
        (TASKS_CSV, platform_csv(study)),
    ];
    let mut written = Vec::new();
    for (name, text) in files {
        let path = dir.join(name);
        let tmp = dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

/// Reads a study written by [`write`] (`path` is the file or its folder).
pub fn read_study(path: &Path) -> Result<Study> {
    let file = if path.is_dir() { path.join(study::FILE) } else { path.to_path_buf() };
    let text = std::fs::read_to_string(&file)
        .with_context(|| format!("{}: cannot read the study (run `grid crowd export` first)", file.display()))?;
    let study: Study = serde_json::from_str(&text).with_context(|| format!("{}: not a study", file.display()))?;
    ensure!(
        study.version == study::VERSION,
        "{}: a study of version {}, this grid reads version {}: export it again",
        file.display(),
        study.version,
        study::VERSION
    );
    Ok(study)
}

/// One row per task of each batch, in the layout platforms import: the
/// batch, the task's position in it, its id and text, the options, and for an
/// attention check the answer it asks for.
pub fn platform_csv(study: &Study) -> String {
    let mut out = "batch,position,task_id,text".to_string();
    for i in 1..=study.labels.len() {
        let _ = write!(out, ",option_{i}");
    }
    out.push_str(",option_dont_know,is_check,check_answer\n");
    for (b, batch) in study.batches.iter().enumerate() {
        for (position, id) in batch.iter().enumerate() {
            let Some(task) = study.task(id) else { continue };
            let check = matches!(task.kind, TaskKind::AttentionCheck);
            let _ = write!(out, "{b},{position},{},{}", field(id), field(&task.text));
            for label in &study.labels {
                let _ = write!(out, ",{}", field(label));
            }
            let answer = if check { study.labels[task.label as usize].as_str() } else { "" };
            let _ = writeln!(out, ",I don't know,{check},{}", field(answer));
        }
    }
    out
}

fn field(text: &str) -> String {
    if text.contains([',', '"', '\n']) { format!("\"{}\"", text.replace('"', "\"\"")) } else { text.to_string() }
}

/// The label names of a cell's dataset: `label_names` of the grid file, else
/// `class 0` … `class C−1`.
pub fn label_names(grid: &crate::spec::Grid, cells: &[String], given: &[String]) -> Result<Vec<String>> {
    if !given.is_empty() {
        return Ok(given.to_vec());
    }
    let mut names: Option<Vec<String>> = None;
    for cell in cells {
        let dataset = cell.split('/').next().unwrap_or_default();
        let Some(spec) = grid.datasets.iter().find(|d| d.name == dataset) else { continue };
        let these = match &spec.source {
            crate::spec::DatasetSource::Files { label_names: Some(n), .. } => n.clone(),
            crate::spec::DatasetSource::Files { classes, .. } => (0..*classes).map(|c| format!("class {c}")).collect(),
            crate::spec::DatasetSource::Generated(_) => vec!["negative".into(), "positive".into()],
        };
        match &names {
            Some(n) if *n != these => bail!(
                "the cells' datasets name their labels differently: export one dataset at a time (--models, or --labels)"
            ),
            _ => names = Some(these),
        }
    }
    names.context("no dataset of the selected cells is in the grid")
}

pub fn options_for(
    grid: &crate::spec::Grid,
    methods: Vec<String>,
    labels: Vec<String>,
    o: &CliExport,
) -> ExportOptions {
    ExportOptions {
        grid: grid.name.clone(),
        methods,
        ks: o.ks.clone(),
        examples: o.examples,
        answers_per_task: o.answers,
        labels,
        checks: o.checks,
        batch_size: o.batch_size,
        seed: o.seed,
        subset: grid.attribution.subset,
    }
}

/// What `grid crowd export` is asked for beyond the selection.
#[derive(Debug, Clone)]
pub struct CliExport {
    pub ks: Vec<usize>,
    pub examples: usize,
    pub answers: usize,
    pub checks: usize,
    pub batch_size: usize,
    pub seed: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example(tokens: &[&str], words: &[Option<usize>]) -> AttributedExample {
        AttributedExample {
            index: 0,
            tokens: tokens.iter().map(|t| t.to_string()).collect(),
            word_of_token: words.to_vec(),
            ground_truth: vec![],
            distractors: vec![],
            label: 1,
            predicted: 1,
            scores: vec![0.0; tokens.len()],
            completeness_gap: None,
        }
    }

    #[test]
    fn word_pieces_join_and_punctuation_is_not_rankable() {
        let e = example(
            &["[CLS]", "un", "##believ", "##able", "film", ",", "really", "[SEP]"],
            &[None, Some(0), Some(0), Some(0), Some(1), Some(2), Some(3), None],
        );
        let (words, rankable) = words_of(&e);
        assert_eq!(words, ["unbelievable", "film", ",", "really"]);
        assert_eq!(rankable, [true, true, false, true]);
        let e = example(&["Ġgreat", "Ġmo", "vie", "!"], &[Some(0), Some(1), Some(1), Some(2)]);
        assert_eq!(words_of(&e).0, ["great", "movie", "!"]);
    }

    #[test]
    fn the_platform_csv_quotes_and_marks_checks() {
        let explained = vec![ExplainedExample {
            cell: "c".into(),
            index: 3,
            label: 0,
            words: vec!["bad, \"really\"".into(), "film".into()],
            rankable: vec![true, true],
            scores: vec![vec![1.0, 0.0]],
        }];
        let options = ExportOptions {
            grid: "g".into(),
            methods: vec!["m".into()],
            ks: vec![1],
            examples: 1,
            answers_per_task: 1,
            labels: vec!["negative".into(), "positive".into()],
            checks: 1,
            batch_size: 100,
            seed: 0,
            subset: Default::default(),
        };
        let study = study::build(&explained, &options).unwrap();
        let csv = platform_csv(&study);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], "batch,position,task_id,text,option_1,option_2,option_dont_know,is_check,check_answer");
        assert!(lines[1].ends_with(",\"bad, \"\"really\"\" …\",negative,positive,I don't know,false,"), "{csv}");
        assert!(lines[2].contains("check0") && lines[2].ends_with(",true,negative"), "{csv}");
    }
}
