//! `[[models]]`: an architecture with its hyper-parameters and its training
//! recipe. The TOML keys are flat (one table per model). Each architecture owns
//! its keys, their defaults, its recipe and what methods may rely on, in
//! `architectures::<architecture>` ([`super::Family`]); this file reads the table, refuses
//! a key of another architecture at its own line, and hands the rest over.
//! The grid file's reader (`spec`) calls it; it is here, with the families,
//! so that they never reach up into the reader.
//! Defaults are the paper's for each architecture (Bastings et al. 2022, appendix A).

use std::ops::Range;

use serde::Deserialize;
use toml::Spanned;

use super::{self as family, ArchitectureSpec, RawModel, Recipe};
use grid_core::model::Architecture;
use grid_core::train::recipe::{BestBy, Keep, Optimizer, Schedule, TrainingSpec};
use grid_core::values::{Positive, Share};

#[derive(Debug, Clone, PartialEq)]
pub struct ModelSpec {
    pub name: String,
    pub architecture: ArchitectureSpec,
    pub training: TrainingSpec,
}

impl ModelSpec {
    pub fn kind(&self) -> Architecture {
        self.architecture.architecture()
    }

    /// Multiply-adds per token of a forward pass, from the sizes the grid
    /// file gives (what `--device auto` weighs); `None` for a pretrained
    /// checkpoint, whose sizes are read only when its step runs.
    pub fn macs_per_token(&self) -> Option<f64> {
        self.architecture.macs_per_token()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OptimizerName {
    Sgd,
    Adamw,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum KeepName {
    Best,
    Last,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTraining {
    batch_size: Option<Positive>,
    optimizer: Option<Spanned<OptimizerName>>,
    learning_rate: Option<Spanned<f64>>,
    momentum: Option<Spanned<Share>>,
    weight_decay: Option<Spanned<f64>>,
    warmup_share: Option<Spanned<Share>>,
    max_steps: Option<Positive>,
    eval_every: Option<Positive>,
    keep: Option<Spanned<KeepName>>,
    patience: Option<Spanned<Positive>>,
    best_by: Option<Spanned<BestBy>>,
    /// `0` switches clipping off where the architecture's default has it.
    max_grad_norm: Option<Spanned<f64>>,
    stop_at_accuracy: Option<Spanned<Share>>,
    seed: Option<u64>,
}

/// An error at a byte span of the grid file.
pub type SpanError = (Option<Range<usize>>, String);

pub(crate) fn refuse<T>(key: &Option<Spanned<T>>, message: impl FnOnce() -> String) -> Result<(), SpanError> {
    match key {
        Some(value) => Err((Some(value.span()), message())),
        None => Ok(()),
    }
}

pub(crate) fn value<T: Clone>(key: &Option<Spanned<T>>, default: T) -> T {
    key.as_ref().map(|v| v.get_ref().clone()).unwrap_or(default)
}

pub(crate) fn model(raw: RawModel) -> Result<ModelSpec, SpanError> {
    let name = raw.name.get_ref().clone();
    let family = family::of(raw.architecture);
    if let Some((key, span)) = raw.keys_set().into_iter().find(|(key, _)| !family.keys.contains(key)) {
        let message = match (family.hint)(key) {
            Some(hint) => format!("model `{name}`: {hint}"),
            None => format!("model `{name}`: `{key}` is not a key of architecture `{}`", raw.architecture),
        };
        return Err((Some(span), message));
    }
    let architecture = ArchitectureSpec::parse(&raw, &name)?;
    let training = training(raw.training, family.recipe, &name)?;
    Ok(ModelSpec { name, architecture, training })
}

fn training(raw: RawTraining, recipe: Recipe, name: &str) -> Result<TrainingSpec, SpanError> {
    let optimizer_name = raw.optimizer.as_ref().map(|o| *o.get_ref()).unwrap_or(recipe.optimizer);
    let optimizer = match optimizer_name {
        OptimizerName::Sgd => Optimizer::Sgd { momentum: value(&raw.momentum, Share::new(0.9)) },
        OptimizerName::Adamw => {
            refuse(&raw.momentum, || format!("model `{name}`: `momentum` is an SGD setting; AdamW uses fixed betas"))?;
            Optimizer::Adamw
        }
    };
    let schedule = match (&raw.warmup_share, recipe.warmup_share) {
        (Some(share), _) => Schedule::Linear { warmup_share: *share.get_ref() },
        (None, Some(share)) => Schedule::Linear { warmup_share: Share::new(share) },
        (None, None) => Schedule::Constant,
    };
    let max_grad_norm = match raw.max_grad_norm.as_ref().map(|n| (*n.get_ref(), n.span())) {
        Some((n, _)) if n > 0.0 && !n.is_nan() => Some(n),
        Some((0.0, _)) => None,
        Some((n, span)) => {
            return Err((Some(span), format!("model `{name}`: `training.max_grad_norm` must be ≥ 0, got {n}")));
        }
        None => recipe.max_grad_norm,
    };
    // TOML spells `nan` and `inf`; either would train a model of NaNs and cache it.
    let learning_rate = match raw.learning_rate.as_ref().map(|r| (*r.get_ref(), r.span())) {
        Some((r, _)) if r.is_finite() && r > 0.0 => r,
        Some((r, span)) => {
            return Err((
                Some(span),
                format!("model `{name}`: `training.learning_rate` must be a finite number > 0, got {r}"),
            ));
        }
        None => recipe.learning_rate,
    };
    let weight_decay = match raw.weight_decay.as_ref().map(|w| (*w.get_ref(), w.span())) {
        Some((w, _)) if w.is_finite() && w >= 0.0 => w,
        Some((w, span)) => {
            return Err((
                Some(span),
                format!("model `{name}`: `training.weight_decay` must be a finite number ≥ 0, got {w}"),
            ));
        }
        None => 5e-6,
    };
    let named = raw.keep.as_ref().map(|k| *k.get_ref());
    let keep_name = named.unwrap_or(if recipe.keep_last { KeepName::Last } else { KeepName::Best });
    let keep = match keep_name {
        KeepName::Best => Keep::Best {
            patience: value(&raw.patience, Positive::new(10_000)),
            by: value(&raw.best_by, BestBy::Accuracy),
        },
        KeepName::Last => {
            let last = if named.is_some() {
                "`keep = \"last\"`"
            } else {
                "this architecture keeps the last weights unless `keep = \"best\"` (its default)"
            };
            refuse(&raw.patience, || {
                format!("model `{name}`: `training.patience` stops early, but {last} trains all `max_steps`")
            })?;
            refuse(&raw.best_by, || {
                format!("model `{name}`: `training.best_by` picks the best evaluation, but {last} keeps the last")
            })?;
            Keep::Last
        }
    };
    Ok(TrainingSpec {
        batch_size: raw.batch_size.unwrap_or(Positive::new(recipe.batch_size)),
        optimizer,
        learning_rate,
        weight_decay,
        schedule,
        max_steps: raw.max_steps.unwrap_or(Positive::new(35_000)),
        eval_every: raw.eval_every.unwrap_or(Positive::new(500)),
        keep,
        max_grad_norm,
        stop_at_accuracy: raw.stop_at_accuracy.as_ref().map(|a| *a.get_ref()),
        seed: raw.seed.unwrap_or(1),
    })
}

/// An image model's recipe (`[[images.models]]`): SGD with momentum at
/// 0.05, batches of 32, the best validation accuracy kept, 1,000 steps
/// evaluated every 50, weight decay 1e-4 (torchvision's ResNet recipe,
/// shortened for the protocol's small datasets).
pub(crate) fn image_training(raw: RawTraining, name: &str) -> Result<TrainingSpec, SpanError> {
    let recipe = Recipe {
        optimizer: OptimizerName::Sgd,
        learning_rate: 0.05,
        batch_size: 32,
        warmup_share: None,
        max_grad_norm: None,
        keep_last: false,
    };
    let (max_steps, eval_every, weight_decay) = (raw.max_steps, raw.eval_every, raw.weight_decay.is_some());
    let mut spec = training(raw, recipe, name)?;
    spec.max_steps = max_steps.unwrap_or(Positive::new(1000));
    spec.eval_every = eval_every.unwrap_or(Positive::new(50));
    if !weight_decay {
        spec.weight_decay = 1e-4;
    }
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_schedule_warms_up_then_decays_to_zero() {
        let s = Schedule::Linear { warmup_share: Share::new(0.1) };
        assert_eq!(s.factor(0, 100), 0.1);
        assert_eq!(s.factor(9, 100), 1.0);
        assert_eq!(s.factor(10, 100), 1.0);
        assert!((s.factor(55, 100) - 0.5).abs() < 1e-12);
        assert_eq!(s.factor(100, 100), 0.0);
        assert_eq!(Schedule::Constant.factor(7, 10), 1.0);
        let no_warmup = Schedule::Linear { warmup_share: Share::new(0.0) };
        assert_eq!(no_warmup.factor(0, 4), 1.0);
        assert_eq!(no_warmup.factor(2, 4), 0.5);
    }
}
