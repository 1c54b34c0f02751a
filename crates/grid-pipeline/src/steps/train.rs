//! `train`: a corpus or mixed split → a trained classifier (safetensors) with
//! its config, tokenizer and training log. Each architecture builds, trains and
//! saves its own model (`architectures::<architecture>::fit`); this step reads the data
//! and hands it over.

use std::path::Path;

use anyhow::Result;
use burn::tensor::backend::AutodiffBackend;

use crate::architectures::TrainData;
use crate::context::StepContext;
use crate::io::read_jsonl;
use crate::spec::ModelSpec;
use grid_core::data::Example;
use grid_core::model::ModelAssets;
use grid_methods::shortcut::{ShortcutKind, ShortcutTokens};

pub fn run(
    model: &ModelSpec,
    max_length: usize,
    shortcut_tokens: &[String],
    planted: Option<(ShortcutKind, &ShortcutTokens)>,
    assets: &ModelAssets,
    out: &Path,
    ctx: &StepContext,
) -> Result<()> {
    // Input 0: the corpus, or the synth step's mixed splits.
    let data_dir = &ctx.inputs[0];
    let train_set: Vec<Example> = read_jsonl(&data_dir.join("train.jsonl"))?;
    let validation: Vec<Example> = read_jsonl(&data_dir.join("validation.jsonl"))?;
    let data = TrainData { train: &train_set, validation: &validation, max_length, shortcut_tokens, planted };
    grid_core::with_autodiff_backend!(ctx.compute, |B, device| fit::<B>(model, assets, &data, out, ctx, &device))
}

fn fit<B: AutodiffBackend>(
    model: &ModelSpec,
    assets: &ModelAssets,
    data: &TrainData,
    out: &Path,
    ctx: &StepContext,
    device: &B::Device,
) -> Result<()> {
    model.architecture.fit::<B>(model, assets, data, out, ctx, device)
}
