//! A trained BERT-family classifier on disk: its weights, `config.json` (the
//! encoder's config, `model_type` naming its family) and `tokenizer.json`.

use std::path::Path;

use burn::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::{BertClassifier, BertConfig};
use crate::model::checkpoint::{self, CONFIG, CheckpointError, ModelConfig};
use crate::text::subword::SubwordEncoder;

pub fn save<B: Backend>(
    dir: &Path,
    model: &BertClassifier<B>,
    config: &BertConfig,
    num_outputs: usize,
    max_length: usize,
    tokenizer: &SubwordEncoder,
) -> Result<(), CheckpointError> {
    checkpoint::save_weights(dir, model)?;
    let config = ModelConfig::Bert { config: config.clone(), num_outputs, max_length };
    checkpoint::write_json(&dir.join(CONFIG), &config)?;
    tokenizer.save(dir).map_err(|e| CheckpointError::Tokenizer { path: dir.into(), message: e.to_string() })
}

pub fn load<B: Backend>(
    dir: &Path,
    config: &BertConfig,
    num_outputs: usize,
    device: &B::Device,
) -> Result<(BertClassifier<B>, SubwordEncoder), CheckpointError> {
    config.check().map_err(|message| CheckpointError::Weights { path: dir.join(CONFIG), message })?;
    let tokenizer = SubwordEncoder::load(dir)
        .map_err(|e| CheckpointError::Tokenizer { path: dir.into(), message: e.to_string() })?;
    // Any initialisation will do: every parameter is overwritten.
    let mut model = BertClassifier::<B>::new(config, num_outputs, &mut ChaCha8Rng::seed_from_u64(0), device);
    checkpoint::load_weights(dir, &mut model)?;
    Ok((model, tokenizer))
}
