//! `synth`: corpus + shortcut rule → mixed train/validation, the synthetic test
//! set and its `flip` variant, with ground-truth word positions.

use std::path::Path;

use anyhow::Result;

use super::io::{read_jsonl, write_jsonl};
use crate::shortcut::{ShortcutOptions, SyntheticExample, synthesize};

pub fn run(options: &ShortcutOptions, corpus_dir: &Path, out: &Path) -> Result<()> {
    let corpus = super::corpus::load(corpus_dir)?;
    let data = synthesize(&corpus, options)?;
    write_jsonl(&out.join("train.jsonl"), &data.train)?;
    write_jsonl(&out.join("validation.jsonl"), &data.validation)?;
    write_jsonl(&out.join("test.jsonl"), &data.test)?;
    write_jsonl(&out.join("test_flip.jsonl"), &data.test_flip)?;
    Ok(())
}

/// The synthetic test set (`flip = false`) or its flip variant.
pub fn load_test(dir: &Path, flip: bool) -> Result<Vec<SyntheticExample>> {
    read_jsonl(&dir.join(if flip { "test_flip.jsonl" } else { "test.jsonl" }))
}
