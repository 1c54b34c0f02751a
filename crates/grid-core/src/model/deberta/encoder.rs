//! The DeBERTa-v2/v3 encoder and its sequence-classification head, computed
//! as `transformers`' `DebertaV2ForSequenceClassification` in eval mode.
//!
//! Attention is disentangled (He et al. 2021): besides content-to-content
//! scores `q_i·k_j`, content-to-position `q_i·P^k_{δ(i,j)}` (c2p) and
//! position-to-content `k_j·P^q_{δ(i,j)}` (p2c), where `P` are a shared
//! table of relative-position embeddings projected by the layer's own key and
//! query projections (DeBERTa-v3's `share_att_key`) and `δ(i,j)` the table
//! row of the distance `i − j` (`DebertaConfig::relative_row`). Every score
//! is divided by `√(d·(1 + kinds))`.

use burn::nn::{Embedding, EmbeddingConfig, LayerNorm, LayerNormConfig, Linear, LinearConfig};
use burn::prelude::*;
use burn::tensor::activation::{gelu, softmax};

use super::config::DebertaConfig;
use crate::model::noise::Noise;

/// Added to the scores of the keys a query may not see.
const HIDDEN: f32 = -1.0e9;

#[derive(Module, Debug)]
pub struct Embeddings<B: Backend> {
    pub word_embeddings: Embedding<B>,
    pub position_embeddings: Option<Embedding<B>>,
    pub token_type_embeddings: Option<Embedding<B>>,
    pub embed_proj: Option<Linear<B>>,
    pub layer_norm: LayerNorm<B>,
}

#[derive(Module, Debug)]
pub struct SelfAttention<B: Backend> {
    pub query_proj: Linear<B>,
    pub key_proj: Linear<B>,
    pub value_proj: Linear<B>,
}

/// `dense`, dropout, the residual, `LayerNorm` (after attention and after the feed-forward layer).
#[derive(Module, Debug)]
pub struct Output<B: Backend> {
    pub dense: Linear<B>,
    pub layer_norm: LayerNorm<B>,
}

#[derive(Module, Debug)]
pub struct Attention<B: Backend> {
    pub self_attention: SelfAttention<B>,
    pub output: Output<B>,
}

#[derive(Module, Debug)]
pub struct Intermediate<B: Backend> {
    pub dense: Linear<B>,
}

#[derive(Module, Debug)]
pub struct Layer<B: Backend> {
    pub attention: Attention<B>,
    pub intermediate: Intermediate<B>,
    pub output: Output<B>,
}

#[derive(Module, Debug)]
pub struct Encoder<B: Backend> {
    pub layer: Vec<Layer<B>>,
    pub rel_embeddings: Option<Embedding<B>>,
    /// On the relative embeddings (`norm_rel_ebd = "layer_norm"`).
    pub layer_norm: Option<LayerNorm<B>>,
}

#[derive(Module, Debug)]
pub struct DebertaModel<B: Backend> {
    pub embeddings: Embeddings<B>,
    pub encoder: Encoder<B>,
}

#[derive(Module, Debug)]
pub struct Pooler<B: Backend> {
    pub dense: Linear<B>,
}

/// `DebertaV2ForSequenceClassification`.
#[derive(Module, Debug)]
pub struct DebertaClassifier<B: Backend> {
    pub deberta: DebertaModel<B>,
    pub pooler: Pooler<B>,
    pub classifier: Linear<B>,
    #[module(skip)]
    config: DebertaConfig,
}

impl<B: Backend> DebertaClassifier<B> {
    /// The modules with burn's default initialisation (a checkpoint replaces
    /// every weight; [`super::load`]).
    pub fn new(config: &DebertaConfig, num_outputs: usize, device: &B::Device) -> Self {
        let h = config.hidden_size;
        let e = config.embedding_size();
        let norm = || LayerNormConfig::new(h).with_epsilon(config.layer_norm_eps).init(device);
        let linear = |i: usize, o: usize| LinearConfig::new(i, o).init(device);
        let output = |i: usize| Output { dense: linear(i, h), layer_norm: norm() };
        let layer = |_| Layer {
            attention: Attention {
                self_attention: SelfAttention {
                    query_proj: linear(h, h),
                    key_proj: linear(h, h),
                    value_proj: linear(h, h),
                },
                output: output(h),
            },
            intermediate: Intermediate { dense: linear(h, config.intermediate_size) },
            output: output(config.intermediate_size),
        };
        let relative = config.relative_attention;
        DebertaClassifier {
            deberta: DebertaModel {
                embeddings: Embeddings {
                    word_embeddings: EmbeddingConfig::new(config.vocab_size, e).init(device),
                    position_embeddings: config
                        .position_biased_input
                        .then(|| EmbeddingConfig::new(config.max_position_embeddings, e).init(device)),
                    token_type_embeddings: (config.type_vocab_size > 0)
                        .then(|| EmbeddingConfig::new(config.type_vocab_size, e).init(device)),
                    embed_proj: (e != h).then(|| LinearConfig::new(e, h).with_bias(false).init(device)),
                    layer_norm: norm(),
                },
                encoder: Encoder {
                    layer: (0..config.num_hidden_layers).map(layer).collect(),
                    rel_embeddings: relative.then(|| EmbeddingConfig::new(2 * config.attention_span(), h).init(device)),
                    layer_norm: (relative && config.norm_relative_embeddings()).then(norm),
                },
            },
            pooler: Pooler { dense: linear(h, h) },
            classifier: linear(h, num_outputs),
            config: config.clone(),
        }
    }

