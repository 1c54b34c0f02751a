//! A trained rationale model on disk: its weights, `config.json` and `vocab.json`.

use std::path::Path;

use burn::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::{RationaleClassifier, RationaleConfig};
use crate::model::checkpoint::{self, CONFIG, CheckpointError, ModelConfig, VOCAB};
use crate::text::vocab::WordVocab;

pub fn save<B: Backend>(
    dir: &Path,
    model: &RationaleClassifier<B>,
    max_length: usize,
    vocab: &WordVocab,
) -> Result<(), CheckpointError> {
    checkpoint::save_weights(dir, model)?;
    let config = ModelConfig::Rationale { config: model.config().clone(), max_length };
    checkpoint::write_json(&dir.join(CONFIG), &config)?;
    checkpoint::write_json(&dir.join(VOCAB), vocab)
}

pub fn load<B: Backend>(
    dir: &Path,
    config: &RationaleConfig,
    device: &B::Device,
) -> Result<(RationaleClassifier<B>, WordVocab), CheckpointError> {
    let vocab: WordVocab = checkpoint::read_json::<WordVocab>(&dir.join(VOCAB))?.reindexed();
    // Any initialisation will do: every parameter is overwritten.
    let mut model = RationaleClassifier::<B>::new(config, &mut ChaCha8Rng::seed_from_u64(0), None, device);
    checkpoint::load_weights(dir, &mut model)?;
    Ok((model, vocab))
}
