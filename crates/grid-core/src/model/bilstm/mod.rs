//! Bidirectional LSTM with keys-only additive attention, the LSTM model of
//! Bastings et al. 2022 (appendix A.1), after Jain & Wallace 2019
//! ("Attention is not Explanation", <https://github.com/successar/AttentionExplanation>).
//!
//! embedding (300, GloVe-initialisable) → one BiLSTM layer (256 per direction) →
//! additive attention `α = softmax_t(vᵀ tanh(W h_t))` over real tokens →
//! context `Σ_t α_t h_t` → one hidden layer (256, ReLU) → logits. With
//! `mlp_size = 0` the context goes straight to the logits: Zhou et al. 2022's
//! model (App. B.1, after Wiegreffe & Pinter 2019).
//! Dropout (0.5) after the embedding, the LSTM and the hidden layer; word dropout
//! (0.1, to `[UNK]`) is applied to ids by the trainer.
//!
//! The LSTM is written here rather than taken from burn-nn: burn's `BiLstm` has no
//! sequence lengths, so on right-padded batches its backward direction would start
//! on padding. Here the backward direction runs over each sequence reversed within
//! its own length (padding stays at the end), which is exact; and all inputs are
//! projected in one matmul before the recurrence, with half the per-step ops of
//! burn's cell (PyTorch's `nn.LSTM` parameter layout: gates `i, f, g, o`).
//!
//! Nonlinearities and input-dependent products go through [`Rules`], so that
//! DeepLift's Rescale rule runs this same code; [`Rules::Plain`] is the ordinary pass.

pub mod saved;

use burn::module::Param;
use burn::prelude::*;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::dense::at_every_position;
use super::init;
use super::noise::Noise;
use super::rules::Rules;
use super::{AttentionLeaf, Classifier, TokenBatch};
use crate::model::AttentionView;
use crate::model::objective::Trainable;

/// Hyper-parameters, saved as `config.json` next to the weights.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BiLstmConfig {
    pub vocab_size: usize,
    pub embedding_dim: usize,
    /// Hidden size of each direction; the encoder output is twice this.
    pub hidden_size: usize,
    pub attention_size: usize,
    /// Width of the hidden layer between the context and the logits; 0: none.
    pub mlp_size: usize,
    /// 1 for a binary classifier (one logit), C for C classes.
    pub num_outputs: usize,
    pub dropout: f64,
    pub pad_id: u32,
}

/// One direction of the LSTM. Shapes are burn's `[d_input, d_output]`.
#[derive(Module, Debug)]
pub struct LstmDirection<B: Backend> {
    /// `[embedding_dim, 4 * hidden]`, gates `i, f, g, o`.
    pub weight_ih: Param<Tensor<B, 2>>,
    /// `[hidden, 4 * hidden]`.
    pub weight_hh: Param<Tensor<B, 2>>,
    pub bias_ih: Param<Tensor<B, 1>>,
    pub bias_hh: Param<Tensor<B, 1>>,
}

impl<B: Backend> LstmDirection<B> {
    pub(crate) fn new(rng: &mut ChaCha8Rng, d_input: usize, hidden: usize, device: &B::Device) -> Self {
        // PyTorch's nn.LSTM: every weight and bias ~ U(-1/sqrt(H), 1/sqrt(H)).
        let bound = 1.0 / (hidden as f64).sqrt();
        Self {
            weight_ih: init::uniform(rng, [d_input, 4 * hidden], bound, device),
            weight_hh: init::uniform(rng, [hidden, 4 * hidden], bound, device),
            bias_ih: init::uniform(rng, [4 * hidden], bound, device),
            bias_hh: init::uniform(rng, [4 * hidden], bound, device),
        }
    }

    fn hidden_size(&self) -> usize {
        self.weight_hh.dims()[0]
    }

    /// Runs the recurrence left to right over `x` (`[batch, time, d_input]`) and
    /// returns every hidden state, `[batch, time, hidden]`. Causal, so on a
    /// right-padded batch the states at real tokens never see the padding.
    pub(crate) fn forward(&self, x: Tensor<B, 3>, rules: Rules) -> Tensor<B, 3> {
        if rules == Rules::Plain
            && let Some(states) = self.block(&x, None)
        {
            return states;
        }
        recurrence(self.project(x), self.weight_hh.val(), rules)
    }

    /// The whole direction as one block of the backend's
    /// ([`crate::kernels::lstm_block`]): `None` where it has none.
    fn block(&self, x: &Tensor<B, 3>, reversed_by: Option<&Tensor<B, 2>>) -> Option<Tensor<B, 3>> {
        if !crate::kernels::lstm_block_applies(x) {
            return None;
        }
        let weights = crate::kernels::LstmWeights {
            weight_ih: self.weight_ih.val(),
            weight_hh: self.weight_hh.val(),
            bias_ih: self.bias_ih.val(),
            bias_hh: self.bias_hh.val(),
        };
        crate::kernels::lstm_block(x.clone(), weights, reversed_by.cloned())
    }

