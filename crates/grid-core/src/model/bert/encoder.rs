//! The BERT encoder as Hugging Face's `modeling_bert.py` defines it: word +
//! position + token-type embeddings, post-LayerNorm self-attention layers with a
//! GELU feed-forward block, and a tanh pooler over `[CLS]`. Field names follow the
//! checkpoint's tensor names (`attention.self` is `attention.self_attention`,
//! `LayerNorm` is `layer_norm`; `load.rs` maps them), so a reader can hold this
//! file next to the Python one.
//!
//! Nonlinearities, LayerNorm and the two input-dependent matmuls of attention go
//! through [`Rules`], so that DeepLift's Rescale rule runs this same code;
//! [`Rules::Plain`] calls burn's own operations (the PyTorch equivalence test
//! pins that pass).

use burn::module::Param;
use burn::nn::{Embedding, LayerNorm, LayerNormConfig, Linear};
use burn::prelude::*;
use rand_chacha::ChaCha8Rng;

use super::config::{BertConfig, HiddenAct};
use super::family::HeadActivation;
use crate::model::dense::at_every_position;
use crate::model::init;
use crate::model::noise::Noise;
use crate::model::rules::Rules;

/// Added to attention scores at padding, so softmax gives those keys weight 0.
const MASKED_SCORE: f32 = -1e9;

/// Replaces attention probabilities `[batch, heads, time, time]` before they weigh
/// the values: scaled attention makes them a leaf of the autodiff graph there.
pub type ProbsHook<'a, B> = &'a dyn Fn(Tensor<B, 4>) -> Tensor<B, 4>;

#[derive(Module, Debug)]
pub struct BertEmbeddings<B: Backend> {
    pub word_embeddings: Embedding<B>,
    pub position_embeddings: Embedding<B>,
    /// Segment embeddings (segment 0 for every token); DistilBERT has none.
    pub token_type_embeddings: Option<Embedding<B>>,
    pub layer_norm: LayerNorm<B>,
    /// Embeddings narrower than the encoder (ELECTRA's `embeddings_project`)
    /// are projected up after their LayerNorm and dropout.
    pub project: Option<Linear<B>>,
    /// The position id of the first token (RoBERTa: `pad_token_id + 1`).
    position_offset: usize,
    /// `layer_norm`'s ε, which burn's `LayerNorm` keeps private; DeepLift's rules need it.
    layer_norm_eps: f64,
    dropout: f64,
}

impl<B: Backend> BertEmbeddings<B> {
    /// The input embeddings salience differentiates against: word embeddings only.
    pub fn words(&self, ids: Tensor<B, 2, Int>) -> Tensor<B, 3> {
        self.word_embeddings.forward(ids)
    }

    /// Adds positions and token types (segment 0) to word embeddings.
    pub fn forward(&self, words: Tensor<B, 3>, noise: Option<&mut Noise>, rules: Rules) -> Tensor<B, 3> {
        let [batch, time, hidden] = words.dims();
        let device = words.device();
        let start = self.position_offset as i64;
        let positions = Tensor::<B, 1, Int>::arange(start..start + time as i64, &device).reshape([1, time]);
        // Each example's `[time · hidden]` values plus one shared row: burn's CPU
        // backend adds a broadcast row in SIMD, but walks a `[batch, time, hidden]`
        // broadcast view one computed index at a time.
        let shared_row = |t: Tensor<B, 3>| t.reshape([1, time * hidden]);
        let mut x = words.reshape([batch, time * hidden]) + shared_row(self.position_embeddings.forward(positions));
        if let Some(token_types) = &self.token_type_embeddings {
            let segment = Tensor::<B, 2, Int>::zeros([1, time], &device);
            x = x + shared_row(token_types.forward(segment));
        }
        let x = x.reshape([batch, time, hidden]);
        let x = dropout(rules.layer_norm(&self.layer_norm, x, self.layer_norm_eps), self.dropout, noise);
        match &self.project {
            Some(project) => project.forward(x),
            None => x,
        }
    }
}

#[derive(Module, Debug)]
pub struct BertSelfAttention<B: Backend> {
    pub query: Linear<B>,
    pub key: Linear<B>,
    pub value: Linear<B>,
    num_heads: usize,
    dropout: f64,
}

