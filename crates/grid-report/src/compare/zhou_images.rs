//! Zhou et al. 2022 §5, the image protocol: the paper plots its results
//! (Figures 3, 4 and 13) and states its findings in words, so the
//! reference file lists findings by id, each checked on our image rows
//! ([`crate::images::ImageFinding`]):
//!
//! | finding | holds when |
//! |---|---|
//! | `no_method_near_one` | no method's mean `Attr%` on manipulated images is ≥ 90% on every manipulation |
//! | `shap_best_lime_worst` | of ≥ 3 methods, a SHAP has the highest mean `Attr%` and LIME the lowest |
//! | `watermark_most_blur_least` | of ≥ 3 manipulations, the watermark has the highest mean `Attr%` and blur the lowest |
//! | `presence_over_absence` | mean `Attr%` on manipulated images is above that on untouched ones |
//! | `rises_with_accuracy_only_shap_watermark` | over training checkpoints, only SHAP on the watermark has `Attr%` rising with accuracy (mean Spearman ρ ≥ [`crate::images::RISES`]) |
//! | `shap_rises_with_visibility` | over ≥ 3 visibility levels, SHAP's `Attr%` on manipulated images rises with the level (mean Spearman ρ ≥ [`crate::images::RISES`]) and LIME's and GradCAM's level means span ≤ [`crate::images::FLAT`] on average |
//!
//! The first four read the trained models that passed verification; the
//! fifth reads the checkpoints (`checkpoints = N` in `[images.attribution]`),
//! the sixth a visibility sweep (`visibility = [1, 2, 3, 4, 5]` in `[images]`).

use super::findings_file::{FindingRow, NamedFinding};
use super::{Finding, Outcome};
use crate::images::{ImageAttrRow, ImageFinding, trained};

/// A line of the reference file.
pub type ZhouImagesRow = FindingRow<ImageFinding>;

impl NamedFinding for ImageFinding {
    const KNOWN: &'static [Self] = &ImageFinding::ALL;
    fn id(self) -> &'static str {
        ImageFinding::id(self)
    }
}

/// Every finding of the file, checked on our image rows.
pub(super) fn compare_zhou_images(published: &[ZhouImagesRow], images: &[ImageAttrRow]) -> Outcome {
    let findings = published
        .iter()
        .map(|p| {
            let checked = p.finding.check(images);
            Finding { statement: format!("§{}: {}", p.section, p.statement), ..checked }
        })
        .collect();
    let models = trained(images).len();
    let summary = vec![format!(
        "{} image rows of trained models, {} of checkpoints; the paper gives figures, so its findings are checked \
         and no number is matched",
        models,
        images.len() - models
    )];
    Outcome { cells: Vec::new(), findings, summary, unmatched_published: 0, unmatched_ours: 0 }
}
