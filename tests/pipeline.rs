//! The whole protocol on tiny data: what each stage leaves in the cache and the
//! reports folder.

use grid_cache::Cache;
use grid_methods::shortcut::SyntheticExample;
use grid_pipeline::dag::{self, PlanOptions};
use grid_pipeline::io::read_jsonl;
use grid_pipeline::spec::Grid;
use grid_pipeline::step_kind::StepKind;
use grid_pipeline::steps::attribute::AttributedExample;
use grid_pipeline::steps::verify::Verification;

use crate::util::{GridTest, TINY};

#[test]
fn plan_shares_the_original_model_and_orders_inputs_first() {
    let t = GridTest::new(TINY);
    let grid = Grid::load(&t.grid_file()).unwrap();
    let cache = Cache::open(t.cache()).unwrap();
    let plan = dag::plan(&grid, &cache, &PlanOptions::default()).unwrap();
    let trains: Vec<&str> = plan.steps.iter().filter(|s| s.kind == StepKind::Train).map(|s| s.label.as_str()).collect();
    assert_eq!(trains, ["train/gen/original/lstm", "train/gen/st/lstm", "train/gen/tic/lstm", "train/gen/op/lstm"]);
    for (i, step) in plan.steps.iter().enumerate() {
        assert!(step.inputs.iter().all(|&j| j < i), "{} reads a later step", step.label);
    }
    // 1 corpus + 3 synth + 4 train + 3 verify + 9 attribute + 18 score + 1 report.
    assert_eq!(plan.steps.len(), 39);
}

#[test]
fn tables_and_attributions_are_written() {
    let t = GridTest::tiny_after_first_run();
    let outcome = t.run();
    let reports = t.reports().join("tiny");
    for file in [
        "results_long.csv",
        "results_long.parquet",
        "verification.csv",
        "verification.md",
        "lstm_precision.csv",
        "lstm_precision.md",
        "lstm_rank.csv",
        "lstm_rank.md",
    ] {
        assert!(reports.join(file).is_file(), "missing {file}; have {:?}", outcome.report_files);
    }
    let precision = std::fs::read_to_string(reports.join("lstm_precision.csv")).unwrap();
    let header = precision.lines().next().unwrap();
    assert!(header.contains("gen:st") && header.contains("gen:tic") && header.contains("gen:op"), "{header}");
    for method in ["gradl-l1", "gxil", "random"] {
        assert!(precision.lines().any(|l| l.starts_with(method)), "{method} row missing:\n{precision}");
    }
    let long = std::fs::read_to_string(reports.join("results_long.csv")).unwrap();
    assert_eq!(long.lines().count(), 1 + 3 * 3 * 2, "one row per shortcut × method × metric");
    // Every cell carries its bootstrap interval around the mean.
    let header: Vec<&str> = long.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    for line in long.lines().skip(1) {
        let fields: Vec<&str> = line.split(',').collect();
        let num = |name: &str| fields[col(name)].parse::<f64>().unwrap();
        let (lo, value, hi) = (num("ci_low"), num("value"), num("ci_high"));
        assert!(lo <= value + 1e-12 && value <= hi + 1e-12, "{line}");
    }

    // Ground truth in every attribution names the inserted shortcut tokens.
    let grid = Grid::load(&t.grid_file()).unwrap();
    let cache = Cache::open(t.cache()).unwrap();
    let plan = dag::plan(&grid, &cache, &PlanOptions::default()).unwrap();
    for step in plan.steps.iter().filter(|s| s.kind == StepKind::Attribute) {
        let rows: Vec<AttributedExample> =
            read_jsonl(&cache.step_dir(step.kind, &step.key).join("attributions.jsonl")).unwrap();
        assert_eq!(rows.len(), 40, "{}", step.label);
        for row in &rows {
            assert_eq!(row.scores.len(), row.tokens.len());
            let expected = if step.label.contains("/st/") { 1 } else { 2 };
            assert_eq!(row.ground_truth.len(), expected);
            for &g in &row.ground_truth {
                assert!(["#0", "#1", "contoken"].contains(&row.tokens[g].as_str()), "{:?}", row.tokens);
            }
        }
    }
}

/// Runs [`TINY`] at `max_length = 10` (sentences run to about 15 words) with
/// `dataset_keys` added and these shortcut kinds; per kind, the synthetic test
/// set and the shortcut model's verification.
fn run_truncated(dataset_keys: &str, kinds: &[&str]) -> Vec<(Vec<SyntheticExample>, Verification)> {
    let kinds_line = format!("kinds = {kinds:?}");
    let grid = TINY
        .replace("max_length = 48", &format!("max_length = 10\n{dataset_keys}"))
        .replace("kinds = [\"st\", \"tic\", \"op\"]", &kinds_line);
    let t = GridTest::new(&grid);
    let outcome = t.run();
    assert!(outcome.failures().all(|f| f.kind != StepKind::Verify), "verification ran");
    let spec = Grid::load(&t.grid_file()).unwrap();
    let cache = Cache::open(t.cache()).unwrap();
    let plan = dag::plan(&spec, &cache, &PlanOptions::default()).unwrap();
    let dir = |label: String| {
        let step = plan.steps.iter().find(|s| s.label == label).unwrap_or_else(|| panic!("no step {label}"));
        cache.step_dir(step.kind, &step.key)
    };
    kinds
        .iter()
        .map(|kind| {
            let test = grid_pipeline::steps::synth::load_test(
                &dir(format!("synth/gen/{kind}")),
                grid_pipeline::spec::TestSet::Synthetic,
            )
            .unwrap();
            let verification = dir(format!("verify/gen/{kind}/lstm")).join("verification.json");
            (test, serde_json::from_slice(&std::fs::read(verification).unwrap()).unwrap())
        })
        .collect()
}