impl<B: Backend> BertSelfAttention<B> {
    /// Returns the context vectors `[batch, time, hidden]` and the attention
    /// probabilities `[batch, heads, time, time]` (after `hook`, if any).
    fn forward(
        &self,
        x: Tensor<B, 3>,
        mask_bias: Tensor<B, 4>,
        noise: Option<&mut Noise>,
        rules: Rules,
        hook: Option<ProbsHook<B>>,
    ) -> (Tensor<B, 3>, Tensor<B, 4>) {
        let [batch, time, hidden] = x.dims();
        let head_size = hidden / self.num_heads;
        let divisor = (head_size as f64).sqrt();
        let (q, k, v) = (
            at_every_position(&self.query, x.clone()),
            at_every_position(&self.key, x.clone()),
            at_every_position(&self.value, x),
        );
        // One fused kernel where nothing needs the probabilities as a node of
        // the graph: no hook replacing them, no dropout drawn on them.
        if hook.is_none() && (self.dropout == 0.0 || noise.is_none()) {
            let projections = [q.clone(), k.clone(), v.clone()];
            if let Some(fused) = rules.fused_attention(projections, mask_bias.clone(), self.num_heads, divisor) {
                return fused;
            }
        }
        let heads = |t: Tensor<B, 3>| swap_middle(t.reshape([batch, time, self.num_heads, head_size]));
        let (q, k, v) = (heads(q), heads(k), heads(v));
        let scores = rules.matmul(q, k.transpose());
        let probs = rules.attention_softmax(scores, mask_bias, divisor);
        let probs = match hook {
            Some(hook) => hook(probs),
            None => probs,
        };
        let context = rules.matmul(dropout(probs.clone(), self.dropout, noise), v);
        (swap_middle(context).reshape([batch, time, hidden]), probs)
    }
}

impl<B: Backend> BertSelfAttention<B> {
    /// The context vector of the first position only, `[batch, 1, hidden]`:
    /// its query against every position's key and value, under the ordinary
    /// rules; with `noise`, dropout on its probabilities from a mask drawn for
    /// every query and cut to the first.
    fn first_position(&self, x: Tensor<B, 3>, mask_bias: Tensor<B, 4>, noise: Option<&mut Noise>) -> Tensor<B, 3> {
        let [batch, time, hidden] = x.dims();
        let head_size = hidden / self.num_heads;
        let divisor = (head_size as f64).sqrt();
        let q = at_every_position(&self.query, x.clone().narrow(1, 0, 1));
        // A bias by query (MPNet's positions) is cut to the first query's row.
        let mask_bias = if mask_bias.dims()[2] > 1 { mask_bias.narrow(2, 0, 1) } else { mask_bias };
        let (k, v) = (at_every_position(&self.key, x.clone()), at_every_position(&self.value, x));
        let heads = |t: Tensor<B, 3>, rows: usize| swap_middle(t.reshape([batch, rows, self.num_heads, head_size]));
        let (q, k, v) = (heads(q, 1), heads(k, time), heads(v, time));
        let probs = Rules::Plain.attention_softmax(Rules::Plain.matmul(q, k.transpose()), mask_bias, divisor);
        let probs = dropout_part(probs, time, 2, self.dropout, noise);
        swap_middle(Rules::Plain.matmul(probs, v)).reshape([batch, 1, hidden])
    }
}

/// `swap_dims(1, 2)` as a contiguous copy where the backend has the kernel
/// (the matmuls after it would copy the strided view element by element).
fn swap_middle<B: Backend>(x: Tensor<B, 4>) -> Tensor<B, 4> {
    crate::kernels::swap_middle(x.clone()).unwrap_or_else(|| x.swap_dims(1, 2))
}

/// `BertSelfOutput` and `BertOutput` alike: dense, dropout, residual, LayerNorm.
#[derive(Module, Debug)]
pub struct BertResidual<B: Backend> {
    pub dense: Linear<B>,
    pub layer_norm: LayerNorm<B>,
    /// `layer_norm`'s ε (see [`BertEmbeddings`]).
    layer_norm_eps: f64,
    dropout: f64,
}

