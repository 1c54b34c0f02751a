//! Model families as the pipeline sees them: what each architecture reads
//! from the grid file (its keys, defaults and training recipe), its part of a
//! train step's key and the checkpoint it reads, and how its `train` step fits
//! it. The models themselves (`model::<architecture>`) know nothing of grid
//! files, plans or steps.
//!
//! A new architecture is its model folder under `model/`, a folder here (its
//! [`Family`], `parse`, `key`, `assets` and `fit`), and its arm in [`of`] and
//! in the two matches over `ArchitectureSpec` (`spec::model`, `steps::train`).

pub mod bert;
pub mod bilstm;
mod train_data;

pub use train_data::TrainData;

use crate::model::Architecture;
use crate::spec::OptimizerName;

/// The registry: each architecture's family.
pub fn of(architecture: Architecture) -> &'static Family {
    match architecture {
        Architecture::Bilstm => &bilstm::FAMILY,
        Architecture::Bert => &bert::FAMILY,
    }
}

/// What an architecture says of itself to the grid file and the planner.
#[derive(Debug)]
pub struct Family {
    /// Its keys of `[[models]]`, beside `name`, `architecture` and `training`.
    pub keys: &'static [&'static str],
    /// What a key of another architecture most likely meant here.
    pub hint: fn(&str) -> Option<&'static str>,
    /// The training defaults.
    pub recipe: Recipe,
}

/// An architecture's training defaults; the rest are shared (weight decay
/// 5e-6, ≤ 35,000 steps, early stop after 10,000 without gain).
#[derive(Debug, Clone, Copy)]
pub struct Recipe {
    pub optimizer: OptimizerName,
    pub learning_rate: f64,
    pub batch_size: usize,
    /// A linear warm-up over this share of the steps then a linear decay; `None`: constant.
    pub warmup_share: Option<f64>,
    /// Clip the global gradient norm at this value; `None`: no clipping.
    pub max_grad_norm: Option<f64>,
}
