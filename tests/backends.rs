//! The LibTorch backend end to end (built with `--features libtorch`): the
//! quickstart's two architectures and methods at test size on PyTorch's CPU
//! kernels, against the same grid on Flex.

use std::collections::BTreeMap;

use grid_core::backend::{BackendKind, Compute, DeviceChoice, Precision};
use grid_pipeline::step_kind::StepKind;

use crate::shapes::QUICKSTART_SMALL;
use crate::util::{GridTest, copy_dir};

fn libtorch() -> Compute {
    Compute::with_backend(BackendKind::LibTorch, DeviceChoice::Cpu, Precision::F32)
}

/// `results_long.csv` as cell → value.
fn results(t: &GridTest) -> BTreeMap<String, f64> {
    let text = std::fs::read_to_string(t.reports().join("shapes/results_long.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let value = header.iter().position(|h| *h == "value").expect("a value column");
    lines
        .map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            (fields[..value].join(","), fields[value].parse().unwrap_or(f64::NAN))
        })
        .collect()
}

fn verification(t: &GridTest) -> String {
    std::fs::read_to_string(t.reports().join("shapes/verification.csv")).unwrap()
}

/// The cells of two runs (which must be the same cells) that differ by more
/// than `tolerance`, with both values.
fn differing(a: &BTreeMap<String, f64>, b: &BTreeMap<String, f64>, tolerance: f64) -> Vec<(String, f64, f64)> {
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    a.iter()
        .filter(|(cell, x)| !(x.is_nan() && b[*cell].is_nan()))
        .filter(|(cell, x)| !((*x - b[*cell]).abs() <= tolerance))
        .map(|(cell, x)| (cell.clone(), *x, b[cell]))
        .collect()
}

#[test]
fn a_grid_on_libtorch_reaches_flex_verdicts_and_scores() {
    let flex = GridTest::new(QUICKSTART_SMALL);
    let outcome = flex.run();
    assert!(outcome.succeeded(), "{:?}", outcome.failures().collect::<Vec<_>>());

    // Everything after training, on Flex's trained models: verification,
    // attribution, erasure and scores are the same arithmetic on the same
    // weights, so the scores agree to float rounding (the unit tests bound
    // them, <= 1e-5 relative). A table cell is a count over examples, though:
    // where two tokens' scores nearly tie, rounding decides their order. The
    // mean of the gradient (`grad*-mean`) cancels across the embedding
    // dimensions and is such a case (seen: one example of 29 moved in two of
    // its cells). So: the same verdicts, every other method's cells equal, and
    // the gradient means' cells equal or off by one example.
    let after_training = GridTest::new(QUICKSTART_SMALL);
    copy_dir(&flex.cache(), &after_training.cache());
    for kind in [StepKind::Verify, StepKind::Attribute, StepKind::Erasure, StepKind::Agreement, StepKind::Score] {
        std::fs::remove_dir_all(after_training.cache().join(kind.name())).ok();
    }
    std::fs::remove_dir_all(after_training.cache().join(StepKind::Report.name())).ok();
    let outcome = after_training.run_with(libtorch());
    assert!(outcome.succeeded(), "{:?}", outcome.failures().collect::<Vec<_>>());
    assert_eq!(verification(&flex), verification(&after_training));
    let (ours, theirs) = (results(&flex), results(&after_training));
    let one_example = 1.0 / 29.0 + 1e-9;
    let off: Vec<_> = differing(&ours, &theirs, 1e-6)
        .into_iter()
        .filter(|(cell, a, b)| !(cell.contains("-mean,") && (a - b).abs() <= one_example))
        .collect();
    assert!(off.is_empty(), "scores of the same models differ (cell, flex, libtorch): {off:#?}");

    // Trained on LibTorch too: its kernels sum in another order, so the weights
    // differ in the last bits after 60–80 steps, and a score over 30 examples
    // may move by an example or two (0.1). The verdicts stay. The gradient
    // means, which rounding orders even on one model (above), get twice that:
    // on an AVX2-only AMD EPYC, `tiny-bert … gradl-mean` moved by three
    // examples of 29 (0.103) and no other cell moved at all.
    let trained = GridTest::new(QUICKSTART_SMALL);
    let outcome = trained.run_with(libtorch());
    assert!(outcome.succeeded(), "{:?}", outcome.failures().collect::<Vec<_>>());
    let passed = |csv: &str| csv.lines().map(|l| l.contains(",true")).collect::<Vec<_>>();
    assert_eq!(passed(&verification(&flex)), passed(&verification(&trained)));
    let off: Vec<_> = differing(&results(&flex), &results(&trained), 0.1)
        .into_iter()
        .filter(|(cell, a, b)| !(cell.contains("-mean,") && (a - b).abs() <= 0.2))
        .collect();
    assert!(off.is_empty(), "scores after training on libtorch differ (cell, flex, libtorch): {off:#?}");
}

