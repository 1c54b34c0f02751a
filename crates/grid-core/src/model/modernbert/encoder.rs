//! The ModernBERT encoder and its sequence-classification head, computed as
//! `transformers`' `ModernBertForSequenceClassification` in eval mode (the
//! eager attention path: padded batches, additive masks).

use burn::nn::{Embedding, EmbeddingConfig, LayerNorm, LayerNormConfig, Linear, LinearConfig};
use burn::prelude::*;
use burn::tensor::activation::{gelu, softmax};

use super::config::{AttentionKind, ModernBertConfig, Pooling};
use crate::model::noise::Noise;

/// Added to the scores of the keys a query may not see.
const HIDDEN: f32 = -1.0e9;

#[derive(Module, Debug)]
pub struct Embeddings<B: Backend> {
    pub tok_embeddings: Embedding<B>,
    pub norm: LayerNorm<B>,
}

#[derive(Module, Debug)]
pub struct Attention<B: Backend> {
    /// Queries, keys and values in one projection, in that order.
    pub wqkv: Linear<B>,
    pub wo: Linear<B>,
}

#[derive(Module, Debug)]
pub struct Mlp<B: Backend> {
    /// The GeGLU's input and gate, in that order.
    pub wi: Linear<B>,
    pub wo: Linear<B>,
}

#[derive(Module, Debug)]
pub struct Layer<B: Backend> {
    /// Absent in the first layer, whose input is the embeddings' norm.
    pub attn_norm: Option<LayerNorm<B>>,
    pub attn: Attention<B>,
    pub mlp_norm: LayerNorm<B>,
    pub mlp: Mlp<B>,
}

#[derive(Module, Debug)]
pub struct ModernBertModel<B: Backend> {
    pub embeddings: Embeddings<B>,
    pub layers: Vec<Layer<B>>,
    pub final_norm: LayerNorm<B>,
}

#[derive(Module, Debug)]
pub struct Head<B: Backend> {
    pub dense: Linear<B>,
    pub norm: LayerNorm<B>,
}

/// `ModernBertForSequenceClassification`.
#[derive(Module, Debug)]
pub struct ModernBertClassifier<B: Backend> {
    pub model: ModernBertModel<B>,
    pub head: Head<B>,
    pub classifier: Linear<B>,
    #[module(skip)]
    config: ModernBertConfig,
}

impl<B: Backend> ModernBertClassifier<B> {
    /// The modules with burn's default initialisation (a checkpoint replaces
    /// every weight; [`super::load`]).
    pub fn new(config: &ModernBertConfig, num_outputs: usize, device: &B::Device) -> Self {
        let h = config.hidden_size;
        let norm = || LayerNormConfig::new(h).with_epsilon(config.norm_eps).with_bias(config.norm_bias).init(device);
        let linear = |i: usize, o: usize, bias: bool| LinearConfig::new(i, o).with_bias(bias).init(device);
        let layers = (0..config.num_hidden_layers)
            .map(|l| Layer {
                attn_norm: (l > 0).then(norm),
                attn: Attention {
                    wqkv: linear(h, 3 * h, config.attention_bias),
                    wo: linear(h, h, config.attention_bias),
                },
                mlp_norm: norm(),
                mlp: Mlp {
                    wi: linear(h, 2 * config.intermediate_size, config.mlp_bias),
                    wo: linear(config.intermediate_size, h, config.mlp_bias),
                },
            })
            .collect();
        ModernBertClassifier {
            model: ModernBertModel {
                embeddings: Embeddings {
                    tok_embeddings: EmbeddingConfig::new(config.vocab_size, h).init(device),
                    norm: norm(),
                },
                layers,
                final_norm: norm(),
            },
            head: Head { dense: linear(h, h, config.classifier_bias), norm: norm() },
            classifier: linear(h, num_outputs, true),
            config: config.clone(),
        }
    }

    pub fn config(&self) -> &ModernBertConfig {
        &self.config
    }

    pub(crate) fn config_mut(&mut self) -> &mut ModernBertConfig {
        &mut self.config
    }

    /// Every dropout set to `p` (a grid's `dropout` key).
    pub fn with_dropout(mut self, p: f64) -> Self {
        self.config.set_dropout(p);
        self
    }

    /// `[batch, time, hidden]` token embeddings of `ids` (before the norm):
    /// what salience methods perturb.
    pub fn embed(&self, ids: Tensor<B, 2, Int>) -> Tensor<B, 3> {
        self.model.embeddings.tok_embeddings.forward(ids)
    }