impl<B: Backend> BertResidual<B> {
    fn forward(
        &self,
        x: Tensor<B, 3>,
        residual: Tensor<B, 3>,
        noise: Option<&mut Noise>,
        rules: Rules,
    ) -> Tensor<B, 3> {
        let time = x.dims()[1];
        self.forward_part(x, residual, time, noise, rules)
    }

    /// [`Self::forward`] on the first positions of a sequence `time` long:
    /// dropout's mask drawn for all `time` and cut (see [`dropout_part`]).
    fn forward_part(
        &self,
        x: Tensor<B, 3>,
        residual: Tensor<B, 3>,
        time: usize,
        noise: Option<&mut Noise>,
        rules: Rules,
    ) -> Tensor<B, 3> {
        let x = dropout_part(at_every_position(&self.dense, x), time, 1, self.dropout, noise) + residual;
        rules.layer_norm(&self.layer_norm, x, self.layer_norm_eps)
    }
}

#[derive(Module, Debug)]
pub struct BertAttention<B: Backend> {
    pub self_attention: BertSelfAttention<B>,
    pub output: BertResidual<B>,
}

#[derive(Module, Debug)]
pub struct BertIntermediate<B: Backend> {
    pub dense: Linear<B>,
    #[module(skip)]
    act: HiddenAct,
}

impl<B: Backend> BertIntermediate<B> {
    fn forward(&self, x: Tensor<B, 3>, rules: Rules) -> Tensor<B, 3> {
        let x = at_every_position(&self.dense, x);
        match self.act {
            HiddenAct::Gelu => rules.gelu(x),
            HiddenAct::GeluNew => rules.gelu_approximate(x),
            HiddenAct::Relu => rules.relu(x),
        }
    }
}

#[derive(Module, Debug)]
pub struct BertLayer<B: Backend> {
    pub attention: BertAttention<B>,
    pub intermediate: BertIntermediate<B>,
    pub output: BertResidual<B>,
}

impl<B: Backend> BertLayer<B> {
    /// The layer's output and, where asked for (`keep_probs`) or replaced by
    /// `hook`, its attention probabilities.
    fn forward(
        &self,
        x: Tensor<B, 3>,
        mask_bias: Tensor<B, 4>,
        mut noise: Option<&mut Noise>,
        rules: Rules,
        hook: Option<ProbsHook<B>>,
        keep_probs: bool,
    ) -> (Tensor<B, 3>, Option<Tensor<B, 4>>) {
        // The whole layer as one block of the backend's where nothing needs
        // its inside: no probabilities kept or replaced, no DeepLift rules.
        if rules == Rules::Plain
            && hook.is_none()
            && !keep_probs
            && let Some(out) = self.block(&x, &mask_bias, noise.is_some())
        {
            return (out, None);
        }
        let (context, probs) =
            self.attention.self_attention.forward(x.clone(), mask_bias, noise.as_deref_mut(), rules, hook);
        let attended = self.attention.output.forward(context, x, noise.as_deref_mut(), rules);
        let out = self.output.forward(self.intermediate.forward(attended.clone(), rules), attended, noise, rules);
        (out, Some(probs))
    }

    /// The layer's output at the first position only, `[batch, 1, hidden]`:
    /// all a classifier reads of the last layer (the pooler takes `[CLS]`).
    /// Every other position's query, attention output and feed-forward are
    /// skipped: about five sixths of the layer's products. Ordinary rules;
    /// the values are the full layer's first row to float rounding
    /// (attention's products in another order). With `noise` (training)
    /// each dropout mask is drawn for every position and cut to the first,
    /// so the backend's random stream, and every later mask, is the full
    /// layer's.
    fn first_position(&self, x: Tensor<B, 3>, mask_bias: Tensor<B, 4>, mut noise: Option<&mut Noise>) -> Tensor<B, 3> {
        let time = x.dims()[1];
        let first = x.clone().narrow(1, 0, 1);
        let context = self.attention.self_attention.first_position(x, mask_bias, noise.as_deref_mut());
        let attended = self.attention.output.forward_part(context, first, time, noise.as_deref_mut(), Rules::Plain);
        let intermediate = self.intermediate.forward(attended.clone(), Rules::Plain);
        self.output.forward_part(intermediate, attended, time, noise, Rules::Plain)
    }

