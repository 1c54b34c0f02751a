//! BERT cells end to end on tiny data: a randomly initialised BERT with a
//! WordPiece vocabulary learnt from the corpus, and a "pretrained" checkpoint in
//! Hugging Face's layout, read from a folder and downloaded over `hf://` from a
//! local server.

use std::collections::HashMap;
use std::path::Path;

use grid_cache::Cache;
use grid_pipeline::dag::{self, PlanOptions, StepStatus};
use grid_pipeline::io::read_jsonl;
use grid_pipeline::spec::Grid;
use grid_pipeline::step_kind::StepKind;
use grid_pipeline::steps::attribute::AttributedExample;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use safetensors::{Dtype, serialize, tensor::TensorView};

use crate::util::{GridTest, RANDOM_BERT, serve_as_hub};

fn grid_with(model: &str) -> String {
    format!(
        r#"
name = "bert"
metrics = ["precision", "rank"]

[[datasets]]
name = "gen"
generated = {{ train = 400, validation = 100, test = 80, seed = 3 }}
max_length = 40
batch_size = 16

[shortcuts]
kinds = ["st"]
seed = 5

[[models]]
name = "bert"
architecture = "bert"
{model}

[models.training]
learning_rate = 1e-3
max_steps = 60
eval_every = 30
patience = 60

[attribution]
methods = ["gradl-l2", "gxip", "random"]
sample = 30
"#
    )
}

/// Checks every attribution of the run: one score per token, and the ground
/// truth is the shortcut token itself, as one whole token.
fn check_attributions(t: &GridTest) {
    check_attributions_between(t, "[CLS]", "[SEP]");
}

/// [`check_attributions`] for a tokenizer whose texts start with `first` and end with `last`.
fn check_attributions_between(t: &GridTest, first: &str, last: &str) {
    let grid = Grid::load(&t.grid_file()).unwrap();
    let cache = Cache::open(t.cache()).unwrap();
    let plan = dag::plan(&grid, &cache, &PlanOptions::default()).unwrap();
    let mut seen = 0;
    for step in plan.steps.iter().filter(|s| s.kind == StepKind::Attribute) {
        let dir = cache.step_dir(step.kind, &step.key);
        let rows: Vec<AttributedExample> = read_jsonl(&dir.join("attributions.jsonl")).unwrap();
        // Examples whose shortcut token fell past max_length are left out and counted.
        let summary: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap();
        let dropped = summary["dropped_truncated"].as_u64().unwrap() as usize;
        assert_eq!(rows.len() + dropped, 30, "{}", step.label);
        assert!(rows.len() >= 10, "{}: {} rows", step.label, rows.len());
        for row in &rows {
            assert_eq!(row.scores.len(), row.tokens.len());
            assert_eq!((row.tokens.first().map(String::as_str), row.word_of_token[0]), (Some(first), None));
            assert_eq!(row.tokens.last().map(String::as_str), Some(last));
            assert_eq!(row.ground_truth.len(), 1);
            assert!(["#0", "#1"].contains(&row.tokens[row.ground_truth[0]].as_str()), "{:?}", row.tokens);
        }
        seen += 1;
    }
    assert_eq!(seen, 3);
}

#[test]
fn random_bert_runs_every_step() {
    let t = GridTest::new(&grid_with(RANDOM_BERT));
    let outcome = t.run();
    assert!(outcome.succeeded(), "{:?}", outcome.failures().collect::<Vec<_>>());
    for file in ["verification.csv", "bert_precision.csv", "bert_rank.md"] {
        assert!(t.reports().join("bert").join(file).is_file(), "missing {file}");
    }
    check_attributions(&t);
    // The checkpoint carries its tokenizer, with the shortcut tokens whole.
    let cache = Cache::open(t.cache()).unwrap();
    let grid = Grid::load(&t.grid_file()).unwrap();
    let plan = dag::plan(&grid, &cache, &PlanOptions::default()).unwrap();
    let train = plan.steps.iter().find(|s| s.label == "train/gen/st/bert").unwrap();
    let dir = cache.step_dir(train.kind, &train.key);
    let tokenizer = std::fs::read_to_string(dir.join("tokenizer.json")).unwrap();
    assert!(tokenizer.contains("\"contoken\""));
    let training: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("training.json")).unwrap()).unwrap();
    assert_eq!(training["architecture"], "bert");
}

