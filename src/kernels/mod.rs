//! Fused CPU kernels for the operations burn's CPU backend runs as many small
//! ones. Each kernel is a host function on slices (the `grid-kernels` crate,
//! `crates/grid-kernels`) plus its glue to burn (`flex.rs`): for burn's CPU backend (`Flex`) and its autodiff
//! wrapper, with the backward pass written out; every other backend (CUDA,
//! LibTorch) keeps the model's own burn operations, which are the reference
//! the kernels are tested against.
//!
//! `GRID_KERNELS=burn` turns the kernels off (to compare, or to rule them out).

mod flex;

pub use grid_kernels::lstm;

pub use flex::{applies, gelu, lstm_recurrence, tanh};

/// Whether fused kernels may be used (`GRID_KERNELS` is not `burn`).
pub fn enabled() -> bool {
    static ENABLED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ENABLED.get_or_init(|| std::env::var("GRID_KERNELS").map_or(true, |v| v.trim() != "burn"))
}