    /// [`crate::kernels::encoder_layer`] on this layer's parameters: `None`
    /// where the backend has no block (or a bias is missing).
    fn block(&self, x: &Tensor<B, 3>, mask_bias: &Tensor<B, 4>, training: bool) -> Option<Tensor<B, 3>> {
        use crate::kernels::{Activation, Dense, EncoderLayer, Norm};
        // The blocks take the padding mask alone, `[batch, 1, 1, time]`.
        if !crate::kernels::encoder_layer_applies(x) || mask_bias.dims()[1] != 1 {
            return None;
        }
        let dense = |layer: &Linear<B>| Some(Dense { weight: layer.weight.val(), bias: layer.bias.as_ref()?.val() });
        let norm = |residual: &BertResidual<B>| {
            let norm = &residual.layer_norm;
            Some(Norm { gamma: norm.gamma.val(), beta: norm.beta.as_ref()?.val(), epsilon: residual.layer_norm_eps })
        };
        let attention = &self.attention.self_attention;
        let layer = EncoderLayer {
            query: dense(&attention.query)?,
            key: dense(&attention.key)?,
            value: dense(&attention.value)?,
            attention_output: dense(&self.attention.output.dense)?,
            attention_norm: norm(&self.attention.output)?,
            intermediate: dense(&self.intermediate.dense)?,
            output: dense(&self.output.dense)?,
            output_norm: norm(&self.output)?,
            heads: attention.num_heads,
            activation: match self.intermediate.act {
                HiddenAct::Gelu => Activation::Gelu,
                HiddenAct::GeluNew => Activation::GeluTanh,
                HiddenAct::Relu => Activation::Relu,
            },
            attention_dropout: attention.dropout,
            attention_output_dropout: self.attention.output.dropout,
            output_dropout: self.output.dropout,
        };
        crate::kernels::encoder_layer(x.clone(), mask_bias.clone(), layer, training)
    }
}

#[derive(Module, Debug)]
pub struct BertEncoder<B: Backend> {
    pub layer: Vec<BertLayer<B>>,
    /// MPNet's bias on every layer's attention scores, `[buckets, heads]`, by
    /// relative position (`family::mpnet::relative_bucket`); `None` elsewhere.
    pub relative_attention_bias: Option<Embedding<B>>,
}

impl<B: Backend> BertEncoder<B> {
    /// What every layer adds to its attention scores: the padding mask's
    /// `mask_bias` (`[batch, 1, 1, time]`), plus MPNet's relative-position
    /// bias, making it `[batch, heads, time, time]` (which the fused kernels
    /// leave to the plain operations; its gradient reaches the table).
    fn attention_bias(&self, mask_bias: Tensor<B, 4>) -> Tensor<B, 4> {
        let Some(table) = &self.relative_attention_bias else { return mask_bias };
        let [batch, _, _, time] = mask_bias.dims();
        let heads = table.weight.dims()[1];
        let buckets: Vec<i64> = (0..time as i64)
            .flat_map(|query| (0..time as i64).map(move |key| super::family::relative_bucket(key - query) as i64))
            .collect();
        let ids = Tensor::<B, 2, Int>::from_data(TensorData::new(buckets, [1, time * time]), &mask_bias.device());
        let positions =
            table.forward(ids).reshape([time, time, heads]).permute([2, 0, 1]).reshape([1, heads, time, time]);
        mask_bias.expand([batch, heads, time, time]) + positions.expand([batch, heads, time, time])
    }
}

/// The head's first layer on the first token: BERT's pooler (tanh), RoBERTa's
/// `classifier.dense` (tanh, after dropout), DistilBERT's `pre_classifier` (ReLU).
#[derive(Module, Debug)]
pub struct BertPooler<B: Backend> {
    pub dense: Linear<B>,
    #[module(skip)]
    activation: HeadActivation,
    /// Dropout on the first token's state before `dense` (RoBERTa's head); 0 otherwise.
    dropout: f64,
}

