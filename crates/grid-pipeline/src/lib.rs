//! The pipeline layer: `spec` turns a TOML file into a validated
//! [`spec::Grid`]; `dag` expands it into content-hashed steps and runs the
//! ones the cache lacks, through an executor; each step kind lives in its own
//! module of `steps`, its kind (key version) in `step_kind`; `bench` times methods and GEMMs on a grid's models; `architectures` is what each model family gives the
//! planner and the `train` step; `crowd` runs the crowd study
//! (ARCHITECTURE.md).

pub mod architectures;
pub mod bench;
pub mod compare;
pub mod context;
pub mod crowd;
pub mod dag;
pub mod io;
mod paths;
pub mod spec;
pub mod step_kind;
pub mod steps;

// The layers below are named by their crates (`grid_core::model`,
// `grid_cache::Cache`, …), never through an alias, so that a reader sees
// which layer a name comes from.
