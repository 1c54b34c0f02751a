//! Classifiers behind one seam.
//!
//! Every salience method works from the same three operations: embed token ids,
//! run the classifier from (possibly perturbed) input embeddings, and let burn's
//! autodiff differentiate the logits with respect to those embeddings. A new
//! architecture that implements [`Classifier`] gets every gradient method for free;
//! `salience` never matches on the architecture.

pub mod architecture;
pub mod assets;
pub mod bert;
pub mod bilstm;
mod canonical_header;
pub mod checkpoint;
pub mod deberta;
pub mod dense;
pub mod dtype;
#[cfg(test)]
pub(crate) mod fixture_check;
pub mod glove;
pub mod hub;
pub mod init;
pub mod modernbert;
pub mod noise;
pub mod objective;
pub mod predict;
pub mod pretrained;
pub mod rationale;
pub mod resnet;
pub mod rules;
pub mod shapes;
#[cfg(any(test, feature = "toy-models"))]
pub mod toy;

use burn::prelude::*;

pub use architecture::{Architecture, ModelTraits};
pub use assets::ModelAssets;

/// A right-padded batch of token ids with its padding mask.
#[derive(Debug, Clone)]
pub struct TokenBatch<B: Backend> {
    /// `[batch, time]` token ids; padding positions hold the model's pad id.
    pub ids: Tensor<B, 2, Int>,
    /// `[batch, time]`: 1.0 at real tokens, 0.0 at padding.
    pub mask: Tensor<B, 2>,
}

impl<B: Backend> TokenBatch<B> {
    /// Pads `sequences` on the right with `pad_id` to the longest one.
    pub fn from_sequences(sequences: &[&[u32]], pad_id: u32, device: &B::Device) -> Self {
        Self::bucketed(sequences, pad_id, crate::buckets::Buckets::EXACT, None, device)
    }
}

/// Which attention weights are read as salience.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AttentionView {
    /// `attn`: the BiLSTM's additive attention weights.
    Additive,
    /// `attn-last`: BERT's last layer, `[CLS]` row, mean over heads.
    LastLayer,
    /// `attn-all`: BERT's `[CLS]` row, mean over heads and layers.
    AllLayers,
}

/// `attn-last` / `attn-all` from a transformer's attention probabilities
/// per layer (`[batch, heads, queries, keys]`): the first token's row, mean
/// over heads (and over layers); `None` for the BiLSTM's additive view.
pub(crate) fn first_token_attention<B: Backend>(
    mut attentions: Vec<Tensor<B, 4>>,
    view: AttentionView,
) -> Option<Tensor<B, 2>> {
    let first_row = |probs: Tensor<B, 4>| {
        let [batch, _, _, time] = probs.dims();
        probs.narrow(2, 0, 1).mean_dim(1).reshape([batch, time])
    };
    match view {
        AttentionView::Additive => None,
        AttentionView::LastLayer => attentions.pop().map(first_row),
        AttentionView::AllLayers => {
            let layers = attentions.len();
            let sum = attentions.into_iter().map(first_row).reduce(|a, b| a + b)?;
            Some(sum.div_scalar(layers as f64))
        }
    }
}

