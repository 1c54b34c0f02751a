//! Issue 2, point 4: the cache recomputes exactly what changed. These tests count
//! executed steps, never time.

use grid::cache::StepKind;

use crate::util::{GridTest, TINY};

#[test]
fn rerun_computes_nothing() {
    let t = GridTest::tiny_after_first_run();
    let outcome = t.run();
    assert!(outcome.succeeded());
    assert_eq!(outcome.executed().count(), 0, "{:?}", outcome.executed().map(|r| &r.label).collect::<Vec<_>>());
    assert_eq!(outcome.cached(), outcome.records.len());
    assert!(outcome.console.is_some(), "the tables are printed from the cached report");
    assert!(t.reports().join("tiny/results_long.csv").is_file());
}

#[test]
fn adding_a_method_runs_only_its_cells() {
    let t = GridTest::tiny_after_first_run();
    t.write_grid(&TINY.replace(r#""gxil", "random""#, r#""gxil", "random", "gradp-l2""#));
    let outcome = t.run();
    assert!(outcome.succeeded());
    // 3 shortcuts × 1 new method; × 2 metrics; and the report.
    assert_eq!(outcome.executed_of(StepKind::Attribute), 3);
    assert_eq!(outcome.executed_of(StepKind::Score), 6);
    assert_eq!(outcome.executed_of(StepKind::Report), 1);
    assert_eq!(outcome.executed().count(), 10, "nothing is trained, synthesised or verified again");
    assert!(outcome.executed().all(|r| r.kind != StepKind::Attribute || r.label.ends_with("/gradp-l2")));
}

#[test]
fn changing_a_dataset_option_reruns_only_its_branch() {
    // Two datasets; change the second one's corpus seed.
    let two = TINY.replace(
        "[shortcuts]",
        "[[datasets]]\nname = \"other\"\ngenerated = { train = 600, validation = 150, test = 120, seed = 4 }\nmax_length = 48\n\n[shortcuts]",
    );
    let t = GridTest::new(&two);
    assert!(t.run().succeeded());
    t.write_grid(&two.replace("seed = 4 }", "seed = 9 }"));
    let outcome = t.run();
    assert!(outcome.succeeded());
    let executed: Vec<&str> = outcome.executed().map(|r| r.label.as_str()).collect();
    assert!(executed.iter().all(|l| l.contains("/other") || l.starts_with("report/")), "{executed:?}");
    assert_eq!(outcome.executed_of(StepKind::Corpus), 1);
    assert_eq!(outcome.executed_of(StepKind::Synth), 3);
    assert_eq!(outcome.executed_of(StepKind::Train), 4, "one original model and three shortcut models");
    assert_eq!(outcome.executed_of(StepKind::Verify), 3);
    assert_eq!(outcome.executed_of(StepKind::Attribute), 9);
    assert_eq!(outcome.executed_of(StepKind::Score), 18);
    assert_eq!(outcome.executed_of(StepKind::Report), 1);
}
