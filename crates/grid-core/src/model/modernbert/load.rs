//! Reading a ModernBERT folder (`config.json`, `model.safetensors`) into
//! [`ModernBertClassifier`]: a `ModernBertForSequenceClassification` as it
//! is, or any ModernBERT checkpoint (`…ForMaskedLM`, a bare `ModernBertModel`)
//! with a fresh classification layer to fine-tune; and growing its
//! word-embedding matrix for shortcut tokens.

use std::path::Path;

use burn::nn::Linear;
use burn::prelude::*;
use rand_chacha::ChaCha8Rng;

use super::config::ModernBertConfig;
use super::encoder::ModernBertClassifier;
use crate::model::bert::load::{
    LoadError, LoadReport, Renaming, classifier_weights, load_classifier_tensors, read_config_json, two_labels_as_one,
    with_mean_rows,
};
use crate::model::init::truncated_normal;
pub use crate::model::pretrained::ClassifierStart;

pub fn read_config(dir: &Path) -> Result<ModernBertConfig, LoadError> {
    read_config_json(dir, ModernBertConfig::from_json)
}

/// A `ModernBertForSequenceClassification` checkpoint with `num_outputs`
/// classes. Every tensor the classifier has must be in the file, and every
/// tensor in the file must load (the masked-LM head's `decoder` aside).
pub fn load_classifier<B: Backend>(
    dir: &Path,
    num_outputs: usize,
    device: &B::Device,
) -> Result<(ModernBertConfig, ModernBertClassifier<B>), LoadError> {
    // Nothing is drawn when the checkpoint's layer is kept.
    let mut rng = rand::SeedableRng::seed_from_u64(0);
    let (model, _) = load_pretrained(dir, num_outputs, ClassifierStart::Checkpoint, &mut rng, device)?;
    Ok((model.config().clone(), model))
}

/// Loads a ModernBERT checkpoint for `num_outputs` logits; `rng` draws what
/// the checkpoint does not give (a fresh classification layer; the
/// prediction head of a bare encoder, reported as `random_pooler`).
pub fn load_pretrained<B: Backend>(
    dir: &Path,
    num_outputs: usize,
    start: ClassifierStart,
    rng: &mut ChaCha8Rng,
    device: &B::Device,
) -> Result<(ModernBertClassifier<B>, LoadReport), LoadError> {
    let config = read_config(dir)?;
    let (path, outputs) = classifier_weights(dir, config.hidden_size, num_outputs, start)?;
    let mut model = ModernBertClassifier::<B>::new(&config, outputs, device);
    let result = load_classifier_tensors(&mut model, &path, &RENAMING, start)?;
    let random_head = result.missing.iter().any(|(p, _)| p.starts_with("head."));
    if start == ClassifierStart::Fresh {
        // transformers' `_init_weights`: truncated normals, zero biases; the
        // output layer's spread 1/√hidden, the prediction head's that of
        // an output projection.
        let (h, cutoff) = (config.hidden_size, config.initializer_cutoff_factor);
        model.classifier = fresh_linear(rng, h, num_outputs, (h as f64).powf(-0.5), cutoff, true, device);
        if random_head {
            let std = config.initializer_range / (2.0 * config.num_hidden_layers as f64).sqrt();
            model.head.dense = fresh_linear(rng, h, h, std, cutoff, config.classifier_bias, device);
        }
    } else if num_outputs == 1 {
        model.classifier = two_labels_as_one(model.classifier);
    }
    let report = LoadReport { unused: result.unused, random_pooler: random_head };
    Ok((crate::model::dtype::to_backend_float(model), report))
}

const RENAMING: Renaming = Renaming {
    family: "ModernBERT",
    keys: &[
        // A bare `ModernBertModel` names its tensors without `model.`.
        (r"^(embeddings|layers|final_norm)\.", "model.${1}."),
        (r"\.Wqkv\.", ".wqkv."),
        (r"\.Wo\.", ".wo."),
        (r"\.Wi\.", ".wi."),
        (r"norm\.weight$", "norm.gamma"),
        (r"norm\.bias$", "norm.beta"),
    ],
    drawn: &["classifier.", "head."],
    unused: &["decoder."],
};

/// A `Linear` with a truncated-normal weight and a zero bias.
fn fresh_linear<B: Backend>(
    rng: &mut ChaCha8Rng,
    inputs: usize,
    outputs: usize,
    std: f64,
    cutoff: f64,
    bias: bool,
    device: &B::Device,
) -> Linear<B> {
    Linear {
        weight: truncated_normal(rng, [inputs, outputs], std, cutoff, device),
        bias: bias.then(|| burn::module::Param::from_tensor(Tensor::zeros([outputs], device))),
    }
}

