//! Input salience methods (Bastings et al. 2022 §3.2; PROTOCOL §1).
//!
//! A method config name, as the papers print it, leads straight to its file
//! (the table in [`method`]). Every method scores the *predicted* class: for a
//! binary model predicting 0 the target is −logit (probability 1 − p), so positive
//! salience always means "towards the prediction".
//!
//! Every method takes a batch of examples and returns one score per token of
//! each. Methods that need many model evaluations per example (IG steps,
//! SmoothGrad samples, perturbations) pack them *across* examples into chunks of
//! a configurable size ([`Settings`]), so the batch dimension is always full;
//! anything random is seeded per example, so batching never changes a score.

pub mod attention;
pub mod deeplift;
mod equivalence;
pub mod expand;
pub mod gradient;
pub mod image;
pub mod integrated_gradients;
pub mod kernel_shap;
pub mod lime;
pub mod method;
pub mod occlusion;
pub mod perturb;
pub mod random;
pub mod rationale;
pub mod regression;
pub mod smoothgrad;
pub mod target;

use burn::tensor::backend::AutodiffBackend;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

pub use method::{
    AttentionView, Baseline, GradientMethod, Hiding, Method, ModelTraits, NoiseLevel, Reduction, Target, UnknownMethod,
};

use grid_core::model::{Classifier, TokenBatch};

/// The examples of one batch.
#[derive(Debug, Clone)]
pub struct Examples<'a> {
    /// Token ids per example, unpadded.
    pub ids: Vec<&'a [u32]>,
    /// Per example and token: `true` at special tokens (`[CLS]`, `[SEP]`), which
    /// keep their embedding under every baseline, are never hidden, and are never ranked.
    pub special: Vec<Vec<bool>>,
    /// A stable id per example (its index in the test set): the stream of its randomness.
    pub stream: Vec<u64>,
}

impl<'a> Examples<'a> {
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// A padded batch of all examples.
    pub fn batch<B: burn::prelude::Backend>(&self, pad: u32, device: &B::Device) -> TokenBatch<B> {
        TokenBatch::from_sequences(&self.ids, pad, device)
    }

    /// Positions that may be hidden, perturbed or ranked in example `i`.
    pub fn ordinary_positions(&self, i: usize) -> Vec<usize> {
        (0..self.ids[i].len()).filter(|&t| !self.special[i][t]).collect()
    }
}

/// The token ids methods need from the model's vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vocabulary {
    pub pad: u32,
    pub unk: u32,
    pub mask: Option<u32>,
}

impl Vocabulary {
    /// The token that stands for a hidden one; `None` when hiding deletes it.
    pub fn hiding_token(&self, hiding: Hiding) -> Result<Option<u32>, AttributionError> {
        match hiding {
            Hiding::Unk => Ok(Some(self.unk)),
            Hiding::Mask => self.mask.map(Some).ok_or(AttributionError::NoMaskToken),
            Hiding::Erase => Ok(None),
        }
    }

    /// The token whose embedding is the baseline; `None` for zero vectors.
    pub fn baseline_token(&self, baseline: Baseline) -> Result<Option<u32>, AttributionError> {
        match baseline {
            Baseline::Zero => Ok(None),
            Baseline::Unk => Ok(Some(self.unk)),
            Baseline::Pad => Ok(Some(self.pad)),
            Baseline::Mask => self.mask.map(Some).ok_or(AttributionError::NoMaskToken),
        }
    }
}

/// Performance knobs: they never change a score (beyond float rounding), so
/// they are not part of any cache key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Seed of the per-example randomness (LIME, KernelSHAP, SmoothGrad, random).
    pub seed: u64,
    /// Inputs per forward/backward pass for IG steps and SmoothGrad samples
    /// (Captum's `internal_batch_size`): the memory knob, counted in rows of up
    /// to [`Settings::KNOB_LENGTH`] tokens (see [`Settings::rows_per_pass`]).
    pub internal_batch_size: usize,
    /// Perturbed inputs per forward pass for LIME, KernelSHAP and occlusion
    /// (Captum's `perturbations_per_eval`).
    pub perturbations_per_eval: usize,
}

impl Settings {
    /// The row length `internal_batch_size` is counted in: SST-2's sentences and
    /// every quickstart input fit it, so their passes are exactly the knob's size.
    pub const KNOB_LENGTH: usize = 128;

    /// Rows of `padded_length` tokens per forward/backward pass. A pass's memory
    /// grows with its tokens, so rows longer than `KNOB_LENGTH` take
    /// proportionally fewer per pass: 256 rows of SST-2, 65 of IMDB's 500 word
    /// pieces (four IG steps of 256 such rows at once exhausted an H200's 140 GB).
    pub fn rows_per_pass(&self, padded_length: usize) -> usize {
        let rows = self.internal_batch_size.max(1);
        if padded_length <= Self::KNOB_LENGTH { rows } else { (rows * Self::KNOB_LENGTH / padded_length).max(1) }
    }

