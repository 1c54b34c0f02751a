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
    use std::path::Path;

    use burn::tensor::TensorData;

    use crate::backend::Cpu;
    use crate::model::modernbert::load::{ClassifierStart, add_word_embeddings, load_pretrained};
    use crate::model::{Classifier, checkpoint};
    use crate::text::TextEncoder;
    use crate::text::subword::SubwordEncoder;

    /// Fine-tuned with shortcut tokens and saved, it loads back through the
    /// one loader of every architecture as the same classifier.
    #[test]
    fn a_saved_model_loads_back_with_the_same_logits() {
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/modernbert_transformers");
        let device = Default::default();
        let tokenizer = SubwordEncoder::from_pretrained_dir(&fixture, &["#0".into(), "#1".into()]).unwrap();
        let mut rng = rand::SeedableRng::seed_from_u64(3);
        let (model, _) = load_pretrained::<Cpu>(&fixture, 1, ClassifierStart::Fresh, &mut rng, &device).unwrap();
        let added = tokenizer.vocab_size() - model.config().vocab_size;
        assert_eq!(added, 2);
        let model = add_word_embeddings(model, added, &mut rng).with_dropout(0.1);
        let dir = tempfile::tempdir().unwrap();
        super::save(dir.path(), &model, 1, 24, &tokenizer).unwrap();
        let loaded = checkpoint::load::<Cpu>(dir.path(), &device).unwrap();
        assert_eq!(loaded.config.max_length(), 24);
        let ids: Vec<i64> = tokenizer.encode("a film #1 with #0", 24).ids.iter().map(|&i| i as i64).collect();
        let time = ids.len();
        let batch = crate::model::TokenBatch::<Cpu> {
            ids: burn::tensor::Tensor::from_data(TensorData::new(ids, [1, time]), &device),
            mask: burn::tensor::Tensor::ones([1, time], &device),
        };
        let before: Vec<f32> = model.logits(&batch).into_data().to_vec().unwrap();
        let after: Vec<f32> = loaded.model.logits(&batch).into_data().to_vec().unwrap();
        assert_eq!(before, after);
        assert_eq!(loaded.model.family(), "ModernBERT");
    }
}
