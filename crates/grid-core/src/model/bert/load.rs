//! Reading Hugging Face checkpoints of the BERT family (`config.json` +
//! `model.safetensors`; BERT, RoBERTa, DistilBERT, see [`super::family`]) into
//! [`BertModel`] and, from a `*ForSequenceClassification` checkpoint, its head;
//! and growing the word-embedding matrix for shortcut tokens.

use std::path::{Path, PathBuf};

use burn::module::Param;
use burn::nn::Linear;
use burn::prelude::*;
use burn_store::{ModuleSnapshot, PyTorchToBurnAdapter, SafetensorsStore};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

use super::config::BertConfig;
use super::encoder::BertModel;
use crate::model::pretrained::ClassifierStart;

pub const CONFIG: &str = "config.json";
pub const WEIGHTS: &str = "model.safetensors";

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: invalid config: {message}")]
    Config { path: PathBuf, message: String },
    #[error("{path}: {message}")]
    Weights { path: PathBuf, message: String },
}

/// What loading found beyond the encoder's own tensors.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LoadReport {
    /// Checkpoint tensors the encoder has no place for, all of them the
    /// family's known ones (e.g. `cls.predictions.*`): checkpoint tensors the
    /// encoder has no place for are an error otherwise, since a tensor that
    /// loads nowhere is a naming the loader does not know, not a detail.
    pub unused: Vec<String>,
    /// Whether the checkpoint had no pooler, so it was initialised randomly.
    pub random_pooler: bool,
}

pub fn read_config(dir: &Path) -> Result<BertConfig, LoadError> {
    read_config_json(dir, super::family::read_config)
}

/// The `model_type` of checkpoint folder `dir` (which room reads it).
pub fn model_type(dir: &Path) -> Result<String, LoadError> {
    read_config_json(dir, super::family::model_type)
}

/// `dir`'s `config.json`, read by `parse`; its errors name the file.
pub(crate) fn read_config_json<T>(dir: &Path, parse: impl FnOnce(&[u8]) -> Result<T, String>) -> Result<T, LoadError> {
    let path = dir.join(CONFIG);
    let bytes = std::fs::read(&path).map_err(|source| LoadError::Io { path: path.clone(), source })?;
    parse(&bytes).map_err(|message| LoadError::Config { path, message })
}

/// The tensors of a checkpoint whose shapes do not fit the module its
/// `config.json` describes, as one message; `None` when all fit.
pub(crate) fn unfitting_tensors(result: &burn_store::ApplyResult) -> Option<String> {
    (!result.errors.is_empty()).then(|| {
        let errors: Vec<String> = result.errors.iter().map(|e| e.to_string()).collect();
        format!("tensors do not fit config.json: {}", errors.join("; "))
    })
}

/// Checks what loading a checkpoint into an own-room encoder found: every
/// tensor fits, every tensor of the model is in the file but those
/// `may_miss` accepts (drawn afterwards), and every tensor of the file
/// loads but those under the `known_unused` prefixes. An error names the
/// file, the `family` and the tensors.
fn check_loaded(
    result: &burn_store::ApplyResult,
    path: &Path,
    family: &str,
    may_miss: impl Fn(&str) -> bool,
    known_unused: &[&str],
) -> Result<(), LoadError> {
    let fail = |message: String| LoadError::Weights { path: path.to_path_buf(), message };
    if let Some(message) = unfitting_tensors(result) {
        return Err(fail(message));
    }
    let missing: Vec<&str> = result.missing.iter().map(|(p, _)| p.as_str()).filter(|p| !may_miss(p)).collect();
    if !missing.is_empty() {
        return Err(fail(format!("not a {family} checkpoint: missing tensors {}", missing.join(", "))));
    }
    let unknown: Vec<&str> = result
        .unused
        .iter()
        .map(String::as_str)
        .filter(|n| !known_unused.iter().any(|known| n.starts_with(known)))
        .collect();
    if !unknown.is_empty() {
        return Err(fail(format!("tensor(s) would load into nothing: {}", unknown.join(", "))));
    }
    Ok(())
}

/// How an own-room classifier's checkpoint maps onto it (DeBERTa's,
/// ModernBERT's): what [`load_classifier_tensors`] needs beside the model.
pub(crate) struct Renaming<'a> {
    /// The family as errors name it.
    pub family: &'a str,
    /// `(pattern, replacement)`: the file's tensor names → the model's, in order.
    pub keys: &'a [(&'a str, &'a str)],
    /// Prefixes of the model's tensors a fresh start draws (its classifier
    /// and the layer before it), which the file may lack.
    pub drawn: &'a [&'a str],
    /// Prefixes of the file's tensors the classifier has no place for (its
    /// pretraining heads).
    pub unused: &'a [&'a str],
}

