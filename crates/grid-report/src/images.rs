//! Zhou et al. 2022's image protocol in the report (section 5, issue 47):
//! one [`ImageAttrRow`] per (model, dataset, manipulation, method, class of
//! test image), `Attr%(φ∪)` averaged over that class's images, beside `%ER`
//! (φ∪'s share of the image, what a map spread evenly scores) and the
//! model's test accuracy and verification.
//!
//! | stem | paper | rows × columns |
//! |---|---|---|
//! | `zhou_images_attr` | Figure 3 / 13, as numbers | method × manipulation, each `Attr% manipulated / untouched (%ER)`, mean over the models that passed verification |
//!
//! The figure itself is [`crate::plots`]' `zhou_images_attr_er`; [`findings`]
//! checks the paper's statements of sections 5.1 and 5.2 on the rows.

use polars::prelude::*;
use serde::{Deserialize, Serialize};

use super::DisplayTable;
use super::paper::{align, string_frame};
use super::tables::{first_appearance, format_fixed};
use crate::finding::Finding;
use grid_methods::salience::image::PixelMethod;
use grid_methods::shortcut::image::{ManipulationKind, Visibility};

/// Which test images a row averages: those the manipulation was applied to
/// (the positive class after reassignment: the artifact is present) or the
/// others (absent), as the paper's blue and orange markers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ImageClass {
    Manipulated,
    Untouched,
}

impl ImageClass {
    pub const BOTH: [ImageClass; 2] = [ImageClass::Manipulated, ImageClass::Untouched];

    pub fn name(self) -> &'static str {
        match self {
            ImageClass::Manipulated => "manipulated",
            ImageClass::Untouched => "untouched",
        }
    }
}

/// One model, method and class of test images.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageAttrRow {
    pub model: String,
    pub dataset: String,
    pub manipulation: ManipulationKind,
    pub method: PixelMethod,
    pub class: ImageClass,
    pub seed: u64,
    /// Mean `Attr%(φ∪)` over the class's test images (fractions).
    pub attr: f64,
    /// `%ER`: φ∪'s share of the image.
    pub region_share: f64,
    /// The model's accuracy on its manipulated test set.
    pub accuracy: f64,
    pub verified: bool,
    /// Test images averaged.
    pub images: usize,
    /// A training checkpoint's step (Figure 4), whose `accuracy` and
    /// `verified` are its own; `None`: the trained model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<usize>,
    /// `r` of the label reassignment (§5.4 sweeps it).
    #[serde(default = "half")]
    pub keep_probability: f64,
    /// The manipulation's visibility level, when the grid sweeps them
    /// (§5.3); `None`: planted as the grid lists it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visibility: Option<Visibility>,
}

fn half() -> f64 {
    0.5
}

/// The trained models' rows at `r = 0.5`, without the checkpoints': what
/// Figure 3 and its findings read (the paper's §5.1, where only the
/// manipulation predicts the label). Every visibility level counts, as the
/// paper's 100 runs span its five.
pub fn trained(rows: &[ImageAttrRow]) -> Vec<ImageAttrRow> {
    rows.iter().filter(|r| r.checkpoint.is_none() && r.keep_probability == 0.5).cloned().collect()
}