impl<B: Backend> BertPooler<B> {
    /// `act(W h_[CLS] + b)`.
    pub fn forward(&self, hidden: Tensor<B, 3>, rules: Rules, noise: Option<&mut Noise>) -> Tensor<B, 2> {
        let [batch, _, width] = hidden.dims();
        let first = dropout(hidden.slice([0..batch, 0..1, 0..width]).reshape([batch, width]), self.dropout, noise);
        let x = self.dense.forward(first);
        match self.activation {
            HeadActivation::Tanh => rules.tanh(x),
            HeadActivation::Relu => rules.relu(x),
            HeadActivation::Gelu => rules.gelu(x),
        }
    }
}

/// What one pass of the encoder produces.
#[derive(Debug, Clone)]
pub struct BertOutput<B: Backend> {
    /// `[batch, time, hidden]`.
    pub last_hidden_state: Tensor<B, 3>,
    /// `[batch, hidden]`.
    pub pooled: Tensor<B, 2>,
    /// Per layer, `[batch, heads, time, time]`; filled only when asked for.
    pub attentions: Vec<Tensor<B, 4>>,
}

/// `BertModel`: embeddings, encoder, pooler.
#[derive(Module, Debug)]
pub struct BertModel<B: Backend> {
    pub embeddings: BertEmbeddings<B>,
    pub encoder: BertEncoder<B>,
    pub pooler: BertPooler<B>,
}

impl<B: Backend> BertModel<B> {
    /// Random weights as `BertPreTrainedModel._init_weights` draws them: linear and
    /// embedding weights ~ N(0, initializer_range²), biases 0, LayerNorm 1/0, the
    /// padding row of the word embeddings 0.
    pub fn new(config: &BertConfig, rng: &mut ChaCha8Rng, device: &B::Device) -> Self {
        let layout = config.layout();
        let std = config.initializer_range;
        let h = config.hidden_size;
        let p = config.hidden_dropout_prob;
        let mut linear = |d_in: usize, d_out: usize| Linear {
            weight: init::normal(rng, [d_in, d_out], std, device),
            bias: Some(Param::from_tensor(Tensor::zeros([d_out], device))),
        };
        let e = config.embedding_width();
        let layer_norm_of = |width: usize| LayerNormConfig::new(width).with_epsilon(config.layer_norm_eps).init(device);
        let layer_norm = || layer_norm_of(h);
        let layers = (0..config.num_hidden_layers)
            .map(|_| BertLayer {
                attention: BertAttention {
                    self_attention: BertSelfAttention {
                        query: linear(h, h),
                        key: linear(h, h),
                        value: linear(h, h),
                        num_heads: config.num_attention_heads,
                        dropout: config.attention_probs_dropout_prob,
                    },
                    output: BertResidual {
                        dense: linear(h, h),
                        layer_norm: layer_norm(),
                        layer_norm_eps: config.layer_norm_eps,
                        dropout: if layout.attention_output_dropout { p } else { 0.0 },
                    },
                },
                intermediate: BertIntermediate { dense: linear(h, config.intermediate_size), act: config.hidden_act },
                output: BertResidual {
                    dense: linear(config.intermediate_size, h),
                    layer_norm: layer_norm(),
                    layer_norm_eps: config.layer_norm_eps,
                    dropout: p,
                },
            })
            .collect();
        let pooler = BertPooler {
            dense: linear(h, h),
            activation: layout.head_activation,
            dropout: if layout.dropout_before_head { config.classifier_dropout() } else { 0.0 },
        };
        let project = (e != h).then(|| linear(e, h));
        let mut embedding = |rows: usize, pad: Option<u32>| {
            let weight = init::normal(rng, [rows, e], std, device);
            let weight = match pad {
                Some(pad) if (pad as usize) < rows => {
                    let pad = pad as usize;
                    Param::from_tensor(
                        weight.val().slice_assign([pad..pad + 1, 0..e], Tensor::zeros([1, e], device)).detach(),
                    )
                }
                _ => weight,
            };
            Embedding { weight }
        };
        let embeddings = BertEmbeddings {
            word_embeddings: embedding(config.vocab_size, Some(config.pad_token_id)),
            position_embeddings: embedding(config.max_position_embeddings, None),
            token_type_embeddings: layout.token_types.then(|| embedding(config.type_vocab_size, None)),
            layer_norm: layer_norm_of(e),
            project,
            position_offset: layout.position_offset,
            layer_norm_eps: config.layer_norm_eps,
            dropout: p,
        };
        // Drawn last, so that every other family's weights stay as they were.
        let relative_attention_bias = layout
            .relative_attention_buckets
            .map(|rows| Embedding { weight: init::normal(rng, [rows, config.num_attention_heads], std, device) });
        Self { embeddings, encoder: BertEncoder { layer: layers, relative_attention_bias }, pooler }
    }

