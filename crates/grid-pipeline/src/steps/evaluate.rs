//! `evaluate`: a natural model's accuracy and macro-F1 on the dataset's own
//! test set (Zhao & Aletras's Table 1). A natural grid plants nothing, so this
//! is what it says of its models in place of verification.

use std::path::Path;

use anyhow::Result;
use burn::prelude::Backend;
use burn::tensor::backend::AutodiffBackend;
use serde::{Deserialize, Serialize};

use crate::context::StepContext;
use crate::io::write_json;
use grid_core::model::checkpoint;

pub const FILE: &str = "evaluation.json";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    pub examples: usize,
    pub accuracy: f64,
    pub macro_f1: f64,
}

/// Inputs: the model, corpus.
pub fn run(ctx: &StepContext, out: &Path) -> Result<()> {
    grid_core::with_autodiff_backend!(ctx.compute, |B, device| {
        run_on::<<B as AutodiffBackend>::InnerBackend>(ctx, out, &device)
    })
}

fn run_on<B: Backend>(ctx: &StepContext, out: &Path, device: &B::Device) -> Result<()> {
    let model = checkpoint::load::<B>(&ctx.inputs[0], device)?;
    let test = super::corpus::load(&ctx.inputs[1])?.test;
    anyhow::ensure!(!test.is_empty(), "the test set is empty");
    let (accuracy, macro_f1) = super::verify::scores_of(&model, &test, ctx.compute.buckets, device);
    write_json(&out.join(FILE), &Evaluation { examples: test.len(), accuracy, macro_f1 })
}
