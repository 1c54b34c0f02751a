//! `verify`: does the shortcut model use the shortcut, and only because of the
//! shortcut data? (Bastings et al. §2.4; PROTOCOL §1, "Verification".)

use std::path::Path;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::StepContext;
use super::io::write_json;
use crate::data::Example;
use crate::model::checkpoint::{self, Checkpoint};
use crate::model::predict::{accuracy, predict};
use crate::spec::VerificationSpec;
use burn::prelude::Backend;
use burn::tensor::backend::AutodiffBackend;

pub const FILE: &str = "verification.json";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verification {
    pub shortcut_model_on_synthetic: f64,
    pub original_model_on_synthetic: f64,
    pub shortcut_model_on_flip: f64,
    pub shortcut_model_on_original: f64,
    pub original_model_on_original: f64,
    pub synthetic_examples: usize,
    pub original_examples: usize,
    pub passed: bool,
    pub failures: Vec<String>,
}

/// Applies the thresholds to measured accuracies.
pub fn judge(
    thresholds: &VerificationSpec,
    shortcut_on_synthetic: f64,
    original_on_synthetic: f64,
    shortcut_on_original: f64,
    original_on_original: f64,
) -> Vec<String> {
    let mut failures = Vec::new();
    let min = thresholds.min_synthetic_accuracy.get();
    if shortcut_on_synthetic < min {
        failures.push(format!(
            "shortcut model reaches {:.1}% on the synthetic test set (needs ≥ {:.1}%)",
            100.0 * shortcut_on_synthetic,
            100.0 * min
        ));
    }
    let tolerance = thresholds.chance_tolerance.get();
    if (original_on_synthetic - 0.5).abs() > tolerance {
        failures.push(format!(
            "original model reaches {:.1}% on the synthetic test set (chance is 50% ± {:.1})",
            100.0 * original_on_synthetic,
            100.0 * tolerance
        ));
    }
    let drop = original_on_original - shortcut_on_original;
    if drop > thresholds.max_original_drop.get() {
        failures.push(format!(
            "shortcut model loses {:.1} points on the original test set (at most {:.1} allowed)",
            100.0 * drop,
            100.0 * thresholds.max_original_drop.get()
        ));
    }
    failures
}

fn accuracy_of<B: Backend>(model: &Checkpoint<B>, examples: &[Example], device: &B::Device) -> f64 {
    let max_length = model.config.max_length();
    let encoded: Vec<Vec<u32>> = examples.iter().map(|e| model.encoder.encode(&e.text, max_length).ids).collect();
    let refs: Vec<&[u32]> = encoded.iter().map(Vec::as_slice).collect();
    let predictions = predict(&model.model, &refs, 256, model.encoder.pad_id(), device);
    let labels: Vec<u32> = examples.iter().map(|e| e.label).collect();
    accuracy(&predictions, &labels)
}

/// Inputs: shortcut model, original model, synth, corpus.
pub fn run(thresholds: &VerificationSpec, ctx: &StepContext, out: &Path) -> Result<()> {
    crate::with_autodiff_backend!(ctx.compute, |B, device| {
        run_on::<<B as AutodiffBackend>::InnerBackend>(thresholds, ctx, out, &device)
    })
}

fn run_on<B: Backend>(thresholds: &VerificationSpec, ctx: &StepContext, out: &Path, device: &B::Device) -> Result<()> {
    let shortcut = checkpoint::load::<B>(&ctx.inputs[0], device)?;
    let original = checkpoint::load::<B>(&ctx.inputs[1], device)?;
    let as_examples = |v: Vec<crate::shortcut::SyntheticExample>| -> Vec<Example> {
        v.into_iter().map(|s| Example { text: s.text, label: s.label }).collect()
    };
    let synthetic = as_examples(super::synth::load_test(&ctx.inputs[2], false)?);
    let flip = as_examples(super::synth::load_test(&ctx.inputs[2], true)?);
    let original_test = super::corpus::load(&ctx.inputs[3])?.test;

    let shortcut_on_synthetic = accuracy_of(&shortcut, &synthetic, device);
    let original_on_synthetic = accuracy_of(&original, &synthetic, device);
    let shortcut_on_flip = accuracy_of(&shortcut, &flip, device);
    let shortcut_on_original = accuracy_of(&shortcut, &original_test, device);
    let original_on_original = accuracy_of(&original, &original_test, device);
    let failures =
        judge(thresholds, shortcut_on_synthetic, original_on_synthetic, shortcut_on_original, original_on_original);
    write_json(
        &out.join(FILE),
        &Verification {
            shortcut_model_on_synthetic: shortcut_on_synthetic,
            original_model_on_synthetic: original_on_synthetic,
            shortcut_model_on_flip: shortcut_on_flip,
            shortcut_model_on_original: shortcut_on_original,
            original_model_on_original: original_on_original,
            synthetic_examples: synthetic.len(),
            original_examples: original_test.len(),
            passed: failures.is_empty(),
            failures,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_by_hand() {
        let t = VerificationSpec::default(); // 0.99, ±0.1, 0.02
        assert!(judge(&t, 0.995, 0.52, 0.87, 0.88).is_empty());
        let f = judge(&t, 0.98, 0.65, 0.84, 0.88);
        assert_eq!(f.len(), 3, "{f:?}");
        assert!(f[0].contains("98.0%"));
        assert!(f[1].contains("65.0%"));
        assert!(f[2].contains("4.0 points"));
    }
}
