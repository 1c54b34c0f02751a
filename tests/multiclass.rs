//! More than two classes: a four-class generated corpus through every stage,
//! and the data problems that doom a grid stopping it before a model trains.

use grid_cache::Cache;
use grid_pipeline::dag::{self, PlanOptions, StepStatus};
use grid_pipeline::io::read_jsonl;
use grid_pipeline::spec::Grid;
use grid_pipeline::step_kind::StepKind;
use grid_pipeline::steps::attribute::AttributedExample;
use grid_pipeline::steps::verify::Verification;

use crate::util::{GridTest, TINY};

fn four_classes() -> String {
    TINY.replace("seed = 3 }", "seed = 3, classes = 4 }")
        .replace("train = 600,", "train = 1200,")
        .replace("max_steps = 120", "max_steps = 300")
}

#[test]
fn four_class_grid_runs_end_to_end() {
    let t = GridTest::new(&four_classes());
    let outcome = t.run();
    assert!(outcome.succeeded(), "{:?}", outcome.failures().collect::<Vec<_>>());

    let grid = Grid::load(&t.grid_file()).unwrap();
    let cache = Cache::open(t.cache()).unwrap();
    let plan = dag::plan(&grid, &cache, &PlanOptions::default()).unwrap();
    let dir = |label: &str| {
        let step = plan.steps.iter().find(|s| s.label == label).unwrap_or_else(|| panic!("no step {label}"));
        cache.step_dir(step.kind, &step.key)
    };
    let indicators = ["#0", "#1", "#2", "#3"];
    for kind in ["st", "tic", "op"] {
        // The synthetic test set is balanced over the four classes, and the
        // inserted tokens are what the rule says.
        let test = grid_pipeline::steps::synth::load_test(
            &dir(&format!("synth/gen/{kind}")),
            grid_pipeline::spec::TestSet::Synthetic,
        )
        .unwrap();
        let mut per_class = [0usize; 4];
        for e in &test {
            per_class[e.label as usize] += 1;
            let words: Vec<&str> = e.text.split(' ').collect();
            let g: Vec<&str> = e.shortcut_positions.iter().map(|&p| words[p]).collect();
            let first_indicator = g.iter().find(|w| indicators.contains(w)).expect("an indicator");
            assert_eq!(*first_indicator, indicators[e.label as usize], "{kind}: {g:?} for label {}", e.label);
            match kind {
                "tic" => assert!(g.contains(&"contoken"), "{g:?}"),
                "op" => assert!(g[0] != g[1] && indicators.contains(&g[1]), "{g:?}"),
                _ => assert_eq!(g.len(), 1),
            }
        }
        assert_eq!(per_class, [30; 4], "{kind}: 120 test examples, 30 per class");
        let flip = grid_pipeline::steps::synth::load_test(
            &dir(&format!("synth/gen/{kind}")),
            grid_pipeline::spec::TestSet::Flip,
        )
        .unwrap();
        assert!(flip.iter().all(|e| e.label != e.original_label), "{kind}: a flip keeps its class");

        // Verification judges against chance = 1/4, and says so.
        let v: Verification = serde_json::from_slice(
            &std::fs::read(dir(&format!("verify/gen/{kind}/lstm")).join("verification.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(v.accuracy_without_shortcut, Some(0.25), "{kind}");
        assert!((v.original_model_on_synthetic - 0.25).abs() < 0.15, "{kind}: {v:?}");
        for failure in &v.failures {
            assert!(!failure.contains("chance is 50%"), "{failure}");
        }

        // Attributions mark the inserted tokens as ground truth.
        for method in ["gradl-l1", "gxil", "random"] {
            let rows: Vec<AttributedExample> =
                read_jsonl(&dir(&format!("attribute/gen/{kind}/lstm/{method}")).join("attributions.jsonl")).unwrap();
            assert_eq!(rows.len(), 40);
            for row in &rows {
                for &g in &row.ground_truth {
                    assert!(
                        indicators.contains(&row.tokens[g].as_str()) || row.tokens[g] == "contoken",
                        "{:?}",
                        row.tokens
                    );
                }
            }
        }
    }
    let verification = std::fs::read_to_string(t.reports().join("tiny").join("verification.csv")).unwrap();
    assert_eq!(verification.lines().count(), 4, "{verification}");
}

/// Labels outside the declared classes stop the run at the corpus step,
/// naming the file and row; nothing trains.
#[test]
fn labels_outside_the_classes_stop_the_corpus_step() {
    let rows = |labels: &[u32]| -> String {
        let mut csv = String::from("text,label\n");
        for (i, l) in labels.iter().enumerate() {
            csv.push_str(&format!("a review number {i} of the film,{l}\n"));
        }
        csv
    };
    let grid = TINY.replace(
        "generated = { train = 600, validation = 150, test = 120, seed = 3 }",
        "train = \"train.csv\"\ntest = \"test.csv\"",
    );
    let t = GridTest::new(&grid);
    std::fs::write(t.path().join("train.csv"), rows(&[0, 1, 0, 1, 0, 1, 1, 0, 1, 0])).unwrap();
    std::fs::write(t.path().join("test.csv"), rows(&[0, 1, 3, 1])).unwrap();
    let outcome = t.run();
    let failed: Vec<_> = outcome.failures().collect();
    let corpus = failed.iter().find(|r| r.label == "corpus/gen").expect("the corpus step fails");
    let StepStatus::Failed { error } = &corpus.status else { panic!("{:?}", corpus.status) };
    assert!(error.contains("test.csv: row 3: label 3 is outside dataset `gen`'s 2 classes"), "{error}");
    assert!(error.contains("`classes = N`"), "{error}");
    assert_eq!(outcome.executed_of(StepKind::Train), 0);

    // Declared, the same files are a four-class dataset.
    t.write_grid(&grid.replace("test = \"test.csv\"", "test = \"test.csv\"\nclasses = 4"));
    let outcome = t.run();
    assert!(outcome.records.iter().any(|r| r.label == "corpus/gen" && matches!(r.status, StepStatus::Ran { .. })));
}

/// A shortcut token already in the text fails every synth step, and the
/// original model, which only they would use, never trains.
#[test]
fn a_token_in_the_data_stops_the_grid_before_training() {
    let t = GridTest::new(&TINY.replace("seed = 5\n", "seed = 5\ntokens = { zero = \"film\" }\n"));
    let outcome = t.run();
    let synth_errors: Vec<String> = outcome
        .records
        .iter()
        .filter(|r| r.kind == StepKind::Synth)
        .map(|r| match &r.status {
            StepStatus::Failed { error } => error.clone(),
            other => panic!("{}: {other:?}", r.label),
        })
        .collect();
    assert_eq!(synth_errors.len(), 3);
    assert!(synth_errors.iter().all(|e| e.contains("\"film\" already occurs")), "{synth_errors:?}");
    assert_eq!(outcome.executed_of(StepKind::Train), 0, "a model trained although no shortcut data exists");
    let original = outcome.records.iter().find(|r| r.label == "train/gen/original/lstm").unwrap();
    assert!(matches!(&original.status, StepStatus::Skipped { because } if because.contains("would use it")));
}
