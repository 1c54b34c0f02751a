//! A BERT-family model in the grid file: its keys and their defaults (a
//! pretrained checkpoint of any registered family, or `BertConfig`'s shape for
//! a random one), the fine-tuning recipe, the parameters of its train key, the
//! checkpoint it reads; and how it is fitted ([`fit`]).

pub mod fit;
pub mod own_room;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::AssetError;
use super::RawModel;
use super::table::{OptimizerName, SpanError, refuse, value};
use super::{DenseLayer, Family, Recipe};
use crate::paths::resolve;
use grid_cache::Cache;
use grid_core::model::ModelAssets;
use grid_core::model::hub::{self, CheckpointSource, HubError};
use grid_core::values::{Positive, Share};

/// BERT's entry in the registry ([`super::of`]): every
/// transformers family it loads (BERT, RoBERTa, DistilBERT) is this architecture.
pub const FAMILY: Family = Family {
    keys: &[
        "hidden_size",
        "dropout",
        "checkpoint",
        "num_hidden_layers",
        "num_attention_heads",
        "intermediate_size",
        "wordpiece_vocab_size",
        "lowercase",
        "position_init",
        "head",
        "fine_tune",
    ],
    hint,
    // Fine-tuning as usual: AdamW, lr 2e-5 (the paper's), batch 16, 10% linear
    // warm-up then linear decay, clipping at norm 1.
    recipe: Recipe {
        optimizer: OptimizerName::Adamw,
        learning_rate: 2e-5,
        batch_size: 16,
        warmup_share: Some(0.1),
        max_grad_norm: Some(1.0),
        keep_last: false,
    },
};

/// What a key of another architecture most likely meant here.
fn hint(key: &str) -> Option<&'static str> {
    (key == "vocab").then_some("a BERT's vocabulary comes from its checkpoint, or `wordpiece_vocab_size`")
}

/// A BERT-family classifier: a pretrained checkpoint, or a randomly initialised
/// encoder of a given shape with a WordPiece vocabulary learnt from the training split.
#[derive(Debug, Clone, PartialEq)]
pub struct BertSpec {
    pub init: BertInit,
    /// Overrides the config's `hidden_dropout_prob` and `attention_probs_dropout_prob`.
    pub dropout: Option<Share>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum BertInit {
    /// A directory (relative to the data root) or `hf://org/name[@revision]`,
    /// of any registered family (BERT, RoBERTa, DistilBERT: its `model_type`).
    Pretrained {
        checkpoint: String,
        head: HeadInit,
        /// `false`: the checkpoint is a fine-tuned classifier, taken as it is
        /// (head included) with no training step run.
        fine_tune: bool,
    },
    Random(RandomBert),
}

/// Where a pretrained model's classification head starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HeadInit {
    /// Drawn afresh, as fine-tuning from a pre-trained encoder does (the papers'
    /// recipe); a head in the checkpoint is left out.
    Fresh,
    /// The checkpoint's own (`*ForSequenceClassification`), its labels matching
    /// the data's classes (a two-label head serves a binary model as `l₁ − l₀`).
    Checkpoint,
}

/// The shape of a randomly initialised BERT (defaults: `BertConfig`'s, i.e. BERT-base).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RandomBert {
    pub hidden_size: Positive,
    pub num_hidden_layers: Positive,
    pub num_attention_heads: Positive,
    pub intermediate_size: Positive,
    /// Size of the WordPiece vocabulary trained on the training split.
    pub vocab_size: Positive,
    pub lowercase: bool,
    pub positions: PositionInit,
}

/// How a randomly initialised BERT's (trainable) position embeddings start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PositionInit {
    /// `N(0, initializer_range²)`, as `BertConfig` draws them: every position
    /// is learnt on its own, so an order between neighbours that few training
    /// examples show is not learnt.
    Normal,
    /// The Transformer's sine/cosine table (scaled to the same spread): a shift
    /// of position is a rotation, so order is shared across positions from the
    /// first step.
    Sinusoidal,
}