    /// The last hidden states of token embeddings `embedded` under padding
    /// `mask` (`[batch, time]`, 1 at real tokens).
    pub fn encode(&self, embedded: Tensor<B, 3>, mask: Tensor<B, 2>) -> Tensor<B, 3> {
        self.encode_with(embedded, mask, false).0
    }

    /// [`Self::encode`], with every layer's attention probabilities `[batch,
    /// heads, queries, keys]`; `leaf_last` makes the last layer's a leaf of
    /// the autodiff graph (scaled attention differentiates against it).
    pub fn encode_with(
        &self,
        embedded: Tensor<B, 3>,
        mask: Tensor<B, 2>,
        leaf_last: bool,
    ) -> (Tensor<B, 3>, Vec<Tensor<B, 4>>) {
        self.forward(embedded, mask, leaf_last, None)
    }

    /// The encoder; with `noise` (training), each dropout of the config.
    fn forward(
        &self,
        embedded: Tensor<B, 3>,
        mask: Tensor<B, 2>,
        leaf_last: bool,
        mut noise: Option<&mut Noise>,
    ) -> (Tensor<B, 3>, Vec<Tensor<B, 4>>) {
        let [_, time, _] = embedded.dims();
        let device = embedded.device();
        let config = &self.config;
        let mut x =
            dropout(self.model.embeddings.norm.forward(embedded), config.embedding_dropout, noise.as_deref_mut());
        // Keys outside the sequence: hidden from every query.
        let padding = (mask.clone().neg() + 1.0).mul_scalar(HIDDEN).unsqueeze_dim::<3>(1).unsqueeze_dim::<4>(1);
        let last = self.model.layers.len().saturating_sub(1);
        let mut attentions = Vec::with_capacity(self.model.layers.len());
        for (index, layer) in self.model.layers.iter().enumerate() {
            let kind = self.config.attention(index);
            let bias = match kind {
                AttentionKind::Global => padding.clone(),
                AttentionKind::Local { half_window } => padding.clone() + window::<B>(time, half_window, &device),
            };
            let rotary = Rotary::new(time, self.config.head_dim(), self.config.rope_theta(kind), &device);
            let normed = match &layer.attn_norm {
                Some(norm) => norm.forward(x.clone()),
                None => x.clone(),
            };
            let leaf = leaf_last && index == last;
            let (attended, probs) = self.attention(&layer.attn, normed, bias, &rotary, leaf, noise.as_deref_mut());
            attentions.push(probs);
            x = x + attended;
            let mlp = self.mlp(&layer.mlp, layer.mlp_norm.forward(x.clone()), noise.as_deref_mut());
            x = x + mlp;
        }
        (self.model.final_norm.forward(x), attentions)
    }

    /// Logits `[batch, outputs]` from token embeddings.
    pub fn classify(&self, embedded: Tensor<B, 3>, mask: Tensor<B, 2>) -> Tensor<B, 2> {
        let hidden = self.encode(embedded, mask.clone());
        self.head_logits(hidden, mask)
    }

    /// [`Self::classify`] in training mode: every dropout drawn from `noise`.
    pub fn classify_train(&self, embedded: Tensor<B, 3>, mask: Tensor<B, 2>, noise: &mut Noise) -> Tensor<B, 2> {
        let hidden = self.forward(embedded, mask.clone(), false, Some(&mut *noise)).0;
        self.head_logits_with(hidden, mask, Some(noise))
    }

    /// The pooled, headed logits of last hidden states.
    pub fn head_logits(&self, hidden: Tensor<B, 3>, mask: Tensor<B, 2>) -> Tensor<B, 2> {
        self.head_logits_with(hidden, mask, None)
    }

    fn head_logits_with(&self, hidden: Tensor<B, 3>, mask: Tensor<B, 2>, noise: Option<&mut Noise>) -> Tensor<B, 2> {
        let [batch, _, size] = hidden.dims();
        let pooled = match self.config.classifier_pooling {
            Pooling::Cls => hidden.narrow(1, 0, 1).reshape([batch, size]),
            Pooling::Mean => {
                let weights = mask.clone().unsqueeze_dim::<3>(2);
                let summed = (hidden * weights).sum_dim(1).reshape([batch, size]);
                summed / mask.sum_dim(1)
            }
        };
        let pooled = self.head.norm.forward(gelu(self.head.dense.forward(pooled)));
        self.classifier.forward(dropout(pooled, self.config.classifier_dropout, noise))
    }

