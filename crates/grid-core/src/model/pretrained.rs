//! Encoders with a room of their own (ModernBERT, DeBERTa) as fine-tuning
//! sees them: loaded from a Hugging Face folder with a fresh classification
//! layer or the checkpoint's, grown by rows for the shortcut tokens, given a
//! grid's dropout, and saved. The pipeline fits any of them with one
//! function (`architectures::bert::own_room`); a new one implements this
//! trait and adds its `model_type` to `OWN_ROOMS`.

use std::path::Path;

use burn::prelude::*;
use rand_chacha::ChaCha8Rng;

use super::bert::load::{LoadError, LoadReport};
use super::checkpoint::CheckpointError;
use crate::text::subword::SubwordEncoder;

/// Where the classification layer starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClassifierStart {
    /// The checkpoint's, its labels fitting the data's classes (a two-label
    /// layer serves a binary model as `l₁ − l₀`).
    Checkpoint,
    /// Drawn afresh as `transformers` initialises it; a layer in the
    /// checkpoint is left out. What sits before it (a prediction head, a
    /// pooler) is the checkpoint's where it has one, else drawn too.
    Fresh,
}

/// A pretrained classifier with its own encoder.
pub trait PretrainedClassifier<B: Backend>: Sized {
    /// The `config.json` `model_type` it reads.
    const MODEL_TYPE: &'static str;

    /// Loads checkpoint folder `dir` for `num_outputs` logits; `rng` draws
    /// what the checkpoint does not give.
    fn load_pretrained(
        dir: &Path,
        num_outputs: usize,
        start: ClassifierStart,
        rng: &mut ChaCha8Rng,
        device: &B::Device,
    ) -> Result<(Self, LoadReport), LoadError>;

    /// Word-embedding rows in the model (its vocabulary before added tokens).
    fn vocab_size(&self) -> usize;

    /// `added` word-embedding rows appended for new tokens, each the mean of
    /// the others plus noise (`bert::load::add_word_embeddings`).
    fn with_added_tokens(self, added: usize, rng: &mut ChaCha8Rng) -> Self;

    /// Its dropouts set to `p` (a grid's `dropout` key).
    fn with_dropout(self, p: f64) -> Self;

    /// The longest input its positions allow, if any.
    fn max_positions(&self) -> Option<usize>;

    /// Writes its trained folder (`checkpoint::load` reads it back).
    fn save(
        &self,
        dir: &Path,
        num_outputs: usize,
        max_length: usize,
        tokenizer: &SubwordEncoder,
    ) -> Result<(), CheckpointError>;
}

/// What every pretrained classifier's tests check.
#[cfg(test)]
pub(crate) mod testing {
    use std::path::Path;

    use burn::tensor::TensorData;

    use super::{ClassifierStart, PretrainedClassifier};
    use crate::backend::Cpu;
    use crate::model::{Classifier, TokenBatch, checkpoint};
    use crate::text::TextEncoder;
    use crate::text::subword::SubwordEncoder;

    /// Loaded from its `transformers` fixture (under `tests/fixtures/`) with
    /// a fresh head, given two shortcut tokens and saved, it loads back
    /// through the one loader of every architecture as the same classifier
    /// of `family`.
    pub(crate) fn a_saved_model_loads_back<M: PretrainedClassifier<Cpu> + Classifier<Cpu>>(
        fixture: &str,
        family: &str,
    ) {
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures").join(fixture);
        let device = Default::default();
        let tokenizer = SubwordEncoder::from_pretrained_dir(&fixture, &["#0".into(), "#1".into()]).unwrap();
        let mut rng = rand::SeedableRng::seed_from_u64(3);
        let (model, report) = M::load_pretrained(&fixture, 1, ClassifierStart::Fresh, &mut rng, &device).unwrap();
        assert!(!report.random_pooler, "the fixture has the layer before its classifier");
        let added = tokenizer.vocab_size() - model.vocab_size();
        assert_eq!(added, 2);
        let model = model.with_added_tokens(added, &mut rng).with_dropout(0.1);
        let dir = tempfile::tempdir().unwrap();
        model.save(dir.path(), 1, 24, &tokenizer).unwrap();
        let loaded = checkpoint::load::<Cpu>(dir.path(), &device).unwrap();
        assert_eq!(loaded.config.max_length(), 24);
        let ids: Vec<i64> = tokenizer.encode("a film #1 with #0", 24).ids.iter().map(|&i| i as i64).collect();
        let time = ids.len();
        let batch = TokenBatch::<Cpu> {
            ids: burn::tensor::Tensor::from_data(TensorData::new(ids, [1, time]), &device),
            mask: burn::tensor::Tensor::ones([1, time], &device),
        };
        let before: Vec<f32> = model.logits(&batch).into_data().to_vec().unwrap();
        let after: Vec<f32> = loaded.model.logits(&batch).into_data().to_vec().unwrap();
        assert_eq!(before, after);
        assert_eq!(loaded.model.family(), family);
    }
}
