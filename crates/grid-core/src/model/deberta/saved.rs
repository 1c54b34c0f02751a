//! A trained DeBERTa classifier on disk: its weights (burn's parameter
//! paths), `config.json` (`checkpoint::ModelConfig::Deberta`, the encoder's
//! config in `transformers`' names) and `tokenizer.json`.

use std::path::Path;

use burn::prelude::*;

use super::{DebertaClassifier, DebertaConfig};
use crate::model::checkpoint::{self, CheckpointError, ModelConfig};
use crate::text::subword::SubwordEncoder;

pub fn save<B: Backend>(
    dir: &Path,
    model: &DebertaClassifier<B>,
    num_outputs: usize,
    max_length: usize,
    tokenizer: &SubwordEncoder,
) -> Result<(), CheckpointError> {
    let config = ModelConfig::Deberta { config: model.config().clone(), num_outputs, max_length };
    checkpoint::save_subword(dir, model, &config, tokenizer)
}

pub fn load<B: Backend>(
    dir: &Path,
    config: &DebertaConfig,
    num_outputs: usize,
    device: &B::Device,
) -> Result<(DebertaClassifier<B>, SubwordEncoder), CheckpointError> {
    checkpoint::load_subword(dir, config.check(), || DebertaClassifier::<B>::new(config, num_outputs, device))
}

#[cfg(test)]
mod tests {
    use crate::backend::Cpu;
    use crate::model::deberta::DebertaClassifier;

    #[test]
    fn a_saved_model_loads_back_with_the_same_logits() {
        crate::model::pretrained::testing::a_saved_model_loads_back::<DebertaClassifier<Cpu>>(
            "deberta_transformers",
            "DeBERTa",
        );
    }
}
