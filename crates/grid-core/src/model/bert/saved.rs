//! A trained BERT-family classifier on disk: its weights, `config.json` (the
//! encoder's config, `model_type` naming its family) and `tokenizer.json`.

use std::path::Path;

use burn::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::{BertClassifier, BertConfig};
use crate::model::checkpoint::{self, CheckpointError, ModelConfig};
use crate::text::subword::SubwordEncoder;

pub fn save<B: Backend>(
    dir: &Path,
    model: &BertClassifier<B>,
    config: &BertConfig,
    num_outputs: usize,
    max_length: usize,
    tokenizer: &SubwordEncoder,
) -> Result<(), CheckpointError> {
    let config = ModelConfig::Bert { config: config.clone(), num_outputs, max_length };
    checkpoint::save_subword(dir, model, &config, tokenizer)
}

pub fn load<B: Backend>(
    dir: &Path,
    config: &BertConfig,
    num_outputs: usize,
    device: &B::Device,
) -> Result<(BertClassifier<B>, SubwordEncoder), CheckpointError> {
    checkpoint::load_subword(dir, config.check(), || {
        BertClassifier::<B>::new(config, num_outputs, &mut ChaCha8Rng::seed_from_u64(0), device)
    })
}
