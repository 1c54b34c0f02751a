//! `grid`'s fused CPU kernels, on plain slices: a crate of their own so that
//! they are optimised in every build profile (a debug build of `grid`, which
//! CI and the tests run, compiles its own code unoptimised), and so that they
//! carry no burn types. The glue to burn is `grid::kernels`.

pub mod activation;
pub mod adamw;
pub mod attention;
pub mod batch_norm;
pub mod blas;
mod chunks;
pub mod conv;
mod dispatch;
pub mod lanes;
pub mod layout;
pub mod linear;
pub mod lstm;
mod math;
pub mod matmul;
pub mod max_pool;
pub mod norm;
pub mod packed;
pub mod peak;
pub mod pool;
pub mod rescale;
pub mod softmax;
#[cfg(test)]
mod testing;
