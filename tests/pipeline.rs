//! The whole protocol on tiny data: what each stage leaves in the cache and the
//! reports folder.

use grid::cache::{Cache, StepKind};
use grid::dag::{self, PlanOptions};
use grid::spec::Grid;
use grid::steps::attribute::AttributedExample;
use grid::steps::io::read_jsonl;

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