/// `--precision bf16-mixed` on the small grid, both architectures trained
/// and explained with bf16 products: the verdicts of f32 on LibTorch, and
/// scores close to f32's. bf16's rounding moves the training path, by how
/// much depends on the CPU's bf16 support (a cell is a share of 29–30
/// examples): on an AMD EPYC with AVX-512 BF16 the largest cell moved by
/// 0.034 (one example); on an AVX2-only AMD EPYC (no native bf16) the BiLSTM
/// trains to a visibly different model: largest cell 0.167 (five examples),
/// mean over the 32 cells 0.043. So: every cell within 0.25, and the mean
/// within 0.07 (two examples). The precision is in the model steps' keys.
#[test]
fn bf16_mixed_reaches_the_f32_verdicts_and_scores() {
    let f32_run = GridTest::new(QUICKSTART_SMALL);
    let outcome = f32_run.run_with(libtorch());
    assert!(outcome.succeeded(), "{:?}", outcome.failures().collect::<Vec<_>>());
    let mixed = GridTest::new(QUICKSTART_SMALL);
    let compute = Compute::with_backend(BackendKind::LibTorch, DeviceChoice::Cpu, Precision::Bf16Mixed);
    let outcome = mixed.run_with(compute);
    assert!(outcome.succeeded(), "{:?}", outcome.failures().collect::<Vec<_>>());
    let passed = |csv: &str| csv.lines().map(|l| l.contains(",true")).collect::<Vec<_>>();
    assert_eq!(passed(&verification(&f32_run)), passed(&verification(&mixed)));
    let (a, b) = (results(&f32_run), results(&mixed));
    let gaps: Vec<f64> = a.iter().filter(|(_, x)| !x.is_nan()).map(|(cell, x)| (x - b[cell]).abs()).collect();
    let worst = gaps.iter().copied().fold(0.0, f64::max);
    let mean = gaps.iter().sum::<f64>() / gaps.len().max(1) as f64;
    eprintln!("difference of a cell, bf16-mixed vs f32: largest {worst}, mean {mean} over {} cells", gaps.len());
    let off = differing(&a, &b, 0.25);
    assert!(off.is_empty(), "scores under bf16-mixed differ (cell, f32, bf16-mixed): {off:#?}");
    assert!(mean <= 0.07, "scores under bf16-mixed differ by {mean} on average (over {} cells)", gaps.len());
    // Each train step's precision, from its manifest's parameters.
    let precisions = |t: &GridTest| {
        let mut found = Vec::new();
        for prefix in std::fs::read_dir(t.cache().join(StepKind::Train.name())).unwrap() {
            for step in std::fs::read_dir(prefix.unwrap().path()).unwrap() {
                let manifest = step.unwrap().path().join("manifest.json");
                if let Ok(text) = std::fs::read_to_string(&manifest) {
                    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
                    found.push(value["params"]["precision"].as_str().map(str::to_owned));
                }
            }
        }
        found
    };
    let mixed_precisions = precisions(&mixed);
    assert!(!mixed_precisions.is_empty() && mixed_precisions.iter().all(|p| p.as_deref() == Some("bf16-mixed")));
    assert!(precisions(&f32_run).iter().all(Option::is_none), "f32 keys are as before");
}
