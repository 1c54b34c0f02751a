//! `train`: a corpus or mixed split → a trained classifier (safetensors) with
//! its config, tokenizer and training log. BiLSTMs start from scratch (or GloVe);
//! BERT-family models from a pretrained checkpoint, or from scratch with a
//! WordPiece vocabulary learnt from the training split.

use std::path::Path;

use anyhow::{Context, Result};
use burn::tensor::backend::AutodiffBackend;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::StepContext;
use super::io::{read_jsonl, write_json};
use crate::dag::ModelAssets;
use crate::data::Example;
use crate::model::bert::encoder::BertModel;
use crate::model::bert::load::{LoadReport, add_word_embeddings, load_head, load_pretrained};
use crate::model::bert::{BertClassifier, BertConfig};
use crate::model::bilstm::{BiLstmClassifier, BiLstmConfig};
use crate::model::checkpoint::{ModelConfig, save_bert, save_bilstm};
use crate::model::glove::{self, GloveCoverage};
use crate::model::hub;
use crate::spec::{ArchitectureSpec, BertInit, BertSpec, BiLstmSpec, HeadInit, ModelSpec, PadEmbedding, PositionInit};
use crate::text::TextEncoder;
use crate::text::subword::SubwordEncoder;
use crate::text::vocab::WordVocab;
use crate::train::{TrainExample, TrainSetup, TrainSummary, train};

#[derive(Debug, Serialize)]
struct TrainingRecord<'a> {
    architecture: &'a str,
    train_examples: usize,
    validation_examples: usize,
    vocab_size: usize,
    glove: Option<GloveCoverage>,
    pretrained: Option<PretrainedRecord>,
    summary: TrainSummary,
}

/// Where a fine-tuned model started from.
#[derive(Debug, Serialize)]
struct PretrainedRecord {
    source: String,
    /// Word-embedding rows appended for the shortcut tokens.
    added_tokens: usize,
    /// Whether the classification head is the checkpoint's (`head = "checkpoint"`).
    head_from_checkpoint: bool,
    load: LoadReport,
}

pub fn run(
    model: &ModelSpec,
    max_length: usize,
    shortcut_tokens: &[String],
    assets: &ModelAssets,
    data_dir: &Path,
    out: &Path,
    ctx: &StepContext,
) -> Result<()> {
    let train_set: Vec<Example> = read_jsonl(&data_dir.join("train.jsonl"))?;
    let validation: Vec<Example> = read_jsonl(&data_dir.join("validation.jsonl"))?;
    let data = TrainData { train: &train_set, validation: &validation, max_length, shortcut_tokens };
    crate::with_autodiff_backend!(ctx.compute, |B, device| run_on::<B>(model, assets, &data, out, ctx, &device))
}

/// The examples and text limits a model trains on.
struct TrainData<'a> {
    train: &'a [Example],
    validation: &'a [Example],
    max_length: usize,
    shortcut_tokens: &'a [String],
}

impl TrainData<'_> {
    /// 1 output for two classes (a logit), C for C > 2.
    fn num_outputs(&self) -> usize {
        let classes = self.train.iter().chain(self.validation).map(|e| e.label + 1).max().unwrap_or(2).max(2);
        if classes == 2 { 1 } else { classes as usize }
    }

    fn encode(&self, encoder: &dyn TextEncoder, max_length: usize) -> (Vec<TrainExample>, Vec<TrainExample>) {
        let encode = |examples: &[Example]| -> Vec<TrainExample> {
            examples
                .iter()
                .map(|e| TrainExample { ids: encoder.encode(&e.text, max_length).ids, label: e.label })
                .collect()
        };
        (encode(self.train), encode(self.validation))
    }
}

fn run_on<B: AutodiffBackend>(
    model: &ModelSpec,
    assets: &ModelAssets,
    data: &TrainData,
    out: &Path,
    ctx: &StepContext,
    device: &B::Device,
) -> Result<()> {
    match (&model.architecture, assets) {
        (ArchitectureSpec::Bilstm(spec), ModelAssets::Glove(path)) => {
            run_bilstm::<B>(model, spec, Some(path), data, out, ctx, device)
        }
        (ArchitectureSpec::Bilstm(spec), _) => run_bilstm::<B>(model, spec, None, data, out, ctx, device),
        (ArchitectureSpec::Bert(spec), assets) => run_bert::<B>(model, spec, assets, data, out, ctx, device),
    }
}