/// A classifier checkpoint's weights file in `dir`, and the logits the
/// classifier gets: the checkpoint head's labels where it is kept (refused
/// where the file has none), else `num_outputs`.
pub(crate) fn classifier_weights(
    dir: &Path,
    hidden: usize,
    num_outputs: usize,
    start: ClassifierStart,
) -> Result<(PathBuf, usize), LoadError> {
    let path = dir.join(WEIGHTS);
    if !path.is_file() {
        return Err(LoadError::Weights { path, message: "no such file".into() });
    }
    let outputs = match start {
        ClassifierStart::Checkpoint => {
            head_labels(&path, "classifier.weight", hidden, num_outputs)?.ok_or_else(|| {
                let message = "head = \"checkpoint\", but it has no classification head (`classifier.weight`)".into();
                LoadError::Weights { path: path.clone(), message }
            })?
        }
        ClassifierStart::Fresh => num_outputs,
    };
    Ok((path, outputs))
}

/// Loads the safetensors file `path` into an own-room classifier under
/// `renaming` and checks it ([`check_loaded`]); a fresh start keeps the
/// file's `classifier.` tensors out, whatever their shape.
pub(crate) fn load_classifier_tensors<B: Backend, M: ModuleSnapshot<B>>(
    model: &mut M,
    path: &Path,
    renaming: &Renaming,
    start: ClassifierStart,
) -> Result<burn_store::ApplyResult, LoadError> {
    let fresh = start == ClassifierStart::Fresh;
    let mut store = SafetensorsStore::from_file(path).with_from_adapter(PyTorchToBurnAdapter);
    for (from, to) in renaming.keys {
        store = store.with_key_remapping(from, *to);
    }
    if fresh {
        store = store.with_key_remapping(r"^classifier\.", "left_out_classifier.");
    }
    let result = model
        .load_from(&mut store.allow_partial(true))
        .map_err(|e| LoadError::Weights { path: path.to_path_buf(), message: e.to_string() })?;
    let drawn = |p: &str| fresh && renaming.drawn.iter().any(|d| p.starts_with(d));
    let unused: Vec<&str> = renaming.unused.iter().copied().chain(["left_out_classifier."]).collect();
    check_loaded(&result, path, renaming.family, drawn, &unused)?;
    Ok(result)
}

/// Loads a pretrained encoder. `rng` initialises anything the checkpoint lacks
/// (only the pooler may be absent).
pub fn load_pretrained<B: Backend>(
    dir: &Path,
    rng: &mut ChaCha8Rng,
    device: &B::Device,
) -> Result<(BertConfig, BertModel<B>, LoadReport), LoadError> {
    let config = read_config(dir)?;
    let path = dir.join(WEIGHTS);
    if !path.is_file() {
        return Err(LoadError::Weights { path, message: "no such file".into() });
    }
    let family = config.family().map_err(|message| LoadError::Config { path: dir.join(CONFIG), message })?;
    let mut model = BertModel::<B>::new(&config, rng, device);
    // Checkpoint names → our field names (the family's own first); the adapter
    // transposes Linear weights. LayerNorm parameters are renamed to burn's
    // gamma/beta here, from both namings: `weight/bias` (PyTorch) and
    // `gamma/beta` (Google's TF checkpoints and their conversions). Left to the
    // adapter, weight/bias would load through its fallback lookup yet be
    // reported unused, which hid real unused tensors.
    let mut store = SafetensorsStore::from_file(&path).with_from_adapter(PyTorchToBurnAdapter);
    for (from, to) in family.key_remapping() {
        store = store.with_key_remapping(from, *to);
    }
    let mut store = store
        .with_key_remapping(r"\.attention\.self\.", ".attention.self_attention.")
        .with_key_remapping(r"(?:LayerNorm|layer_norm)\.(?:weight|gamma)$", "layer_norm.gamma")
        .with_key_remapping(r"(?:LayerNorm|layer_norm)\.(?:bias|beta)$", "layer_norm.beta")
        .allow_partial(true);
    let result =
        model.load_from(&mut store).map_err(|e| LoadError::Weights { path: path.clone(), message: e.to_string() })?;
    if let Some(message) = unfitting_tensors(&result) {
        return Err(LoadError::Weights { path, message });
    }
    let missing: Vec<&str> =
        result.missing.iter().map(|(p, _)| p.as_str()).filter(|p| !p.starts_with("pooler.")).collect();
    if !missing.is_empty() {
        return Err(LoadError::Weights {
            path,
            message: format!("not a {} checkpoint: missing tensors {}", family.model_type(), missing.join(", ")),
        });
    }
    let known_unused = family.known_unused();
    let unknown: Vec<&str> = result
        .unused
        .iter()
        .map(String::as_str)
        .filter(|name| !known_unused.iter().any(|known| name.starts_with(known)))
        .collect();
    if !unknown.is_empty() {
        return Err(LoadError::Weights {
            path,
            message: format!(
                "{} checkpoint tensor(s) would load into nothing: {} (names as read after renaming for {}; \
                 tensors grid knows to leave out: {})",
                unknown.len(),
                unknown.join(", "),
                family.model_type(),
                known_unused.join(" ")
            ),
        });
    }
    let random_pooler = result.missing.iter().any(|(p, _)| p.starts_with("pooler."));
    let model = crate::model::dtype::to_backend_float(model);
    Ok((config, model, LoadReport { unused: result.unused, random_pooler }))
}