    /// The backward direction on a right-padded batch: the recurrence over
    /// each sequence's real tokens from last to first (then its padding),
    /// the states returned at the tokens' own positions. The fused kernel
    /// visits the positions in that order; burn's operations (another
    /// backend) permute the inputs and the states.
    pub(crate) fn reversed(&self, x: Tensor<B, 3>, mask: Tensor<B, 2>, rules: Rules) -> Tensor<B, 3> {
        if rules == Rules::Plain
            && let Some(states) = self.block(&x, Some(&mask))
        {
            return states;
        }
        if crate::kernels::applies(&x) {
            let lengths: Vec<usize> =
                mask.clone().sum_dim(1).into_data().iter::<f32>().map(|l| l.round() as usize).collect();
            if let Some(states) =
                crate::kernels::lstm_recurrence(self.project(x.clone()), self.weight_hh.val(), Some(&lengths), rules)
            {
                return states;
            }
        }
        let reverse = reversal_index(mask);
        permute_time(self.forward(permute_time(x, reverse.clone()), rules), reverse)
    }

    /// `x W_ih + b_ih + b_hh`, `[batch, time, 4h]`: every step's input to the
    /// gates, in one product.
    fn project(&self, x: Tensor<B, 3>) -> Tensor<B, 3> {
        let bias = self.bias_ih.val() + self.bias_hh.val();
        // The fused dense layer adds the bias inside its product (burn's
        // broadcast add is another pass over `[batch, time, 4h]`).
        if let Some(projected) = crate::kernels::dense(x.clone(), self.weight_ih.val(), Some(bias.clone())) {
            return projected;
        }
        let [batch, time, d_input] = x.dims();
        let hidden = self.hidden_size();
        x.reshape([batch * time, d_input]).matmul(self.weight_ih.val()).reshape([batch, time, 4 * hidden])
            + bias.reshape([1, 1, 4 * hidden])
    }
}

/// Every hidden state of the recurrence over `projected` (`[batch, time, 4h]`,
/// inputs already multiplied by `W_ih`, biases added) with `weight_hh`
/// (`[h, 4h]`): the fused kernel where the backend has one
/// (`crate::kernels`, with DeepLift's rules too), else [`recurrence_ops`].
fn recurrence<B: Backend>(projected: Tensor<B, 3>, weight_hh: Tensor<B, 2>, rules: Rules) -> Tensor<B, 3> {
    if let Some(states) = crate::kernels::lstm_recurrence(projected.clone(), weight_hh.clone(), None, rules) {
        return states;
    }
    recurrence_ops(projected, weight_hh, rules)
}

/// [`recurrence`] in burn's operations, a few per time step.
fn recurrence_ops<B: Backend>(projected: Tensor<B, 3>, weight_hh: Tensor<B, 2>, rules: Rules) -> Tensor<B, 3> {
    let [batch, time, width] = projected.dims();
    let hidden = width / 4;
    let device = projected.device();
    let mut h = Tensor::<B, 2>::zeros([batch, hidden], &device);
    let mut c = Tensor::<B, 2>::zeros([batch, hidden], &device);
    let mut outputs = Vec::with_capacity(time);
    for input in time_steps(projected) {
        let gates = input + h.matmul(weight_hh.clone());
        // One sigmoid over all four blocks (the `g` block's is unused) costs
        // less than four small activations.
        let sig = rules.sigmoid(gates.clone());
        let i = sig.clone().slice([0..batch, 0..hidden]);
        let f = sig.clone().slice([0..batch, hidden..2 * hidden]);
        let o = sig.slice([0..batch, 3 * hidden..4 * hidden]);
        let g = rules.tanh(gates.slice([0..batch, 2 * hidden..3 * hidden]));
        c = rules.mul(f, c) + rules.mul(i, g);
        h = rules.mul(o, rules.tanh(c.clone()));
        outputs.push(h.clone());
    }
    Tensor::stack(outputs, 1)
}

/// The steps of a `[batch, time, width]` sequence, each `[batch, width]`,
/// split off by halving. Slicing each step off the whole would cost O(time²)
/// in training: the backward of a slice allocates the full shape of what it
/// was cut from and adds it to that tensor's gradient. Halving cuts each step
/// from a tensor half its parent's size, so the backward touches
/// O(time · log time) elements (a 500-word review: 18 × time, not 500 × time).
fn time_steps<B: Backend>(sequence: Tensor<B, 3>) -> Vec<Tensor<B, 2>> {
    fn halve<B: Backend>(x: Tensor<B, 3>, steps: &mut Vec<Tensor<B, 2>>) {
        let [batch, time, width] = x.dims();
        match time {
            0 => {}
            1 => steps.push(x.reshape([batch, width])),
            _ => {
                let half = time / 2;
                halve(x.clone().slice([0..batch, 0..half, 0..width]), steps);
                halve(x.slice([0..batch, half..time, 0..width]), steps);
            }
        }
    }
    let mut steps = Vec::with_capacity(sequence.dims()[1]);
    halve(sequence, &mut steps);
    steps
}