/// RoBERTa (byte-level BPE, a fresh head), DistilBERT (WordPiece, its own
/// two-label head kept as one logit), ELECTRA (embeddings projected up to
/// a wider encoder, a GELU head), ModernBERT (its own encoder: rotary
/// positions, GeGLU, sliding-window layers, mean pooling) and DeBERTa-v3 (its
/// own encoder: disentangled relative attention; a SentencePiece tokenizer)
/// and MPNet (relative-position buckets on BERT's attention; WordPiece with
/// RoBERTa's specials; its two-label head kept) checkpoints, as transformers
/// saves them, run every step: the shortcut
/// tokens stay whole tokens of their word.
#[test]
fn checkpoints_of_every_family_run_every_step() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    for (fixture, head, first, last) in [
        ("roberta_transformers", "", "<s>", "</s>"),
        ("distilbert_transformers", "head = \"checkpoint\"", "[CLS]", "[SEP]"),
        ("electra_transformers", "", "[CLS]", "[SEP]"),
        ("modernbert_transformers", "", "[CLS]", "[SEP]"),
        ("deberta_transformers", "", "[CLS]", "[SEP]"),
        ("mpnet_transformers", "head = \"checkpoint\"", "<s>", "</s>"),
    ] {
        let t = GridTest::new("");
        let dir = t.path().join("checkpoint");
        std::fs::create_dir_all(&dir).unwrap();
        for file in ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"] {
            std::fs::copy(fixtures.join(fixture).join(file), dir.join(file)).unwrap();
        }
        t.write_grid(&grid_with(&format!("checkpoint = \"checkpoint\"\n{head}")));
        let outcome = t.run();
        assert!(outcome.succeeded(), "{fixture}: {:?}", outcome.failures().collect::<Vec<_>>());
        check_attributions_between(&t, first, last);
        let cache = Cache::open(t.cache()).unwrap();
        let grid = Grid::load(&t.grid_file()).unwrap();
        let plan = dag::plan(&grid, &cache, &PlanOptions::default()).unwrap();
        let train = plan.steps.iter().find(|s| s.label == "train/gen/st/bert").unwrap();
        let training: serde_json::Value = serde_json::from_slice(
            &std::fs::read(cache.step_dir(train.kind, &train.key).join("training.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(training["pretrained"]["head_from_checkpoint"], !head.is_empty(), "{fixture}");
        assert_eq!(training["pretrained"]["load"]["random_pooler"], false, "{fixture}");
    }
}

/// Every method family on an ELECTRA checkpoint (DeepLift's rules through its
/// projection and GELU head; [MASK] baselines from its WordPiece vocabulary):
/// one finite score per token for every attributed example.
#[test]
fn electra_checkpoint_runs_every_method_family() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/electra_transformers");
    let t = GridTest::new("");
    let dir = t.path().join("checkpoint");
    std::fs::create_dir_all(&dir).unwrap();
    for file in ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"] {
        std::fs::copy(fixture.join(file), dir.join(file)).unwrap();
    }
    let methods = r#"methods = ["gradl-l2", "gxil", "igl-mask-8", "smooth-gradl-l2-4-0.1", "limemask-40",
    "kernelshap-mask-40", "occlusion-mask", "attn-last", "attn-all", "attn-scaled", "deeplift", "deeplift-mask",
    "random"]"#;
    let grid = grid_with("checkpoint = \"checkpoint\"").replace(r#"methods = ["gradl-l2", "gxip", "random"]"#, methods);
    t.write_grid(&grid);
    let outcome = t.run();
    assert!(outcome.succeeded(), "{:?}", outcome.failures().collect::<Vec<_>>());
    let cache = Cache::open(t.cache()).unwrap();
    let plan = dag::plan(&Grid::load(&t.grid_file()).unwrap(), &cache, &PlanOptions::default()).unwrap();
    let attributed: Vec<_> = plan.steps.iter().filter(|s| s.kind == StepKind::Attribute).collect();
    assert_eq!(attributed.len(), 13);
    for step in attributed {
        let rows: Vec<AttributedExample> =
            read_jsonl(&cache.step_dir(step.kind, &step.key).join("attributions.jsonl")).unwrap();
        assert!(rows.len() >= 10, "{}: {} rows", step.label, rows.len());
        for row in &rows {
            assert_eq!(row.scores.len(), row.tokens.len(), "{}", step.label);
            assert!(row.scores.iter().all(|s| s.is_finite()), "{}: {:?}", step.label, row.scores);
        }
    }
}

