//! What a training run is asked to do: batch size, optimiser, schedule, how
//! long, and which weights it returns. The grid file's `training` table
//! (`architectures::table`) reads into it; the training loop takes nothing else.

use serde::{Deserialize, Serialize};

use crate::values::{Positive, Share};

/// The optimiser and its own knobs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "name", rename_all = "lowercase")]
pub enum Optimizer {
    /// SGD with (heavy-ball) momentum: the paper's LSTM recipe.
    Sgd { momentum: Share },
    /// AdamW (β = 0.9, 0.999, ε = 1e-8, decoupled weight decay): BERT fine-tuning.
    Adamw,
}

/// Optimisation. Defaults per architecture: the paper's LSTM (SGD lr 0.03,
/// momentum 0.9, batch 64) and BERT (AdamW lr 2e-5, batch 16, plus the usual
/// fine-tuning schedule: 10% linear warm-up, linear decay, clipping at norm 1);
/// both: weight decay 5e-6, ≤ 35,000 steps, early stop after 10,000 without gain.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrainingSpec {
    pub batch_size: Positive,
    pub optimizer: Optimizer,
    pub learning_rate: f64,
    pub weight_decay: f64,
    /// Share of `max_steps` over which the learning rate rises linearly from 0;
    /// after it, it decays linearly to 0 at `max_steps`. 0 with no decay: constant.
    pub schedule: Schedule,
    pub max_steps: Positive,
    pub eval_every: Positive,
    /// Which weights training returns.
    pub keep: Keep,
    /// Clip the global gradient norm to this value.
    pub max_grad_norm: Option<f64>,
    /// Stop at the first evaluation whose validation accuracy reaches this,
    /// returning its weights (Zhou et al. 2022's code stops at 0.97).
    pub stop_at_accuracy: Option<Share>,
    pub seed: u64,
}

/// Which weights a training run returns.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "name", rename_all = "lowercase")]
pub enum Keep {
    /// The evaluation with the highest validation score (`by`); stop after
    /// `patience` steps without a gain (the paper's recipe).
    Best { patience: Positive, by: BestBy },
    /// The weights after `max_steps`, with no early stop (Hugging Face's
    /// Trainer default). Accuracy on a mixed validation set is mostly accuracy on
    /// the original task, so `best` can return a model that has not finished
    /// learning a shortcut that only a share of the examples carries.
    Last,
}

/// What `keep = "best"` compares evaluations by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BestBy {
    /// Accuracy over the whole validation split (the paper's).
    #[default]
    Accuracy,
    /// The mean of the accuracies over the validation examples that carry the
    /// whole planted pattern and over those that do not: learning the shortcut
    /// counts as much as the task, however few examples carry it. A model
    /// trained without a shortcut has no such examples; it is compared by
    /// accuracy.
    Balanced,
}

impl BestBy {
    pub fn name(self) -> &'static str {
        match self {
            BestBy::Accuracy => "accuracy",
            BestBy::Balanced => "balanced",
        }
    }
}

/// The learning-rate schedule.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "name", rename_all = "lowercase")]
pub enum Schedule {
    Constant,
    /// Linear warm-up over `warmup_share` of the steps, then linear decay to 0.
    Linear {
        warmup_share: Share,
    },
}

impl Schedule {
    /// The multiplier of the base learning rate at 0-based `step` of `total`.
    pub fn factor(self, step: usize, total: usize) -> f64 {
        match self {
            Schedule::Constant => 1.0,
            Schedule::Linear { warmup_share } => {
                let warmup = (warmup_share.get() * total as f64).round() as usize;
                // HF's get_linear_schedule_with_warmup, at the step being taken.
                if step < warmup {
                    (step + 1) as f64 / warmup as f64
                } else {
                    ((total - step.min(total)) as f64 / (total - warmup).max(1) as f64).max(0.0)
                }
            }
        }
    }
}
