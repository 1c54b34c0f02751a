//! `grid`: declarative experiment grids for evaluating input-salience methods on
//! classifiers trained with known shortcuts (Bastings et al. 2022).
//!
//! The library is layered like the pipeline: `spec` turns a TOML file into a
//! validated [`spec::Grid`]; `dag` expands the grid into content-hashed steps and
//! runs the ones the `cache` lacks; each step kind lives in its own module
//! (`data`, `shortcut`, `train`, `verify`, `salience`, `metrics`, `report`).

pub mod architectures;
pub mod bench;
pub mod cache;
pub mod cli;
pub mod crowd;
pub mod dag;
pub mod metrics;
pub mod report;
pub mod salience;
pub mod shortcut;
pub mod spec;
pub mod steps;

// The layers below, under the paths they had before the workspace split.
pub use grid_core::with_autodiff_backend;
pub use grid_core::{backend, clock, data, errors, interrupt, kernels, model, text, train, values};
