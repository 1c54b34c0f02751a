//! AdamW's update of one parameter as one block of the backend's: on
//! LibTorch, torch's in-place operations on the parameter and its moments
//! (`libtorch.rs`), where burn's generic AdamW runs fifteen allocating
//! operations per parameter and step. The training loop reaches it through
//! `train::optimizer`.

use burn::prelude::*;

/// AdamW's hyper-parameters (Loshchilov & Hutter's decoupled weight decay,
/// PyTorch's `torch.optim.AdamW`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdamW {
    pub beta_1: f64,
    pub beta_2: f64,
    pub epsilon: f64,
    pub weight_decay: f64,
}

/// A parameter's moments after `time` updates.
#[derive(Debug, Clone)]
pub struct Moments<B: Backend, const D: usize> {
    pub first: Tensor<B, D>,
    pub second: Tensor<B, D>,
    pub time: usize,
}

/// Whether [`adamw_step`] runs for backend `B`.
pub fn adamw_applies<B: Backend>() -> bool {
    #[cfg(feature = "libtorch")]
    {
        super::libtorch::adamw_applies::<B>()
    }
    #[cfg(not(feature = "libtorch"))]
    {
        false
    }
}

/// One AdamW update of `parameter` by `grad` at learning rate `lr`, with
/// the moments of the updates before (`None`: the first); the parameter and
/// moments after. `None` where [`adamw_applies`] is false: check first, the
/// inputs are consumed.
pub fn adamw_step<B: Backend, const D: usize>(
    adamw: AdamW,
    lr: f64,
    parameter: Tensor<B, D>,
    grad: Tensor<B, D>,
    moments: Option<Moments<B, D>>,
) -> Option<(Tensor<B, D>, Moments<B, D>)> {
    #[cfg(feature = "libtorch")]
    {
        super::libtorch::adamw_step(adamw, lr, parameter, grad, moments)
    }
    #[cfg(not(feature = "libtorch"))]
    {
        let _ = (adamw, lr, parameter, grad, moments);
        None
    }
}
