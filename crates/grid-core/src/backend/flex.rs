//! burn's Flex backend: multi-threaded SIMD kernels on the CPU, in pure Rust.
//! The default, and the only backend of a build without features.

pub type Cpu = burn::backend::Flex;
/// [`Cpu`] with autodiff, for training and gradient salience.
pub type CpuAutodiff = burn::backend::Autodiff<Cpu>;
