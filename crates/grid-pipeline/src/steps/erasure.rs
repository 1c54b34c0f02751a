//! `erasure`: hard and soft erasure of one cell's attributed examples
//! (Zhao & Aletras 2023; PROTOCOL §3). The formulas and the forward passes
//! live in [`grid_methods::metrics::erasure`]; this file loads the model, pairs the
//! attributed examples with their encodings, and writes one record per
//! example and the summary.

use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail, ensure};
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;

use super::attribute::{self, AttributedExample, Prepared};
use crate::context::StepContext;
use crate::io::{read_jsonl, write_json, write_jsonl};
// The passes and what they record live with the erasure metrics.
use grid_core::model::checkpoint;
use grid_core::model::shapes::Shaped;
pub use grid_methods::metrics::erasure::{ErasedExample, ErasureInput, ErasureSummary, Settings, erase, summarise};

pub const FILE: &str = "erasure.jsonl";
pub const SUMMARY: &str = "summary.json";

#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The attribute step's options, to re-encode the same examples.
    pub attribution: attribute::Options,
    pub settings: Settings,
    /// Sequences per forward pass: a performance knob, not part of the key.
    pub batch_size: usize,
}

/// Inputs: shortcut model, synth, attribution.
pub fn run(options: &Options, ctx: &StepContext, out: &Path) -> Result<()> {
    // Inference only: the autodiff backend's inner backend skips the tape.
    grid_core::with_autodiff_backend!(ctx.compute, |B, device| run_on::<<B as AutodiffBackend>::InnerBackend>(
        options, ctx, out, &device
    ))
}

fn run_on<B: Backend>(options: &Options, ctx: &StepContext, out: &Path, device: &B::Device) -> Result<()> {
    let started = Instant::now();
    let [model_dir, synth_dir, attribution_dir] = input_folders(ctx)?;
    let checkpoint = checkpoint::load::<B>(model_dir, device)
        .with_context(|| format!("loading the model from {}", model_dir.display()))?;
    let test = super::synth::load_test(synth_dir, options.attribution.test_set)?;
    let attributed: Vec<AttributedExample> = read_jsonl(&attribution_dir.join(attribute::FILE))?;
    // The attributed examples themselves: no sampling (nor, for a subset,
    // predicting the whole test set) again.
    let (prepared, _) =
        attribute::prepare_indices(&checkpoint, &test, attributed.iter().map(|a| a.index), &options.attribution);
    let inputs = join(&prepared, &attributed)?;
    ctx.progress.set_length(inputs.len() as u64);
    let pad = checkpoint.encoder.pad_id();
    let model = Shaped::new(&checkpoint.model, ctx.compute.buckets);
    let mut erased = Vec::with_capacity(inputs.len());
    // Chunks of examples only to report progress; results do not depend on them.
    for chunk in inputs.chunks(options.batch_size.max(1)) {
        erased.extend(erase(&model, chunk, pad, &options.settings, options.batch_size, device)?);
        ctx.progress.inc(chunk.len() as u64);
    }
    // JSON has no NaN: it would be cached as `null`, read as "undefined".
    if let Some(bad) = erased.iter().find(|e| !e.is_finite()) {
        anyhow::bail!(
            "erasure of test example {} gave a non-finite probability or score ({bad:?}): the model's \
             outputs overflow; check its training log",
            bad.index
        );
    }
    write_jsonl(&out.join(FILE), &erased)?;
    let seconds = started.elapsed().as_secs_f64();
    write_json(&out.join(SUMMARY), &summarise(&options.settings, &erased, seconds))
}

fn input_folders<'a>(ctx: &'a StepContext) -> Result<[&'a Path; 3]> {
    match ctx.inputs.as_slice() {
        [model, synth, attribution] => Ok([model, synth, attribution]),
        other => bail!("erasure needs 3 inputs (model, synth, attribution), got {}", other.len()),
    }
}

/// Pairs every attributed example, in the attribution's order, with its encoding
/// from `attribute::prepare_indices`; the two must agree token for token.
pub fn join<'a>(prepared: &'a [Prepared], attributed: &'a [AttributedExample]) -> Result<Vec<ErasureInput<'a>>> {
    let by_index: HashMap<usize, &Prepared> = prepared.iter().map(|p| (p.record.index, p)).collect();
    attributed
        .iter()
        .map(|a| {
            let p = by_index.get(&a.index).ok_or_else(|| {
                anyhow!(
                    "attributed example {} is not among the re-encoded test examples; \
                     were the attribution options the same?",
                    a.index
                )
            })?;
            ensure!(
                p.encoded.word_of_token == a.word_of_token && a.scores.len() == p.encoded.ids.len(),
                "example {}: the attribution has {} tokens and {} scores, the re-encoding {} tokens",
                a.index,
                a.word_of_token.len(),
                a.scores.len(),
                p.encoded.ids.len()
            );
            Ok(ErasureInput {
                index: a.index,
                ids: &p.encoded.ids,
                special: a.word_of_token.iter().map(Option::is_none).collect(),
                scores: &a.scores,
                predicted: a.predicted,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use grid_core::text::Encoded;

    #[test]
    fn joining_finds_the_encoding_by_index_and_refuses_a_missing_one() {
        let encoded = Encoded { ids: vec![2, 5, 3], word_of_token: vec![None, Some(0), None] };
        let record = AttributedExample {
            index: 7,
            tokens: vec![],
            word_of_token: encoded.word_of_token.clone(),
            ground_truth: vec![1],
            distractors: vec![],
            label: 1,
            predicted: 1,
            scores: vec![0.1, 0.2, 0.3],
            completeness_gap: None,
        };
        let prepared = vec![Prepared { encoded, record: record.clone() }];
        let joined = join(&prepared, std::slice::from_ref(&record)).unwrap();
        assert_eq!(joined[0].ids, &[2, 5, 3]);
        assert_eq!(joined[0].special, vec![true, false, true]);
        assert_eq!((joined[0].index, joined[0].predicted), (7, 1));
        let missing = AttributedExample { index: 8, ..record.clone() };
        let err = join(&prepared, &[missing]).unwrap_err();
        assert!(err.to_string().contains("attributed example 8"), "{err}");
        let shorter = AttributedExample { scores: vec![0.1], ..record };
        assert!(join(&prepared, &[shorter]).is_err());
    }
}
