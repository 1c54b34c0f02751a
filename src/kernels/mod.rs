//! Fused CPU kernels for the operations burn's CPU backend runs as many small
//! ones, or one scalar libm call per element. Each kernel is a host function
//! on slices (the `grid-kernels` crate, `crates/grid-kernels`) plus its glue
//! to burn (`flex.rs`): for burn's CPU backend (`Flex`) and its autodiff
//! wrapper, with the backward pass written out; every other backend (CUDA,
//! LibTorch) keeps the model's own burn operations, which are the reference
//! the kernels are tested against.
//!
//! - [`lstm_recurrence`]: the LSTM over whole sequences, either direction
//!   (`grid_kernels::lstm`);
//! - [`tanh`], [`gelu`]: element-wise activations in SIMD lanes
//!   (`grid_kernels::activation`), reached through `model::rules::Rules`;
//! - [`swap_middle`]: attention's head split and merge as one contiguous copy
//!   (`grid_kernels::layout`).
//!
//! A new element-wise kernel is a function pair in `activation.rs` and one
//! `Elementwise` entry in `flex.rs`.
//!
//! `GRID_KERNELS=burn` turns the kernels off (to compare, or to rule them out).

mod flex;

pub use grid_kernels::lstm;

pub use flex::{applies, gelu, lstm_recurrence, swap_middle, tanh};

/// Whether fused kernels may be used (`GRID_KERNELS` is not `burn`).
pub fn enabled() -> bool {
    static ENABLED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ENABLED.get_or_init(|| std::env::var("GRID_KERNELS").map_or(true, |v| v.trim() != "burn"))
}

#[cfg(test)]
mod tests {
    use burn::backend::{Autodiff, Flex};
    use burn::prelude::*;

    type A = Autodiff<Flex>;

    /// The head split's copy is burn's `swap_dims(1, 2)`, values and
    /// gradients, exactly (it moves values, it computes nothing).
    #[test]
    fn swap_middle_is_burns_swap_dims_with_its_gradient() {
        let device = Default::default();
        let shape = [2, 5, 3, 4];
        let values: Vec<f32> = (0..120).map(|v| (v as f32 * 0.37).sin()).collect();
        let probe: Vec<f32> = (0..120).map(|v| (v as f32 * 0.11).cos()).collect();
        let run = |kernel: bool| {
            let x = Tensor::<A, 1>::from_floats(values.as_slice(), &device).reshape(shape).require_grad();
            let y = if kernel {
                super::swap_middle(x.clone()).expect("a kernel on Flex")
            } else {
                x.clone().swap_dims(1, 2)
            };
            let probe = Tensor::<A, 1>::from_floats(probe.as_slice(), &device).reshape([2, 3, 5, 4]);
            let grads = (y.clone() * probe).sum().backward();
            let grad = x.grad(&grads).unwrap();
            (y.inner().into_data().to_vec::<f32>().unwrap(), grad.into_data().to_vec::<f32>().unwrap())
        };
        assert_eq!(run(true), run(false));
        let plain = Tensor::<Flex, 1>::from_floats(values.as_slice(), &device).reshape(shape);
        assert_eq!(
            super::swap_middle(plain.clone()).unwrap().into_data().to_vec::<f32>().unwrap(),
            plain.swap_dims(1, 2).into_data().to_vec::<f32>().unwrap()
        );
    }
}