/// The Figure 3 numbers: per method and manipulation, the mean `Attr%` on
/// manipulated and on untouched images over the verified models, and `%ER`.
/// `None` without rows.
pub fn attr_table(rows: &[ImageAttrRow]) -> PolarsResult<Option<DisplayTable>> {
    let rows = &trained(rows);
    if rows.is_empty() {
        return Ok(None);
    }
    let methods = first_appearance(rows.iter().map(|r| r.method));
    let manipulations = first_appearance(rows.iter().map(|r| r.manipulation));
    let mut header = vec!["method".to_string()];
    header.extend(manipulations.iter().map(|m| m.to_string()));
    let mut unverified = false;
    let table: Vec<Vec<Option<String>>> = methods
        .iter()
        .map(|method| {
            let mut line = vec![Some(method.to_string())];
            for manipulation in &manipulations {
                let cell_of = |r: &ImageAttrRow| r.method == *method && r.manipulation == *manipulation;
                let on = |r: &ImageAttrRow| cell_of(r) && r.class == ImageClass::Manipulated;
                unverified |= rows.iter().any(|r| on(r) && !r.verified);
                let percent = |v: f64| format!("{}%", format_fixed(100.0 * v, 1));
                let absent = mean_attr(rows, |r| cell_of(r) && r.class == ImageClass::Untouched);
                let cell = mean_attr(rows, on).zip(absent).map(|(present, absent)| {
                    let er = verified_mean(rows, on, |r| r.region_share).unwrap_or(0.0);
                    format!("{} / {} ({})", percent(present), percent(absent), percent(er))
                });
                line.push(cell);
            }
            line
        })
        .collect();
    let mut notes = vec![
        "Attr%(φ∪) on the manipulated / untouched test images, and %ER (a map spread evenly scores it), mean over the \
         models that passed verification."
            .to_string(),
    ];
    if unverified {
        notes.push("Models that failed verification are left out; an empty cell had none that passed.".into());
    }
    Ok(Some(DisplayTable {
        stem: "zhou_images_attr".into(),
        title: "Zhou et al. Figure 3: Attr% against %ER per method and manipulation".into(),
        frame: string_frame(&header, &table)?,
        align: align(1, manipulations.len()),
        notes,
    }))
}

/// The trained image models, a line each: test accuracy on the manipulated
/// test set and the verdict.
pub fn verification_markdown(rows: &[ImageAttrRow]) -> String {
    let mut out = String::from("## Image models\n\n");
    let rows = trained(rows);
    // A model per planted manipulation: each visibility level of a sweep its own.
    let key = |r: &ImageAttrRow| (r.model.clone(), r.dataset.clone(), r.manipulation, r.visibility, r.seed);
    for model in first_appearance(rows.iter().map(key)) {
        let Some(r) = rows.iter().find(|r| key(r) == model) else { continue };
        let (name, dataset, manipulation, visibility, seed) = model;
        let level = visibility.map(|v| format!(" at visibility {v}")).unwrap_or_default();
        let verdict = if r.verified { "verified" } else { "not verified: left out of the tables" };
        out.push_str(&format!(
            "- {name} · {dataset} · {manipulation}{level} (seed {seed}): test accuracy {}, {verdict}\n",
            pct(r.accuracy)
        ));
    }
    out
}

/// The mean of `pick` over the verified rows that `keep` selects.
fn verified_mean(
    rows: &[ImageAttrRow],
    keep: impl Fn(&ImageAttrRow) -> bool,
    pick: fn(&ImageAttrRow) -> f64,
) -> Option<f64> {
    let values: Vec<f64> = rows.iter().filter(|r| r.verified && keep(r)).map(pick).collect();
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// Mean `Attr%` of the verified rows that `keep` selects.
fn mean_attr(rows: &[ImageAttrRow], keep: impl Fn(&ImageAttrRow) -> bool) -> Option<f64> {
    verified_mean(rows, keep, |r| r.attr)
}

fn pct(v: f64) -> String {
    format!("{}%", format_fixed(100.0 * v, 1))
}

/// Zhou et al.'s findings of sections 5.1 to 5.3, as `--compare` names them (the
/// reference file `zhou2022_image_findings.csv`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFinding {
    NoMethodNearOne,
    ShapBestLimeWorst,
    WatermarkMostBlurLeast,
    PresenceOverAbsence,
    RisesWithAccuracyOnlyShapWatermark,
    ShapRisesWithVisibility,
}

/// "Roughly constant" over visibility levels: the level means of `Attr%`
/// span at most this much (fractions), on average over manipulations.
pub const FLAT: f64 = 0.10;

/// "Rises consistently with test accuracy": a mean Spearman ρ between a
/// model's checkpoints' accuracies and their `Attr%` of at least this.
pub const RISES: f64 = 0.5;

impl ImageFinding {
    pub const ALL: [ImageFinding; 6] = [
        ImageFinding::NoMethodNearOne,
        ImageFinding::ShapBestLimeWorst,
        ImageFinding::WatermarkMostBlurLeast,
        ImageFinding::PresenceOverAbsence,
        ImageFinding::RisesWithAccuracyOnlyShapWatermark,
        ImageFinding::ShapRisesWithVisibility,
    ];

