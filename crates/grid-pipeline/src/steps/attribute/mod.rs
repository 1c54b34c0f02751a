//! `attribute`: salience of one method for a seeded sample of the synthetic test
//! set, with the ground truth mapped from word positions to token positions.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use burn::tensor::backend::AutodiffBackend;
use rand::SeedableRng;
use rand::seq::index;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::context::StepContext;
use crate::io::{write_json, write_jsonl};
use crate::spec::{Subset, TestSet};
use burn::prelude::Backend;
use grid_core::buckets::Buckets;
use grid_core::data::words;
use grid_core::model::checkpoint::{self, Checkpoint};
use grid_core::model::shapes::{ShapeLog, Shaped};
use grid_core::text::Encoded;
use grid_methods::salience::{self, Examples, Method, Settings, Vocabulary};
use grid_methods::shortcut::{GroundTruth, SyntheticExample};
use progress::{Progress, Resumed};

pub mod progress;

pub const FILE: &str = "attributions.jsonl";

#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    pub method: Method,
    pub sample: usize,
    pub test_set: TestSet,
    /// Which examples the sample is drawn from, by the model's prediction.
    pub subset: Subset,
    pub seed: u64,
    pub batch_size: usize,
    pub max_length: usize,
    /// Performance knobs, not part of the step's key.
    pub internal_batch_size: usize,
    pub perturbations_per_eval: usize,
}

/// One explained example.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttributedExample {
    /// Index into the synthetic test set.
    pub index: usize,
    pub tokens: Vec<String>,
    /// Word index per token; `None` for special tokens, which are never ranked.
    pub word_of_token: Vec<Option<usize>>,
    /// Token positions of the shortcut tokens (G).
    pub ground_truth: Vec<usize>,
    /// CN / NC: token positions of the non-correlating articles.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub distractors: Vec<usize>,
    pub label: u32,
    pub predicted: u32,
    pub scores: Vec<f32>,
    /// IG and DeepLift: `Σ_i s_i − (f(x) − f(b))`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completeness_gap: Option<f32>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AttributionSummary {
    pub method: String,
    pub examples: usize,
    /// Examples left out because truncation to `max_length` cut a shortcut
    /// token (for a region such as the articles: cut all of it).
    pub dropped_truncated: usize,
    /// Examples an earlier, stopped attempt had explained (see `progress`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub resumed_examples: usize,
    /// All attempts together.
    pub seconds: f64,
    pub examples_per_second: f64,
    /// Mean and largest `|completeness gap|` over examples, for IG and DeepLift.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_abs_completeness_gap: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_abs_completeness_gap: Option<f64>,
    /// The distinct `[rows, time]` shapes sent through the model.
    #[serde(default)]
    pub shapes: Vec<[usize; 2]>,
}

/// The sampled indices, sorted: a pure function of (seed, n, sample).
pub fn sample_indices(n: usize, sample: usize, seed: u64) -> Vec<usize> {
    if sample >= n {
        return (0..n).collect();
    }
    let mut picked = index::sample(&mut ChaCha8Rng::seed_from_u64(seed), n, sample).into_vec();
    picked.sort_unstable();
    picked
}

/// Inputs: the model, and the step holding its test examples (synth, or corpus
/// on a natural grid).
pub fn run(options: &Options, ctx: &StepContext, out: &Path) -> Result<()> {
    grid_core::with_autodiff_backend!(ctx.compute, |B, device| run_on::<B>(options, ctx, out, &device))
}