    /// Replaces the position embeddings with the Transformer's sine/cosine table
    /// (Vaswani et al. 2017, §3.5), scaled so each column has standard deviation
    /// `std`, like the `N(0, std²)` rows it replaces. They stay trainable.
    pub fn with_sinusoidal_positions(mut self, std: f64) -> Self {
        let [rows, h] = self.embeddings.position_embeddings.weight.dims();
        let device = self.embeddings.position_embeddings.weight.device();
        let table = sinusoidal_table(rows, h, std);
        self.embeddings.position_embeddings.weight =
            Param::from_tensor(Tensor::from_data(TensorData::new(table, [rows, h]), &device));
        self
    }

    /// Runs embeddings → encoder → pooler from word embeddings `[batch, time, hidden]`
    /// and a `[batch, time]` mask (1 = real token). Padding never changes the
    /// states of real tokens.
    pub fn forward_from_words(
        &self,
        words: Tensor<B, 3>,
        mask: Tensor<B, 2>,
        keep_attentions: bool,
        noise: Option<&mut Noise>,
    ) -> BertOutput<B> {
        self.forward_under(words, mask, keep_attentions, noise, Rules::Plain, None)
    }

    /// [`Self::forward_from_words`] with its nonlinearities differentiated by
    /// `rules`, and the last layer's attention probabilities passed through
    /// `last_attention` (what the hook returns is what the layer uses and keeps).
    pub fn forward_under(
        &self,
        words: Tensor<B, 3>,
        mask: Tensor<B, 2>,
        keep_attentions: bool,
        mut noise: Option<&mut Noise>,
        rules: Rules,
        last_attention: Option<ProbsHook<B>>,
    ) -> BertOutput<B> {
        let mask_bias = self.encoder.attention_bias(mask_bias(mask));
        let mut x = self.embeddings.forward(words, noise.as_deref_mut(), rules);
        let mut attentions = Vec::new();
        let last = self.encoder.layer.len().saturating_sub(1);
        for (index, layer) in self.encoder.layer.iter().enumerate() {
            let hook = if index == last { last_attention } else { None };
            let (out, probs) = layer.forward(x, mask_bias.clone(), noise.as_deref_mut(), rules, hook, keep_attentions);
            x = out;
            if keep_attentions {
                attentions.push(probs.expect("kept when asked for"));
            }
        }
        let pooled = self.pooler.forward(x.clone(), rules, noise);
        BertOutput { last_hidden_state: x, pooled, attentions }
    }

    /// [`Self::forward_from_words`]'s `pooled` (`[batch, hidden]`), with the
    /// last layer run at the first position only ([`BertLayer::first_position`]):
    /// the classifier's logits for training, gradients, IG, LIME, occlusion
    /// and verification, about a seventh fewer products for a six-layer
    /// model. Where the backend runs a whole layer as one block while
    /// training (LibTorch), its dropout comes from torch's own stream, so
    /// the last layer stays one block there.
    pub fn pooled(&self, words: Tensor<B, 3>, mask: Tensor<B, 2>, mut noise: Option<&mut Noise>) -> Tensor<B, 2> {
        let Some((last, layers)) = self.encoder.layer.split_last() else {
            return self.forward_from_words(words, mask, false, noise).pooled;
        };
        if noise.is_some() && crate::kernels::encoder_layer_applies(&words) {
            return self.forward_from_words(words, mask, false, noise).pooled;
        }
        let mask_bias = self.encoder.attention_bias(mask_bias(mask));
        let mut x = self.embeddings.forward(words, noise.as_deref_mut(), Rules::Plain);
        for layer in layers {
            x = layer.forward(x, mask_bias.clone(), noise.as_deref_mut(), Rules::Plain, None, false).0;
        }
        let first = last.first_position(x, mask_bias, noise.as_deref_mut());
        self.pooler.forward(first, Rules::Plain, noise)
    }