/// Appends `added` rows to the word-embedding matrix (new tokens such as `#0`,
/// `#1`, `contoken`). Each new row is the mean of the existing rows plus
/// N(0, initializer_range²) noise: the mean keeps a new token's first logits close
/// to an ordinary word's (Hewitt 2021, as `resize_token_embeddings` now does), the
/// noise makes the new tokens distinguishable from one another.
pub fn add_word_embeddings<B: Backend>(
    model: BertModel<B>,
    added: usize,
    std: f64,
    rng: &mut ChaCha8Rng,
) -> BertModel<B> {
    let mut model = model;
    model.embeddings.word_embeddings.weight = with_mean_rows(model.embeddings.word_embeddings.weight, added, std, rng);
    model
}

/// An embedding matrix with `added` rows appended, each the mean of the
/// existing rows plus N(0, std²) noise (see [`add_word_embeddings`]).
pub(crate) fn with_mean_rows<B: Backend>(
    weight: Param<Tensor<B, 2>>,
    added: usize,
    std: f64,
    rng: &mut ChaCha8Rng,
) -> Param<Tensor<B, 2>> {
    if added == 0 {
        return weight;
    }
    let weight = weight.val();
    let [_, hidden] = weight.dims();
    let device = weight.device();
    let mean: Vec<f32> = weight.clone().mean_dim(0).into_data().convert::<f32>().to_vec().unwrap_or_default();
    let noise = Normal::new(0.0f32, std as f32).unwrap_or_else(|_| Normal::new(0.0, 0.02).expect("valid"));
    let rows: Vec<f32> =
        (0..added).flat_map(|_| mean.iter().map(|m| m + noise.sample(rng)).collect::<Vec<_>>()).collect();
    let rows = Tensor::<B, 2>::from_data(TensorData::new(rows, [added, hidden]), &device);
    Param::from_tensor(Tensor::cat(vec![weight, rows], 0).detach())
}

/// The output layer of a `*ForSequenceClassification` checkpoint's head, in
/// the form `BertClassifier` uses (`[hidden, labels]`).
#[derive(Module, Debug)]
struct HeadOutput<B: Backend> {
    classifier: Linear<B>,
}

/// Reads the classification head's output layer from a checkpoint, if it has
/// one, shaped for `num_outputs` logits: a head of `num_outputs` labels as it
/// is, and a two-label head for a binary model (one logit) as the difference
/// of its rows, `l₁ − l₀`, whose sigmoid is the two-label softmax's `p(1)`.
/// `Ok(None)` when the checkpoint has no head; an error when its labels do not
/// fit the data's classes.
pub fn load_head<B: Backend>(
    dir: &Path,
    config: &BertConfig,
    num_outputs: usize,
    device: &B::Device,
) -> Result<Option<Linear<B>>, LoadError> {
    let path = dir.join(WEIGHTS);
    let family = config.family().map_err(|message| LoadError::Config { path: dir.join(CONFIG), message })?;
    let name = format!("{}.weight", family.head_output());
    let Some(labels) = head_labels(&path, &name, config.hidden_size, num_outputs)? else { return Ok(None) };
    let mut head = HeadOutput {
        classifier: Linear {
            weight: Param::from_tensor(Tensor::zeros([config.hidden_size, labels], device)),
            bias: Some(Param::from_tensor(Tensor::zeros([labels], device))),
        },
    };
    let mut store = SafetensorsStore::from_file(&path)
        .with_from_adapter(PyTorchToBurnAdapter)
        .with_key_remapping(format!("^{}\\.", regex_escape(family.head_output())), "classifier.")
        .allow_partial(true);
    let result =
        head.load_from(&mut store).map_err(|e| LoadError::Weights { path: path.clone(), message: e.to_string() })?;
    if !result.errors.is_empty() || !result.missing.is_empty() {
        let missing: Vec<&str> = result.missing.iter().map(|(p, _)| p.as_str()).collect();
        return Err(LoadError::Weights {
            path,
            message: format!("the head does not load: missing {missing:?}, errors {:?}", result.errors),
        });
    }
    let linear = crate::model::dtype::to_backend_float(head).classifier;
    Ok(Some(if num_outputs > 1 { linear } else { two_labels_as_one(linear) }))
}