fn run_on<B: AutodiffBackend>(options: &Options, ctx: &StepContext, out: &Path, device: &B::Device) -> Result<()> {
    let started = Instant::now();
    let mut checkpoint = checkpoint::load::<B>(&ctx.inputs[0], device)?;
    checkpoint.model = checkpoint.model.frozen();
    let test = super::synth::load_test(&ctx.inputs[1], options.test_set)?;
    let (mut examples, dropped_truncated) = prepare(&checkpoint, &test, options, ctx.compute.buckets, device);
    ctx.progress.set_length(examples.len() as u64);
    let chunks = chunk_order(&examples, options.batch_size);
    let mut journal =
        ctx.snapshots.as_ref().map(|s| Progress::new(s.dir.clone(), s.every, progress::inputs_digest(&ctx.inputs)));
    let resumed = journal.as_ref().map_or_else(Resumed::default, |p| resume(p, &chunks, &mut examples, ctx));
    let shapes = ShapeLog::default();
    for &[rows, time] in &resumed.shapes {
        shapes.record(rows, time);
    }
    // A worker's watchdog leaves a signal to this loop, which asks after
    // every chunk when it has a journal to keep them in.
    let polling = journal.is_some().then(grid_core::interrupt::Polling::start);
    let explained = explain_chunks(
        &checkpoint,
        options,
        (ctx.compute.buckets, &shapes),
        &mut examples,
        &chunks,
        device,
        |chunk| resumed.chunks.contains_key(&chunk),
        |chunk, records| {
            ctx.progress.inc(records.len() as u64);
            let Some(journal) = journal.as_mut() else { return Ok(()) };
            journal.finished(chunk, records, &shapes.shapes())?;
            if grid_core::interrupt::requested() {
                journal.write(&shapes.shapes())?;
                anyhow::bail!("attribution stopped on request; a rerun goes on from the examples explained so far");
            }
            Ok(())
        },
    );
    if let (Err(_), Some(journal)) = (&explained, journal.as_mut()) {
        // Keep what this attempt finished for the next one (best effort: the
        // error that stopped it is the one to report).
        let _ = journal.write(&shapes.shapes());
    }
    drop(polling);
    explained?;
    let records: Vec<AttributedExample> = examples.into_iter().map(|e| e.record).collect();
    // JSON has no NaN: it would be cached as `null` and fail every consumer.
    if let Some(bad) = records.iter().find(|r| r.scores.iter().any(|s| !s.is_finite())) {
        anyhow::bail!(
            "{} gave a non-finite salience score for test example {} (tokens {:?}): the model's outputs or \
             gradients overflow; check its training log",
            options.method,
            bad.index,
            bad.tokens
        );
    }
    write_jsonl(&out.join(FILE), &records)?;
    let seconds = resumed.seconds + started.elapsed().as_secs_f64();
    let gaps: Vec<f64> = records.iter().filter_map(|r| r.completeness_gap).map(|g| (g as f64).abs()).collect();
    let (mean_gap, max_gap) = if gaps.is_empty() {
        (None, None)
    } else {
        (Some(gaps.iter().sum::<f64>() / gaps.len() as f64), Some(gaps.iter().fold(0.0f64, |m, &g| m.max(g))))
    };
    write_json(
        &out.join("summary.json"),
        &AttributionSummary {
            method: options.method.to_string(),
            examples: records.len(),
            resumed_examples: resumed.examples(),
            dropped_truncated,
            seconds,
            examples_per_second: records.len() as f64 / seconds.max(1e-9),
            mean_abs_completeness_gap: mean_gap,
            max_abs_completeness_gap: max_gap,
            shapes: shapes.shapes(),
        },
    )
}

/// Takes the chunks an earlier attempt explained into `examples`, as far as
/// they can be vouched for, and says in the step's log what it took and what
/// it left.
fn resume(journal: &Progress, chunks: &[Vec<usize>], examples: &mut [Prepared], ctx: &StepContext) -> Resumed {
    let expected: Vec<Vec<&AttributedExample>> =
        chunks.iter().map(|chunk| chunk.iter().map(|&i| &examples[i].record).collect()).collect();
    let resumed = journal.load(&expected);
    for line in &resumed.rejected {
        (ctx.log)(line.clone());
    }
    if resumed.examples() > 0 {
        (ctx.log)(format!(
            "resuming: {} of {} examples were explained by an earlier attempt",
            resumed.examples(),
            examples.len()
        ));
        for (&chunk, records) in &resumed.chunks {
            for (&i, record) in chunks[chunk].iter().zip(records) {
                examples[i].record = record.clone();
            }
        }
        ctx.progress.inc(resumed.examples() as u64);
    }
    resumed
}

/// G and the distractors as token positions of the (truncated) encoding, or
/// `None` when truncation left no usable ground truth: a pattern must keep
/// every token, a region at least one.
pub(crate) fn visible_regions(encoded: &Encoded, example: &SyntheticExample) -> Option<(Vec<usize>, Vec<usize>)> {
    let tokens_of = |positions: &[usize]| -> (Vec<usize>, bool) {
        let mut tokens = Vec::new();
        let mut complete = true;
        for &word in positions {
            let before = tokens.len();
            tokens.extend(encoded.tokens_of_word(word));
            complete &= tokens.len() > before;
        }
        (tokens, complete)
    };
    let (ground_truth, complete) = tokens_of(&example.shortcut_positions);
    let usable = match example.ground_truth {
        GroundTruth::Pattern => complete,
        GroundTruth::Region => !ground_truth.is_empty(),
    };
    usable.then(|| (ground_truth, tokens_of(&example.distractor_positions).0))
}