    pub fn id(self) -> &'static str {
        match self {
            ImageFinding::NoMethodNearOne => "no_method_near_one",
            ImageFinding::ShapBestLimeWorst => "shap_best_lime_worst",
            ImageFinding::WatermarkMostBlurLeast => "watermark_most_blur_least",
            ImageFinding::PresenceOverAbsence => "presence_over_absence",
            ImageFinding::RisesWithAccuracyOnlyShapWatermark => "rises_with_accuracy_only_shap_watermark",
            ImageFinding::ShapRisesWithVisibility => "shap_rises_with_visibility",
        }
    }

    /// The paper's statement, in short.
    pub fn statement(self) -> &'static str {
        match self {
            ImageFinding::NoMethodNearOne => {
                "None of the methods consistently scores %Attr ≈ 1 on all manipulations (5.1)"
            }
            ImageFinding::ShapBestLimeWorst => "SHAP performs the best, LIME the worst (5.1)",
            ImageFinding::WatermarkMostBlurLeast => {
                "The watermark is the most detected manipulation, blur the least (5.1)"
            }
            ImageFinding::PresenceOverAbsence => {
                "Presence of a manipulation is detected more easily than its absence (5.1)"
            }
            ImageFinding::RisesWithAccuracyOnlyShapWatermark => {
                "Attr% rises with test accuracy consistently only for SHAP on the watermark (5.2, Figure 4)"
            }
            ImageFinding::ShapRisesWithVisibility => {
                "As a manipulation becomes more visible, SHAP's Attr% rises while LIME's and GradCAM's stay roughly \
                 constant (5.3, Figure 5)"
            }
        }
    }

    /// Checked on the rows: the trained models that passed verification
    /// (on manipulated images, as the paper's headline numbers are, except
    /// where a finding compares the classes); the fifth on the checkpoints,
    /// the sixth on a visibility sweep.
    pub fn check(self, rows: &[ImageAttrRow]) -> Finding {
        let (holds, evidence) = match self {
            ImageFinding::RisesWithAccuracyOnlyShapWatermark => rises_with_accuracy(rows),
            ImageFinding::ShapRisesWithVisibility => with_visibility(&trained(rows)),
            ImageFinding::NoMethodNearOne
            | ImageFinding::ShapBestLimeWorst
            | ImageFinding::WatermarkMostBlurLeast
            | ImageFinding::PresenceOverAbsence => self.check_trained(&trained(rows)),
        };
        Finding { statement: self.statement().into(), holds, evidence }
    }

    fn check_trained(self, rows: &[ImageAttrRow]) -> (Option<bool>, String) {
        let on = |r: &ImageAttrRow| r.class == ImageClass::Manipulated;
        let methods = first_appearance(rows.iter().map(|r| r.method));
        let manipulations = first_appearance(rows.iter().map(|r| r.manipulation));
        let method_means: Vec<(PixelMethod, f64)> =
            methods.iter().filter_map(|&m| Some((m, mean_attr(rows, |r| on(r) && r.method == m)?))).collect();
        match self {
            ImageFinding::NoMethodNearOne => {
                let near_one = |method: PixelMethod| {
                    manipulations.iter().all(|&m| {
                        mean_attr(rows, |r| on(r) && r.method == method && r.manipulation == m)
                            .is_some_and(|v| v >= 0.9)
                    })
                };
                let everywhere: Vec<&str> = methods.iter().filter(|&&m| near_one(m)).map(|m| m.name()).collect();
                let any = !method_means.is_empty();
                let evidence = if everywhere.is_empty() {
                    "no method at ≥ 90% on every manipulation".into()
                } else {
                    format!("≥ 90% on every manipulation: {}", everywhere.join(", "))
                };
                (any.then_some(everywhere.is_empty()), evidence)
            }
            ImageFinding::ShapBestLimeWorst => {
                let means = method_means;
                let lime = PixelMethod::Lime;
                let both = means.iter().any(|(m, _)| m.is_shap()) && means.iter().any(|&(m, _)| m == lime);
                let holds = extremes(&means).filter(|_| both).map(|(best, worst)| best.is_shap() && worst == lime);
                (holds, format!("mean Attr% on manipulated images: {}", listed(&means)))
            }
            ImageFinding::WatermarkMostBlurLeast => {
                let means: Vec<(ManipulationKind, f64)> = manipulations
                    .iter()
                    .filter_map(|&m| Some((m, mean_attr(rows, |r| on(r) && r.manipulation == m)?)))
                    .collect();
                let (most, least) = (ManipulationKind::Watermark, ManipulationKind::Blur);
                // Without both, the grid cannot tell.
                let both = [most, least].iter().all(|m| means.iter().any(|(n, _)| n == m));
                let holds = extremes(&means).filter(|_| both).map(|(best, worst)| best == most && worst == least);
                (holds, format!("mean Attr% over methods: {}", listed(&means)))
            }
            ImageFinding::PresenceOverAbsence => {
                let (present, absent) = (mean_attr(rows, on), mean_attr(rows, |r| r.class == ImageClass::Untouched));
                let evidence = match present.zip(absent) {
                    Some((p, a)) => {
                        format!("mean Attr% {} on manipulated images, {} on untouched ones", pct(p), pct(a))
                    }
                    None => "no verified model with both classes".into(),
                };
                (present.zip(absent).map(|(p, a)| p > a), evidence)
            }
            ImageFinding::RisesWithAccuracyOnlyShapWatermark | ImageFinding::ShapRisesWithVisibility => {
                unreachable!("checked on the checkpoints or the visibility sweep")
            }
        }
    }
}