    /// The random stream of one example.
    pub fn rng(&self, stream: u64) -> ChaCha8Rng {
        stream_rng(self.seed, stream)
    }
}

/// Stream `stream` of seed `seed`: one per example, so an example's draws do
/// not depend on the batch it is explained in.
pub fn stream_rng(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    rng
}

/// Salience for a batch of examples.
#[derive(Debug, Clone, PartialEq)]
pub struct Attribution {
    /// Per example, one score per token (the example's own length).
    pub scores: Vec<Vec<f32>>,
    /// Predicted class per example.
    pub predicted: Vec<u32>,
    /// IG and DeepLift: `Σ_i s_i − (f(x) − f(b))` per example, the built-in check
    /// that the attributions account for the output difference.
    pub completeness_gap: Option<Vec<f32>>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AttributionError {
    #[error("the model's vocabulary has no [MASK] token")]
    NoMaskToken,
    #[error("method `{method}` does not apply to this model: {reason}")]
    Unsupported { method: String, reason: String },
}

/// Scores every example of `examples` with `method`.
pub fn attribute<B, M>(
    model: &M,
    method: Method,
    examples: &Examples<'_>,
    vocab: &Vocabulary,
    settings: &Settings,
    device: &B::Device,
) -> Result<Attribution, AttributionError>
where
    B: AutodiffBackend,
    M: Classifier<B>,
{
    match method {
        Method::Gradient(GradientMethod::IntegratedGradients { target, baseline, steps }) => {
            integrated_gradients::explain(model, target, baseline, steps, examples, vocab, settings, device)
        }
        Method::Gradient(g) => Ok(gradient::explain(model, g, examples, vocab, device)),
        Method::SmoothGrad { inner, samples, sigma } => {
            smoothgrad::explain(model, inner, samples, sigma, examples, vocab, settings, device)
        }
        Method::Lime { hiding, samples } => lime::explain(model, hiding, samples, examples, vocab, settings, device),
        Method::KernelShap { hiding, samples } => {
            kernel_shap::explain(model, hiding, samples, examples, vocab, settings, device)
        }
        Method::Occlusion { hiding } => occlusion::explain(model, hiding, examples, vocab, settings, device),
        Method::Attention(view) => attention::explain(model, view, examples, vocab, device),
        Method::ScaledAttention => attention::explain_scaled(model, examples, vocab, device),
        Method::DeepLift { baseline } => deeplift::explain(model, baseline, examples, vocab, settings, device),
        Method::Rationale => rationale::explain(model, examples, vocab, device),
        Method::Random => {
            let batch = examples.batch::<B>(vocab.pad, device);
            let predicted = grid_core::model::predicted_classes(model.logits(&batch));
            let scores = examples
                .ids
                .iter()
                .zip(&examples.stream)
                .map(|(ids, &stream)| random::random_scores(settings.seed, stream, ids.len()))
                .collect();
            Ok(Attribution { scores, predicted, completeness_gap: None })
        }
    }
}

/// Splits `[batch, time]` scores into one row per example, cut to its length.
pub(crate) fn rows_of<B: burn::prelude::Backend>(
    scores: burn::prelude::Tensor<B, 2>,
    examples: &Examples<'_>,
) -> Vec<Vec<f32>> {
    let [_, time] = scores.dims();
    let values: Vec<f32> = scores.into_data().convert::<f32>().to_vec().unwrap_or_default();
    values.chunks(time.max(1)).zip(&examples.ids).map(|(row, ids)| row[..ids.len()].to_vec()).collect()
}

#[cfg(any(test, feature = "toy-models"))]
pub mod test_models;

#[cfg(test)]
mod tests {
    use super::Settings;

    #[test]
    fn long_rows_take_fewer_per_pass() {
        let knob = Settings { seed: 0, internal_batch_size: 256, perturbations_per_eval: 1 };
        // Up to the knob's length a pass is exactly the knob: SST-2 and the quickstart are unchanged.
        assert_eq!(knob.rows_per_pass(1), 256);
        assert_eq!(knob.rows_per_pass(Settings::KNOB_LENGTH), 256);
        // IMDB's 500 word pieces: the same tokens per pass, about.
        assert_eq!(knob.rows_per_pass(500), 65);
        assert_eq!(knob.rows_per_pass(512), 64);
        // Never zero, however long the row or small the knob.
        assert_eq!(Settings { internal_batch_size: 1, ..knob }.rows_per_pass(10_000), 1);
        assert_eq!(Settings { internal_batch_size: 0, ..knob }.rows_per_pass(10), 1);
    }
}