/// An example ready to explain: its encoding and the record its scores go into.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub encoded: Encoded,
    pub record: AttributedExample,
}

/// Encodes the sampled test examples and maps the ground truth to token
/// positions; returns them with the number left out because truncation cut a
/// shortcut token (a pattern) or every token of G (a region). A `subset` is
/// found by predicting in batches padded to `buckets`, as verification does.
pub fn prepare<B: Backend>(
    checkpoint: &Checkpoint<B>,
    test: &[SyntheticExample],
    options: &Options,
    buckets: Buckets,
    device: &B::Device,
) -> (Vec<Prepared>, usize) {
    let max_length = options.max_length.min(checkpoint.config.max_length());
    let candidates = subset_indices(checkpoint, test, options, max_length, buckets, device);
    let sampled = sample_indices(candidates.len(), options.sample, options.seed).into_iter().map(|k| candidates[k]);
    prepare_indices(checkpoint, test, sampled, options)
}

/// [`prepare`] for given test indices (an attribute step's own, when its
/// erasure step re-encodes them); an index past the test set is left out.
pub fn prepare_indices<B: Backend>(
    checkpoint: &Checkpoint<B>,
    test: &[SyntheticExample],
    indices: impl IntoIterator<Item = usize>,
    options: &Options,
) -> (Vec<Prepared>, usize) {
    let max_length = options.max_length.min(checkpoint.config.max_length());
    let mut examples = Vec::new();
    let mut dropped_truncated = 0;
    for i in indices {
        let Some(example) = test.get(i) else { continue };
        let encoded = checkpoint.encoder.encode(&example.text, max_length);
        let Some((ground_truth, distractors)) = visible_regions(&encoded, example) else {
            dropped_truncated += 1;
            continue;
        };
        let text_words = words(&example.text);
        // The model's own token strings; a BiLSTM's `[UNK]` shows the word it hid.
        let tokens = encoded
            .ids
            .iter()
            .zip(&encoded.word_of_token)
            .map(|(&id, word)| match word.and_then(|w| text_words.get(w)) {
                Some(text) if id == checkpoint.encoder.unk_id() => text.to_string(),
                _ => checkpoint.encoder.token(id),
            })
            .collect();
        let record = AttributedExample {
            index: i,
            tokens,
            word_of_token: encoded.word_of_token.clone(),
            ground_truth,
            distractors,
            label: example.label,
            predicted: 0,
            scores: Vec::new(),
            completeness_gap: None,
        };
        examples.push(Prepared { encoded, record });
    }
    (examples, dropped_truncated)
}

/// The test examples `options.subset` keeps, ascending: all of them, or those
/// the model classifies correctly (or not) at `max_length`. The sample is drawn
/// from these, so with `all` it is the same as before subsets existed.
fn subset_indices<B: Backend>(
    checkpoint: &Checkpoint<B>,
    test: &[SyntheticExample],
    options: &Options,
    max_length: usize,
    buckets: Buckets,
    device: &B::Device,
) -> Vec<usize> {
    let keep_correct = match options.subset {
        Subset::All => return (0..test.len()).collect(),
        Subset::Correct => true,
        Subset::Misclassified => false,
    };
    let ids: Vec<Vec<u32>> = test.iter().map(|e| checkpoint.encoder.encode(&e.text, max_length).ids).collect();
    let sequences: Vec<&[u32]> = ids.iter().map(Vec::as_slice).collect();
    let predicted = grid_core::model::predict::predict(
        &Shaped::new(&checkpoint.model, buckets),
        &sequences,
        options.batch_size.max(1),
        checkpoint.encoder.pad_id(),
        device,
    );
    (0..test.len()).filter(|&i| (predicted[i] == test[i].label) == keep_correct).collect()
}

/// The order examples are explained in: chunks of `batch_size` in length
/// order (so that padding stays small), as indices into `examples`. A pure
/// function of the examples, so every attempt at a step has the same chunks.
pub fn chunk_order(examples: &[Prepared], batch_size: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..examples.len()).collect();
    order.sort_by_key(|&i| examples[i].encoded.ids.len());
    order.chunks(batch_size.max(1)).map(<[usize]>::to_vec).collect()
}

