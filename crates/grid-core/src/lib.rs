//! The bottom layer of `grid` above its fused kernels: numerics and models.
//! Backends and devices, the kernels' burn glue, datasets and tokenisers, the
//! two architectures behind the [`model::Classifier`] seam, the training
//! loop, and images with Zhou et al.'s manipulations. It knows nothing of grid files, salience methods, caches or steps
//! (ARCHITECTURE.md).

pub mod backend;
pub mod buckets;
pub mod data;
pub mod errors;
pub mod image;
pub mod interrupt;
pub mod kernels;
pub mod model;
pub mod text;
pub mod train;
pub mod values;