/// Every method family on a ModernBERT checkpoint: one finite score per token
/// for every attributed example; DeepLift (no Rescale rule for its GeGLU
/// gate) and scaled attention (its head pools every token) are refused in
/// their own steps, naming the method and the family, and nothing else fails.
#[test]
fn modernbert_checkpoint_runs_every_method_it_supports_and_names_what_it_refuses() {
    every_method_runs_on(
        "modernbert_transformers",
        &[
            ("deeplift", "ModernBERT does not implement DeepLift's rules"),
            ("attn-scaled", "ModernBERT has no attention whose first query alone reaches the output"),
        ],
    );
}

/// The same on a DeBERTa-v3 checkpoint, whose `[CLS]` pooler makes scaled
/// attention apply; DeepLift is refused (no rule for its disentangled
/// attention).
#[test]
fn deberta_checkpoint_runs_every_method_it_supports_and_names_what_it_refuses() {
    every_method_runs_on("deberta_transformers", &[("deeplift", "DeBERTa does not implement DeepLift's rules")]);
}

/// The same on an MPNet checkpoint: every method, DeepLift's rules included
/// (the relative-position bias is added to the scores before the softmax
/// whose rule DeepLift replaces).
#[test]
fn mpnet_checkpoint_runs_every_method() {
    every_method_runs_on("mpnet_transformers", &[]);
}

/// Runs every method family on `fixture` with dropout: each method of
/// `refused` fails its own step with its name and the reason, and every
/// other attribution has one finite score per token.
fn every_method_runs_on(fixture: &str, refused: &[(&str, &str)]) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(fixture);
    let t = GridTest::new("");
    let dir = t.path().join("checkpoint");
    std::fs::create_dir_all(&dir).unwrap();
    for file in ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"] {
        std::fs::copy(fixture.join(file), dir.join(file)).unwrap();
    }
    let methods = r#"methods = ["gradl-l2", "gxil", "igl-mask-8", "smooth-gradl-l2-4-0.1", "limemask-40",
    "kernelshap-mask-40", "occlusion-mask", "attn-last", "attn-all", "attn-scaled", "deeplift", "random"]"#;
    let grid = grid_with("checkpoint = \"checkpoint\"\ndropout = 0.1")
        .replace(r#"methods = ["gradl-l2", "gxip", "random"]"#, methods);
    t.write_grid(&grid);
    let outcome = t.run();
    let failed: Vec<(&str, String)> = outcome
        .failures()
        .map(|r| match &r.status {
            StepStatus::Failed { error } => (r.label.as_str(), error.clone()),
            other => (r.label.as_str(), format!("{other:?}")),
        })
        .collect();
    for (method, reason) in refused {
        let (_, error) = failed.iter().find(|(label, _)| label.ends_with(&format!("/{method}"))).unwrap_or_else(|| {
            panic!("{method} was not refused: {failed:?}");
        });
        assert!(error.contains(&format!("`{method}`")) && error.contains(reason), "{method}: {error}");
    }
    let failed_steps: Vec<_> =
        failed.iter().filter(|(label, _)| label.starts_with("attribute/") || label.starts_with("train/")).collect();
    assert_eq!(failed_steps.len(), refused.len(), "{failed:?}");
    let cache = Cache::open(t.cache()).unwrap();
    let plan = dag::plan(&Grid::load(&t.grid_file()).unwrap(), &cache, &PlanOptions::default()).unwrap();
    let train = plan.steps.iter().find(|s| s.label == "train/gen/st/bert").unwrap();
    let training: serde_json::Value =
        serde_json::from_slice(&std::fs::read(cache.step_dir(train.kind, &train.key).join("training.json")).unwrap())
            .unwrap();
    // The head before the classification layer is the checkpoint's, that layer new.
    assert_eq!(training["pretrained"]["load"]["random_pooler"], false);
    assert_eq!(training["pretrained"]["head_from_checkpoint"], false);
    let attributed: Vec<_> = plan
        .steps
        .iter()
        .filter(|s| s.kind == StepKind::Attribute && !refused.iter().any(|(m, _)| s.label.ends_with(&format!("/{m}"))))
        .collect();
    assert_eq!(attributed.len(), 12 - refused.len());
    for step in attributed {
        let rows: Vec<AttributedExample> =
            read_jsonl(&cache.step_dir(step.kind, &step.key).join("attributions.jsonl")).unwrap();
        assert!(rows.len() >= 10, "{}: {} rows", step.label, rows.len());
        for row in &rows {
            assert_eq!(row.scores.len(), row.tokens.len(), "{}", step.label);
            assert!(row.scores.iter().all(|s| s.is_finite()), "{}: {:?}", step.label, row.scores);
        }
    }
}