/// Scores every prepared example with `options.method`, one model call per
/// chunk of [`chunk_order`]; `done(n)` after each call. Every model call is
/// padded to `buckets` and its shape recorded in the log.
pub fn explain_all<B: AutodiffBackend>(
    checkpoint: &Checkpoint<B>,
    options: &Options,
    shaping: (Buckets, &ShapeLog),
    examples: &mut [Prepared],
    device: &B::Device,
    mut done: impl FnMut(usize),
) -> Result<()> {
    let chunks = chunk_order(examples, options.batch_size);
    explain_chunks(
        checkpoint,
        options,
        shaping,
        examples,
        &chunks,
        device,
        |_| false,
        |_, records| {
            done(records.len());
            Ok(())
        },
    )
}

/// Scores the examples of each chunk not `skip`ped; `finished(chunk, records)`
/// after each (the chunk's records, explained), whose error stops the loop.
#[allow(clippy::too_many_arguments)]
fn explain_chunks<B: AutodiffBackend>(
    checkpoint: &Checkpoint<B>,
    options: &Options,
    (buckets, shapes): (Buckets, &ShapeLog),
    examples: &mut [Prepared],
    chunks: &[Vec<usize>],
    device: &B::Device,
    skip: impl Fn(usize) -> bool,
    mut finished: impl FnMut(usize, Vec<AttributedExample>) -> Result<()>,
) -> Result<()> {
    let vocab = Vocabulary {
        pad: checkpoint.encoder.pad_id(),
        unk: checkpoint.encoder.unk_id(),
        mask: checkpoint.encoder.mask_id(),
    };
    let settings = Settings {
        seed: options.seed,
        internal_batch_size: options.internal_batch_size.max(1),
        perturbations_per_eval: options.perturbations_per_eval.max(1),
    };
    let model = Shaped::new(&checkpoint.model, buckets).with_log(shapes.clone());
    for (number, chunk) in chunks.iter().enumerate().filter(|&(number, _)| !skip(number)) {
        let batch = Examples {
            ids: chunk.iter().map(|&i| examples[i].encoded.ids.as_slice()).collect(),
            special: chunk
                .iter()
                .map(|&i| examples[i].encoded.word_of_token.iter().map(Option::is_none).collect())
                .collect(),
            stream: chunk.iter().map(|&i| examples[i].record.index as u64).collect(),
        };
        let explained = salience::attribute(&model, options.method, &batch, &vocab, &settings, device)
            .with_context(|| format!("method `{}`", options.method))?;
        for (k, &i) in chunk.iter().enumerate() {
            let record = &mut examples[i].record;
            record.scores = explained.scores[k].clone();
            record.predicted = explained.predicted[k];
            record.completeness_gap = explained.completeness_gap.as_ref().map(|g| g[k]);
        }
        let records: Vec<AttributedExample> = chunk.iter().map(|&i| examples[i].record.clone()).collect();
        finished(number, records)?;
    }
    Ok(())
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampling_is_seeded_sorted_and_bounded() {
        let a = sample_indices(100, 10, 7);
        assert_eq!(a, sample_indices(100, 10, 7));
        assert_ne!(a, sample_indices(100, 10, 8));
        assert!(a.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(sample_indices(5, 10, 7), vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn truncation_drops_a_cut_pattern_but_keeps_a_visible_region() {
        // [CLS] w0 w1a w1b w2 [SEP], truncated after word 2: words 3 and 4 are gone.
        let encoded = Encoded { ids: vec![0; 6], word_of_token: vec![None, Some(0), Some(1), Some(1), Some(2), None] };
        let example = |g: Vec<usize>, d: Vec<usize>, ground_truth| SyntheticExample {
            text: String::new(),
            label: 1,
            original_label: 0,
            shortcut_positions: g,
            distractor_positions: d,
            ground_truth,
        };
        let pattern = |g| visible_regions(&encoded, &example(g, vec![], GroundTruth::Pattern));
        assert_eq!(pattern(vec![1, 2]), Some((vec![2, 3, 4], vec![])));
        assert_eq!(pattern(vec![1, 3]), None, "one token of the pair was cut");
        let region = |g, d| visible_regions(&encoded, &example(g, d, GroundTruth::Region));
        assert_eq!(region(vec![0, 4], vec![2, 3]), Some((vec![1], vec![4])), "the visible articles stay");
        assert_eq!(region(vec![3, 4], vec![0]), None, "no correlating article visible");
    }
}
