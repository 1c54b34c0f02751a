//! A trained ModernBERT classifier on disk: its weights (burn's parameter
//! paths), `config.json` (`checkpoint::ModelConfig::ModernBert`, the
//! encoder's config in `transformers`' names) and `tokenizer.json`.

use std::path::Path;

use burn::prelude::*;

use super::{ModernBertClassifier, ModernBertConfig};
use crate::model::checkpoint::{self, CheckpointError, ModelConfig};
use crate::text::subword::SubwordEncoder;

pub fn save<B: Backend>(
    dir: &Path,
    model: &ModernBertClassifier<B>,
    num_outputs: usize,
    max_length: usize,
    tokenizer: &SubwordEncoder,
) -> Result<(), CheckpointError> {
    let config = ModelConfig::ModernBert { config: model.config().clone(), num_outputs, max_length };
    checkpoint::save_subword(dir, model, &config, tokenizer)
}

pub fn load<B: Backend>(
    dir: &Path,
    config: &ModernBertConfig,
    num_outputs: usize,
    device: &B::Device,
) -> Result<(ModernBertClassifier<B>, SubwordEncoder), CheckpointError> {
    checkpoint::load_subword(dir, config.check(), || ModernBertClassifier::<B>::new(config, num_outputs, device))
}

#[cfg(test)]
mod tests {
    use crate::backend::Cpu;
    use crate::model::modernbert::ModernBertClassifier;

    #[test]
    fn a_saved_model_loads_back_with_the_same_logits() {
        crate::model::pretrained::testing::a_saved_model_loads_back::<ModernBertClassifier<Cpu>>(
            "modernbert_transformers",
            "ModernBERT",
        );
    }
}
