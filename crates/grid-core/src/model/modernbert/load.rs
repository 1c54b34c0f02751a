//! Reading a ModernBERT folder (`config.json`, `model.safetensors`) into
//! [`ModernBertClassifier`].

use std::path::{Path, PathBuf};

use burn::prelude::*;
use burn_store::{ModuleSnapshot, PyTorchToBurnAdapter, SafetensorsStore};

use super::config::ModernBertConfig;
use super::encoder::ModernBertClassifier;
use crate::model::bert::load::{LoadError, WEIGHTS, read_config_json, unfitting_tensors};

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
    let config = read_config(dir)?;
    let path: PathBuf = dir.join(WEIGHTS);
    if !path.is_file() {
        return Err(LoadError::Weights { path, message: "no such file".into() });
    }
    let mut model = ModernBertClassifier::<B>::new(&config, num_outputs, device);
    let mut store = SafetensorsStore::from_file(&path)
        .with_from_adapter(PyTorchToBurnAdapter)
        .with_key_remapping(r"\.Wqkv\.", ".wqkv.")
        .with_key_remapping(r"\.Wo\.", ".wo.")
        .with_key_remapping(r"\.Wi\.", ".wi.")
        .with_key_remapping(r"norm\.weight$", "norm.gamma")
        .with_key_remapping(r"norm\.bias$", "norm.beta")
        .allow_partial(true);
    let result =
        model.load_from(&mut store).map_err(|e| LoadError::Weights { path: path.clone(), message: e.to_string() })?;
    let fail = |message: String| LoadError::Weights { path: path.clone(), message };
    if let Some(message) = unfitting_tensors(&result) {
        return Err(fail(message));
    }
    if !result.missing.is_empty() {
        let missing: Vec<&str> = result.missing.iter().map(|(p, _)| p.as_str()).collect();
        return Err(fail(format!("not a ModernBERT classifier: missing tensors {}", missing.join(", "))));
    }
    let unknown: Vec<&str> = result.unused.iter().map(String::as_str).filter(|n| !n.starts_with("decoder.")).collect();
    if !unknown.is_empty() {
        return Err(fail(format!("tensor(s) would load into nothing: {}", unknown.join(", "))));
    }
    Ok((config, crate::model::dtype::to_backend_float(model)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Cpu;

    fn fixture() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/modernbert_transformers")
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
    /// batch: global and sliding-window layers, both rotary bases, mean pooling.
    #[test]
    fn matches_transformers_on_its_fixture() {
        let device = Default::default();
        let (_, model) = load_classifier::<Cpu>(&fixture(), 3, &device).unwrap();
        let (shape, ids) = reference("input_ids");
        let (_, mask) = reference("attention_mask");
        let (batch, time) = (shape[0], shape[1]);
        let ids: Vec<i64> = ids.iter().map(|&v| v as i64).collect();
        let ids = Tensor::<Cpu, 1, Int>::from_ints(ids.as_slice(), &device).reshape([batch, time]);
        let mask_values: Vec<f32> = mask.iter().map(|&v| v as f32).collect();
        let mask_tensor = Tensor::<Cpu, 1>::from_floats(mask_values.as_slice(), &device).reshape([batch, time]);
        let hidden: Vec<f32> =
            model.encode(model.embed(ids.clone()), mask_tensor.clone()).into_data().to_vec().unwrap();
        let (_, expected) = reference("last_hidden_state");
        let size = expected.len() / (batch * time);
        let mut worst = 0.0_f64;
        for (i, (got, want)) in hidden.iter().zip(&expected).enumerate() {
            // Padded positions are never read (pooling and salience mask them).
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