/// `name Attr%` of each, joined.
fn listed<T: std::fmt::Display>(means: &[(T, f64)]) -> String {
    means.iter().map(|(m, v)| format!("{m} {}", pct(*v))).collect::<Vec<_>>().join(", ")
}

/// The highest and the lowest mean's names, when there are more than two.
fn extremes<T: Copy>(means: &[(T, f64)]) -> Option<(T, T)> {
    let best = means.iter().max_by(|a, b| a.1.total_cmp(&b.1)).map(|&(m, _)| m);
    let worst = means.iter().min_by(|a, b| a.1.total_cmp(&b.1)).map(|&(m, _)| m);
    best.zip(worst).filter(|_| means.len() > 2)
}

/// Every finding, checked on `rows`.
pub fn findings(rows: &[ImageAttrRow]) -> Vec<Finding> {
    ImageFinding::ALL.iter().map(|f| f.check(rows)).collect()
}

/// Per (method, manipulation), the mean over models of Spearman's ρ between
/// their checkpoints' test accuracies and `Attr%` on manipulated images.
pub fn accuracy_correlations(rows: &[ImageAttrRow]) -> Vec<(PixelMethod, ManipulationKind, f64)> {
    let points: Vec<&ImageAttrRow> = rows
        .iter()
        .filter(|r| r.checkpoint.is_some() && r.keep_probability == 0.5 && r.class == ImageClass::Manipulated)
        .collect();
    let mut out = Vec::new();
    for method in first_appearance(points.iter().map(|r| r.method)) {
        for manipulation in first_appearance(points.iter().map(|r| r.manipulation)) {
            let series = first_appearance(points.iter().map(|r| (r.model.clone(), r.dataset.clone(), r.seed)));
            let rhos: Vec<f64> = series
                .iter()
                .filter_map(|(model, dataset, seed)| {
                    let of: Vec<&&ImageAttrRow> = points
                        .iter()
                        .filter(|r| {
                            r.method == method
                                && r.manipulation == manipulation
                                && &r.model == model
                                && &r.dataset == dataset
                                && r.seed == *seed
                        })
                        .collect();
                    let accuracy: Vec<f32> = of.iter().map(|r| r.accuracy as f32).collect();
                    let attr: Vec<f32> = of.iter().map(|r| r.attr as f32).collect();
                    grid_methods::metrics::agreement::spearman(&accuracy, &attr, |_| true)
                })
                .collect();
            if !rhos.is_empty() {
                out.push((method, manipulation, rhos.iter().sum::<f64>() / rhos.len() as f64));
            }
        }
    }
    out
}

