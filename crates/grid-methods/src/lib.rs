//! The methods layer: input-salience methods (gradients, integrated
//! gradients, SmoothGrad, DeepLift, LIME, KernelSHAP, occlusion, attention),
//! the metrics that score them against the planted ground truth, and the
//! shortcut rules planted in the data. Methods see models only through
//! `grid_core::model::Classifier`; nothing here knows of grid files, caches
//! or steps (ARCHITECTURE.md).

pub mod metrics;
pub mod salience;
pub mod shortcut;

// The layer below is named by its crate (`grid_core::model`), never
// through an alias.
