//! Token sequences as the training loop takes them ([`super::fit`]):
//! batches of similar lengths, word dropout and the model's own noise, and
//! validation through the shape buckets.

use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use super::fit::{Batches, Objective};
use super::{Evaluation, TrainExample, TrainSetup};
use crate::model::noise::Noise;
use crate::model::objective::Trainable;
use crate::model::predict::predict;
use crate::model::rationale::selection_rates;
use crate::model::shapes::{ShapeLog, Shaped};
use crate::model::{Classifier, TokenBatch};

/// A token training set and the set-up its batches are built with.
pub(crate) struct TokenBatches<'a> {
    pub examples: &'a [TrainExample],
    pub setup: &'a TrainSetup<'a>,
}

impl<B: AutodiffBackend, M: Trainable<B>> Batches<B, M> for TokenBatches<'_> {
    fn examples(&self) -> usize {
        self.examples.len()
    }

    fn epoch(&self, batch_size: usize, rng: &mut ChaCha8Rng) -> Vec<Vec<usize>> {
        bucketed_batches(self.examples, batch_size, rng)
    }

    fn objective(&self, model: &M, indices: &[usize], rng: &mut ChaCha8Rng, device: &B::Device) -> Objective<B> {
        let setup = self.setup;
        let mut sequences: Vec<Vec<u32>> = indices.iter().map(|&i| self.examples[i].ids.clone()).collect();
        let labels: Vec<u32> = indices.iter().map(|&i| self.examples[i].label).collect();
        let mut noise = Noise::new(rng);
        for s in &mut sequences {
            noise.word_dropout(s, setup.word_dropout, setup.unk_id);
        }
        let refs: Vec<&[u32]> = sequences.iter().map(Vec::as_slice).collect();
        let batch = TokenBatch::<B>::bucketed(&refs, setup.pad_id, setup.buckets, model.max_length(), device);
        let [rows, time] = batch.ids.dims();
        Objective { loss: model.objective(&batch, &labels, &mut noise), shape: [rows, time] }
    }
}

/// Batches of example indices, each of similar lengths, in a shuffled order.
pub(crate) fn bucketed_batches(examples: &[TrainExample], batch_size: usize, rng: &mut ChaCha8Rng) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..examples.len()).collect();
    order.shuffle(rng);
    let pool = batch_size * 50;
    let mut batches = Vec::new();
    for chunk in order.chunks(pool) {
        let mut chunk = chunk.to_vec();
        chunk.sort_by_key(|&i| examples[i].ids.len());
        batches.extend(chunk.chunks(batch_size).map(<[usize]>::to_vec));
    }
    batches.shuffle(rng);
    batches
}

/// A model's accuracy on the validation split (and on its marked and
/// unmarked examples apart), in batches padded to `setup.buckets` whose shapes
/// go into `shapes`: what training evaluates with.
pub(crate) fn validation_evaluation<'a, B: Backend, M: Classifier<B>>(
    validation: &'a [TrainExample],
    setup: &'a TrainSetup,
    shapes: &'a ShapeLog,
    device: &'a B::Device,
) -> impl Fn(&M) -> Evaluation + 'a {
    let ids: Vec<&[u32]> = validation.iter().map(|e| e.ids.as_slice()).collect();
    let examples: Vec<(u32, bool)> = validation.iter().map(|e| (e.label, e.marked)).collect();
    move |m: &M| {
        let shaped = Shaped::new(m, setup.buckets).with_log(shapes.clone());
        let predictions = predict(&shaped, &ids, 256, setup.pad_id, device);
        Evaluation::of(&predictions, &examples, selection_rates(m, &ids, 256, setup.pad_id, device))
            .with_selection_target(m.selection_target())
    }
}