/// Per (method, manipulation) of a visibility sweep: Spearman ρ between the
/// level and the mean `Attr%` on manipulated images of its verified models
/// (0 where the means do not move), and the span of those means (max −
/// min). Pairs with fewer than three levels are left out: two points make
/// no trend.
pub fn visibility_trends(rows: &[ImageAttrRow]) -> Vec<(PixelMethod, ManipulationKind, f64, f64)> {
    let swept: Vec<&ImageAttrRow> =
        rows.iter().filter(|r| r.visibility.is_some() && r.class == ImageClass::Manipulated).collect();
    let mut out = Vec::new();
    for method in first_appearance(swept.iter().map(|r| r.method)) {
        for manipulation in first_appearance(swept.iter().map(|r| r.manipulation)) {
            let of = |r: &ImageAttrRow| r.method == method && r.manipulation == manipulation;
            let mut levels: Vec<Visibility> = swept.iter().filter(|r| of(r)).filter_map(|r| r.visibility).collect();
            levels.sort();
            levels.dedup();
            let means: Vec<(f32, f32)> = levels
                .iter()
                .filter_map(|&v| {
                    mean_attr(rows, |r| of(r) && r.class == ImageClass::Manipulated && r.visibility == Some(v))
                        .map(|m| (f32::from(v.get()), m as f32))
                })
                .collect();
            if means.len() < 3 {
                continue;
            }
            let (x, y): (Vec<f32>, Vec<f32>) = means.iter().copied().unzip();
            // A method whose means do not move has no rank correlation: 0.
            let rho = grid_methods::metrics::agreement::spearman(&x, &y, |_| true).unwrap_or(0.0);
            let span = y.iter().copied().fold(f32::MIN, f32::max) - y.iter().copied().fold(f32::MAX, f32::min);
            out.push((method, manipulation, rho, f64::from(span)));
        }
    }
    out
}