/// Its keys of a `[[models]]` table (the registry has refused every other
/// architecture's): a checkpoint refuses the shape keys its config.json sets.
pub fn parse(raw: &RawModel, name: &str) -> Result<BertSpec, SpanError> {
    let init = match &raw.checkpoint {
        Some(checkpoint) => {
            let shape = |key: &str| {
                format!("model `{name}`: `{key}` comes from the checkpoint's config.json; drop it or drop `checkpoint`")
            };
            refuse(&raw.hidden_size, || shape("hidden_size"))?;
            refuse(&raw.num_hidden_layers, || shape("num_hidden_layers"))?;
            refuse(&raw.num_attention_heads, || shape("num_attention_heads"))?;
            refuse(&raw.intermediate_size, || shape("intermediate_size"))?;
            refuse(&raw.wordpiece_vocab_size, || shape("wordpiece_vocab_size"))?;
            refuse(&raw.lowercase, || shape("lowercase"))?;
            refuse(&raw.position_init, || shape("position_init"))?;
            let text = checkpoint.get_ref().clone();
            if text.starts_with("hf://") {
                text.parse::<grid_core::model::hub::CheckpointSource>()
                    .map_err(|e| (Some(checkpoint.span()), format!("model `{name}`: {e}")))?;
            }
            let fine_tune = value(&raw.fine_tune, true);
            // Taken as it is means head included: a fresh head would be untrained.
            let head = match (&raw.head, fine_tune) {
                (Some(head), false) if *head.get_ref() == HeadInit::Fresh => {
                    return Err((
                        Some(head.span()),
                        format!(
                            "model `{name}`: `fine_tune = false` takes the checkpoint as it is, its classification \
                             head included; a fresh head would never be trained (set `head = \"checkpoint\"` or \
                             leave `head` out)"
                        ),
                    ));
                }
                (_, false) => HeadInit::Checkpoint,
                (head, true) => value(head, HeadInit::Fresh),
            };
            BertInit::Pretrained { checkpoint: text, head, fine_tune }
        }
        None => {
            refuse(&raw.head, || format!("model `{name}`: `head` needs a `checkpoint` to read it from"))?;
            refuse(&raw.fine_tune, || {
                format!("model `{name}`: `fine_tune = false` needs a fine-tuned classifier `checkpoint` to take")
            })?;
            let random = RandomBert {
                hidden_size: value(&raw.hidden_size, Positive::new(768)),
                num_hidden_layers: value(&raw.num_hidden_layers, Positive::new(12)),
                num_attention_heads: value(&raw.num_attention_heads, Positive::new(12)),
                intermediate_size: value(&raw.intermediate_size, Positive::new(3072)),
                vocab_size: value(&raw.wordpiece_vocab_size, Positive::new(30_522)),
                lowercase: value(&raw.lowercase, true),
                positions: value(&raw.position_init, PositionInit::Normal),
            };
            if !random.hidden_size.get().is_multiple_of(random.num_attention_heads.get()) {
                let span = raw.num_attention_heads.as_ref().or(raw.hidden_size.as_ref()).map(|s| s.span());
                return Err((
                    span,
                    format!(
                        "model `{name}`: hidden_size {} is not a multiple of num_attention_heads {}",
                        random.hidden_size.get(),
                        random.num_attention_heads.get()
                    ),
                ));
            }
            BertInit::Random(random)
        }
    };
    Ok(BertSpec { init, dropout: raw.dropout.as_ref().map(|d| *d.get_ref()) })
}

/// Its part of a train step's key (field by field, as the BiLSTM's).
pub fn key(spec: &BertSpec, checkpoint_hash: Option<&str>) -> Value {
    let BertSpec { init, dropout } = spec;
    let init_spec = init;
    let init = match init {
        // The checkpoint is hashed by content; only a kept head joins the key, so
        // the keys of existing grids hold.
        BertInit::Pretrained { checkpoint: _, head: HeadInit::Fresh, fine_tune: _ } => {
            json!({ "checkpoint": checkpoint_hash })
        }
        BertInit::Pretrained { checkpoint: _, head: HeadInit::Checkpoint, fine_tune: true } => {
            json!({ "checkpoint": checkpoint_hash, "head": "checkpoint" })
        }
        BertInit::Pretrained { checkpoint: _, head: HeadInit::Checkpoint, fine_tune: false } => {
            json!({ "checkpoint": checkpoint_hash, "head": "checkpoint", "fine_tune": false })
        }
        BertInit::Random(RandomBert {
            hidden_size,
            num_hidden_layers,
            num_attention_heads,
            intermediate_size,
            vocab_size,
            lowercase,
            positions,
        }) => {
            let mut random = json!({
                "hidden_size": hidden_size.get(),
                "num_hidden_layers": num_hidden_layers.get(),
                "num_attention_heads": num_attention_heads.get(),
                "intermediate_size": intermediate_size.get(),
                "wordpiece_vocab_size": vocab_size.get(),
                "lowercase": lowercase,
            });
            // Only a non-default start joins the key, so the keys of existing grids hold.
            if *positions != PositionInit::Normal
                && let Some(object) = random.as_object_mut()
            {
                object.insert("position_init".into(), json!(positions));
            }
            json!({ "random": random })
        }
    };
    let mut key = json!({ "bert": { "init": init, "dropout": dropout.map(Share::get) } });
    // Training with dropout draws its masks from the backend's RNG, re-seeded
    // at every evaluation step so that a run resumes exactly (`train::Snapshots`);
    // that changed the masks after the first evaluation, so those keys changed.
    let trains = !matches!(init_spec, BertInit::Pretrained { fine_tune: false, .. });
    let draws = dropout.is_none_or(|p| p.get() > 0.0);
    if trains
        && draws
        && let Some(bert) = key.get_mut("bert").and_then(|b| b.as_object_mut())
    {
        bert.insert("device_rng".into(), json!("reseeded at evaluations"));
    }
    key
}