    pub fn config(&self) -> &DebertaConfig {
        &self.config
    }

    pub(crate) fn config_mut(&mut self) -> &mut DebertaConfig {
        &mut self.config
    }

    /// `[batch, time, embedding]` word embeddings of `ids`: what salience
    /// methods perturb (absolute positions and segments, where a checkpoint
    /// has them, are added after).
    pub fn embed(&self, ids: Tensor<B, 2, Int>) -> Tensor<B, 3> {
        self.deberta.embeddings.word_embeddings.forward(ids)
    }

    /// Last hidden states of word embeddings under padding `mask`, with each
    /// layer's attention probabilities `[batch, heads, queries, keys]`; with
    /// `noise` (training), the config's dropouts.
    pub fn encode_with(
        &self,
        words: Tensor<B, 3>,
        mask: Tensor<B, 2>,
        noise: Option<&mut Noise>,
    ) -> (Tensor<B, 3>, Vec<Tensor<B, 4>>) {
        self.forward(words, mask, false, noise)
    }

    /// [`Self::encode_with`]; `leaf_last` makes the last layer's attention
    /// probabilities a leaf of the autodiff graph (scaled attention
    /// differentiates against them).
    pub fn forward(
        &self,
        words: Tensor<B, 3>,
        mask: Tensor<B, 2>,
        leaf_last: bool,
        mut noise: Option<&mut Noise>,
    ) -> (Tensor<B, 3>, Vec<Tensor<B, 4>>) {
        let [batch, time, _] = words.dims();
        let device = words.device();
        let embeddings = &self.deberta.embeddings;
        let mut x = words;
        if let Some(positions) = &embeddings.position_embeddings {
            let ids = Tensor::<B, 1, Int>::arange(0..time as i64, &device).reshape([1, time]);
            x = x + positions.forward(ids);
        }
        if let Some(types) = &embeddings.token_type_embeddings {
            x = x + types.forward(Tensor::<B, 2, Int>::zeros([batch, time], &device));
        }
        if let Some(projection) = &embeddings.embed_proj {
            x = projection.forward(x);
        }
        let x = embeddings.layer_norm.forward(x) * mask.clone().unsqueeze_dim::<3>(2);
        let p = self.config.hidden_dropout_prob;
        let mut x = dropout(x, p, noise.as_deref_mut());
        // Keys outside the sequence: hidden from every query.
        let padding = (mask.neg() + 1.0).mul_scalar(HIDDEN).unsqueeze_dim::<3>(1).unsqueeze_dim::<4>(1);
        let relative = self.relative(time, &device);
        let mut attentions = Vec::with_capacity(self.deberta.encoder.layer.len());
        let last = self.deberta.encoder.layer.len().saturating_sub(1);
        for (index, layer) in self.deberta.encoder.layer.iter().enumerate() {
            let leaf = leaf_last && index == last;
            let attention = &layer.attention.self_attention;
            let (context, probs) =
                self.attention(attention, x.clone(), padding.clone(), relative.as_ref(), leaf, noise.as_deref_mut());
            attentions.push(probs);
            let attended = residual(&layer.attention.output, context, x, p, noise.as_deref_mut());
            let inner = gelu(layer.intermediate.dense.forward(attended.clone()));
            x = residual(&layer.output, inner, attended, p, noise.as_deref_mut());
        }
        (x, attentions)
    }

    /// The relative embeddings (normed) that `time` tokens read and, per
    /// `(query, key)`, the row of them each reads.
    fn relative(&self, time: usize, device: &B::Device) -> Option<(Tensor<B, 2>, Tensor<B, 2, Int>)> {
        let encoder = &self.deberta.encoder;
        let rows: Vec<usize> =
            (0..time * time).map(|n| self.config.relative_row((n / time) as i64 - (n % time) as i64)).collect();
        // Only the rows these distances read are normed and projected: a
        // short text reads a few dozen of deberta-v3's 512, and each layer
        // projects them twice.
        let first = rows.iter().copied().min().unwrap_or(0);
        let last = rows.iter().copied().max().unwrap_or(0);
        let table = encoder.rel_embeddings.as_ref()?.weight.val().narrow(0, first, last + 1 - first);
        let table = match &encoder.layer_norm {
            Some(norm) => norm.forward(table),
            None => table,
        };
        let rows: Vec<i64> = rows.iter().map(|&r| (r - first) as i64).collect();
        Some((table, Tensor::<B, 1, Int>::from_ints(rows.as_slice(), device).reshape([time, time])))
    }

