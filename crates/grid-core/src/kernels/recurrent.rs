//! A whole LSTM direction as one block: the seam a backend with its own
//! recurrence plugs into (LibTorch: torch's `lstm`, cuDNN's on CUDA). The
//! Flex side fuses the recurrence alone (`lstm_recurrence`), after the
//! model's own input projection.

use burn::prelude::*;

/// One direction's parameters as burn keeps them: `weight_ih` `[in, 4h]`,
/// `weight_hh` `[h, 4h]`, biases `[4h]`, gates `i, f, g, o` (PyTorch's order).
#[derive(Debug, Clone)]
pub struct LstmWeights<B: Backend> {
    pub weight_ih: Tensor<B, 2>,
    pub weight_hh: Tensor<B, 2>,
    pub bias_ih: Tensor<B, 1>,
    pub bias_hh: Tensor<B, 1>,
}

/// Whether a backend block runs the LSTM on tensors like `x`.
pub fn lstm_block_applies<B: Backend, const D: usize>(x: &Tensor<B, D>) -> bool {
    super::torch_blocks_apply(x)
}

/// Every hidden state `[batch, time, h]` of the LSTM over `x` `[batch,
/// time, in]` from zero states, as one block of the backend's; with
/// `reversed_by` (the right-padded batch's `[batch, time]` mask, 1 at real
/// tokens), each row's real tokens from last to first, the states at the
/// tokens' own positions (a BiLSTM's backward direction). `None` where the
/// backend has no block.
pub fn lstm_block<B: Backend>(
    x: Tensor<B, 3>,
    weights: LstmWeights<B>,
    reversed_by: Option<Tensor<B, 2>>,
) -> Option<Tensor<B, 3>> {
    #[cfg(feature = "libtorch")]
    {
        super::libtorch::lstm_block(x, weights, reversed_by)
    }
    #[cfg(not(feature = "libtorch"))]
    {
        let _ = (x, weights, reversed_by);
        None
    }
}
