//! Reading a DeBERTa-v2/v3 folder (`config.json`, `model.safetensors`) into
//! [`DebertaClassifier`]: a `DebertaV2ForSequenceClassification` as it is, or
//! any DeBERTa checkpoint (`…ForMaskedLM`, a bare `DebertaV2Model`) with a
//! fresh head to fine-tune; and growing its word embeddings for new tokens.

use std::path::{Path, PathBuf};

use burn::nn::Linear;
use burn::prelude::*;
use burn_store::{ModuleSnapshot, PyTorchToBurnAdapter, SafetensorsStore};
use rand_chacha::ChaCha8Rng;

use super::config::DebertaConfig;
use super::encoder::DebertaClassifier;
use crate::model::bert::load::{
    LoadError, LoadReport, WEIGHTS, check_loaded, head_labels, read_config_json, two_labels_as_one, with_mean_rows,
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
    let path: PathBuf = dir.join(WEIGHTS);
    if !path.is_file() {
        return Err(LoadError::Weights { path, message: "no such file".into() });
    }
    let fail = |message: String| LoadError::Weights { path: path.clone(), message };
    let outputs = match start {
        ClassifierStart::Checkpoint => head_labels(&path, "classifier.weight", config.hidden_size, num_outputs)?
            .ok_or_else(|| {
                fail("head = \"checkpoint\", but it has no classification head (`classifier.weight`)".into())
            })?,
        ClassifierStart::Fresh => num_outputs,
    };
    let mut model = DebertaClassifier::<B>::new(&config, outputs, device);
    let mut store = SafetensorsStore::from_file(&path)
        .with_from_adapter(PyTorchToBurnAdapter)
        // A bare `DebertaV2Model` names its tensors without `deberta.`.
        .with_key_remapping(r"^(embeddings|encoder)\.", "deberta.${1}.")
        .with_key_remapping(r"\.attention\.self\.", ".attention.self_attention.")
        .with_key_remapping(r"LayerNorm\.weight$", "layer_norm.gamma")
        .with_key_remapping(r"LayerNorm\.bias$", "layer_norm.beta");
    if start == ClassifierStart::Fresh {
        // Kept out of the model, whatever its shape.
        store = store.with_key_remapping(r"^classifier\.", "left_out_classifier.");
    }
    let result = model.load_from(&mut store.allow_partial(true)).map_err(|e| fail(e.to_string()))?;
    let drawn = |p: &str| start == ClassifierStart::Fresh && (p.starts_with("classifier.") || p.starts_with("pooler."));
    let known_unused =
        ["lm_predictions.", "cls.", "mask_predictions.", "deberta.embeddings.position_ids", "left_out_classifier."];
    check_loaded(&result, &path, "DeBERTa-v2/v3", drawn, &known_unused)?;
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
    use super::*;
    use crate::backend::Cpu;

    fn fixture() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/deberta_transformers")
    }

    fn reference(name: &str) -> (Vec<usize>, Vec<f64>) {
        let bytes = std::fs::read(fixture().join("reference.safetensors")).unwrap();
        let tensors = safetensors::SafeTensors::deserialize(&bytes).unwrap();
        let view = tensors.tensor(name).unwrap();
        let values = match view.dtype() {
            safetensors::Dtype::I64 => {
                view.data().chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap()) as f64).collect()
            }
            _ => view.data().chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64).collect(),
        };
        (view.shape().to_vec(), values)
    }

    /// Hidden states and logits as `transformers` computes them for a padded
    /// batch of sentences long enough to reach the log buckets and the
    /// table's clamp, both attention directions, the relative table's norm.
    #[test]
    fn matches_transformers_on_its_fixture() {
        let device = Default::default();
        let model = load_classifier::<Cpu>(&fixture(), 3, &device).unwrap();
        let (shape, ids) = reference("input_ids");
        let (_, mask) = reference("attention_mask");
        let (batch, time) = (shape[0], shape[1]);
        let ids: Vec<i64> = ids.iter().map(|&v| v as i64).collect();
        let ids = Tensor::<Cpu, 1, Int>::from_ints(ids.as_slice(), &device).reshape([batch, time]);
        let mask_values: Vec<f32> = mask.iter().map(|&v| v as f32).collect();
        let mask_tensor = Tensor::<Cpu, 1>::from_floats(mask_values.as_slice(), &device).reshape([batch, time]);
        let hidden: Vec<f32> =
            model.encode_with(model.embed(ids.clone()), mask_tensor.clone(), None).0.into_data().to_vec().unwrap();
        let (_, expected) = reference("last_hidden_state");
        let size = expected.len() / (batch * time);
        let mut worst = 0.0_f64;
        for (i, (got, want)) in hidden.iter().zip(&expected).enumerate() {
            // Padded positions are never read (the head takes the first token).
            if mask[i / size] == 1.0 {
                worst = worst.max((*got as f64 - want).abs());
            }
        }
        assert!(worst < 1e-4, "hidden states differ by up to {worst:e}");
        let logits: Vec<f32> = model.classify(model.embed(ids), mask_tensor).into_data().to_vec().unwrap();
        let (_, expected) = reference("logits");
        let worst = logits.iter().zip(&expected).map(|(g, w)| (*g as f64 - w).abs()).fold(0.0, f64::max);
        assert!(worst < 1e-4, "logits differ by up to {worst:e}");
    }

    #[test]
    fn a_bert_checkpoint_is_refused_naming_its_file() {
        let bert = fixture().join("../bert_transformers");
        let e = load_classifier::<Cpu>(&bert, 2, &Default::default()).unwrap_err().to_string();
        assert!(e.contains("config.json") && e.contains("model_type = \"bert\""), "{e}");
    }
}
