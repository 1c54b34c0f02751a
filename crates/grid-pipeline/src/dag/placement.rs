//! The plan's side of `--device auto` (`backend::placement`): which models a
//! grid trains, with their shapes' measured rates, and the rate each training
//! step records when it has run.

use std::collections::BTreeSet;

use super::{Plan, Step};
use crate::step_kind::StepKind;
use crate::steps::Work;
use grid_cache::Cache;
use grid_core::backend::DeviceChoice;
use grid_core::backend::placement::{self, Measurements, Model, ModelWork, Placed};

/// The model shape a training step trains (`Measurements::shape`).
fn shape(step: &Step) -> Option<String> {
    let Work::Train { model, max_length, .. } = &step.work else { return None };
    Some(Measurements::shape(&step.params["architecture"], *max_length, model.training.batch_size.get()))
}

/// Each model the plan trains (once, however many shortcuts and seeds), with
/// what was measured for its shape in `cache`.
pub fn models(plan: &Plan, cache: &Cache) -> Vec<Model> {
    let measurements = Measurements::in_cache(cache.root());
    let mut seen = BTreeSet::new();
    plan.steps
        .iter()
        .filter_map(|step| {
            let Work::Train { model, .. } = &step.work else { return None };
            if !seen.insert(model.name.clone()) {
                return None;
            }
            let work = model.macs_per_token().map_or(ModelWork::Pretrained, ModelWork::MacsPerToken);
            Some(Model { name: model.name.clone(), work, measured: measurements.rates(&shape(step)?) })
        })
        .collect()
}

/// `--device auto`: the GPU when one is usable and the grid's models are
/// worth it, by what the cache measured for them. `models` plans the grid for
/// them only when there is a GPU to choose (without one, no planning twice).
pub fn auto_device<E>(models: impl FnOnce() -> Result<Vec<Model>, E>) -> Result<Placed, E> {
    let gpu = placement::gpu_available();
    let models = if gpu.is_ok() { models()? } else { Vec::new() };
    Ok(placement::auto_device(&models, gpu))
}

/// After training step `index` ran on `device`: its rate, from its
/// `training.json`, recorded for its shape. Best effort: a rate that cannot
/// be read or written leaves placement to the prior, and says so.
pub fn record_training(plan: &Plan, index: usize, cache: &Cache, device: DeviceChoice) -> Result<(), String> {
    let step = &plan.steps[index];
    let Some(shape) = shape(step) else { return Ok(()) };
    let record = cache.step_dir(StepKind::Train, &step.key).join("training.json");
    let text = std::fs::read_to_string(&record).map_err(|e| format!("{}: {e}", record.display()))?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", record.display()))?;
    let Some(rate) = value["summary"]["examples_per_second"].as_f64() else { return Ok(()) };
    Measurements::in_cache(cache.root()).record(&shape, device, rate).map_err(|e| format!("placement record: {e}"))
}