/// For each sequence, the permutation of time steps that reverses its real
/// tokens and leaves its padding in place (an involution): running a forward
/// recurrence over the permuted input is the backward direction, exactly,
/// on right-padded batches.
fn reversal_index<B: Backend>(mask: Tensor<B, 2>) -> Tensor<B, 2, Int> {
    let [batch, time] = mask.dims();
    let device = mask.device();
    let lengths = mask.sum_dim(1).int(); // [batch, 1]
    let positions = Tensor::<B, 1, Int>::arange(0..time as i64, &device).reshape([1, time]).expand([batch, time]);
    let reversed = lengths.clone().expand([batch, time]) - positions.clone() - 1;
    reversed.mask_where(positions.clone().greater_equal(lengths.expand([batch, time])), positions)
}

/// Applies a `[batch, time]` time permutation to `[batch, time, width]` features.
pub(crate) fn permute_time<B: Backend>(x: Tensor<B, 3>, index: Tensor<B, 2, Int>) -> Tensor<B, 3> {
    let [batch, time, width] = x.dims();
    x.gather(1, index.reshape([batch, time, 1]).expand([batch, time, width]))
}

/// Keys-only additive attention (Bahdanau et al. 2014 without a query).
#[derive(Module, Debug)]
pub struct AdditiveAttention<B: Backend> {
    pub projection: burn::nn::Linear<B>,
    pub scorer: burn::nn::Linear<B>,
}

impl<B: Backend> AdditiveAttention<B> {
    /// Weights `[batch, time]` summing to 1 over real tokens; exactly 0 on padding.
    pub fn weights(&self, keys: Tensor<B, 3>, mask: Tensor<B, 2>, rules: Rules) -> Tensor<B, 2> {
        let [batch, time, _] = keys.dims();
        let scores = at_every_position(&self.scorer, rules.tanh(at_every_position(&self.projection, keys)))
            .reshape([batch, time]);
        let padding = mask.clone().lower_elem(0.5);
        rules.softmax(scores.mask_fill(padding, -1.0e9), 1) * mask
    }
}

#[derive(Module, Debug)]
pub struct BiLstmClassifier<B: Backend> {
    pub embeddings: burn::nn::Embedding<B>,
    pub lstm_forward: LstmDirection<B>,
    pub lstm_backward: LstmDirection<B>,
    pub attention: AdditiveAttention<B>,
    /// `None` where `mlp_size` is 0: the context goes straight to `output`.
    pub hidden: Option<burn::nn::Linear<B>>,
    pub output: burn::nn::Linear<B>,
    /// Dropout probability (training only).
    pub dropout: f64,
}

impl<B: Backend> BiLstmClassifier<B> {
    /// Sets the `[PAD]` row to zero, as PyTorch's `padding_idx` does
    /// ([`crate::spec::PadEmbedding::Zero`]). The row still takes optimiser
    /// steps, but the mask gives it no gradient, so only weight decay (which
    /// leaves zero at zero) would touch it.
    pub fn with_zero_pad_row(mut self, pad_id: u32) -> Self {
        let [_, dim] = self.embeddings.weight.dims();
        let pad = pad_id as usize;
        self.embeddings.weight = self.embeddings.weight.map(|w| {
            let device = w.device();
            // Detached into a new leaf: the result of `slice_assign` is a node
            // of the graph, and a parameter that is not a leaf gets no gradient,
            // so the optimiser would never move the embeddings.
            w.slice_assign([pad..pad + 1, 0..dim], Tensor::zeros([1, dim], &device)).detach().require_grad()
        });
        self
    }

    /// A freshly initialised model; `embeddings`, if given, replaces the random
    /// embedding rows (e.g. GloVe vectors), one `embedding_dim` row per vocabulary id.
    pub fn new(config: &BiLstmConfig, rng: &mut ChaCha8Rng, pretrained: Option<Vec<f32>>, device: &B::Device) -> Self {
        let BiLstmConfig {
            vocab_size,
            embedding_dim,
            hidden_size,
            attention_size,
            mlp_size,
            num_outputs,
            dropout,
            pad_id: _, // drawn like every other row; see `with_zero_pad_row`
        } = *config;
        let mut rngs = (0..6).map(|_| init::fork(rng)).collect::<Vec<_>>().into_iter();
        let mut next = || rngs.next().expect("six sub-streams");
        let weight = match pretrained {
            Some(values) => {
                Param::from_tensor(Tensor::from_data(TensorData::new(values, [vocab_size, embedding_dim]), device))
            }
            None => init::normal(&mut next(), [vocab_size, embedding_dim], 1.0, device),
        };
        let encoder = 2 * hidden_size;
        Self {
            embeddings: burn::nn::Embedding { weight },
            lstm_forward: LstmDirection::new(&mut next(), embedding_dim, hidden_size, device),
            lstm_backward: LstmDirection::new(&mut next(), embedding_dim, hidden_size, device),
            attention: AdditiveAttention {
                projection: init::linear(&mut next(), encoder, attention_size, true, device),
                scorer: init::linear(&mut next(), attention_size, 1, false, device),
            },
            // Its stream is drawn either way, so that the other layers start
            // where they would with a hidden layer.
            hidden: {
                let mut r = next();
                (mlp_size > 0).then(|| init::linear(&mut r, encoder, mlp_size, true, device))
            },
            output: init::linear(rng, if mlp_size > 0 { mlp_size } else { encoder }, num_outputs, true, device),
            dropout,
        }
    }

