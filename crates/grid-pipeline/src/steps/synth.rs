//! `synth`: corpus + shortcut rule → mixed train/validation, the synthetic test
//! set and its `flip` variant, with ground-truth word positions.

use std::path::Path;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::io::{read_jsonl, write_json, write_jsonl};
use crate::spec::TestSet;
use grid_core::data::Example;
use grid_methods::shortcut::{LeftOut, ShortcutOptions, SyntheticExample, synthesize};

pub const SUMMARY: &str = "summary.json";

/// Split sizes after synthesis, and what it could not use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SynthSummary {
    pub train: usize,
    pub validation: usize,
    pub test: usize,
    pub left_out: LeftOut,
}

pub fn run(options: &ShortcutOptions, corpus_dir: &Path, out: &Path) -> Result<()> {
    let corpus = super::corpus::load(corpus_dir)?;
    let data = synthesize(&corpus, options)?;
    write_jsonl(&out.join("train.jsonl"), &data.train)?;
    write_jsonl(&out.join("validation.jsonl"), &data.validation)?;
    write_jsonl(&out.join("test.jsonl"), &data.test)?;
    write_jsonl(&out.join("test_flip.jsonl"), &data.test_flip)?;
    write_json(
        &out.join(SUMMARY),
        &SynthSummary {
            train: data.train.len(),
            validation: data.validation.len(),
            test: data.test.len(),
            left_out: data.left_out,
        },
    )
}

/// The test examples attribution explains: from a synth step's folder the
/// synthetic test set or its flip variant; from a corpus step's folder (a
/// natural grid) the dataset's own test set, with nothing planted.
pub fn load_test(dir: &Path, set: TestSet) -> Result<Vec<SyntheticExample>> {
    Ok(match set {
        TestSet::Synthetic => read_jsonl(&dir.join("test.jsonl"))?,
        TestSet::Flip => read_jsonl(&dir.join("test_flip.jsonl"))?,
        TestSet::Original => {
            let test: Vec<Example> = read_jsonl(&dir.join("test.jsonl"))?;
            test.into_iter().map(SyntheticExample::unmodified).collect()
        }
    })
}
