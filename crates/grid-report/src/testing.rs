//! The report tests' result cells: one fixture and the few changes its
//! users make, instead of a `cell(…)` builder per test module.

use grid_core::model::Architecture;

use crate::{CellKey, CellResult};

/// A verified cell of `model` on SST-2, seed 1, 10 examples and no
/// interval; a model named `bert…` is a BERT, any other a BiLSTM.
pub(crate) fn cell(model: &str, shortcut: &str, method: &str, metric: &str, value: f64) -> CellResult {
    let architecture = if model.starts_with("bert") { Architecture::Bert } else { Architecture::Bilstm };
    CellResult {
        key: CellKey {
            model: model.into(),
            architecture,
            dataset: "sst2".into(),
            shortcut: shortcut.parse().expect("a shortcut"),
            seed: 1,
        },
        method: method.parse().expect("a method"),
        metric: metric.parse().expect("a metric"),
        value,
        ci_low: None,
        ci_high: None,
        n_examples: 10,
        verified: true,
        values: vec![],
        by_ratio: vec![],
        region_share: None,
        rationale: None,
    }
}

/// The changes the tests make to [`cell`]'s defaults.
pub(crate) trait CellChanges {
    fn on(self, dataset: &str) -> Self;
    fn seed(self, seed: u64) -> Self;
    fn architecture(self, architecture: Architecture) -> Self;
    fn interval(self, low: f64, high: f64) -> Self;
    fn examples(self, n: usize) -> Self;
}

impl CellChanges for CellResult {
    fn on(mut self, dataset: &str) -> Self {
        self.key.dataset = dataset.into();
        self
    }

    fn seed(mut self, seed: u64) -> Self {
        self.key.seed = seed;
        self
    }

    fn architecture(mut self, architecture: Architecture) -> Self {
        self.key.architecture = architecture;
        self
    }

    fn interval(mut self, low: f64, high: f64) -> Self {
        (self.ci_low, self.ci_high) = (Some(low), Some(high));
        self
    }

    fn examples(mut self, n: usize) -> Self {
        self.n_examples = n;
        self
    }
}