    /// Sets the dropout probabilities from `config` (which may override the checkpoint's).
    pub fn with_dropout(mut self, config: &BertConfig) -> Self {
        let layout = config.layout();
        self.embeddings.dropout = config.hidden_dropout_prob;
        for layer in &mut self.encoder.layer {
            layer.attention.self_attention.dropout = config.attention_probs_dropout_prob;
            layer.attention.output.dropout =
                if layout.attention_output_dropout { config.hidden_dropout_prob } else { 0.0 };
            layer.output.dropout = config.hidden_dropout_prob;
        }
        self.pooler.dropout = if layout.dropout_before_head { config.classifier_dropout() } else { 0.0 };
        self
    }

    /// Position embeddings cap the input length (RoBERTa's first rows are never used).
    pub fn max_length(&self) -> usize {
        self.embeddings.position_embeddings.weight.dims()[0].saturating_sub(self.embeddings.position_offset)
    }
}

/// A `[batch, time]` mask (1 = real token) as attention's additive bias,
/// `[batch, 1, 1, time]`: 0 on real keys, [`MASKED_SCORE`] on padding.
fn mask_bias<B: Backend>(mask: Tensor<B, 2>) -> Tensor<B, 4> {
    let [batch, time] = mask.dims();
    (mask.neg() + 1.0).mul_scalar(MASKED_SCORE).reshape([batch, 1, 1, time])
}

fn dropout<B: Backend, const D: usize>(x: Tensor<B, D>, p: f64, noise: Option<&mut Noise>) -> Tensor<B, D> {
    match noise {
        Some(noise) => noise.dropout_on_device(x, p),
        None => x,
    }
}

/// [`dropout`] on the first rows along `dim` of a tensor `len` long there:
/// the mask drawn for the whole tensor and cut, so the random stream moves
/// as it would for the whole (and the next mask is the same).
fn dropout_part<B: Backend, const D: usize>(
    x: Tensor<B, D>,
    len: usize,
    dim: usize,
    p: f64,
    noise: Option<&mut Noise>,
) -> Tensor<B, D> {
    match noise {
        Some(noise) => noise.dropout_on_device_part(x, len, dim, p),
        None => x,
    }
}

/// Row `p`: `sin(p·ω_i)` in even columns and `cos(p·ω_i)` in odd ones, with
/// `ω_i = 10000^(−2i/h)`; times `std·√2`, since a sinusoid has RMS `1/√2`.
fn sinusoidal_table(rows: usize, h: usize, std: f64) -> Vec<f32> {
    let scale = std * std::f64::consts::SQRT_2;
    let mut table = Vec::with_capacity(rows * h);
    for p in 0..rows {
        for column in 0..h {
            let frequency = 10_000f64.powf(-((column / 2 * 2) as f64) / h as f64);
            let angle = p as f64 * frequency;
            let value = if column % 2 == 0 { angle.sin() } else { angle.cos() };
            table.push((scale * value) as f32);
        }
    }
    table
}

#[cfg(test)]
mod position_tests {
    use super::sinusoidal_table;

    #[test]
    fn sinusoidal_table_matches_the_formula_and_the_spread() {
        let (rows, h, std) = (64, 8, 0.02);
        let table = sinusoidal_table(rows, h, std);
        let scale = std * 2f64.sqrt();
        // Row 0: sin 0 = 0, cos 0 = 1.
        assert_eq!(&table[..4], &[0.0, scale as f32, 0.0, scale as f32]);
        // Row 3, columns 2 and 3: frequency 10000^(-2/8) = 0.1.
        let (s, c) = ((3.0f64 * 0.1).sin() * scale, (3.0f64 * 0.1).cos() * scale);
        assert!((table[3 * h + 2] as f64 - s).abs() < 1e-7 && (table[3 * h + 3] as f64 - c).abs() < 1e-7);
        // The fastest column pair (ω = 1) over 64 rows spreads like N(0, std²).
        let first: Vec<f64> = (0..rows).map(|p| table[p * h] as f64).collect();
        let rms = (first.iter().map(|v| v * v).sum::<f64>() / rows as f64).sqrt();
        assert!((rms - std).abs() < 0.1 * std, "{rms}");
    }
}