/// The sixth finding: SHAP's `Attr%` rises with the level (mean ρ ≥
/// [`RISES`]) and LIME's and GradCAM's spans stay within [`FLAT`] on
/// average. Gradient's divergence between the classes is not checked.
fn with_visibility(rows: &[ImageAttrRow]) -> (Option<bool>, String) {
    let trends = visibility_trends(rows);
    if trends.is_empty() {
        return (
            None,
            "needs a visibility sweep of three levels or more: `visibility = [1, 2, 3, 4, 5]` in `[images]`".into(),
        );
    }
    let mean = |keep: &dyn Fn(PixelMethod) -> bool, pick: fn(&(PixelMethod, ManipulationKind, f64, f64)) -> f64| {
        let values: Vec<f64> = trends.iter().filter(|t| keep(t.0)).map(pick).collect();
        (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
    };
    let flat_method = |m: PixelMethod| matches!(m, PixelMethod::Lime | PixelMethod::GradCam);
    let shap_rho = mean(&|m| m.is_shap(), |t| t.2);
    let flat_span = mean(&flat_method, |t| t.3);
    let holds = shap_rho.zip(flat_span).map(|(rho, span)| rho >= RISES && span <= FLAT);
    let listed: Vec<String> = trends
        .iter()
        .map(|(m, manipulation, rho, span)| format!("{m}·{manipulation} ρ {rho:.2}, span {}", pct(*span)))
        .collect();
    (
        holds,
        format!(
            "Spearman ρ(level, Attr%) on manipulated images, rising at ≥ {RISES}, flat within {}: {}",
            pct(FLAT),
            listed.join("; ")
        ),
    )
}

/// The fifth finding: the (method, manipulation) pairs whose `Attr%` rises
/// with accuracy ([`RISES`]) are SHAP's on the watermark, and only those.
fn rises_with_accuracy(rows: &[ImageAttrRow]) -> (Option<bool>, String) {
    let rhos = accuracy_correlations(rows);
    if rhos.is_empty() {
        return (None, "needs Attr% at training checkpoints: `checkpoints = N` in `[images.attribution]`".into());
    }
    let rising: Vec<&(PixelMethod, ManipulationKind, f64)> = rhos.iter().filter(|(.., rho)| *rho >= RISES).collect();
    let shap_watermark =
        |m: PixelMethod, manipulation: ManipulationKind| m.is_shap() && manipulation == ManipulationKind::Watermark;
    let tested = rhos.iter().any(|&(m, manipulation, _)| shap_watermark(m, manipulation));
    let holds = tested
        .then(|| !rising.is_empty() && rising.iter().all(|&&(m, manipulation, _)| shap_watermark(m, manipulation)));
    let listed: Vec<String> =
        rhos.iter().map(|(m, manipulation, rho)| format!("{m}·{manipulation} {rho:.2}")).collect();
    (holds, format!("Spearman ρ(accuracy, Attr%) over checkpoints, rising at ≥ {RISES}: {}", listed.join(", ")))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn row(method: &str, manipulation: &str, class: ImageClass, attr: f64, verified: bool) -> ImageAttrRow {
        ImageAttrRow {
            model: "resnet".into(),
            dataset: "samples".into(),
            manipulation: grid_methods::shortcut::image::ImageShortcut::default_of(manipulation).unwrap().kind(),
            method: *PixelMethod::ALL.iter().find(|m| m.name() == method).unwrap(),
            class,
            seed: 1,
            attr,
            region_share: 0.3,
            accuracy: if verified { 0.99 } else { 0.6 },
            verified,
            images: 20,
            checkpoint: None,
            keep_probability: 0.5,
            visibility: None,
        }
    }

    #[test]
    fn the_table_means_the_verified_models_by_method_and_manipulation() {
        use ImageClass::{Manipulated, Untouched};
        let mut rows = vec![
            row("gradient", "watermark", Manipulated, 0.5, true),
            row("gradient", "watermark", Untouched, 0.3, true),
            row("kernel-shap", "watermark", Manipulated, 0.8, true),
            row("kernel-shap", "watermark", Untouched, 0.4, true),
            row("gradient", "blur", Manipulated, 0.2, false),
            row("gradient", "blur", Untouched, 0.2, false),
        ];
        let mut second = row("gradient", "watermark", Manipulated, 0.7, true);
        second.seed = 2;
        rows.push(second);
        let mut second = row("gradient", "watermark", Untouched, 0.5, true);
        second.seed = 2;
        rows.push(second);
        let table = attr_table(&rows).unwrap().unwrap();
        let cells = crate::tables::text_columns(&table.frame, |s| s.to_string()).unwrap();
        assert_eq!(cells[0], ["gradient", "kernel-shap"]);
        assert_eq!(cells[1], ["60.0% / 40.0% (30.0%)", "80.0% / 40.0% (30.0%)"]);
        assert_eq!(cells[2], ["", ""], "blur's only model failed verification");
        assert_eq!(table.notes.len(), 2);
        assert!(attr_table(&[]).unwrap().is_none());
    }

    #[test]
    fn the_papers_findings_on_rows_that_agree_and_on_rows_that_do_not() {
        use ImageClass::{Manipulated, Untouched};
        let mut rows = Vec::new();
        for (method, base) in [("gradient", 0.5), ("lime", 0.4), ("gradient-shap", 0.7)] {
            for (manipulation, shift) in [("watermark", 0.2), ("hue", 0.0), ("blur", -0.2)] {
                rows.push(row(method, manipulation, Manipulated, base + shift, true));
                rows.push(row(method, manipulation, Untouched, base + shift - 0.1, true));
            }
        }
        let found = findings(&rows);
        let holds: Vec<Option<bool>> = found.iter().map(|f| f.holds).collect();
        assert_eq!(holds, [Some(true), Some(true), Some(true), Some(true), None, None], "{found:?}");
        assert!(found[4].evidence.contains("checkpoints = N"), "{}", found[4].evidence);
        assert!(found[1].evidence.contains("gradient-shap 70.0%"), "{}", found[1].evidence);
        // LIME best on everything, at 95%: three findings fail.
        for r in rows.iter_mut().filter(|r| r.method == PixelMethod::Lime) {
            r.attr = 0.95;
        }
        let holds: Vec<Option<bool>> = findings(&rows).iter().map(|f| f.holds).collect();
        assert_eq!(holds[..2], [Some(false), Some(false)]);
        // Unverified models do not count; without rows nothing is decided.
        rows.iter_mut().for_each(|r| r.verified = false);
        assert!(findings(&rows).iter().all(|f| f.holds.is_none()));
    }

    /// Figure 4's finding on checkpoints: SHAP's `Attr%` on the watermark
    /// rises with accuracy, the others' do not, then LIME's rises too.
    #[test]
    fn the_checkpoint_finding_reads_the_rise_of_attr_with_accuracy() {
        let mut rows = Vec::new();
        for (i, accuracy) in [0.5, 0.7, 0.9, 0.99].into_iter().enumerate() {
            for (method, attr) in [("gradient-shap", 0.3 + 0.1 * i as f64), ("lime", 0.5 - 0.05 * i as f64)] {
                let mut r = row(method, "watermark", ImageClass::Manipulated, attr, accuracy > 0.95);
                (r.accuracy, r.checkpoint) = (accuracy, Some(100 * (i + 1)));
                rows.push(r);
            }
        }
        let rhos = accuracy_correlations(&rows);
        assert_eq!(rhos.len(), 2);
        assert!((rhos[0].2 - 1.0).abs() < 1e-9 && (rhos[1].2 + 1.0).abs() < 1e-9, "{rhos:?}");
        let finding = ImageFinding::RisesWithAccuracyOnlyShapWatermark.check(&rows);
        assert_eq!(finding.holds, Some(true), "{finding:?}");
        assert!(finding.evidence.contains("gradient-shap·watermark 1.00"), "{}", finding.evidence);
        for r in rows.iter_mut().filter(|r| r.method == PixelMethod::Lime) {
            r.attr = r.accuracy;
        }
        assert_eq!(ImageFinding::RisesWithAccuracyOnlyShapWatermark.check(&rows).holds, Some(false));
        // Checkpoint rows stay out of Figure 3's table and the other findings.
        assert!(attr_table(&rows).unwrap().is_none());
    }

    /// Figure 5's finding on a visibility sweep: SHAP rises with the level,
    /// LIME and GradCAM stay flat; then LIME climbs too.
    #[test]
    fn the_visibility_finding_reads_the_trend_over_levels() {
        let mut rows = Vec::new();
        for level in [1u8, 3, 5] {
            for (method, attr) in [
                ("kernel-shap", 0.4 + 0.1 * f64::from(level)),
                ("lime", 0.5 + 0.01 * f64::from(level)),
                ("gradcam", 0.3),
            ] {
                let mut r = row(method, "noise", ImageClass::Manipulated, attr, true);
                r.visibility = Some(Visibility::try_from(level).unwrap());
                rows.push(r);
            }
        }
        let trends = visibility_trends(&rows);
        assert_eq!(trends.len(), 3, "{trends:?}");
        assert!((trends[0].2 - 1.0).abs() < 1e-9 && (trends[0].3 - 0.4).abs() < 1e-6, "{trends:?}");
        let finding = ImageFinding::ShapRisesWithVisibility.check(&rows);
        assert_eq!(finding.holds, Some(true), "{finding:?}");
        assert!(finding.evidence.contains("kernel-shap·noise ρ 1.00, span 40.0%"), "{}", finding.evidence);
        for r in rows.iter_mut().filter(|r| r.method == PixelMethod::Lime) {
            r.attr = 0.2 * f64::from(r.visibility.unwrap().get());
        }
        assert_eq!(ImageFinding::ShapRisesWithVisibility.check(&rows).holds, Some(false), "LIME spans 80%");
        // Two levels make no trend; without a sweep the finding is undecided.
        rows.retain(|r| r.visibility != Some(Visibility::MIDDLE));
        assert_eq!(ImageFinding::ShapRisesWithVisibility.check(&rows).holds, None);
        // The sweep's models all count in Figure 3's table, and each is listed.
        assert!(attr_table(&rows).unwrap().is_some());
        let listed = verification_markdown(&rows);
        assert!(listed.contains("· noise at visibility 1 (seed 1)") && listed.contains("at visibility 5"), "{listed}");
        assert_eq!(listed.lines().filter(|l| l.starts_with("- ")).count(), 2, "{listed}");
    }
}