/// Multiply-adds per token of a forward pass, for a random BERT (a layer:
/// four `h × h` projections and the `h × i` feed-forward pair); `None` for a
/// checkpoint, whose sizes are read only when its step runs.
pub fn macs_per_token(spec: &BertSpec) -> Option<f64> {
    match &spec.init {
        BertInit::Random(r) => {
            let (h, i) = (r.hidden_size.get() as f64, r.intermediate_size.get() as f64);
            Some(r.num_hidden_layers.get() as f64 * (4.0 * h * h + 2.0 * h * i))
        }
        BertInit::Pretrained { .. } => None,
    }
}

/// Its dense layers: per encoder layer four attention projections and the
/// feed-forward pair; a checkpoint's sizes come from its config.json.
pub fn dense_layers(spec: &BertSpec, model: &str, assets: &ModelAssets) -> anyhow::Result<Vec<DenseLayer>> {
    use anyhow::Context as _;
    let (hidden, intermediate, layers) = match (&spec.init, assets) {
        (BertInit::Random(r), _) => (r.hidden_size.get(), r.intermediate_size.get(), r.num_hidden_layers.get()),
        (BertInit::Pretrained { .. }, ModelAssets::Checkpoint { source, cache_root }) => {
            let dir = hub::resolve(source, cache_root, &|_| {})
                .with_context(|| format!("model `{model}`: checkpoint {source}"))?;
            let context = || format!("model `{model}`: {}", dir.display());
            let model_type = grid_core::model::bert::load::model_type(&dir).with_context(context)?;
            if let Some(room) = own_room::Room::of(&model_type) {
                return own_room::dense_layers(&dir, room).with_context(context);
            }
            let config = grid_core::model::bert::load::read_config(&dir)
                .with_context(|| format!("model `{model}`: {}", dir.display()))?;
            (config.hidden_size, config.intermediate_size, config.num_hidden_layers)
        }
        (BertInit::Pretrained { .. }, _) => anyhow::bail!("model `{model}`: no checkpoint planned"),
    };
    let layer = |name, inputs, outputs, per_pass| DenseLayer { name, inputs, outputs, per_pass };
    Ok(vec![
        layer("attention q/k/v/output", hidden, hidden, 4 * layers),
        layer("feed-forward in", hidden, intermediate, layers),
        layer("feed-forward out", intermediate, hidden, layers),
    ])
}

/// The checkpoint when it is on the Hub (`hf://…`).
pub fn hub_checkpoint(spec: &BertSpec) -> Option<&str> {
    match &spec.init {
        BertInit::Pretrained { checkpoint, .. } if checkpoint.starts_with("hf://") => Some(checkpoint),
        _ => None,
    }
}

/// What a local checkpoint's content is, for its key.
const CHECKPOINT_FILES: [&str; 5] =
    ["config.json", "model.safetensors", "tokenizer.json", "vocab.txt", "tokenizer_config.json"];

/// The checkpoint it starts from, if pretrained, and what stands for its
/// content in the key: the files' hashes, or the pinned `hf://` id.
pub fn assets(
    spec: &BertSpec,
    model: &str,
    base: &Path,
    cache: &Cache,
) -> Result<(ModelAssets, Option<String>), AssetError> {
    let BertInit::Pretrained { checkpoint, .. } = &spec.init else { return Ok((ModelAssets::None, None)) };
    let cache_root = cache.root().to_path_buf();
    let fail = |path: PathBuf, message: String| AssetError::Checkpoint { model: model.to_string(), path, message };
    let source: CheckpointSource = if checkpoint.starts_with("hf://") {
        checkpoint.parse().map_err(|e: HubError| fail(checkpoint.into(), e.to_string()))?
    } else {
        CheckpointSource::Local(resolve(base, Path::new(checkpoint)))
    };
    let hash = match &source {
        // A hub id names its content only through its revision: pin one
        // (`@<commit>`) for keys that never go stale.
        CheckpointSource::Hub { .. } => source.to_string(),
        CheckpointSource::Local(dir) => {
            hub::resolve(&source, cache.root(), &|_| {}).map_err(|e| fail(dir.clone(), e.to_string()))?;
            let mut hasher = Sha256::new();
            for name in CHECKPOINT_FILES {
                let file = dir.join(name);
                if file.is_file() {
                    hasher.update(format!("{name}={}\n", cache.file_hash(&file)?));
                }
            }
            hex::encode(hasher.finalize())
        }
    };
    Ok((ModelAssets::Checkpoint { source, cache_root }, Some(hash)))
}