    /// The embedding matrix kept as it is while the rest trains (Zhou et
    /// al.'s code trains on fixed pretrained vectors): it takes no gradient,
    /// so no optimiser step or weight decay moves it.
    pub fn with_frozen_embeddings(mut self) -> Self {
        self.embeddings.weight = self.embeddings.weight.set_require_grad(false);
        self
    }

    /// Logits and attention weights. With `noise`, applies dropout (training).
    pub fn forward_with(
        &self,
        embeddings: Tensor<B, 3>,
        mask: Tensor<B, 2>,
        noise: Option<&mut Noise>,
    ) -> (Tensor<B, 2>, Tensor<B, 2>) {
        self.forward_under(embeddings, mask, noise, Rules::Plain)
    }

    /// [`Self::forward_with`] with its nonlinearities differentiated by `rules`.
    pub fn forward_under(
        &self,
        embeddings: Tensor<B, 3>,
        mask: Tensor<B, 2>,
        mut noise: Option<&mut Noise>,
        rules: Rules,
    ) -> (Tensor<B, 2>, Tensor<B, 2>) {
        let states = self.encode(embeddings, mask.clone(), noise.as_deref_mut(), rules);
        let alpha = self.attention.weights(states.clone(), mask, rules);
        (self.head(states, alpha.clone(), noise, rules), alpha)
    }

    /// The BiLSTM states at every token, `[batch, time, 2 * hidden]` (forward ⧺ backward).
    pub fn encode(
        &self,
        embeddings: Tensor<B, 3>,
        mask: Tensor<B, 2>,
        mut noise: Option<&mut Noise>,
        rules: Rules,
    ) -> Tensor<B, 3> {
        let embeddings = dropout(embeddings, self.dropout, noise.as_deref_mut());
        let forward = self.lstm_forward.forward(embeddings.clone(), rules);
        let backward = self.lstm_backward.reversed(embeddings, mask, rules);
        dropout(Tensor::cat(vec![forward, backward], 2), self.dropout, noise)
    }

    /// Logits from the states and their attention weights `[batch, time]`:
    /// context `Σ_t α_t h_t` → hidden layer (ReLU), if any → output.
    pub fn head(
        &self,
        states: Tensor<B, 3>,
        alpha: Tensor<B, 2>,
        noise: Option<&mut Noise>,
        rules: Rules,
    ) -> Tensor<B, 2> {
        let context = rules.weighted_sum(states, alpha);
        match &self.hidden {
            Some(hidden) => self.output.forward(dropout(rules.relu(hidden.forward(context)), self.dropout, noise)),
            None => self.output.forward(context),
        }
    }
}

pub(crate) fn dropout<B: Backend, const D: usize>(x: Tensor<B, D>, p: f64, noise: Option<&mut Noise>) -> Tensor<B, D> {
    match noise {
        Some(noise) => noise.dropout(x, p),
        None => x,
    }
}

impl<B: Backend> Classifier<B> for BiLstmClassifier<B> {
    fn embed(&self, ids: Tensor<B, 2, Int>) -> Tensor<B, 3> {
        self.embeddings.forward(ids)
    }

    fn logits_from_embeddings(&self, embeddings: Tensor<B, 3>, mask: Tensor<B, 2>) -> Tensor<B, 2> {
        self.forward_with(embeddings, mask, None).0
    }

    fn num_outputs(&self) -> usize {
        self.output.weight.dims()[1]
    }

    fn attention_scores(
        &self,
        embeddings: Tensor<B, 3>,
        mask: Tensor<B, 2>,
        view: AttentionView,
    ) -> Option<Tensor<B, 2>> {
        match view {
            AttentionView::Additive => {
                let states = self.encode(embeddings, mask.clone(), None, Rules::Plain);
                Some(self.attention.weights(states, mask, Rules::Plain))
            }
            AttentionView::LastLayer | AttentionView::AllLayers => None,
        }
    }

    fn attention_leaf(&self, embeddings: Tensor<B, 3>, mask: Tensor<B, 2>) -> Option<AttentionLeaf<B>> {
        let states = self.encode(embeddings, mask.clone(), None, Rules::Plain);
        let [batch, time, _] = states.dims();
        let alpha = self.attention.weights(states.clone(), mask, Rules::Plain);
        let probs = alpha.reshape([batch, 1, 1, time]).detach().require_grad();
        let logits = self.head(states, probs.clone().reshape([batch, time]), None, Rules::Plain);
        Some(AttentionLeaf { probs, logits })
    }

    fn deeplift_logits(&self, embeddings: Tensor<B, 3>, mask: Tensor<B, 2>) -> Option<Tensor<B, 2>> {
        Some(self.forward_under(embeddings, mask, None, Rules::Rescale).0)
    }
}