/// Appends `added` word-embedding rows for new tokens (the shortcut
/// tokens), as BERT's are (`bert::load::add_word_embeddings`), and counts
/// them in the config.
pub fn add_word_embeddings<B: Backend>(
    mut model: ModernBertClassifier<B>,
    added: usize,
    rng: &mut ChaCha8Rng,
) -> ModernBertClassifier<B> {
    let std = model.config().initializer_range;
    let weight = model.model.embeddings.tok_embeddings.weight;
    model.model.embeddings.tok_embeddings.weight = with_mean_rows(weight, added, std, rng);
    model.config_mut().vocab_size += added;
    model
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::backend::Cpu;
    use crate::model::bert::load::WEIGHTS;
    use crate::model::fixture_check::assert_matches_transformers;

    fn fixture() -> PathBuf {
        crate::model::fixture_check::fixture("modernbert_transformers")
    }

    /// Hidden states and logits as `transformers` computes them for a padded
    /// batch: global and sliding-window layers, both rotary bases, mean pooling.
    #[test]
    fn matches_transformers_on_its_fixture() {
        let (_, model) = load_classifier::<Cpu>(&fixture(), 3, &Default::default()).unwrap();
        assert_matches_transformers(
            &fixture(),
            |ids, mask| model.encode(model.embed(ids), mask),
            |ids, mask| model.classify(model.embed(ids), mask),
        );
    }

    #[test]
    fn a_bert_checkpoint_is_refused_naming_its_file() {
        let bert = fixture().join("../bert_transformers");
        let e = load_classifier::<Cpu>(&bert, 2, &Default::default()).unwrap_err().to_string();
        assert!(e.contains("config.json") && e.contains("model_type = \"bert\""), "{e}");
    }

    /// A masked-LM or bare-encoder checkpoint, as fine-tuning starts from:
    /// `ModernBertModel`'s names (no `model.` prefix) and no heads. The
    /// encoder loads whole; the prediction head and classification layer are
    /// drawn from the seed, the same for the same seed.
    #[test]
    fn a_bare_encoder_loads_with_heads_drawn_from_the_seed() {
        let bytes = std::fs::read(fixture().join(WEIGHTS)).unwrap();
        let tensors = safetensors::SafeTensors::deserialize(&bytes).unwrap();
        let kept: Vec<(String, safetensors::tensor::TensorView)> = tensors
            .tensors()
            .into_iter()
            .filter_map(|(name, view)| name.strip_prefix("model.").map(|bare| (bare.to_string(), view)))
            .collect();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(WEIGHTS), safetensors::serialize(kept, None).unwrap()).unwrap();
        std::fs::copy(fixture().join("config.json"), dir.path().join("config.json")).unwrap();
        let device = Default::default();
        let load = |seed| {
            let mut rng = rand::SeedableRng::seed_from_u64(seed);
            load_pretrained::<Cpu>(dir.path(), 1, ClassifierStart::Fresh, &mut rng, &device).unwrap()
        };
        let ((a, report), (b, _), (c, _)) = (load(1), load(1), load(2));
        assert!(report.random_pooler);
        let weight =
            |m: &ModernBertClassifier<Cpu>| -> Vec<f32> { m.classifier.weight.val().into_data().to_vec().unwrap() };
        assert_eq!(a.classifier.weight.dims(), [32, 1]);
        assert_eq!(weight(&a), weight(&b));
        assert_ne!(weight(&a), weight(&c));
        // The encoder is the checkpoint's either way.
        let (_, full) = load_classifier::<Cpu>(&fixture(), 3, &device).unwrap();
        let embedding = |m: &ModernBertClassifier<Cpu>| -> Vec<f32> {
            m.model.embeddings.tok_embeddings.weight.val().into_data().to_vec().unwrap()
        };
        assert_eq!(embedding(&a), embedding(&full));
    }

    /// A kept head must fit the data's classes; a two-label head serves a
    /// binary model as one logit, and one that is not there is named.
    #[test]
    fn a_kept_head_fits_the_classes_or_is_refused() {
        let device = Default::default();
        let mut rng = rand::SeedableRng::seed_from_u64(0);
        let e = load_pretrained::<Cpu>(&fixture(), 1, ClassifierStart::Checkpoint, &mut rng, &device).unwrap_err();
        assert!(
            e.to_string().contains("the checkpoint's head has 3 labels (`classifier.weight`), the data 2 classes"),
            "{e}"
        );
        let (fresh, report) = load_pretrained::<Cpu>(&fixture(), 1, ClassifierStart::Fresh, &mut rng, &device).unwrap();
        assert_eq!(fresh.classifier.weight.dims(), [32, 1]);
        assert!(!report.random_pooler);
        assert!(report.unused.iter().any(|u| u.starts_with("left_out_classifier.")), "{:?}", report.unused);
    }
}
