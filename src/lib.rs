//! `grid`: declarative experiment grids for evaluating input-salience methods on
//! classifiers trained with known shortcuts (Bastings et al. 2022).
//!
//! This crate is the command line (`cli`); the library is the workspace's
//! layers, each named by its crate (ARCHITECTURE.md): `grid_pipeline` (`spec`
//! turns a TOML file into a validated grid, `dag` expands it into
//! content-hashed steps and runs the ones the cache lacks, `steps` one module
//! per step kind), `grid_report`, `grid_cache`, `grid_methods` (salience
//! methods, metrics, shortcuts), `grid_core` (models, training, data) and
//! `grid_kernels`.

pub mod cli;

#[cfg(test)]
mod tests {
    /// The cache layer keeps the backends' kernel folder through `gc` by name;
    /// neither layer sees the other, so the name is checked here.
    #[test]
    fn the_cache_and_the_backends_agree_on_the_kernels_folder() {
        assert_eq!(grid_cache::KERNELS_FOLDER, grid_core::backend::kernel_cache::FOLDER);
    }
}
