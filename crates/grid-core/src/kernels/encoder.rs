//! A whole transformer encoder layer as one block: the seam a backend with
//! its own fused layer plugs into (LibTorch, `libtorch.rs`). The weights are
//! passed as burn keeps them (`Linear`'s `[in, out]`), so the model hands
//! over its parameters as they are, tracked or not.

use burn::prelude::*;

/// A dense layer's parameters: `weight` `[in, out]`, `bias` `[out]`.
#[derive(Debug, Clone)]
pub struct Dense<B: Backend> {
    pub weight: Tensor<B, 2>,
    pub bias: Tensor<B, 1>,
}

/// Layer normalisation's affine map and ε.
#[derive(Debug, Clone)]
pub struct Norm<B: Backend> {
    pub gamma: Tensor<B, 1>,
    pub beta: Tensor<B, 1>,
    pub epsilon: f64,
}

/// The feed-forward block's nonlinearity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// The exact, erf-based GELU.
    Gelu,
    /// GELU's tanh approximation.
    GeluTanh,
    Relu,
}

/// A post-LayerNorm encoder layer (BERT's): self-attention over `heads`
/// heads, its output projection, residual and norm, then the feed-forward
/// block, residual and norm. Dropout probabilities apply only in training.
#[derive(Debug, Clone)]
pub struct EncoderLayer<B: Backend> {
    pub query: Dense<B>,
    pub key: Dense<B>,
    pub value: Dense<B>,
    pub attention_output: Dense<B>,
    pub attention_norm: Norm<B>,
    pub intermediate: Dense<B>,
    pub output: Dense<B>,
    pub output_norm: Norm<B>,
    pub heads: usize,
    pub activation: Activation,
    /// On the attention probabilities.
    pub attention_dropout: f64,
    /// On the attention block's projection, before its residual.
    pub attention_output_dropout: f64,
    /// On the feed-forward block's output, before its residual.
    pub output_dropout: f64,
}

/// Whether a backend block runs layers on tensors like `x` (a caller can
/// skip gathering the weights otherwise).
pub fn encoder_layer_applies<B: Backend, const D: usize>(x: &Tensor<B, D>) -> bool {
    super::torch_blocks_apply(x)
}

/// The layer on `x` `[batch, time, hidden]` with the additive padding bias
/// `mask_bias` `[batch, 1, 1, time]` (0 at real keys), as one block of the
/// backend's: `None` where the backend has none (the caller runs its own
/// operations). With `training`, the dropouts are drawn from the backend's
/// random generator.
pub fn encoder_layer<B: Backend>(
    x: Tensor<B, 3>,
    mask_bias: Tensor<B, 4>,
    layer: EncoderLayer<B>,
    training: bool,
) -> Option<Tensor<B, 3>> {
    #[cfg(feature = "libtorch")]
    {
        super::libtorch::encoder_layer(x, mask_bias, layer, training)
    }
    #[cfg(not(feature = "libtorch"))]
    {
        let _ = (x, mask_bias, layer, training);
        None
    }
}
