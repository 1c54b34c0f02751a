//! The outcome of verifying a shortcut model (PROTOCOL §1, "Verification";
//! for the article manipulations PROTOCOL §2): the `verify` step writes it,
//! the reports read it, one type for both.

use serde::{Deserialize, Serialize};

/// The accuracies of the shortcut model and its original model on the
/// synthetic, flipped and original test sets, their intervals, and the verdict
/// with its reasons. Accuracies are fractions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verification {
    pub shortcut_model_on_synthetic: f64,
    pub original_model_on_synthetic: f64,
    pub shortcut_model_on_flip: f64,
    pub shortcut_model_on_original: f64,
    pub original_model_on_original: f64,
    /// Macro-F1 of each model on the original test set (Zhao & Aletras report
    /// it beside accuracy); absent in records written before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shortcut_model_macro_f1: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_model_macro_f1: Option<f64>,
    /// After a label reassignment: `max(r, 1 − r)`, the accuracy a model that
    /// ignores the manipulation can expect; with C > 2 classes, 1/C. Absent
    /// for binary inserted rules (50%).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accuracy_without_shortcut: Option<f64>,
    /// Absent (0) in a report's rows written before they carried it.
    #[serde(default)]
    pub synthetic_examples: usize,
    /// Synthetic test examples left out because truncation to the model's
    /// length cut their shortcut (a token of a pattern, or every article of a
    /// region): no model could read the label from them. The same rule as
    /// attribution's.
    #[serde(default)]
    pub synthetic_truncated: usize,
    #[serde(default)]
    pub original_examples: usize,
    /// 95% intervals: the shortcut model's synthetic accuracy (Wilson) and
    /// the original model's accuracy minus the shortcut model's on the
    /// original test set (paired). Absent in records written before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shortcut_model_on_synthetic_interval: Option<(f64, f64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_drop_interval: Option<(f64, f64)>,
    pub passed: bool,
    pub failures: Vec<String>,
    /// Thresholds inside a measurement's 95% interval ([`close_calls`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub close_calls: Vec<String>,
}