impl<B: Backend> Trainable<B> for BiLstmClassifier<B> {
    fn logits_train(&self, batch: &TokenBatch<B>, noise: &mut Noise) -> Tensor<B, 2> {
        self.forward_with(self.embed(batch.ids.clone()), batch.mask.clone(), Some(noise)).0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TokenBatch;
    use burn::backend::Flex;
    use rand::SeedableRng;

    /// The backward direction's permutation for rows of `lengths` real
    /// tokens in `time` positions: what the operations need (the kernel
    /// takes the lengths themselves).
    fn reversal_of<B: Backend>(lengths: &[usize], time: usize, device: &B::Device) -> Tensor<B, 2, Int> {
        let mask: Vec<f32> =
            lengths.iter().flat_map(|&l| (0..time).map(move |t| if t < l { 1.0 } else { 0.0 })).collect();
        reversal_index(Tensor::<B, 1>::from_floats(mask.as_slice(), device).reshape([lengths.len(), time]))
    }

    type B = Flex;

    fn tiny() -> BiLstmConfig {
        BiLstmConfig {
            vocab_size: 20,
            embedding_dim: 8,
            hidden_size: 6,
            attention_size: 5,
            mlp_size: 7,
            num_outputs: 1,
            dropout: 0.5,
            pad_id: 0,
        }
    }

    fn model(seed: u64) -> BiLstmClassifier<B> {
        BiLstmClassifier::new(&tiny(), &mut ChaCha8Rng::seed_from_u64(seed), None, &Default::default())
    }

    fn values<const D: usize>(t: Tensor<B, D>) -> Vec<f32> {
        t.into_data().to_vec().unwrap()
    }

    /// The fused recurrence (`crate::kernels`) computes what burn's operations
    /// compute, values and gradients (of the inputs and the recurrent
    /// weights), up to float rounding, in both directions; and without
    /// autodiff too.
    #[test]
    fn the_fused_recurrence_matches_the_operations() {
        use rand::Rng;
        type A = burn::backend::Autodiff<Flex>;
        let device = Default::default();
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        // The last shape is past the kernel's threshold for splitting rows over threads.
        for (batch, time, hidden) in [(1, 1, 3), (3, 7, 5), (4, 12, 16), (130, 4, 64)] {
            let mut draw = |n: usize| -> Vec<f32> { (0..n).map(|_| rng.random_range(-1.5f32..1.5)).collect() };
            let (inputs, weights, probe) =
                (draw(batch * time * 4 * hidden), draw(hidden * 4 * hidden), draw(batch * time * hidden));
            // Every length from 0 to the whole row, and the backward direction's
            // permutation that the operations need.
            let lengths: Vec<usize> = (0..batch).map(|row| (row * 5 + time) % (time + 1)).collect();
            let reverse = reversal_of::<A>(&lengths, time, &device);
            for reversed in [false, true] {
                let order = reversed.then_some(lengths.as_slice());
                // (states, input gradients, weight gradients if tracked)
                let run = |fused: bool, track_weights: bool| {
                    let projected = Tensor::<A, 1>::from_floats(inputs.as_slice(), &device)
                        .reshape([batch, time, 4 * hidden])
                        .require_grad();
                    let weight_hh =
                        Tensor::<A, 1>::from_floats(weights.as_slice(), &device).reshape([hidden, 4 * hidden]);
                    let weight_hh = if track_weights { weight_hh.require_grad() } else { weight_hh };
                    let probe = Tensor::<A, 1>::from_floats(probe.as_slice(), &device).reshape([batch, time, hidden]);
                    let states = match (fused, reversed) {
                        (true, _) => {
                            crate::kernels::lstm_recurrence(projected.clone(), weight_hh.clone(), order, Rules::Plain)
                                .expect("a kernel on Flex")
                        }
                        (false, false) => recurrence_ops(projected.clone(), weight_hh.clone(), Rules::Plain),
                        (false, true) => {
                            let permuted = permute_time(projected.clone(), reverse.clone());
                            permute_time(recurrence_ops(permuted, weight_hh.clone(), Rules::Plain), reverse.clone())
                        }
                    };
                    let grads = (states.clone() * probe).sum().backward();
                    let flat = |t: Tensor<burn::backend::Flex, 3>| -> Vec<f32> { t.into_data().to_vec().unwrap() };
                    let weight_grad = weight_hh.grad(&grads).map(|g| flat(g.reshape([1, hidden, 4 * hidden])));
                    (flat(states.inner()), flat(projected.grad(&grads).unwrap()), weight_grad)
                };
                let (fused, ops) = (run(true, true), run(false, true));
                let close = |a: &[f32], b: &[f32], what: &str| {
                    assert_eq!(a.len(), b.len());
                    for (x, y) in a.iter().zip(b) {
                        assert!(
                            (x - y).abs() <= 1e-5 * (1.0 + y.abs()),
                            "{what} ({batch}, {time}, {hidden}, reversed {reversed}): {x} vs {y}"
                        );
                    }
                };
                close(&fused.0, &ops.0, "states");
                close(&fused.1, &ops.1, "input gradients");
                close(fused.2.as_deref().unwrap(), ops.2.as_deref().unwrap(), "weight gradients");
                // Attribution's case: the weights untracked (the kernel skips
                // dW_hh); the states and input gradients are the same, bit for bit.
                let untracked = run(true, false);
                assert!(untracked.2.is_none());
                assert_eq!((&untracked.0, &untracked.1), (&fused.0, &fused.1), "weights untracked");
                // Inference (no autodiff) through the same kernel.
                let plain = crate::kernels::lstm_recurrence(
                    Tensor::<B, 1>::from_floats(inputs.as_slice(), &device).reshape([batch, time, 4 * hidden]),
                    Tensor::<B, 1>::from_floats(weights.as_slice(), &device).reshape([hidden, 4 * hidden]),
                    order,
                    Rules::Plain,
                )
                .expect("a kernel on Flex");
                assert_eq!(values(plain), fused.0, "states without autodiff");
            }
        }
    }

    /// Under DeepLift's rules the fused recurrence gives the states and the
    /// multipliers burn's operations give through `Rules::Rescale`, in both
    /// directions, up to float rounding (the secants divide differences of
    /// activations, so their rounding is the activations' over `Δx`). One
    /// pair of rows is its own reference, so the midpoint slopes are used
    /// there.
    #[test]
    fn the_fused_recurrence_gives_deeplifts_multipliers() {
        use rand::Rng;
        type A = burn::backend::Autodiff<Flex>;
        let device = Default::default();
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for (pairs, time, hidden) in [(1, 1, 3), (3, 6, 5), (70, 4, 64)] {
            let batch = 2 * pairs;
            let mut draw = |n: usize| -> Vec<f32> { (0..n).map(|_| rng.random_range(-1.5f32..1.5)).collect() };
            let width = time * 4 * hidden;
            let mut inputs = draw(batch * width);
            // The last pair: the reference equals the input.
            let last = inputs[(pairs - 1) * width..pairs * width].to_vec();
            inputs[(batch - 1) * width..].copy_from_slice(&last);
            let (weights, probe) = (draw(hidden * 4 * hidden), draw(batch * time * hidden));
            let half: Vec<usize> = (0..pairs).map(|row| (row * 5 + time) % (time + 1)).collect();
            let lengths: Vec<usize> = half.iter().chain(&half).copied().collect();
            let reverse = reversal_of::<A>(&lengths, time, &device);
            for reversed in [false, true] {
                let order = reversed.then_some(lengths.as_slice());
                // (states, input multipliers) under `rules`, fused or through the operations.
                let run = |fused: bool, rules: Rules| {
                    let projected = Tensor::<A, 1>::from_floats(inputs.as_slice(), &device)
                        .reshape([batch, time, 4 * hidden])
                        .require_grad();
                    let weight_hh =
                        Tensor::<A, 1>::from_floats(weights.as_slice(), &device).reshape([hidden, 4 * hidden]);
                    let states = match (fused, reversed) {
                        (true, _) => {
                            crate::kernels::lstm_recurrence(projected.clone(), weight_hh.clone(), order, rules)
                                .expect("a kernel on Flex")
                        }
                        (false, false) => recurrence_ops(projected.clone(), weight_hh.clone(), rules),
                        (false, true) => {
                            let permuted = permute_time(projected.clone(), reverse.clone());
                            permute_time(recurrence_ops(permuted, weight_hh.clone(), rules), reverse.clone())
                        }
                    };
                    let probe = Tensor::<A, 1>::from_floats(probe.as_slice(), &device).reshape([batch, time, hidden]);
                    let grads = (states.clone() * probe).sum().backward();
                    let flat = |t: Tensor<Flex, 3>| -> Vec<f32> { t.into_data().to_vec().unwrap() };
                    (flat(states.inner()), flat(projected.grad(&grads).unwrap()))
                };
                let (fused, ops) = (run(true, Rules::Rescale), run(false, Rules::Rescale));
                for (what, a, b) in [("states", &fused.0, &ops.0), ("multipliers", &fused.1, &ops.1)] {
                    assert_eq!(a.len(), b.len());
                    for (x, y) in a.iter().zip(b) {
                        assert!(
                            (x - y).abs() <= 1e-4 * (1.0 + y.abs()),
                            "{what} ({batch}, {time}, {hidden}, reversed {reversed}): {x} vs {y}"
                        );
                    }
                }
                if pairs > 1 {
                    assert_ne!(fused.1, run(true, Rules::Plain).1, "multipliers, not gradients");
                }
            }
        }
    }

    /// The backward direction through the kernel's reversed order is, bit for
    /// bit, the forward order over each row's reversed tokens, reversed back
    /// (what the model computed before the kernel could reverse): values,
    /// input gradients and weight gradients.
    #[test]
    fn the_kernels_reversed_order_is_the_permuted_forward_order_exactly() {
        use rand::Rng;
        type A = burn::backend::Autodiff<Flex>;
        let device = Default::default();
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        for (batch, time, hidden) in [(5, 9, 8), (130, 6, 64)] {
            let mut draw = |n: usize| -> Vec<f32> { (0..n).map(|_| rng.random_range(-1.5f32..1.5)).collect() };
            let (inputs, weights, probe) =
                (draw(batch * time * 4 * hidden), draw(hidden * 4 * hidden), draw(batch * time * hidden));
            let lengths: Vec<usize> = (0..batch).map(|row| (row * 3 + 2) % (time + 1)).collect();
            let reverse = reversal_of::<A>(&lengths, time, &device);
            let run = |in_kernel: bool| {
                let projected = Tensor::<A, 1>::from_floats(inputs.as_slice(), &device)
                    .reshape([batch, time, 4 * hidden])
                    .require_grad();
                let weight_hh = Tensor::<A, 1>::from_floats(weights.as_slice(), &device)
                    .reshape([hidden, 4 * hidden])
                    .require_grad();
                let states = if in_kernel {
                    crate::kernels::lstm_recurrence(projected.clone(), weight_hh.clone(), Some(&lengths), Rules::Plain)
                } else {
                    let permuted = permute_time(projected.clone(), reverse.clone());
                    crate::kernels::lstm_recurrence(permuted, weight_hh.clone(), None, Rules::Plain)
                        .map(|states| permute_time(states, reverse.clone()))
                }
                .expect("a kernel on Flex");
                let probe = Tensor::<A, 1>::from_floats(probe.as_slice(), &device).reshape([batch, time, hidden]);
                let grads = (states.clone() * probe).sum().backward();
                (
                    states.inner().into_data().to_vec::<f32>().unwrap(),
                    projected.grad(&grads).unwrap().into_data().to_vec::<f32>().unwrap(),
                    weight_hh.grad(&grads).unwrap().into_data().to_vec::<f32>().unwrap(),
                )
            };
            assert_eq!(run(true), run(false), "({batch}, {time}, {hidden})");
        }
    }

    #[test]
    fn time_steps_are_the_steps_in_order_and_carry_their_gradients() {
        type A = burn::backend::Autodiff<Flex>;
        let device = Default::default();
        for time in [1, 2, 5, 8, 13] {
            let data: Vec<f32> = (0..2 * time * 3).map(|v| v as f32).collect();
            let x = Tensor::<A, 1>::from_floats(data.as_slice(), &device).reshape([2, time, 3]).require_grad();
            let steps = time_steps(x.clone());
            assert_eq!(steps.len(), time);
            for (t, step) in steps.iter().enumerate() {
                let expected = x.clone().slice([0..2, t..t + 1, 0..3]).reshape([2, 3]);
                assert_eq!(
                    step.clone().into_data().to_vec::<f32>().unwrap(),
                    expected.into_data().to_vec::<f32>().unwrap()
                );
            }
            // d/dx of Σ_t (t + 1) · Σ step_t is t + 1 at every element of step t.
            let loss =
                steps.into_iter().enumerate().map(|(t, s)| s.sum() * (t as f32 + 1.0)).reduce(|a, b| a + b).unwrap();
            let grads = loss.backward();
            let grad: Vec<f32> = x.grad(&grads).unwrap().into_data().to_vec().unwrap();
            let expected: Vec<f32> = (0..2 * time * 3).map(|i| ((i / 3) % time + 1) as f32).collect();
            assert_eq!(grad, expected, "time {time}");
        }
    }

    #[test]
    fn padding_does_not_change_logits() {
        let m = model(1);
        let device = Default::default();
        let alone = TokenBatch::<B>::from_sequences(&[&[3, 4, 5]], 0, &device);
        let padded = TokenBatch::<B>::from_sequences(&[&[3, 4, 5], &[6, 7, 8, 9, 10, 11, 12]], 0, &device);
        let a = values(m.logits(&alone));
        let b = values(m.logits(&padded));
        assert!((a[0] - b[0]).abs() < 1e-6, "{a:?} vs {b:?}");
    }

    #[test]
    fn attention_sums_to_one_over_real_tokens() {
        let m = model(2);
        let device = Default::default();
        let batch = TokenBatch::<B>::from_sequences(&[&[3, 4], &[5, 6, 7, 8]], 0, &device);
        let (_, alpha) = m.forward_with(m.embed(batch.ids.clone()), batch.mask.clone(), None);
        let alpha = values(alpha);
        assert!((alpha[0] + alpha[1] - 1.0).abs() < 1e-5);
        assert_eq!(&alpha[2..4], &[0.0, 0.0]);
        assert!((alpha[4..8].iter().sum::<f32>() - 1.0).abs() < 1e-5);
    }

    #[test]
    fn same_seed_same_weights() {
        let device = Default::default();
        let batch = TokenBatch::<B>::from_sequences(&[&[1, 2, 3]], 0, &device);
        assert_eq!(values(model(7).logits(&batch)), values(model(7).logits(&batch)));
        assert_ne!(values(model(7).logits(&batch)), values(model(8).logits(&batch)));
    }

    #[test]
    fn pad_row_is_drawn_or_zeroed_and_other_rows_stay() {
        let rows = |m: &BiLstmClassifier<B>| values(m.embeddings.weight.val());
        let learned = rows(&model(7));
        let zeroed = rows(&model(7).with_zero_pad_row(0));
        assert!(learned[..8].iter().all(|&v| v != 0.0), "{:?}", &learned[..8]);
        assert!(zeroed[..8].iter().all(|&v| v == 0.0));
        assert_eq!(learned[8..], zeroed[8..]);
        // Either way, padding positions never reach the output.
        let device = Default::default();
        let padded = TokenBatch::<B>::from_sequences(&[&[3, 4, 5], &[6, 7, 8, 9, 10]], 0, &device);
        let (a, b) = (values(model(7).logits(&padded)), values(model(7).with_zero_pad_row(0).logits(&padded)));
        assert_eq!(a, b);
    }

    /// Every parameter, the embeddings included, is a leaf that gets a
    /// gradient, with a drawn or a zeroed `[PAD]` row alike; and the `[PAD]`
    /// row's value changes no other gradient.
    #[test]
    fn every_parameter_trains_whatever_the_pad_row() {
        type A = burn::backend::Autodiff<B>;
        let device = Default::default();
        let grads = |m: BiLstmClassifier<A>| -> Vec<Vec<f32>> {
            let batch = TokenBatch::<A>::from_sequences(&[&[3, 4, 5], &[6, 7, 8, 9, 10, 11, 12]], 0, &device);
            let g = m.logits(&batch).sum().backward();
            let grad = |p: &Param<Tensor<A, 2>>| -> Vec<f32> {
                p.grad(&g).expect("a gradient for every parameter").into_data().to_vec().unwrap()
            };
            vec![
                grad(&m.embeddings.weight),
                grad(&m.lstm_forward.weight_ih),
                grad(&m.lstm_backward.weight_hh),
                grad(&m.attention.projection.weight),
                grad(&m.hidden.as_ref().expect("a hidden layer").weight),
                grad(&m.output.weight),
            ]
        };
        let fresh = || BiLstmClassifier::<A>::new(&tiny(), &mut ChaCha8Rng::seed_from_u64(3), None, &device);
        for model in [fresh(), fresh().with_zero_pad_row(0)] {
            let batch = TokenBatch::<A>::from_sequences(&[&[3, 4, 5]], 0, &device);
            let g = model.logits(&batch).sum().backward();
            assert_eq!(crate::model::params_without_grad(&model, &g).0, 0);
        }
        let (learned, zeroed) = (grads(fresh()), grads(fresh().with_zero_pad_row(0)));
        assert!(learned[0][8..].iter().any(|&g| g != 0.0), "the embeddings get a gradient");
        assert!(learned[0][..8].iter().all(|&g| g == 0.0), "padding gives [PAD] none");
        assert_eq!(learned, zeroed);
    }

    #[test]
    fn order_matters_both_directions() {
        // A BiLSTM must distinguish "a b" from "b a" (the op shortcut relies on it).
        let m = model(3);
        let device = Default::default();
        let ab = values(m.logits(&TokenBatch::<B>::from_sequences(&[&[3, 4]], 0, &device)));
        let ba = values(m.logits(&TokenBatch::<B>::from_sequences(&[&[4, 3]], 0, &device)));
        assert!((ab[0] - ba[0]).abs() > 1e-7);
    }

    /// `mlp_size = 0`: no hidden layer, the context straight to the logits
    /// (Zhou et al.'s model); every other layer is drawn as with one, and a
    /// saved model loads back with the same logits.
    #[test]
    fn a_model_without_a_hidden_layer_maps_the_context_to_the_logits() {
        let device = Default::default();
        let config = BiLstmConfig { mlp_size: 0, ..tiny() };
        let linear = BiLstmClassifier::<B>::new(&config, &mut ChaCha8Rng::seed_from_u64(5), None, &device);
        let with_mlp = BiLstmClassifier::<B>::new(&tiny(), &mut ChaCha8Rng::seed_from_u64(5), None, &device);
        assert!(linear.hidden.is_none());
        assert_eq!(linear.output.weight.dims(), [2 * config.hidden_size, config.num_outputs]);
        assert_eq!(
            values(linear.attention.projection.weight.val()),
            values(with_mlp.attention.projection.weight.val())
        );
        // The logits are the output layer applied to the attention context.
        let batch = TokenBatch::<B>::from_sequences(&[&[3, 4, 5], &[6, 7]], 0, &device);
        let (logits, alpha) = linear.forward_with(linear.embed(batch.ids.clone()), batch.mask.clone(), None);
        let states = linear.encode(linear.embed(batch.ids.clone()), batch.mask.clone(), None, Rules::Plain);
        let [b, t, w] = states.dims();
        let context = (states * alpha.reshape([b, t, 1])).sum_dim(1).reshape([b, w]);
        let expected = linear.output.forward(context);
        for (x, y) in values(logits.clone()).iter().zip(values(expected)) {
            assert!((x - y).abs() < 1e-5, "{x} vs {y}");
        }
        let dir = tempfile::tempdir().unwrap();
        let vocab = crate::text::vocab::WordVocab::build(["a b c"], &[], 1, 10, true);
        saved::save(dir.path(), &linear, &config, 16, &vocab).unwrap();
        let (loaded, _) = saved::load::<B>(dir.path(), &config, &device).unwrap();
        assert_eq!(values(loaded.logits(&batch)), values(logits));
    }
}