fn run_bert<B: AutodiffBackend>(
    model: &ModelSpec,
    spec: &BertSpec,
    assets: &ModelAssets,
    data: &TrainData,
    out: &Path,
    ctx: &StepContext,
    device: &B::Device,
) -> Result<()> {
    let mut rng = ChaCha8Rng::seed_from_u64(model.training.seed);
    let context = || format!("model `{}`", model.name);
    let num_outputs = data.num_outputs();
    let (tokenizer, mut config, encoder, head, pretrained) = match (&spec.init, assets) {
        (BertInit::Pretrained { head, .. }, ModelAssets::Checkpoint { source, cache_root }) => {
            let dir = hub::resolve(source, cache_root, &hub::bar_progress(ctx.progress)).with_context(context)?;
            let tokenizer = SubwordEncoder::from_pretrained_dir(&dir, data.shortcut_tokens).with_context(context)?;
            let (mut config, encoder, report) = load_pretrained::<B>(&dir, &mut rng, device).with_context(context)?;
            // Rows for the shortcut tokens the tokenizer appended.
            let added = tokenizer.vocab_size().saturating_sub(config.vocab_size);
            let encoder = add_word_embeddings(encoder, added, config.initializer_range, &mut rng);
            let head = match head {
                HeadInit::Fresh => None,
                HeadInit::Checkpoint => Some(
                    load_head::<B>(&dir, &config, num_outputs, device).with_context(context)?.with_context(|| {
                        format!(
                            "model `{}`: head = \"checkpoint\", but {source} has no classification head (`{}.weight`)",
                            model.name,
                            config.family().map(|f| f.head_output()).unwrap_or("classifier")
                        )
                    })?,
                ),
            };
            config.vocab_size += added;
            let record = PretrainedRecord {
                source: source.to_string(),
                added_tokens: added,
                head_from_checkpoint: head.is_some(),
                load: report,
            };
            (tokenizer, config, encoder, head, Some(record))
        }
        (BertInit::Random(shape), _) => {
            let texts = data.train.iter().map(|e| e.text.as_str());
            let tokenizer = SubwordEncoder::train(texts, shape.vocab_size.get(), data.shortcut_tokens, shape.lowercase)
                .with_context(context)?;
            let config = BertConfig::small(
                tokenizer.vocab_size(),
                shape.hidden_size.get(),
                shape.num_hidden_layers.get(),
                shape.num_attention_heads.get(),
                shape.intermediate_size.get(),
                data.max_length,
            );
            // The normal draw happens either way, so the other weights do not move.
            let mut encoder = BertModel::<B>::new(&config, &mut rng, device);
            if shape.positions == PositionInit::Sinusoidal {
                encoder = encoder.with_sinusoidal_positions(config.initializer_range);
            }
            (tokenizer, config, encoder, None, None)
        }
        (BertInit::Pretrained { checkpoint, .. }, _) => {
            anyhow::bail!("model `{}`: checkpoint `{checkpoint}` was not resolved by the plan", model.name)
        }
    };
    if let Some(p) = spec.dropout {
        config.hidden_dropout_prob = p.get();
        config.attention_probs_dropout_prob = p.get();
        config.classifier_dropout = None;
    }
    let encoder = encoder.with_dropout(&config);
    // RoBERTa's first position rows are never used: the encoder says how many are.
    let max_length = data.max_length.min(encoder.max_length());
    let classifier = match head {
        Some(head) => BertClassifier::with_head(encoder, head, &config),
        None => BertClassifier::with_encoder(encoder, &config, num_outputs, &mut rng, device),
    };
    let (train_enc, validation_enc) = data.encode(&tokenizer, max_length);
    let setup = TrainSetup {
        pad_id: tokenizer.pad_id(),
        unk_id: tokenizer.unk_id(),
        word_dropout: 0.0,
        progress: ctx.progress,
        log: ctx.log,
        buckets: ctx.compute.buckets,
    };
    let (best, summary) = train::<B, _>(classifier, &model.training, &setup, &train_enc, &validation_enc, device)
        .with_context(|| format!("model `{}`", model.name))?;
    save_bert(out, &best, &ModelConfig::Bert { config, num_outputs, max_length }, &tokenizer)?;
    write_json(
        &out.join("training.json"),
        &TrainingRecord {
            architecture: model.kind().name(),
            train_examples: data.train.len(),
            validation_examples: data.validation.len(),
            vocab_size: tokenizer.vocab_size(),
            glove: None,
            pretrained,
            summary,
        },
    )
}

fn run_bilstm<B: AutodiffBackend>(
    model: &ModelSpec,
    b: &BiLstmSpec,
    glove_path: Option<&Path>,
    data: &TrainData,
    out: &Path,
    ctx: &StepContext,
    device: &B::Device,
) -> Result<()> {
    let vocab = WordVocab::build(
        data.train.iter().map(|e| e.text.as_str()),
        data.shortcut_tokens,
        b.vocab.min_count.get(),
        b.vocab.max_size.get(),
        b.vocab.lowercase,
    );
    let config = BiLstmConfig {
        vocab_size: vocab.vocab_size(),
        embedding_dim: b.embedding_dim.get(),
        hidden_size: b.hidden_size.get(),
        attention_size: b.attention_size.get(),
        mlp_size: b.mlp_size.get(),
        num_outputs: data.num_outputs(),
        dropout: b.dropout.get(),
        pad_id: vocab.pad_id(),
    };
    let mut rng = ChaCha8Rng::seed_from_u64(model.training.seed);
    let (pretrained, coverage) = match glove_path {
        Some(path) => {
            let (matrix, coverage) = glove::load(path, vocab.words(), config.embedding_dim, &mut rng)
                .with_context(|| format!("model `{}`: GloVe", model.name))?;
            (Some(matrix), Some(coverage))
        }
        None => (None, None),
    };
    let mut classifier = BiLstmClassifier::<B>::new(&config, &mut rng, pretrained, device);
    if b.pad_embedding == PadEmbedding::Zero {
        classifier = classifier.with_zero_pad_row(config.pad_id);
    }
    let max_length = data.max_length;
    let (train_enc, validation_enc) = data.encode(&vocab, max_length);
    let setup = TrainSetup {
        pad_id: vocab.pad_id(),
        unk_id: vocab.unk_id(),
        word_dropout: b.word_dropout.get(),
        progress: ctx.progress,
        log: ctx.log,
        buckets: ctx.compute.buckets,
    };
    let (best, summary) = train::<B, _>(classifier, &model.training, &setup, &train_enc, &validation_enc, device)
        .with_context(|| format!("model `{}`", model.name))?;
    save_bilstm(out, &best, &ModelConfig::Bilstm { config, max_length }, &vocab)?;
    write_json(
        &out.join("training.json"),
        &TrainingRecord {
            architecture: model.kind().name(),
            train_examples: data.train.len(),
            validation_examples: data.validation.len(),
            vocab_size: vocab.vocab_size(),
            glove: coverage,
            pretrained: None,
            summary,
        },
    )
}
