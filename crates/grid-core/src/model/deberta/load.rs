//! Reading a DeBERTa-v2/v3 folder (`config.json`, `model.safetensors`) into
//! [`DebertaClassifier`]: a `DebertaV2ForSequenceClassification` as it is, or
//! any DeBERTa checkpoint (`…ForMaskedLM`, a bare `DebertaV2Model`) with a
//! fresh head to fine-tune; and growing its word embeddings for new tokens.

use std::path::Path;

use burn::nn::Linear;
use burn::prelude::*;
use rand_chacha::ChaCha8Rng;

use super::config::DebertaConfig;
use super::encoder::DebertaClassifier;
use crate::model::bert::load::{
    LoadError, LoadReport, Renaming, classifier_weights, load_classifier_tensors, read_config_json, two_labels_as_one,
    with_mean_rows,
};
use crate::model::pretrained::ClassifierStart;

pub fn read_config(dir: &Path) -> Result<DebertaConfig, LoadError> {
    read_config_json(dir, DebertaConfig::from_json)
}

/// A `DebertaV2ForSequenceClassification` checkpoint with `num_outputs`
/// classes, as it is.
pub fn load_classifier<B: Backend>(
    dir: &Path,
    num_outputs: usize,
    device: &B::Device,
) -> Result<DebertaClassifier<B>, LoadError> {
    // Nothing is drawn when the checkpoint's head is kept.
    let mut rng = rand::SeedableRng::seed_from_u64(0);
    Ok(load_pretrained(dir, num_outputs, ClassifierStart::Checkpoint, &mut rng, device)?.0)
}

/// Loads a DeBERTa checkpoint for `num_outputs` logits. Every tensor the
/// classifier has must be in the file, but for a fresh start's pooler and
/// classification layer (drawn from `rng` as `transformers` draws them,
/// N(0, initializer_range²) with zero biases; a drawn pooler is reported as
/// `random_pooler`); every tensor in the file must load, the masked-LM heads
/// aside.
pub fn load_pretrained<B: Backend>(
    dir: &Path,
    num_outputs: usize,
    start: ClassifierStart,
    rng: &mut ChaCha8Rng,
    device: &B::Device,
) -> Result<(DebertaClassifier<B>, LoadReport), LoadError> {
    let config = read_config(dir)?;
    let (path, outputs) = classifier_weights(dir, config.hidden_size, num_outputs, start)?;
    let mut model = DebertaClassifier::<B>::new(&config, outputs, device);
    let result = load_classifier_tensors(&mut model, &path, &RENAMING, start)?;
    let random_pooler = result.missing.iter().any(|(p, _)| p.starts_with("pooler."));
    let h = config.hidden_size;
    if start == ClassifierStart::Fresh {
        model.classifier = normal_linear(rng, h, num_outputs, config.initializer_range, device);
        if random_pooler {
            model.pooler.dense = normal_linear(rng, h, h, config.initializer_range, device);
        }
    } else if num_outputs == 1 {
        model.classifier = two_labels_as_one(model.classifier);
    }
    let report = LoadReport { unused: result.unused, random_pooler };
    Ok((crate::model::dtype::to_backend_float(model), report))
}

const RENAMING: Renaming = Renaming {
    family: "DeBERTa-v2/v3",
    keys: &[
        // A bare `DebertaV2Model` names its tensors without `deberta.`.
        (r"^(embeddings|encoder)\.", "deberta.${1}."),
        (r"\.attention\.self\.", ".attention.self_attention."),
        (r"LayerNorm\.weight$", "layer_norm.gamma"),
        (r"LayerNorm\.bias$", "layer_norm.beta"),
    ],
    drawn: &["classifier.", "pooler."],
    unused: &["lm_predictions.", "cls.", "mask_predictions.", "deberta.embeddings.position_ids"],
};

/// A `Linear` with an N(0, std²) weight and a zero bias.
fn normal_linear<B: Backend>(
    rng: &mut ChaCha8Rng,
    inputs: usize,
    outputs: usize,
    std: f64,
    device: &B::Device,
) -> Linear<B> {
    Linear {
        weight: crate::model::init::normal(rng, [inputs, outputs], std, device),
        bias: Some(burn::module::Param::from_tensor(Tensor::zeros([outputs], device))),
    }
}

/// Appends `added` word-embedding rows for new tokens (the shortcut
/// tokens), as BERT's are, and counts them in the config.
pub fn add_word_embeddings<B: Backend>(
    mut model: DebertaClassifier<B>,
    added: usize,
    rng: &mut ChaCha8Rng,
) -> DebertaClassifier<B> {
    let std = model.config().initializer_range;
    let weight = model.deberta.embeddings.word_embeddings.weight;
    model.deberta.embeddings.word_embeddings.weight = with_mean_rows(weight, added, std, rng);
    model.config_mut().vocab_size += added;
    model
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::backend::Cpu;
    use crate::model::fixture_check::assert_matches_transformers;

    fn fixture() -> PathBuf {
        crate::model::fixture_check::fixture("deberta_transformers")
    }

    /// Hidden states and logits as `transformers` computes them for a padded
    /// batch of sentences long enough to reach the log buckets and the
    /// table's clamp, both attention directions, the relative table's norm.
    #[test]
    fn matches_transformers_on_its_fixture() {
        let model = load_classifier::<Cpu>(&fixture(), 3, &Default::default()).unwrap();
        assert_matches_transformers(
            &fixture(),
            |ids, mask| model.encode_with(model.embed(ids), mask, None).0,
            |ids, mask| model.classify(model.embed(ids), mask),
        );
    }

    #[test]
    fn a_bert_checkpoint_is_refused_naming_its_file() {
        let bert = fixture().join("../bert_transformers");
        let e = load_classifier::<Cpu>(&bert, 2, &Default::default()).unwrap_err().to_string();
        assert!(e.contains("config.json") && e.contains("model_type = \"bert\""), "{e}");
    }
}