/// A checkpoint without a classification head cannot keep one.
#[test]
fn head_from_a_checkpoint_without_one_is_an_error() {
    let t = GridTest::new("");
    write_hf_checkpoint(&t.path().join("tiny-bert"), "bert");
    t.write_grid(&grid_with("checkpoint = \"tiny-bert\"\nhead = \"checkpoint\""));
    let out = t.grid(&["run", "grid.toml", "-q"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("head = \"checkpoint\", but") && err.contains("has no classification head (`classifier.weight`)"),
        "{err}"
    );
}

/// A small BERT checkpoint as Hugging Face saves `BertForPreTraining`: `bert.`
/// prefixes, PyTorch `[out, in]` Linear weights, LayerNorm weight/bias, an extra
/// head tensor the classifier does not use, and a `vocab.txt` tokenizer.
pub(crate) fn write_hf_checkpoint(dir: &Path, model_type: &str) {
    write_hf_checkpoint_with(dir, model_type, "weight", "bias", &[]);
}

/// [`write_hf_checkpoint`] with LayerNorm parameters named `<norm>.{scale,shift}`
/// (`weight`/`bias` as PyTorch names them, `gamma`/`beta` as TF checkpoints and
/// their conversions do) and `extra` tensors beside the model's.
fn write_hf_checkpoint_with(dir: &Path, model_type: &str, scale: &str, shift: &str, extra: &[(&str, Vec<usize>)]) {
    std::fs::create_dir_all(dir).unwrap();
    let (hidden, intermediate, layers, positions) = (16usize, 32usize, 2usize, 64usize);
    let mut vocab: Vec<String> = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"].map(String::from).to_vec();
    vocab.extend(('a'..='z').map(String::from));
    vocab.extend(('a'..='z').map(|c| format!("##{c}")));
    vocab.extend(["the", "film", "movie", "good", "bad", ".", ","].map(String::from));
    std::fs::write(dir.join("vocab.txt"), vocab.join("\n") + "\n").unwrap();
    let config = serde_json::json!({
        "architectures": ["BertForPreTraining"], "model_type": model_type, "vocab_size": vocab.len(),
        "hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": 2,
        "intermediate_size": intermediate, "hidden_act": "gelu", "max_position_embeddings": positions,
        "type_vocab_size": 2, "layer_norm_eps": 1e-12, "pad_token_id": 0,
    });
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();

    let mut shapes: Vec<(String, Vec<usize>)> = vec![
        ("bert.embeddings.word_embeddings.weight".into(), vec![vocab.len(), hidden]),
        ("bert.embeddings.position_embeddings.weight".into(), vec![positions, hidden]),
        ("bert.embeddings.token_type_embeddings.weight".into(), vec![2, hidden]),
        (format!("bert.embeddings.LayerNorm.{scale}"), vec![hidden]),
        (format!("bert.embeddings.LayerNorm.{shift}"), vec![hidden]),
        ("bert.pooler.dense.weight".into(), vec![hidden, hidden]),
        ("bert.pooler.dense.bias".into(), vec![hidden]),
        ("cls.predictions.bias".into(), vec![vocab.len()]),
    ];
    for l in 0..layers {
        let p = format!("bert.encoder.layer.{l}");
        for name in ["attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"] {
            shapes.push((format!("{p}.{name}.weight"), vec![hidden, hidden]));
            shapes.push((format!("{p}.{name}.bias"), vec![hidden]));
        }
        shapes.push((format!("{p}.intermediate.dense.weight"), vec![intermediate, hidden]));
        shapes.push((format!("{p}.intermediate.dense.bias"), vec![intermediate]));
        shapes.push((format!("{p}.output.dense.weight"), vec![hidden, intermediate]));
        shapes.push((format!("{p}.output.dense.bias"), vec![hidden]));
        for norm in ["attention.output.LayerNorm", "output.LayerNorm"] {
            shapes.push((format!("{p}.{norm}.{scale}"), vec![hidden]));
            shapes.push((format!("{p}.{norm}.{shift}"), vec![hidden]));
        }
    }
    shapes.extend(extra.iter().map(|(name, shape)| (name.to_string(), shape.clone())));
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let bytes: Vec<(String, Vec<usize>, Vec<u8>)> = shapes
        .into_iter()
        .map(|(name, shape)| {
            let n: usize = shape.iter().product();
            // Scales around 1, not 1 itself: a LayerNorm left at its initial
            // value must show.
            let is_norm_scale = name.contains(&format!("LayerNorm.{scale}"));
            let values: Vec<u8> = (0..n)
                .flat_map(|_| {
                    let v: f32 = if is_norm_scale { rng.random_range(0.8..1.2) } else { rng.random_range(-0.05..0.05) };
                    v.to_le_bytes()
                })
                .collect();
            (name, shape, values)
        })
        .collect();
    let views: HashMap<String, TensorView> = bytes
        .iter()
        .map(|(name, shape, data)| (name.clone(), TensorView::new(Dtype::F32, shape.clone(), data).unwrap()))
        .collect();
    std::fs::write(dir.join("model.safetensors"), serialize(&views, None).unwrap()).unwrap();
}

#[test]
fn pretrained_checkpoint_from_a_folder() {
    let t = GridTest::new("");
    write_hf_checkpoint(&t.path().join("tiny-bert"), "bert");
    t.write_grid(&grid_with("checkpoint = \"tiny-bert\""));
    let outcome = t.run();
    assert!(outcome.succeeded(), "{:?}", outcome.failures().collect::<Vec<_>>());
    check_attributions(&t);

    // The checkpoint's content is in the train keys: new weights, new models.
    let keys = |t: &GridTest| -> Vec<String> {
        let grid = Grid::load(&t.grid_file()).unwrap();
        let plan = dag::plan(&grid, &Cache::open(t.cache()).unwrap(), &PlanOptions::default()).unwrap();
        plan.steps.iter().filter(|s| s.kind == StepKind::Train).map(|s| s.key.as_str().to_string()).collect()
    };
    let before = keys(&t);
    let config = t.path().join("tiny-bert/config.json");
    let text = std::fs::read_to_string(&config).unwrap().replace("1e-12", "1e-6");
    std::fs::write(&config, text).unwrap();
    assert!(keys(&t).iter().zip(&before).all(|(a, b)| a != b));
}

#[test]
fn unsupported_model_type_fails_its_branch_with_the_reason() {
    let t = GridTest::new("");
    write_hf_checkpoint(&t.path().join("tiny-bert"), "xlnet");
    t.write_grid(&grid_with("checkpoint = \"tiny-bert\""));
    let out = t.grid(&["run", "grid.toml", "-q"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "config.json: invalid config: model_type `xlnet` is not supported (supported: bert, roberta, distilbert, electra, mpnet, modernbert, deberta-v2)"
        ),
        "{err}"
    );
}

#[test]
fn hub_checkpoint_downloads_once_into_the_cache() {
    let t = GridTest::new(&grid_with("checkpoint = \"hf://org/tiny-bert\""));
    let served = tempfile::tempdir().unwrap();
    write_hf_checkpoint(served.path(), "bert");
    let endpoint = serve_as_hub(served.path(), "/org/tiny-bert/resolve/main/");
    let out = t.grid_on_hub(&endpoint, &["run", "grid.toml", "-q"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let downloaded = t.cache().join("hub/org--tiny-bert/main");
    assert!(downloaded.join("model.safetensors").is_file() && downloaded.join("checksums.json").is_file());
    assert!(downloaded.join("vocab.txt").is_file(), "tokenizer.json answered 404, so vocab.txt");
    check_attributions(&t);
}

/// Both namings of a LayerNorm load, to the same values: the scale read is the
/// checkpoint's, not the initial 1.
#[test]
fn layer_norms_load_under_both_namings() {
    use burn::backend::Flex;
    use grid_core::model::bert::load::load_pretrained;
    let t = GridTest::new("");
    let gamma_of = |scale: &str, shift: &str| -> Vec<f32> {
        let dir = t.path().join(format!("bert-{scale}"));
        write_hf_checkpoint_with(&dir, "bert", scale, shift, &[]);
        let (_, model, report) = load_pretrained::<Flex>(&dir, &mut ChaCha8Rng::seed_from_u64(1), &Default::default())
            .unwrap_or_else(|e| panic!("{scale}/{shift}: {e}"));
        assert_eq!(report.unused, vec!["cls.predictions.bias".to_string()], "{scale}/{shift}");
        model.embeddings.layer_norm.gamma.val().into_data().to_vec().unwrap()
    };
    let pytorch = gamma_of("weight", "bias");
    assert!(pytorch.iter().all(|&g| (0.8..1.2).contains(&g)) && pytorch.iter().any(|&g| g != 1.0), "{pytorch:?}");
    assert_eq!(pytorch, gamma_of("gamma", "beta"));
}

/// A tensor that would load into nothing stops the load and is named; the
/// known pre-training heads are not.
#[test]
fn a_checkpoint_tensor_nothing_uses_is_an_error_naming_it() {
    use burn::backend::Flex;
    use grid_core::model::bert::load::load_pretrained;
    let t = GridTest::new("");
    let dir = t.path().join("bert-extra");
    let extra = "bert.encoder.layer.1.attention.self.rotary.inv_freq";
    write_hf_checkpoint_with(
        &dir,
        "bert",
        "weight",
        "bias",
        &[(extra, vec![4]), ("cls.seq_relationship.bias", vec![2])],
    );
    let Err(error) = load_pretrained::<Flex>(&dir, &mut ChaCha8Rng::seed_from_u64(1), &Default::default()) else {
        panic!("an unused tensor must fail the load");
    };
    let error = error.to_string();
    assert!(error.contains("model.safetensors"), "{error}");
    assert!(error.contains("encoder.layer.1.attention.self"), "{error}");
    assert!(error.contains("rotary.inv_freq"), "{error}");
    assert!(!error.contains("seq_relationship.bias,"), "a known head is not listed as unknown: {error}");
}

/// Issue 59, item 2, for checkpoints: `hf://org/tiny-bert` (no commit) is
/// locked to the commit `main` pointed to, and once downloaded to its files'
/// hashes; after `main` moves, a machine with the lock trains from the locked
/// commit with the same keys; a lock that disagrees with the cached files names
/// the grid, the checkpoint and both hashes.
#[test]
fn an_unpinned_hub_checkpoint_is_locked_to_its_commit_and_files() {
    let (c1, c2) = ("a".repeat(40), "b".repeat(40));
    let hub = crate::util::BranchingHub::start("org/tiny-bert");
    let first = tempfile::tempdir().unwrap();
    write_hf_checkpoint(first.path(), "bert");
    hub.push(&c1, first.path());
    let grid = grid_with("checkpoint = \"hf://org/tiny-bert\"");
    let t = GridTest::new(&grid);
    let keys = |t: &GridTest| t.plan_keys_on_hub(&hub.endpoint);
    let out = t.grid_on_hub(&hub.endpoint, &["run", "grid.toml", "-q"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(t.cache().join(format!("hub/org--tiny-bert/{c1}/model.safetensors")).is_file(), "downloaded at the commit");
    let locked_keys = keys(&t);
    let lock = std::fs::read_to_string(t.path().join("grid.lock")).unwrap();
    let weights_sha = {
        use sha2::Digest;
        let bytes = std::fs::read(first.path().join("model.safetensors")).unwrap();
        sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect::<String>()
    };
    assert!(
        lock.contains("[[checkpoint]]")
            && lock.contains(r#"reference = "hf://org/tiny-bert""#)
            && lock.contains(&format!(r#"commit = "{c1}""#))
            && lock.contains(&weights_sha),
        "{lock}"
    );

    // main moves on; another machine with the lock: the locked commit, the same keys.
    let moved = tempfile::tempdir().unwrap();
    write_hf_checkpoint_with(moved.path(), "bert", "weight", "bias", &[]);
    hub.push(&c2, moved.path());
    let other = GridTest::new(&grid);
    std::fs::copy(t.path().join("grid.lock"), other.path().join("grid.lock")).unwrap();
    assert_eq!(keys(&other), locked_keys);

    // A lock whose hash the cached weights do not have.
    let wrong = "cd".repeat(32);
    std::fs::write(t.path().join("grid.lock"), lock.replace(&weights_sha, &wrong)).unwrap();
    let out = t.grid_on_hub(&hub.endpoint, &["plan", "grid.toml", "-q"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("grid.toml")
            && err.contains("hf://org/tiny-bert")
            && err.contains(&wrong)
            && err.contains(&weights_sha),
        "{err}"
    );
}
