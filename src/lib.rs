//! `grid`: declarative experiment grids for evaluating input-salience methods on
//! classifiers trained with known shortcuts (Bastings et al. 2022).
//!
//! The library is layered like the pipeline: `spec` turns a TOML file into a
//! validated [`spec::Grid`]; `dag` expands the grid into content-hashed steps and
//! runs the ones the `cache` lacks; each step kind lives in its own module
//! (`data`, `shortcut`, `train`, `verify`, `salience`, `metrics`, `report`).

pub mod cli;

// The layers below, under the paths they had before the workspace split.
pub use grid_cache as cache;
pub use grid_cache::clock;
pub use grid_core::with_autodiff_backend;
pub use grid_core::{backend, data, errors, interrupt, kernels, model, text, train, values};
pub use grid_methods::{metrics, salience, shortcut};
pub use grid_pipeline::{architectures, bench, compare, context, crowd, dag, io, spec, steps};
pub use grid_report as report;

#[cfg(test)]
mod tests {
    /// The cache layer keeps the backends' kernel folder through `gc` by name;
    /// neither layer sees the other, so the name is checked here.
    #[test]
    fn the_cache_and_the_backends_agree_on_the_kernels_folder() {
        assert_eq!(crate::cache::KERNELS_FOLDER, crate::backend::kernel_cache::FOLDER);
    }
}