    fn attention(
        &self,
        attn: &Attention<B>,
        x: Tensor<B, 3>,
        bias: Tensor<B, 4>,
        rotary: &Rotary<B>,
        leaf: bool,
        mut noise: Option<&mut Noise>,
    ) -> (Tensor<B, 3>, Tensor<B, 4>) {
        let [batch, time, size] = x.dims();
        let heads = self.config.num_attention_heads;
        let d = size / heads;
        let qkv = attn.wqkv.forward(x).reshape([batch, time, 3, heads, d]);
        let part = |i: usize| qkv.clone().narrow(2, i, 1).reshape([batch, time, heads, d]).swap_dims(1, 2);
        let (q, k, v) = (rotary.apply(part(0)), rotary.apply(part(1)), part(2));
        let scores = q.matmul(k.swap_dims(2, 3)).mul_scalar((d as f64).powf(-0.5)) + bias;
        let mut probs = softmax(scores, 3);
        if leaf {
            probs = probs.detach().require_grad();
        }
        let p = self.config.attention_dropout;
        let dropped = dropout(probs.clone(), p, noise.as_deref_mut());
        let context = dropped.matmul(v).swap_dims(1, 2).reshape([batch, time, size]);
        (dropout(attn.wo.forward(context), p, noise), probs)
    }

    fn mlp(&self, mlp: &Mlp<B>, x: Tensor<B, 3>, noise: Option<&mut Noise>) -> Tensor<B, 3> {
        let both = mlp.wi.forward(x);
        let inner = self.config.intermediate_size;
        let input = both.clone().narrow(2, 0, inner);
        let gate = both.narrow(2, inner, inner);
        mlp.wo.forward(dropout(gelu(input) * gate, self.config.mlp_dropout, noise))
    }
}

/// Dropout with a mask from the backend's stream (as BERT's), or nothing
/// outside training.
fn dropout<B: Backend, const D: usize>(x: Tensor<B, D>, p: f64, noise: Option<&mut Noise>) -> Tensor<B, D> {
    match noise {
        Some(noise) => noise.dropout_on_device(x, p),
        None => x,
    }
}

/// `[1, 1, time, time]`: 0 where `|query − key| ≤ half_window`, hidden elsewhere.
fn window<B: Backend>(time: usize, half_window: usize, device: &B::Device) -> Tensor<B, 4> {
    let values: Vec<f32> =
        (0..time * time).map(|i| if (i / time).abs_diff(i % time) <= half_window { 0.0 } else { HIDDEN }).collect();
    Tensor::<B, 1>::from_floats(values.as_slice(), device).reshape([1, 1, time, time])
}

/// Rotary position embedding for `time` positions: `x·cos + rotate_half(x)·sin`.
struct Rotary<B: Backend> {
    cos: Tensor<B, 4>,
    sin: Tensor<B, 4>,
}

impl<B: Backend> Rotary<B> {
    fn new(time: usize, head_dim: usize, theta: f64, device: &B::Device) -> Self {
        let half = head_dim / 2;
        let mut cos = Vec::with_capacity(time * head_dim);
        let mut sin = Vec::with_capacity(time * head_dim);
        for position in 0..time {
            for j in 0..head_dim {
                // The same frequencies for both halves (`cat(freqs, freqs)`).
                let inv_freq = 1.0 / theta.powf((2 * (j % half)) as f64 / head_dim as f64);
                // In f32, as transformers computes the angle.
                let angle = position as f32 * inv_freq as f32;
                cos.push(angle.cos());
                sin.push(angle.sin());
            }
        }
        let tensor = |v: Vec<f32>| Tensor::<B, 1>::from_floats(v.as_slice(), device).reshape([1, 1, time, head_dim]);
        Rotary { cos: tensor(cos), sin: tensor(sin) }
    }

    /// `x`: `[batch, heads, time, head_dim]`.
    fn apply(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let d = x.dims()[3];
        let first = x.clone().narrow(3, 0, d / 2);
        let second = x.clone().narrow(3, d / 2, d / 2);
        let rotated = Tensor::cat(vec![second.neg(), first], 3);
        x * self.cos.clone() + rotated * self.sin.clone()
    }
}
