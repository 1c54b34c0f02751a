//! `train`: a corpus or mixed split → a trained classifier (safetensors) with
//! its config, vocabulary and training log.

use std::path::Path;

use anyhow::{Context, Result};
use burn::tensor::backend::AutodiffBackend;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::StepContext;
use super::io::{read_jsonl, write_json};
use crate::backend::{CpuAutodiff, DeviceChoice};
use crate::data::Example;
use crate::model::bilstm::{BiLstmClassifier, BiLstmConfig};
use crate::model::checkpoint::{ModelConfig, save_bilstm};
use crate::model::glove::{self, GloveCoverage};
use crate::spec::{Architecture, ModelSpec};
use crate::text::TextEncoder;
use crate::text::vocab::WordVocab;
use crate::train::{TrainExample, TrainSetup, TrainSummary, train};

#[derive(Debug, Serialize)]
struct TrainingRecord<'a> {
    architecture: &'a str,
    train_examples: usize,
    validation_examples: usize,
    vocab_size: usize,
    glove: Option<GloveCoverage>,
    summary: TrainSummary,
}

pub fn run(
    model: &ModelSpec,
    max_length: usize,
    shortcut_tokens: &[String],
    glove: Option<&Path>,
    data_dir: &Path,
    out: &Path,
    ctx: &StepContext,
) -> Result<()> {
    let train_set: Vec<Example> = read_jsonl(&data_dir.join("train.jsonl"))?;
    let validation: Vec<Example> = read_jsonl(&data_dir.join("validation.jsonl"))?;
    match (model.architecture, ctx.device) {
        (Architecture::Bilstm, DeviceChoice::Cpu) => run_bilstm::<CpuAutodiff>(
            model,
            max_length,
            shortcut_tokens,
            glove,
            &train_set,
            &validation,
            out,
            ctx,
            &Default::default(),
        ),
        (_, device) => Err(anyhow::anyhow!(device.check().err().unwrap_or_default())),
    }
}

#[allow(clippy::too_many_arguments)]
fn run_bilstm<B: AutodiffBackend>(
    spec: &ModelSpec,
    max_length: usize,
    shortcut_tokens: &[String],
    glove_path: Option<&Path>,
    train_set: &[Example],
    validation: &[Example],
    out: &Path,
    ctx: &StepContext,
    device: &B::Device,
) -> Result<()> {
    let b = &spec.bilstm;
    let vocab = WordVocab::build(
        train_set.iter().map(|e| e.text.as_str()),
        shortcut_tokens,
        b.vocab.min_count.get(),
        b.vocab.max_size.get(),
        b.vocab.lowercase,
    );
    let labels = train_set.iter().chain(validation).map(|e| e.label + 1).max().unwrap_or(2).max(2);
    let config = BiLstmConfig {
        vocab_size: vocab.vocab_size(),
        embedding_dim: b.embedding_dim.get(),
        hidden_size: b.hidden_size.get(),
        attention_size: b.attention_size.get(),
        mlp_size: b.mlp_size.get(),
        num_outputs: if labels == 2 { 1 } else { labels as usize },
        dropout: b.dropout.get(),
        pad_id: vocab.pad_id(),
    };
    let mut rng = ChaCha8Rng::seed_from_u64(spec.training.seed);
    let (pretrained, coverage) = match glove_path {
        Some(path) => {
            let (matrix, coverage) = glove::load(path, vocab.words(), config.embedding_dim, &mut rng)
                .with_context(|| format!("model `{}`: GloVe", spec.name))?;
            (Some(matrix), Some(coverage))
        }
        None => (None, None),
    };
    let model = BiLstmClassifier::<B>::new(&config, &mut rng, pretrained, device);
    let encode = |examples: &[Example]| -> Vec<TrainExample> {
        examples.iter().map(|e| TrainExample { ids: vocab.encode(&e.text, max_length).ids, label: e.label }).collect()
    };
    let (train_enc, validation_enc) = (encode(train_set), encode(validation));
    let setup = TrainSetup {
        pad_id: vocab.pad_id(),
        unk_id: vocab.unk_id(),
        word_dropout: b.word_dropout.get(),
        progress: ctx.progress,
        log: ctx.log,
    };
    let (best, summary) = train::<B, _>(model, &spec.training, &setup, &train_enc, &validation_enc, device);
    save_bilstm(out, &best, &ModelConfig::Bilstm { config, max_length }, &vocab)?;
    write_json(
        &out.join("training.json"),
        &TrainingRecord {
            architecture: spec.architecture.name(),
            train_examples: train_set.len(),
            validation_examples: validation.len(),
            vocab_size: vocab.vocab_size(),
            glove: coverage,
            summary,
        },
    )
}
