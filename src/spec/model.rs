//! `[[models]]`: an architecture with its hyper-parameters and its training
//! recipe. The TOML keys are flat (one table per model); keys that belong to the
//! other architecture are errors at their own line, and defaults are the paper's
//! for each architecture (Bastings et al. 2022, appendix A).

use serde::{Deserialize, Serialize};
use toml::Spanned;

use super::values::{Positive, Share};

/// Model architectures `grid` can train.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Architecture {
    Bilstm,
    Bert,
}

impl Architecture {
    pub fn name(self) -> &'static str {
        match self {
            Architecture::Bilstm => "bilstm",
            Architecture::Bert => "bert",
        }
    }

    /// What salience methods can rely on (a pretrained BERT vocabulary without
    /// `[MASK]` is caught when its attribution step runs).
    pub fn traits(self) -> crate::salience::ModelTraits {
        match self {
            Architecture::Bilstm => crate::salience::ModelTraits {
                mask_token: false,
                additive_attention: true,
                transformer_attention: false,
            },
            Architecture::Bert => crate::salience::ModelTraits {
                mask_token: true,
                additive_attention: false,
                transformer_attention: true,
            },
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ModelSpec {
    pub name: String,
    pub architecture: ArchitectureSpec,
    pub training: TrainingSpec,
}

impl ModelSpec {
    pub fn kind(&self) -> Architecture {
        match self.architecture {
            ArchitectureSpec::Bilstm(_) => Architecture::Bilstm,
            ArchitectureSpec::Bert(_) => Architecture::Bert,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum ArchitectureSpec {
    Bilstm(BiLstmSpec),
    Bert(BertSpec),
}

/// BiLSTM hyper-parameters (defaults: Bastings et al. appendix A.1).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BiLstmSpec {
    pub embedding_dim: Positive,
    pub hidden_size: Positive,
    pub attention_size: Positive,
    pub mlp_size: Positive,
    pub dropout: Share,
    pub word_dropout: Share,
    /// GloVe-format text file (`word v1 … vd` per line) to initialise embeddings;
    /// relative to the data root.
    pub glove: Option<String>,
    pub vocab: VocabSpec,
    pub pad_embedding: PadEmbedding,
}

/// What the BiLSTM's `[PAD]` embedding row is. Padding positions never reach
/// the output (the recurrence and the attention are masked), so the row only
/// matters where `[PAD]` stands in for a word: the IG baseline `pad` and the
/// erasure metrics' "zeroed-out" input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PadEmbedding {
    /// A row of the embedding matrix like any other (drawn as the words the
    /// GloVe file lacks are, and updated by the optimiser), as in the paper's
    /// set-up, where `igl-pad` and `igl-zero` differ.
    Learned,
    /// Fixed at zero, as PyTorch's `padding_idx` keeps it: `igl-pad` is then
    /// `igl-zero`.
    Zero,
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

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct VocabSpec {
    #[serde(default = "vocab_max")]
    pub max_size: Positive,
    #[serde(default = "vocab_min")]
    pub min_count: Positive,
    #[serde(default = "yes")]
    pub lowercase: bool,
}

fn vocab_max() -> Positive {
    Positive::new(50_000)
}
fn vocab_min() -> Positive {
    Positive::new(1)
}
fn yes() -> bool {
    true
}

impl Default for VocabSpec {
    fn default() -> Self {
        Self { max_size: vocab_max(), min_count: vocab_min(), lowercase: true }
    }
}

/// The optimiser and its own knobs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "name", rename_all = "lowercase")]
pub enum Optimizer {
    /// SGD with (heavy-ball) momentum: the paper's LSTM recipe.
    Sgd { momentum: Share },
    /// AdamW (β = 0.9, 0.999, ε = 1e-8, decoupled weight decay): BERT fine-tuning.
    Adamw,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum OptimizerName {
    Sgd,
    Adamw,
}

/// Optimisation. Defaults per architecture: the paper's LSTM (SGD lr 0.03,
/// momentum 0.9, batch 64) and BERT (AdamW lr 2e-5, batch 16, plus the usual
/// fine-tuning schedule: 10% linear warm-up, linear decay, clipping at norm 1);
/// both: weight decay 5e-6, ≤ 35,000 steps, early stop after 10,000 without gain.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrainingSpec {
    pub batch_size: Positive,
    pub optimizer: Optimizer,
    pub learning_rate: f64,
    pub weight_decay: f64,
    /// Share of `max_steps` over which the learning rate rises linearly from 0;
    /// after it, it decays linearly to 0 at `max_steps`. 0 with no decay: constant.
    pub schedule: Schedule,
    pub max_steps: Positive,
    pub eval_every: Positive,
    /// Which weights training returns.
    pub keep: Keep,
    /// Clip the global gradient norm to this value.
    pub max_grad_norm: Option<f64>,
    pub seed: u64,
}

/// Which weights a training run returns.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "name", rename_all = "lowercase")]
pub enum Keep {
    /// The evaluation with the highest validation accuracy; stop after
    /// `patience` steps without a gain (the paper's recipe).
    Best { patience: Positive },
    /// The weights after `max_steps`, with no early stop (Hugging Face's
    /// Trainer default). Accuracy on a mixed validation set is mostly accuracy on
    /// the original task, so `best` can return a model that has not finished
    /// learning a shortcut that only a share of the examples carries.
    Last,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum KeepName {
    Best,
    Last,
}

/// The learning-rate schedule.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "name", rename_all = "lowercase")]
pub enum Schedule {
    Constant,
    /// Linear warm-up over `warmup_share` of the steps, then linear decay to 0.
    Linear {
        warmup_share: Share,
    },
}

impl Schedule {
    /// The multiplier of the base learning rate at 0-based `step` of `total`.
    pub fn factor(self, step: usize, total: usize) -> f64 {
        match self {
            Schedule::Constant => 1.0,
            Schedule::Linear { warmup_share } => {
                let warmup = (warmup_share.get() * total as f64).round() as usize;
                // HF's get_linear_schedule_with_warmup, at the step being taken.
                if step < warmup {
                    (step + 1) as f64 / warmup as f64
                } else {
                    ((total - step.min(total)) as f64 / (total - warmup).max(1) as f64).max(0.0)
                }
            }
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTraining {
    batch_size: Option<Positive>,
    optimizer: Option<Spanned<OptimizerName>>,
    learning_rate: Option<Spanned<f64>>,
    momentum: Option<Spanned<Share>>,
    weight_decay: Option<Spanned<f64>>,
    warmup_share: Option<Spanned<Share>>,
    max_steps: Option<Positive>,
    eval_every: Option<Positive>,
    keep: Option<Spanned<KeepName>>,
    patience: Option<Spanned<Positive>>,
    /// `0` switches clipping off where the architecture's default has it.
    max_grad_norm: Option<Spanned<f64>>,
    seed: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawModel {
    pub(super) name: Spanned<String>,
    architecture: Architecture,
    // Both: BiLSTM hidden size per direction / BERT hidden size; dropout.
    hidden_size: Option<Spanned<Positive>>,
    dropout: Option<Spanned<Share>>,
    // BiLSTM.
    embedding_dim: Option<Spanned<Positive>>,
    attention_size: Option<Spanned<Positive>>,
    mlp_size: Option<Spanned<Positive>>,
    word_dropout: Option<Spanned<Share>>,
    glove: Option<Spanned<String>>,
    vocab: Option<Spanned<VocabSpec>>,
    // BERT.
    checkpoint: Option<Spanned<String>>,
    num_hidden_layers: Option<Spanned<Positive>>,
    num_attention_heads: Option<Spanned<Positive>>,
    intermediate_size: Option<Spanned<Positive>>,
    wordpiece_vocab_size: Option<Spanned<Positive>>,
    lowercase: Option<Spanned<bool>>,
    position_init: Option<Spanned<PositionInit>>,
    head: Option<Spanned<HeadInit>>,
    // BiLSTM.
    pad_embedding: Option<Spanned<PadEmbedding>>,
    #[serde(default)]
    training: RawTraining,
}

/// An error at a byte span of the grid file.
pub(super) type SpanError = (Option<std::ops::Range<usize>>, String);

fn refuse<T>(key: &Option<Spanned<T>>, message: impl FnOnce() -> String) -> Result<(), SpanError> {
    match key {
        Some(value) => Err((Some(value.span()), message())),
        None => Ok(()),
    }
}

fn value<T: Clone>(key: &Option<Spanned<T>>, default: T) -> T {
    key.as_ref().map(|v| v.get_ref().clone()).unwrap_or(default)
}

pub(super) fn model(raw: RawModel) -> Result<ModelSpec, SpanError> {
    let name = raw.name.get_ref().clone();
    let not_for = |key: &str, arch: &str| format!("model `{name}`: `{key}` is not a key of architecture `{arch}`");
    let architecture = match raw.architecture {
        Architecture::Bilstm => {
            refuse(&raw.checkpoint, || not_for("checkpoint", "bilstm"))?;
            refuse(&raw.num_hidden_layers, || not_for("num_hidden_layers", "bilstm"))?;
            refuse(&raw.num_attention_heads, || not_for("num_attention_heads", "bilstm"))?;
            refuse(&raw.intermediate_size, || not_for("intermediate_size", "bilstm"))?;
            refuse(&raw.wordpiece_vocab_size, || not_for("wordpiece_vocab_size", "bilstm"))?;
            refuse(&raw.position_init, || not_for("position_init", "bilstm"))?;
            refuse(&raw.head, || not_for("head", "bilstm"))?;
            refuse(&raw.lowercase, || format!("model `{name}`: for a BiLSTM, lower-casing is `vocab.lowercase`"))?;
            ArchitectureSpec::Bilstm(BiLstmSpec {
                embedding_dim: value(&raw.embedding_dim, Positive::new(300)),
                hidden_size: value(&raw.hidden_size, Positive::new(256)),
                attention_size: value(&raw.attention_size, Positive::new(256)),
                mlp_size: value(&raw.mlp_size, Positive::new(256)),
                dropout: value(&raw.dropout, Share::new(0.5)),
                word_dropout: value(&raw.word_dropout, Share::new(0.1)),
                glove: raw.glove.as_ref().map(|g| g.get_ref().clone()),
                vocab: value(&raw.vocab, VocabSpec::default()),
                pad_embedding: value(&raw.pad_embedding, PadEmbedding::Learned),
            })
        }
        Architecture::Bert => {
            refuse(&raw.embedding_dim, || not_for("embedding_dim", "bert"))?;
            refuse(&raw.attention_size, || not_for("attention_size", "bert"))?;
            refuse(&raw.mlp_size, || not_for("mlp_size", "bert"))?;
            refuse(&raw.word_dropout, || not_for("word_dropout", "bert"))?;
            refuse(&raw.glove, || not_for("glove", "bert"))?;
            refuse(&raw.pad_embedding, || not_for("pad_embedding", "bert"))?;
            refuse(&raw.vocab, || {
                format!("model `{name}`: a BERT's vocabulary comes from its checkpoint, or `wordpiece_vocab_size`")
            })?;
            let init = match &raw.checkpoint {
                Some(checkpoint) => {
                    let shape = |key: &str| {
                        format!(
                            "model `{name}`: `{key}` comes from the checkpoint's config.json; drop it or drop `checkpoint`"
                        )
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
                        text.parse::<crate::model::hub::CheckpointSource>()
                            .map_err(|e| (Some(checkpoint.span()), format!("model `{name}`: {e}")))?;
                    }
                    BertInit::Pretrained { checkpoint: text, head: value(&raw.head, HeadInit::Fresh) }
                }
                None => {
                    refuse(&raw.head, || format!("model `{name}`: `head` needs a `checkpoint` to read it from"))?;
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
            ArchitectureSpec::Bert(BertSpec { init, dropout: raw.dropout.as_ref().map(|d| *d.get_ref()) })
        }
    };
    let training = training(raw.training, raw.architecture, &name)?;
    Ok(ModelSpec { name, architecture, training })
}

fn training(raw: RawTraining, architecture: Architecture, name: &str) -> Result<TrainingSpec, SpanError> {
    let bert = architecture == Architecture::Bert;
    let optimizer_name = raw.optimizer.as_ref().map(|o| *o.get_ref()).unwrap_or(if bert {
        OptimizerName::Adamw
    } else {
        OptimizerName::Sgd
    });
    let optimizer = match optimizer_name {
        OptimizerName::Sgd => Optimizer::Sgd { momentum: value(&raw.momentum, Share::new(0.9)) },
        OptimizerName::Adamw => {
            refuse(&raw.momentum, || format!("model `{name}`: `momentum` is an SGD setting; AdamW uses fixed betas"))?;
            Optimizer::Adamw
        }
    };
    let schedule = match (&raw.warmup_share, bert) {
        (Some(share), _) => Schedule::Linear { warmup_share: *share.get_ref() },
        (None, true) => Schedule::Linear { warmup_share: Share::new(0.1) },
        (None, false) => Schedule::Constant,
    };
    let max_grad_norm = match raw.max_grad_norm.as_ref().map(|n| (*n.get_ref(), n.span())) {
        Some((n, _)) if n > 0.0 && !n.is_nan() => Some(n),
        Some((0.0, _)) => None,
        Some((n, span)) => {
            return Err((Some(span), format!("model `{name}`: `training.max_grad_norm` must be ≥ 0, got {n}")));
        }
        None => bert.then_some(1.0),
    };
    // TOML spells `nan` and `inf`; either would train a model of NaNs and cache it.
    let learning_rate = match raw.learning_rate.as_ref().map(|r| (*r.get_ref(), r.span())) {
        Some((r, _)) if r.is_finite() && r > 0.0 => r,
        Some((r, span)) => {
            return Err((
                Some(span),
                format!("model `{name}`: `training.learning_rate` must be a finite number > 0, got {r}"),
            ));
        }
        None if bert => 2e-5,
        None => 0.03,
    };
    let weight_decay = match raw.weight_decay.as_ref().map(|w| (*w.get_ref(), w.span())) {
        Some((w, _)) if w.is_finite() && w >= 0.0 => w,
        Some((w, span)) => {
            return Err((
                Some(span),
                format!("model `{name}`: `training.weight_decay` must be a finite number ≥ 0, got {w}"),
            ));
        }
        None => 5e-6,
    };
    let keep = match raw.keep.as_ref().map(|k| *k.get_ref()) {
        Some(KeepName::Best) | None => Keep::Best { patience: value(&raw.patience, Positive::new(10_000)) },
        Some(KeepName::Last) => {
            refuse(&raw.patience, || {
                format!("model `{name}`: `training.patience` stops early, but `keep = \"last\"` trains all `max_steps`")
            })?;
            Keep::Last
        }
    };
    Ok(TrainingSpec {
        batch_size: raw.batch_size.unwrap_or(Positive::new(if bert { 16 } else { 64 })),
        optimizer,
        learning_rate,
        weight_decay,
        schedule,
        max_steps: raw.max_steps.unwrap_or(Positive::new(35_000)),
        eval_every: raw.eval_every.unwrap_or(Positive::new(500)),
        keep,
        max_grad_norm,
        seed: raw.seed.unwrap_or(1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_schedule_warms_up_then_decays_to_zero() {
        let s = Schedule::Linear { warmup_share: Share::new(0.1) };
        assert_eq!(s.factor(0, 100), 0.1);
        assert_eq!(s.factor(9, 100), 1.0);
        assert_eq!(s.factor(10, 100), 1.0);
        assert!((s.factor(55, 100) - 0.5).abs() < 1e-12);
        assert_eq!(s.factor(100, 100), 0.0);
        assert_eq!(Schedule::Constant.factor(7, 10), 1.0);
        let no_warmup = Schedule::Linear { warmup_share: Share::new(0.0) };
        assert_eq!(no_warmup.factor(0, 4), 1.0);
        assert_eq!(no_warmup.factor(2, 4), 0.5);
    }
}