    fn attention(
        &self,
        attn: &SelfAttention<B>,
        x: Tensor<B, 3>,
        padding: Tensor<B, 4>,
        relative: Option<&(Tensor<B, 2>, Tensor<B, 2, Int>)>,
        leaf: bool,
        noise: Option<&mut Noise>,
    ) -> (Tensor<B, 3>, Tensor<B, 4>) {
        let [batch, time, size] = x.dims();
        let heads = self.config.num_attention_heads;
        let d = self.config.head_dim();
        let split = |t: Tensor<B, 3>| {
            let [b, n, _] = t.dims();
            t.reshape([b, n, heads, d]).swap_dims(1, 2)
        };
        let q = split(attn.query_proj.forward(x.clone()));
        let k = split(attn.key_proj.forward(x.clone()));
        let v = split(attn.value_proj.forward(x));
        let (c2p, p2c) = (self.config.c2p(), self.config.p2c());
        let kinds = 1 + usize::from(c2p) + usize::from(p2c);
        let scale = ((d * kinds) as f64).sqrt();
        let mut scores = q.clone().matmul(k.clone().swap_dims(2, 3));
        if let Some((table, rows)) = relative {
            let rows = rows.clone().reshape([1, 1, time, time]).expand([batch, heads, time, time]);
            let positions = table.clone().unsqueeze_dim::<3>(0);
            let span = positions.dims()[1];
            let project = |proj: &Linear<B>| split(proj.forward(positions.clone())).expand([batch, heads, span, d]);
            if c2p {
                // q_i · P^k_r for every row r, then (i, j) takes row δ(i − j).
                let keys = project(&attn.key_proj);
                scores = scores + q.matmul(keys.swap_dims(2, 3)).gather(3, rows.clone());
            }
            if p2c {
                // k_j · P^q_r for every row r, then (j, i) takes row δ(i − j)
                // (the rows transposed) and is turned to (i, j).
                let queries = project(&attn.query_proj);
                let picked = k.matmul(queries.swap_dims(2, 3)).gather(3, rows.swap_dims(2, 3));
                scores = scores + picked.swap_dims(2, 3);
            }
        }
        let mut probs = softmax(scores.div_scalar(scale) + padding, 3);
        if leaf {
            probs = probs.detach().require_grad();
        }
        let dropped = dropout(probs.clone(), self.config.attention_probs_dropout_prob, noise);
        let context = dropped.matmul(v).swap_dims(1, 2).reshape([batch, time, size]);
        (context, probs)
    }

    /// Logits `[batch, outputs]` from word embeddings.
    pub fn classify(&self, words: Tensor<B, 3>, mask: Tensor<B, 2>) -> Tensor<B, 2> {
        let hidden = self.encode_with(words, mask, None).0;
        self.head_logits(hidden, None)
    }

    /// [`Self::classify`] in training mode: every dropout drawn from `noise`.
    pub fn classify_train(&self, words: Tensor<B, 3>, mask: Tensor<B, 2>, noise: &mut Noise) -> Tensor<B, 2> {
        let hidden = self.encode_with(words, mask, Some(&mut *noise)).0;
        self.head_logits(hidden, Some(noise))
    }

    /// `ContextPooler` on the first token, then the classification layer.
    pub fn head_logits(&self, hidden: Tensor<B, 3>, mut noise: Option<&mut Noise>) -> Tensor<B, 2> {
        let [batch, _, size] = hidden.dims();
        let first = hidden.narrow(1, 0, 1).reshape([batch, size]);
        let first = dropout(first, self.config.pooler_dropout, noise.as_deref_mut());
        let pooled = gelu(self.pooler.dense.forward(first));
        self.classifier.forward(dropout(pooled, self.config.classifier_dropout(), noise))
    }
}

/// `dense(x)`, dropout, `+ residual`, LayerNorm.
fn residual<B: Backend>(
    output: &Output<B>,
    x: Tensor<B, 3>,
    residual: Tensor<B, 3>,
    p: f64,
    noise: Option<&mut Noise>,
) -> Tensor<B, 3> {
    output.layer_norm.forward(dropout(output.dense.forward(x), p, noise) + residual)
}

/// Dropout with a mask from the backend's stream, or nothing outside training.
fn dropout<B: Backend, const D: usize>(x: Tensor<B, D>, p: f64, noise: Option<&mut Noise>) -> Tensor<B, D> {
    match noise {
        Some(noise) => noise.dropout_on_device(x, p),
        None => x,
    }
}
