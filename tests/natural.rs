//! A natural grid (no `[shortcuts]`): the model learns the task itself and is
//! explained on the dataset's own test set with the ground-truth-free metrics.

use grid_cache::Cache;
use grid_pipeline::dag::{self, PlanOptions};
use grid_pipeline::io::read_jsonl;
use grid_pipeline::spec::Grid;
use grid_pipeline::step_kind::StepKind;
use grid_pipeline::steps::attribute::AttributedExample;

use crate::util::{GridTest, TINY};

pub(crate) fn natural() -> String {
    let start = TINY.find("[shortcuts]").expect("TINY plants shortcuts");
    let end = TINY.find("[[models]]").expect("TINY has models");
    let text = format!("{}{}", &TINY[..start], &TINY[end..]);
    text.replace(
        r#"metrics = ["precision", "rank"]"#,
        r#"metrics = ["ns", "nc", "soft-ns", "soft-nc", "diagnosticity", "agreement"]"#,
    )
    .replace("[attribution]", "[agreement]\ntop_k = 3\n\n[attribution]")
}

#[test]
fn a_natural_grid_explains_the_original_model_on_the_original_test_set() {
    let t = GridTest::new(&natural());
    let outcome = t.run();
    assert!(outcome.succeeded(), "{:?}", outcome.failures().collect::<Vec<_>>());

    let grid = Grid::load(&t.grid_file()).unwrap();
    let cache = Cache::open(t.cache()).unwrap();
    let plan = dag::plan(&grid, &cache, &PlanOptions::default()).unwrap();
    // Nothing planted: no synthetic data, no shortcut model, nothing to verify.
    for kind in [StepKind::Synth, StepKind::Verify] {
        assert!(plan.steps.iter().all(|s| s.kind != kind), "{kind:?} planned");
    }
    let trained: Vec<&str> =
        plan.steps.iter().filter(|s| s.kind == StepKind::Train).map(|s| s.label.as_str()).collect();
    assert_eq!(trained, ["train/gen/original/lstm"]);

    // The attributed examples are the corpus's own test sentences, sampled
    // with the attribution seed, without ground truth.
    let dir = |label: &str| {
        let step = plan.steps.iter().find(|s| s.label == label).unwrap_or_else(|| panic!("no step {label}"));
        cache.step_dir(step.kind, &step.key)
    };
    let test: Vec<grid_core::data::Example> = read_jsonl(&dir("corpus/gen").join("test.jsonl")).unwrap();
    let explained: Vec<AttributedExample> =
        read_jsonl(&dir("attribute/gen/natural/lstm/gxil").join(grid_pipeline::steps::attribute::FILE)).unwrap();
    assert_eq!(explained.len(), 40);
    let indices: Vec<usize> = explained.iter().map(|e| e.index).collect();
    assert_eq!(indices, grid_pipeline::steps::attribute::sample_indices(test.len(), 40, grid.attribution.seed));
    for e in &explained {
        assert!(e.ground_truth.is_empty() && e.distractors.is_empty(), "{e:?}");
        assert_eq!(e.label, test[e.index].label);
        assert!(e.tokens.iter().all(|t| !t.starts_with('#') && t != "contoken"), "{:?}", e.tokens);
    }

    // Every ground-truth-free metric has its cell, in the `natural` column.
    let csv = std::fs::read_to_string(t.reports().join("tiny/results_long.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("no column {name}"));
    let rows: Vec<Vec<&str>> = csv.lines().skip(1).map(|l| l.split(',').collect()).collect();
    assert!(rows.iter().all(|r| r[col("shortcut")] == "natural"), "{csv}");
    for metric in ["ns", "nc", "soft-ns", "soft-nc", "diag-ns", "diag-nc", "diag-soft-ns", "diag-soft-nc"] {
        let cells: Vec<&Vec<&str>> = rows.iter().filter(|r| r[col("metric")] == metric).collect();
        // diagnosticity compares a method with random, so random has none of it.
        let expected = if metric.starts_with("diag") { 2 } else { 3 };
        assert_eq!(cells.len(), expected, "{metric}: {csv}");
        assert!(cells.iter().all(|r| r[col("value")].parse::<f64>().is_ok_and(f64::is_finite)), "{metric}: {csv}");
    }
    let names: Vec<String> =
        crate::util::report_files(&t.reports().join("tiny")).into_iter().map(|(name, _)| name).collect();
    assert!(names.iter().any(|n| n.starts_with("agreement_lstm") && n.contains("natural")), "{names:?}");

    // In place of verification, the model's own accuracy and macro-F1 on the
    // whole test set (Zhao & Aletras Table 1).
    let evaluated: Vec<&str> =
        plan.steps.iter().filter(|s| s.kind == StepKind::Evaluate).map(|s| s.label.as_str()).collect();
    assert_eq!(evaluated, ["evaluate/gen/natural/lstm"]);
    let evaluation: grid_pipeline::steps::evaluate::Evaluation = serde_json::from_slice(
        &std::fs::read(dir("evaluate/gen/natural/lstm").join(grid_pipeline::steps::evaluate::FILE)).unwrap(),
    )
    .unwrap();
    assert_eq!(evaluation.examples, test.len());
    assert!((0.5..=1.0).contains(&evaluation.accuracy), "{evaluation:?}: the tiny model learnt something");
    assert!((0.0..=1.0).contains(&evaluation.macro_f1), "{evaluation:?}");
    let table1 = std::fs::read_to_string(t.reports().join("tiny/zhao_table1.md")).unwrap();
    let accuracy = grid_report::tables::format_fixed(evaluation.accuracy * 100.0, 1);
    assert!(table1.contains(&format!(" {accuracy} |")), "{table1}");
    // Nothing was planted, so nothing was verified: no empty verification table.
    assert!(!names.iter().any(|n| n.starts_with("verification")), "{names:?}");
    let html = std::fs::read_to_string(t.reports().join("tiny/report.html")).unwrap();
    assert!(!html.contains("Verification of the shortcut models") && html.contains("1 natural models"), "natural page");

    // A second run computes nothing.
    let again = t.run();
    assert!(again.succeeded());
    assert_eq!(again.executed().count(), 0, "a natural grid is cached like any other");
}

#[test]
fn a_subset_samples_only_correctly_or_only_wrongly_classified_examples() {
    for (subset, correct) in [("correct", true), ("misclassified", false)] {
        let t = GridTest::new(&natural().replace("[attribution]", &format!("[attribution]\nsubset = \"{subset}\"")));
        let outcome = t.run();
        assert!(outcome.succeeded(), "{subset}: {:?}", outcome.failures().collect::<Vec<_>>());
        let grid = Grid::load(&t.grid_file()).unwrap();
        let cache = Cache::open(t.cache()).unwrap();
        let plan = dag::plan(&grid, &cache, &PlanOptions::default()).unwrap();
        let step = plan.steps.iter().find(|s| s.label == "attribute/gen/natural/lstm/gxil").unwrap();
        assert_eq!(step.params["subset"], subset, "a subset is in the attribute key");
        let explained: Vec<AttributedExample> =
            read_jsonl(&cache.step_dir(step.kind, &step.key).join(grid_pipeline::steps::attribute::FILE)).unwrap();
        assert!(!explained.is_empty(), "{subset}: the tiny model gets some examples right and some wrong");
        for e in &explained {
            assert_eq!(e.predicted == e.label, correct, "{subset}: example {} predicted {}", e.index, e.predicted);
        }
    }
}

/// `fine_tune = false`: a user's fine-tuned classifier (here DistilBERT's
/// fixture, written by transformers with its two-label head) is explained as
/// it is; no training step runs, and the grid still evaluates and attributes.
#[test]
fn a_fine_tuned_classifier_is_taken_as_it_is() {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/distilbert_transformers");
    let grid_text = |fine_tune: &str| {
        format!(
            r#"
name = "tiny"
metrics = ["ns", "diagnosticity"]

[[datasets]]
name = "gen"
generated = {{ train = 200, validation = 60, test = 60, seed = 3 }}
max_length = 40

[[models]]
name = "user"
architecture = "bert"
checkpoint = "checkpoint"
{fine_tune}

[models.training]
max_steps = 20
eval_every = 20

[attribution]
methods = ["gradl-l2", "random"]
sample = 20
"#
        )
    };
    let t = GridTest::new(&grid_text("fine_tune = false"));
    let dir = t.path().join("checkpoint");
    std::fs::create_dir_all(&dir).unwrap();
    for file in ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"] {
        std::fs::copy(fixture.join(file), dir.join(file)).unwrap();
    }
    let outcome = t.run();
    assert!(outcome.succeeded(), "{:?}", outcome.failures().collect::<Vec<_>>());
    let training = |t: &GridTest| -> serde_json::Value {
        let grid = Grid::load(&t.grid_file()).unwrap();
        let cache = Cache::open(t.cache()).unwrap();
        let plan = dag::plan(&grid, &cache, &PlanOptions::default()).unwrap();
        let train = plan.steps.iter().find(|s| s.kind == StepKind::Train).unwrap();
        serde_json::from_slice(&std::fs::read(cache.step_dir(train.kind, &train.key).join("training.json")).unwrap())
            .unwrap()
    };
    let taken = training(&t);
    assert_eq!(taken["summary"]["steps"], 0, "{taken}");
    assert_eq!(taken["pretrained"]["head_from_checkpoint"], true, "{taken}");
    assert!(t.reports().join("tiny/zhao_table1.md").is_file());

    // Fine-tuning the same checkpoint is another model, trained.
    t.write_grid(&grid_text(""));
    let outcome = t.run();
    assert!(outcome.succeeded(), "{:?}", outcome.failures().collect::<Vec<_>>());
    assert_eq!(outcome.executed_of(StepKind::Train), 1);
    assert_eq!(training(&t)["summary"]["steps"], 20);
}

/// The README's "bring your own model" path as a user meets it:
/// `experiments/own_model.toml` as committed, under a `--data-root` holding a
/// fine-tuned checkpoint (here ELECTRA's fixture, three labels) and CSV
/// files with string labels. Nothing trains; the model is evaluated,
/// explained by every listed method and scored.
#[test]
fn the_own_model_example_runs_on_a_users_checkpoint_and_csv() {
    own_model_example_on("electra_transformers", &[], 5);
}

/// The same with a ModernBERT and a DeBERTa-v3 classifier, which have
/// encoders of their own; DeepLift, which neither implements, left out.
#[test]
fn the_own_model_example_runs_on_modernbert_and_deberta_classifiers() {
    let methods = "attribution.methods=[\"gxil\", \"igl-zero-50\", \"attn-last\", \"random\"]";
    for fixture in ["modernbert_transformers", "deberta_transformers"] {
        own_model_example_on(fixture, &["--set", methods], 4);
    }
}

/// `experiments/own_model.toml` on checkpoint `fixture` (three labels) with
/// `extra` arguments: nothing trains, and `attributions` methods run.
fn own_model_example_on(fixture: &str, extra: &[&str], attributions: usize) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let data = tempfile::tempdir().unwrap();
    let model = data.path().join("my_model");
    std::fs::create_dir_all(&model).unwrap();
    for file in ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"] {
        std::fs::copy(root.join("tests/fixtures").join(fixture).join(file), model.join(file)).unwrap();
    }
    let words =
        [("negative", "an awful , boring plot"), ("neutral", "the film was a film"), ("positive", "I loved it")];
    std::fs::create_dir_all(data.path().join("my_data")).unwrap();
    for (split, rows) in [("train", 30), ("validation", 12), ("test", 24)] {
        let mut csv = String::from("text,label\n");
        for i in 0..rows {
            let (label, text) = words[i % 3];
            csv.push_str(&format!("\"{text} , number {i}\",{label}\n"));
        }
        std::fs::write(data.path().join(format!("my_data/{split}.csv")), csv).unwrap();
    }
    let t = GridTest::new(&std::fs::read_to_string(root.join("experiments/own_model.toml")).unwrap());
    let root_arg = data.path().to_str().unwrap();
    let grid_file = t.grid_file();
    let mut args = vec!["run", grid_file.to_str().unwrap(), "--data-root", root_arg, "-q"];
    args.extend_from_slice(extra);
    let output = t.grid(&args);
    assert!(output.status.success(), "{fixture}: {}", String::from_utf8_lossy(&output.stderr));
    let reports = t.reports().join("own_model");
    assert!(reports.join("zhao_table1.md").is_file());
    let settings: Vec<grid_pipeline::spec::overrides::Override> =
        extra.iter().skip(1).step_by(2).map(|s| s.parse().unwrap()).collect();
    let grid = Grid::load_with(&t.grid_file(), &settings).unwrap();
    let cache = Cache::open(t.cache()).unwrap();
    let options = PlanOptions { data_root: Some(data.path().to_path_buf()), ..PlanOptions::default() };
    let plan = dag::plan(&grid, &cache, &options).unwrap();
    let train = plan.steps.iter().find(|s| s.kind == StepKind::Train).unwrap();
    let training: serde_json::Value =
        serde_json::from_slice(&std::fs::read(cache.step_dir(train.kind, &train.key).join("training.json")).unwrap())
            .unwrap();
    assert_eq!(training["summary"]["steps"], 0, "{training}");
    assert_eq!(plan.steps.iter().filter(|s| s.kind == StepKind::Attribute).count(), attributions);
}