/// A two-label output layer (`[hidden, 2]`) as one logit for a binary
/// model: `l₁ − l₀`, whose sigmoid is the two-label softmax's `p(1)`.
pub(crate) fn two_labels_as_one<B: Backend>(linear: Linear<B>) -> Linear<B> {
    let difference = |t: Tensor<B, 2>| {
        let [rows, _] = t.dims();
        t.clone().narrow(1, 1, 1) - t.narrow(1, 0, 1).reshape([rows, 1])
    };
    let weight = difference(linear.weight.val());
    let bias = linear.bias.map(|b| difference(b.val().reshape([1, 2])).reshape([1]));
    Linear { weight: Param::from_tensor(weight.detach()), bias: bias.map(|b| Param::from_tensor(b.detach())) }
}

/// How many labels a checkpoint's head output `name` (`[labels, hidden]`
/// in PyTorch's layout) has, checked against the data's classes: a binary
/// model (one output) takes a two-label head. `Ok(None)`: no such tensor.
pub(crate) fn head_labels(
    path: &Path,
    name: &str,
    hidden: usize,
    num_outputs: usize,
) -> Result<Option<usize>, LoadError> {
    let Some(shape) = tensor_shape(path, name)? else { return Ok(None) };
    let fail = |message: String| LoadError::Weights { path: path.to_path_buf(), message };
    let labels = match shape.as_slice() {
        [labels, h] if *h == hidden => *labels,
        _ => return Err(fail(format!("`{name}` has shape {shape:?}, not [labels, {hidden}]"))),
    };
    let classes = if num_outputs == 1 { 2 } else { num_outputs };
    if labels != classes {
        return Err(fail(format!(
            "the checkpoint's head has {labels} labels (`{name}`), the data {classes} classes: a head that \
             does not fit cannot be kept (set head = \"fresh\" to train a new one)"
        )));
    }
    Ok(Some(labels))
}

fn regex_escape(name: &str) -> String {
    name.replace('.', "\\.")
}

/// The shape of tensor `name` in a safetensors file, from its JSON header
/// (8 bytes of little-endian length, then the header); `None` when absent.
fn tensor_shape(path: &Path, name: &str) -> Result<Option<Vec<usize>>, LoadError> {
    use std::io::Read;
    let weights = |message: String| LoadError::Weights { path: path.to_path_buf(), message };
    let mut file = std::fs::File::open(path).map_err(|source| LoadError::Io { path: path.to_path_buf(), source })?;
    let mut length = [0u8; 8];
    file.read_exact(&mut length).map_err(|e| weights(format!("not a safetensors file: {e}")))?;
    let length = u64::from_le_bytes(length);
    // A header is a table of names and shapes; 100 MB would be a corrupt length.
    if length > 100_000_000 {
        return Err(weights(format!("not a safetensors file: header length {length}")));
    }
    let mut header = vec![0u8; length as usize];
    file.read_exact(&mut header).map_err(|e| weights(format!("truncated safetensors header: {e}")))?;
    #[derive(serde::Deserialize)]
    struct Entry {
        shape: Vec<usize>,
    }
    let mut table: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&header).map_err(|e| weights(format!("safetensors header: {e}")))?;
    match table.remove(name) {
        None => Ok(None),
        Some(entry) => {
            let entry: Entry = serde_json::from_value(entry).map_err(|e| weights(format!("`{name}`: {e}")))?;
            Ok(Some(entry.shape))
        }
    }
}
