//! `corpus`: a dataset source → normalised `train/validation/test.jsonl`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::io::{read_jsonl, write_json, write_jsonl};
use crate::spec::{DatasetSource, DatasetSpec, Positive};
use grid_core::data::table::{TableColumns, TableFormat, read_split};
use grid_core::data::{Corpus, Example, generated};

/// Data files resolved against the data root.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedFiles {
    pub train: PathBuf,
    pub validation: Option<PathBuf>,
    pub test: PathBuf,
}

pub const SPLITS: [&str; 3] = ["train", "validation", "test"];

/// Fixed so a held-out validation split is a pure function of the data.
const HOLDOUT_SEED: u64 = 0x005E_ED0F_DA7A;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CorpusStats {
    pub train: usize,
    pub validation: usize,
    pub test: usize,
    pub validation_held_out_from_train: bool,
    pub labels: u32,
}

pub fn run(dataset: &DatasetSpec, files: Option<&ResolvedFiles>, out: &Path) -> Result<()> {
    let (corpus, held_out) = build(dataset, files)?;
    write_jsonl(&out.join("train.jsonl"), &corpus.train)?;
    write_jsonl(&out.join("validation.jsonl"), &corpus.validation)?;
    write_jsonl(&out.join("test.jsonl"), &corpus.test)?;
    write_json(
        &out.join("stats.json"),
        &CorpusStats {
            train: corpus.train.len(),
            validation: corpus.validation.len(),
            test: corpus.test.len(),
            validation_held_out_from_train: held_out,
            labels: corpus.num_labels(),
        },
    )
}

/// The dataset's three splits as the step writes them, and whether validation
/// was held out from train.
pub fn build(dataset: &DatasetSpec, files: Option<&ResolvedFiles>) -> Result<(Corpus, bool)> {
    let limit = |l: Option<crate::spec::Positive>| l.map(|v| v.get());
    let mut held_out = false;
    let corpus = match (&dataset.source, files) {
        (DatasetSource::Generated(options), _) => {
            let Corpus { train, validation, test } = generated::generate(options);
            let words = dataset.limits.max_words;
            Corpus {
                train: within_words(train, words),
                validation: within_words(validation, words),
                test: within_words(test, words),
            }
        }
        (DatasetSource::Files { format, text_column, label_column, label_names, classes, .. }, Some(files)) => {
            let columns = TableColumns { text: text_column, label: label_column };
            let read = |path: &Path, n: Option<usize>| -> Result<Vec<Example>> {
                let format = match format {
                    Some(f) => *f,
                    None => TableFormat::from_extension(path).with_context(|| {
                        format!(
                            "{}: cannot tell the format from the extension; set `format` on dataset `{}`",
                            path.display(),
                            dataset.name
                        )
                    })?,
                };
                // Rows are counted after the length filter.
                let rows = if dataset.limits.max_words.is_some() { None } else { n };
                let examples = read_split(path, format, &columns, label_names.as_deref(), rows)?;
                // Caught here, before any model trains, not at the first shortcut.
                if let Some((row, e)) = examples.iter().enumerate().find(|(_, e)| e.label as usize >= *classes) {
                    bail!(
                        "{}: row {}: label {} is outside dataset `{}`'s {classes} classes (0 to {}); \
                         declare them with `classes = N` or `label_names`",
                        path.display(),
                        row + 1,
                        e.label,
                        dataset.name,
                        classes - 1
                    );
                }
                Ok(truncate(within_words(examples, dataset.limits.max_words), n))
            };
            let mut train = read(&files.train, None)?;
            let validation = match &files.validation {
                Some(path) => read(path, limit(dataset.limits.validation))?,
                None => {
                    held_out = true;
                    let mut rng = ChaCha8Rng::seed_from_u64(HOLDOUT_SEED);
                    train.shuffle(&mut rng);
                    let n = ((train.len() as f64) * dataset.validation_share.get()).round() as usize;
                    train.drain(..n.min(train.len())).collect()
                }
            };
            let test = read(&files.test, limit(dataset.limits.test))?;
            Corpus { train, validation, test }
        }
        (DatasetSource::Files { .. }, None) => bail!("dataset `{}`: files were not resolved", dataset.name),
    };
    // Limits apply after any hold-out, so validation is carved from the whole train split.
    let corpus = Corpus {
        train: truncate(corpus.train, limit(dataset.limits.train)),
        validation: truncate(corpus.validation, limit(dataset.limits.validation)),
        test: truncate(corpus.test, limit(dataset.limits.test)),
    };
    for (name, split) in [("train", &corpus.train), ("validation", &corpus.validation), ("test", &corpus.test)] {
        if split.is_empty() {
            bail!("dataset `{}`: the {name} split is empty", dataset.name);
        }
    }
    Ok((corpus, held_out))
}