#[cfg(test)]
mod relative_attention_tests {
    use burn::module::AutodiffModule;
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::backend::{Cpu, CpuAutodiff};

    const WIDTH: usize = 16;
    const TIME: usize = 12;

    fn tiny_mpnet() -> BertConfig {
        let mut config = BertConfig::small(50, WIDTH, 2, 2, 32, 40);
        config.model_type = "mpnet".into();
        config.pad_token_id = 1;
        config.relative_attention_num_buckets = Some(32);
        // Weights wide enough for the positions to move the output visibly.
        config.initializer_range = 0.5;
        config
    }

    /// Two sequences of [`TIME`] words, the second padded after 9.
    fn inputs<B: Backend>(device: &B::Device) -> (Tensor<B, 3>, Tensor<B, 2>) {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let words: Vec<f32> = (0..2 * TIME * WIDTH).map(|_| rng.random_range(-1.0..1.0)).collect();
        let mask: Vec<f32> = (0..2 * TIME).map(|i| if i >= TIME + 9 { 0.0 } else { 1.0 }).collect();
        (
            Tensor::from_data(TensorData::new(words, [2, TIME, WIDTH]), device),
            Tensor::from_data(TensorData::new(mask, [2, TIME]), device),
        )
    }

    fn pooled_sum(model: &BertModel<Cpu>) -> f64 {
        let (words, mask) = inputs::<Cpu>(&Default::default());
        model.forward_from_words(words, mask, false, None).pooled.sum().into_scalar() as f64
    }

    /// MPNet's relative-position table gets, from autodiff, the gradient its
    /// entries have on the output (central differences), and none for a
    /// bucket no pair of these positions uses (keys 12 or more away).
    #[test]
    fn the_relative_position_table_gets_the_gradient_of_its_effect() {
        let config = tiny_mpnet();
        let device = Default::default();
        let model = BertModel::<CpuAutodiff>::new(&config, &mut ChaCha8Rng::seed_from_u64(3), &device);
        let (words, mask) = inputs::<CpuAutodiff>(&device);
        let grads = model.forward_from_words(words, mask, false, None).pooled.sum().backward();
        let table = model.encoder.relative_attention_bias.as_ref().expect("MPNet has the table");
        let gradient: Vec<f32> = table.weight.grad(&grads).expect("a gradient").into_data().to_vec().unwrap();
        let heads = config.num_attention_heads;
        let plain = model.valid();
        let epsilon = 1e-2;
        for (bucket, head) in [(0, 0), (3, 1), (8, 0), (17, 1), (24, 0)] {
            let nudged = |delta: f32| {
                let mut model = plain.clone();
                let table = model.encoder.relative_attention_bias.as_mut().unwrap();
                let mut values: Vec<f32> = table.weight.val().into_data().to_vec().unwrap();
                values[bucket * heads + head] += delta;
                let rows = values.len() / heads;
                table.weight = Param::from_tensor(Tensor::from_data(TensorData::new(values, [rows, heads]), &device));
                pooled_sum(&model)
            };
            let numeric = (nudged(epsilon) - nudged(-epsilon)) / (2.0 * epsilon as f64);
            let analytic = gradient[bucket * heads + head] as f64;
            assert!(analytic.abs() > 1e-4, "bucket {bucket}, head {head}: no gradient");
            assert!(
                (numeric - analytic).abs() <= 0.02 * analytic.abs() + 1e-4,
                "{bucket}/{head}: {numeric} vs {analytic}"
            );
        }
        assert!(gradient[9 * heads..10 * heads].iter().all(|&g| g == 0.0), "keys 12–15 away: no pair here");
    }
}