/// What a classifier exposes to training, verification and salience.
///
/// Outputs are `[batch, num_outputs]` logits; a binary model has one output and
/// `p(y=1|x) = sigmoid(logit)` (PROTOCOL §1).
pub trait Classifier<B: Backend> {
    /// What a refusal calls the model (a method it does not support).
    fn family(&self) -> &'static str {
        "the model"
    }

    /// Input embeddings `e_i` (word embeddings before anything position-dependent
    /// is added): the point salience differentiates against.
    fn embed(&self, ids: Tensor<B, 2, Int>) -> Tensor<B, 3>;

    /// Logits from input embeddings, in inference mode (no dropout).
    fn logits_from_embeddings(&self, embeddings: Tensor<B, 3>, mask: Tensor<B, 2>) -> Tensor<B, 2>;

    /// Logits for a token batch, in inference mode.
    fn logits(&self, batch: &TokenBatch<B>) -> Tensor<B, 2> {
        self.logits_from_embeddings(self.embed(batch.ids.clone()), batch.mask.clone())
    }

    /// Number of logits per example: 1 for a binary model, C otherwise.
    fn num_outputs(&self) -> usize;

    /// The longest input the model takes (a transformer's position table);
    /// `None` when any length goes. Padding to a bucket never goes past it.
    fn max_length(&self) -> Option<usize> {
        None
    }

    /// Attention weights read as salience, `[batch, time]`: they sum to 1 over the
    /// real tokens of each example and are exactly 0 at padding. `None` when the
    /// model has no attention of that kind.
    fn attention_scores(
        &self,
        _embeddings: Tensor<B, 3>,
        _mask: Tensor<B, 2>,
        _view: AttentionView,
    ) -> Option<Tensor<B, 2>> {
        None
    }

    /// The forward pass with the attention probabilities that reach the output
    /// made a leaf of the autodiff graph, so that their gradient is `∂f/∂α` with
    /// everything upstream held fixed (scaled attention). `None` without attention.
    fn attention_leaf(&self, _embeddings: Tensor<B, 3>, _mask: Tensor<B, 2>) -> Option<AttentionLeaf<B>> {
        None
    }

    /// Logits under DeepLift's Rescale rule ([`rules::Rules::Rescale`]): the batch
    /// stacks n inputs (rows `[0, n)`) over their n references (rows `[n, 2n)`);
    /// the values are the ordinary logits, the gradients DeepLift's multipliers.
    /// `None` when the model does not implement the rules.
    fn deeplift_logits(&self, _embeddings: Tensor<B, 3>, _mask: Tensor<B, 2>) -> Option<Tensor<B, 2>> {
        None
    }

    /// The words a rationale model selects of its input, its own
    /// explanation ([`rationale::Selection`]); `None` for a model that reads
    /// every word.
    fn selection(&self, _embeddings: Tensor<B, 3>, _mask: Tensor<B, 2>) -> Option<rationale::Selection<B>> {
        None
    }

    /// The selection rate a rationale model was trained towards (its
    /// `%Sel`); `None` for a model that reads every word.
    fn selection_target(&self) -> Option<f64> {
        None
    }
}

/// How many float parameters of `model` got no gradient in `grads`, of how
/// many. A parameter that is a node of the graph rather than a leaf (say, the
/// result of an op in `Param::map` that was not detached) gets none, and the
/// optimiser silently never moves it.
#[cfg(test)]
pub(crate) fn params_without_grad<B, M>(model: &M, grads: &B::Gradients) -> (usize, usize)
where
    B: burn::tensor::backend::AutodiffBackend,
    M: burn::module::Module<B>,
{
    struct Count<'a, B: burn::tensor::backend::AutodiffBackend> {
        grads: &'a B::Gradients,
        missing: usize,
        total: usize,
    }
    impl<B: burn::tensor::backend::AutodiffBackend> burn::module::ModuleVisitor<B> for Count<'_, B> {
        fn visit_float<const D: usize>(&mut self, param: &burn::module::Param<Tensor<B, D>>) {
            self.total += 1;
            self.missing += usize::from(param.grad(self.grads).is_none());
        }
    }
    let mut count = Count::<B> { grads, missing: 0, total: 0 };
    model.visit(&mut count);
    (count.missing, count.total)
}

/// See [`Classifier::attention_leaf`].
#[derive(Debug, Clone)]
pub struct AttentionLeaf<B: Backend> {
    /// `[batch, heads, queries, time]`, a leaf that requires its gradient. Query 0
    /// is the one that reaches the output: the BiLSTM's keys-only attention has
    /// one head and one query; BERT's last layer has every position as a query,
    /// of which only `[CLS]` feeds the pooler.
    pub probs: Tensor<B, 4>,
    /// `[batch, num_outputs]`, computed from `probs`.
    pub logits: Tensor<B, 2>,
}

/// Predicted class per example from `[batch, num_outputs]` logits.
pub fn predicted_classes<B: Backend>(logits: Tensor<B, 2>) -> Vec<u32> {
    let [_, outputs] = logits.dims();
    let values: Vec<f32> = logits.into_data().convert::<f32>().to_vec().unwrap_or_default();
    values.chunks(outputs.max(1)).map(predicted_class).collect()
}

/// The predicted class of one row of logits: `logit > 0` for one output, else the
/// largest logit, the lowest index winning ties so predictions are deterministic.
pub fn predicted_class(row: &[f32]) -> u32 {
    if row.len() == 1 {
        return u32::from(row[0] > 0.0);
    }
    let mut best = 0;
    for (class, &v) in row.iter().enumerate() {
        if v > row[best] {
            best = class;
        }
    }
    best as u32
}
