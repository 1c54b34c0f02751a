//! `grid`: declarative experiment grids for evaluating input-salience methods on
//! classifiers trained with known shortcuts (Bastings et al. 2022).
//!
//! The library is layered like the pipeline: `spec` turns a TOML file into a
//! validated [`spec::Grid`]; `dag` expands the grid into content-hashed steps and
//! runs the ones the `cache` lacks; each step kind lives in its own module
//! (`data`, `shortcut`, `train`, `verify`, `salience`, `metrics`, `report`).

pub mod architectures;
pub mod backend;
pub mod bench;
pub mod cache;
pub mod cli;
pub mod clock;
pub mod crowd;
pub mod dag;
pub mod data;
pub mod errors;
pub mod interrupt;
pub mod kernels;
pub mod metrics;
pub mod model;
pub mod report;
pub mod salience;
pub mod shortcut;
pub mod spec;
pub mod steps;
pub mod text;
pub mod train;
pub mod values;