/// The examples of at most `max_words` words, in their order.
fn within_words(examples: Vec<Example>, max_words: Option<Positive>) -> Vec<Example> {
    match max_words {
        None => examples,
        Some(max) => examples.into_iter().filter(|e| e.text.split_whitespace().count() <= max.get()).collect(),
    }
}

fn truncate(mut v: Vec<Example>, limit: Option<usize>) -> Vec<Example> {
    if let Some(l) = limit {
        v.truncate(l);
    }
    v
}

/// Reads a corpus payload back.
pub fn load(dir: &Path) -> Result<Corpus> {
    Ok(Corpus {
        train: read_jsonl(&dir.join("train.jsonl"))?,
        validation: read_jsonl(&dir.join("validation.jsonl"))?,
        test: read_jsonl(&dir.join("test.jsonl"))?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Grid;

    /// `limits.max_words` keeps the texts of at most that many words, from
    /// every split, before the hold-out and the row limits (which count the
    /// texts kept); the row a bad label sits on is still the file's own.
    #[test]
    fn max_words_keeps_the_short_texts_before_the_row_limits() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, rows: &[(&str, u32)]| {
            let lines: Vec<String> = rows
                .iter()
                .map(|(text, label)| serde_json::json!({ "text": text, "label": label }).to_string())
                .collect();
            std::fs::write(dir.path().join(name), lines.join("\n") + "\n").unwrap();
            dir.path().join(name)
        };
        let long = "one two three four five six";
        let train = write("train.jsonl", &[(long, 0), ("a b", 1), (long, 1), ("c d e", 0), ("f", 1), ("g h", 0)]);
        let test = write("test.jsonl", &[(long, 0), ("x y", 1), ("z", 0)]);
        let grid = |limits: &str| {
            let text = format!(
                "name = \"g\"\n[[datasets]]\nname = \"d\"\ntrain = \"train.jsonl\"\ntest = \"test.jsonl\"\n\
                 validation_share = 0.25\nlimits = {{ {limits} }}\n[[models]]\nname = \"m\"\narchitecture = \"bilstm\"\n\
                 [attribution]\nmethods = [\"random\"]\n"
            );
            Grid::parse(&text, &dir.path().join("g.toml")).unwrap().datasets.remove(0)
        };
        let files = ResolvedFiles { train, validation: None, test };
        let texts = |split: &[Example]| split.iter().map(|e| e.text.clone()).collect::<Vec<_>>();
        let (corpus, held_out) = build(&grid("max_words = 3, test = 1"), Some(&files)).unwrap();
        assert!(held_out);
        // Four short training texts: one held out, three kept.
        assert_eq!(corpus.train.len() + corpus.validation.len(), 4);
        assert_eq!(corpus.validation.len(), 1);
        for e in corpus.train.iter().chain(&corpus.validation) {
            assert!(e.text.split_whitespace().count() <= 3, "{}", e.text);
        }
        assert_eq!(texts(&corpus.test), ["x y"], "the row limit counts the texts kept");
        // Without it, every text, as before.
        let (all, _) = build(&grid("test = 1"), Some(&files)).unwrap();
        assert_eq!((all.train.len() + all.validation.len(), texts(&all.test)), (6, vec![long.to_string()]));
    }
}