/// Issue 14, item 3: texts longer than the model's length. An example whose
/// shortcut truncation cut cannot show whether the model reads it, so
/// verification leaves it out as attribution does, and says how many. (Tokens
/// go past the model's length only when `insert_within` says so: by default
/// they are inserted within `max_length` words, as the next test checks.)
#[test]
fn verification_leaves_out_examples_whose_shortcut_was_cut() {
    let [(test, v)] = <[_; 1]>::try_from(run_truncated("insert_within = 1000", &["st"])).unwrap();
    // A token placed past the 10th word is cut, one placed before it is not.
    let cut = test.iter().filter(|e| e.shortcut_positions.iter().any(|&p| p >= 10)).count();
    assert!(cut > 10 && cut < test.len(), "{cut} of {}", test.len());
    assert_eq!((v.synthetic_truncated, v.synthetic_examples), (cut, test.len() - cut), "{v:?}");
}

/// Issue 14, item 3: by default shortcut tokens are inserted within the
/// dataset's `max_length` words, so truncation cuts none of them for the
/// BiLSTM (one token a word): every synthetic example counts in verification.
#[test]
fn by_default_no_shortcut_token_is_cut_by_truncation() {
    for (test, v) in run_truncated("", &["st", "op"]) {
        assert!(test.iter().all(|e| e.shortcut_positions.iter().all(|&p| p < 10)));
        assert_eq!((v.synthetic_truncated, v.synthetic_examples), (0, test.len()), "{v:?}");
        // Every verification gives its 95% intervals, around its estimates.
        let (low, high) = v.shortcut_model_on_synthetic_interval.expect("synthetic interval");
        assert!(low <= v.shortcut_model_on_synthetic && v.shortcut_model_on_synthetic <= high, "{v:?}");
        let (low, high) = v.original_drop_interval.expect("drop interval");
        let drop = v.original_model_on_original - v.shortcut_model_on_original;
        assert!(low <= drop + 1e-12 && drop <= high + 1e-12, "{v:?}");
    }
}

/// `best_by = "balanced"`: shortcut models log the accuracy of the validation
/// examples that carry the pattern and of the others, and keep the step with
/// the best mean of the two; the original model, which has no such examples,
/// keeps its key and is not trained again.
#[test]
fn balanced_selection_weighs_the_marked_validation_examples() {
    let t = GridTest::tiny_after_first_run();
    let grid = Grid::load(&t.grid_file()).unwrap();
    let cache = Cache::open(t.cache()).unwrap();
    let before = dag::plan(&grid, &cache, &PlanOptions::default()).unwrap();
    t.write_grid(&TINY.replace("patience = 80", "patience = 80\nbest_by = \"balanced\""));
    let outcome = t.run();
    assert!(outcome.succeeded(), "{:?}", outcome.failures().collect::<Vec<_>>());
    let grid = Grid::load(&t.grid_file()).unwrap();
    let plan = dag::plan(&grid, &cache, &PlanOptions::default()).unwrap();
    let key_before = |label: &str| before.steps.iter().find(|s| s.label == label).map(|s| s.key.clone());
    for step in plan.steps.iter().filter(|s| s.kind == StepKind::Train) {
        let record: serde_json::Value =
            serde_json::from_slice(&std::fs::read(cache.step_dir(step.kind, &step.key).join("training.json")).unwrap())
                .unwrap();
        let log = record["summary"]["log"].as_array().unwrap();
        if step.label.contains("/original/") {
            assert_eq!(key_before(&step.label), Some(step.key.clone()), "{}", step.label);
            assert!(log.iter().all(|e| e.get("marked_accuracy").is_none()), "{record}");
            continue;
        }
        assert_ne!(key_before(&step.label), Some(step.key.clone()), "{}", step.label);
        let score = |e: &serde_json::Value| {
            (e["marked_accuracy"].as_f64().unwrap() + e["unmarked_accuracy"].as_f64().unwrap()) / 2.0
        };
        let best = log.iter().map(score).fold(f64::NEG_INFINITY, f64::max);
        let kept = log.iter().find(|e| e["step"] == record["summary"]["best_step"]).unwrap();
        assert_eq!(score(kept), best, "{}: {record}", step.label);
    }
}
