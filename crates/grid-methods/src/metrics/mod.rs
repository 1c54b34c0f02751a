//! Faithfulness metrics that compare the top of a salience ranking with the
//! ground truth G (Bastings et al. 2022 §3.3; PROTOCOL §1).
//!
//! Ranking convention: tokens are sorted by descending salience; ties go to the
//! earlier position; NaN counts as the lowest salience. Only rankable tokens
//! (not special tokens, not padding) take part.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub mod agreement;
pub mod bootstrap;
pub mod erasure;
pub mod intervals;
pub mod pixel_attr;
pub mod rationale;
pub mod wilcoxon;
pub mod words;

pub use rationale::RationaleMetric;
pub use words::WordAggregation;

/// A per-cell metric: a mean over the attributed examples of one (model, method).
///
/// Names (TOML and tables): `precision`, `rank`, `attr`, `attr-noncorr`, `ns`,
/// `nc`, `soft-ns`, `soft-nc`, `diag-<erasure metric>` for diagnosticity, and
/// `sel-precision`, `sel-recall`, `sel-noncorr`, `sel-rate` for a rationale
/// model's own selection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Metric {
    /// precision@k with k = |G|: `|top_k(s) ∩ G| / k`.
    Precision,
    /// The smallest r with `top_r(s) ⊇ G`, i.e. the rank of the worst-ranked
    /// ground-truth token (1 is perfect).
    Rank,
    /// Attr% (Zhou et al. 2022): `Σ_{i∈G} |s_i| / Σ_i |s_i|`, the share of the
    /// absolute salience that lands on the effective region G.
    AttrShare,
    /// Attr% on the non-correlating articles of Zhou et al.'s CN / NC data:
    /// salience a faithful method should *not* give.
    AttrNonCorrelating,
    /// An erasure metric (Zhao & Aletras 2023); needs extra forward passes.
    Erasure(ErasureMetric),
    /// Diagnosticity of an erasure metric: the share of examples where the
    /// method's value beats a random attribution's on the same input.
    Diagnosticity(ErasureMetric),
    /// Zhou et al.'s metrics of a rationale (`rationale` cells only).
    Rationale(RationaleMetric),
}

/// The erasure metrics of PROTOCOL §3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErasureMetric {
    /// AOPC of normalised sufficiency over the rationale ratios.
    Ns,
    /// AOPC of normalised comprehensiveness over the rationale ratios.
    Nc,
    /// Soft normalised sufficiency (Bernoulli keep-probability = salience).
    SoftNs,
    /// Soft normalised comprehensiveness (keep-probability = 1 − salience).
    SoftNc,
}

impl ErasureMetric {
    pub const ALL: [ErasureMetric; 4] =
        [ErasureMetric::Ns, ErasureMetric::SoftNs, ErasureMetric::Nc, ErasureMetric::SoftNc];

    pub fn name(self) -> &'static str {
        match self {
            ErasureMetric::Ns => "ns",
            ErasureMetric::Nc => "nc",
            ErasureMetric::SoftNs => "soft-ns",
            ErasureMetric::SoftNc => "soft-nc",
        }
    }

    /// As the papers print it: `NS`, `Soft-NC`, …
    pub fn title(self) -> &'static str {
        match self {
            ErasureMetric::Ns => "NS",
            ErasureMetric::Nc => "NC",
            ErasureMetric::SoftNs => "Soft-NS",
            ErasureMetric::SoftNc => "Soft-NC",
        }
    }
}

/// Every metric name, for error messages and documentation.
pub const METRIC_NAMES: &str = "precision, rank, attr, attr-noncorr, ns, nc, soft-ns, soft-nc, diag-ns, diag-nc, \
     diag-soft-ns, diag-soft-nc, sel-precision, sel-recall, sel-noncorr, sel-rate";

impl Metric {
    pub fn name(self) -> &'static str {
        match self {
            Metric::Precision => "precision",
            Metric::Rank => "rank",
            Metric::AttrShare => "attr",
            Metric::AttrNonCorrelating => "attr-noncorr",
            Metric::Erasure(m) => m.name(),
            Metric::Diagnosticity(ErasureMetric::Ns) => "diag-ns",
            Metric::Diagnosticity(ErasureMetric::Nc) => "diag-nc",
            Metric::Diagnosticity(ErasureMetric::SoftNs) => "diag-soft-ns",
            Metric::Diagnosticity(ErasureMetric::SoftNc) => "diag-soft-nc",
            Metric::Rationale(m) => m.name(),
        }
    }

    /// Whether the metric compares salience with a known ground truth (the
    /// planted shortcut's tokens, the correlating articles): only defined on a
    /// grid that plants one.
    pub fn needs_ground_truth(self) -> bool {
        matches!(self, Metric::Precision | Metric::Rank | Metric::AttrShare | Metric::AttrNonCorrelating)
            || matches!(self, Metric::Rationale(m) if m != RationaleMetric::Rate)
    }

    /// Whether the metric scores a rationale model's own selection only.
    pub fn needs_rationale(self) -> bool {
        matches!(self, Metric::Rationale(_))
    }

    /// Decimals the tables show: precision 2 (the papers' own), rank 1, the
    /// rest 3.
    pub fn decimals(self) -> usize {
        match self {
            Metric::Precision => 2,
            Metric::Rank => 1,
            Metric::AttrShare
            | Metric::AttrNonCorrelating
            | Metric::Erasure(_)
            | Metric::Diagnosticity(_)
            | Metric::Rationale(_) => 3,
        }
    }

    /// What the numbers mean, for table titles.
    pub fn description(self) -> String {
        let erasure = |m: ErasureMetric| match m {
            ErasureMetric::Ns => "NS, AOPC over the rationale ratios",
            ErasureMetric::Nc => "NC, AOPC over the rationale ratios",
            ErasureMetric::SoftNs => "Soft-NS",
            ErasureMetric::SoftNc => "Soft-NC",
        };
        match self {
            Metric::Precision => "precision@k (higher is better)".into(),
            Metric::Rank => "mean rank (1 is best)".into(),
            Metric::AttrShare => "Attr%, the share of |salience| on the shortcut tokens (higher is better)".into(),
            Metric::AttrNonCorrelating => {
                "Attr% on the non-correlating articles (lower is better: a faithful method gives them nothing)".into()
            }
            Metric::Erasure(m) => format!("{} (higher is better)", erasure(m)),
            Metric::Diagnosticity(m) => {
                format!("diagnosticity of {}: share of examples beating random (0.5 = chance)", erasure(m))
            }
            Metric::Rationale(m) => m.description().into(),
        }
    }

    /// Whether a larger value is better (all but the rank and the salience
    /// on non-correlating look-alikes).
    pub fn higher_is_better(self) -> bool {
        !matches!(self, Metric::Rank | Metric::AttrNonCorrelating | Metric::Rationale(RationaleMetric::NonCorrelating))
    }

    /// Whether the metric is only defined where the data has non-correlating
    /// look-alikes of G (Zhou et al.'s CN and NC).
    pub fn needs_distractors(self) -> bool {
        matches!(self, Metric::AttrNonCorrelating | Metric::Rationale(RationaleMetric::NonCorrelating))
    }

    /// Whether the metric needs the erasure step's forward passes.
    pub fn needs_erasure(self) -> bool {
        matches!(self, Metric::Erasure(_) | Metric::Diagnosticity(_))
    }

    /// The per-example value of a ranking metric (precision, rank); `None` for
    /// the others, which need more than a ranking (each is scored by its own
    /// module: the match names them all, so a new metric must say which it is).
    pub fn evaluate(self, ranking: &[usize], truth: &[usize]) -> Option<f64> {
        match self {
            Metric::Precision => precision_at_k(ranking, truth),
            Metric::Rank => rank_of_ground_truth(ranking, truth).map(|r| r as f64),
            Metric::AttrShare
            | Metric::AttrNonCorrelating
            | Metric::Erasure(_)
            | Metric::Diagnosticity(_)
            | Metric::Rationale(_) => None,
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Metric {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let erasure = |name: &str| ErasureMetric::ALL.into_iter().find(|m| m.name() == name);
        match s {
            "precision" => Ok(Metric::Precision),
            "rank" => Ok(Metric::Rank),
            "attr" => Ok(Metric::AttrShare),
            "attr-noncorr" => Ok(Metric::AttrNonCorrelating),
            _ if s.starts_with("sel-") => RationaleMetric::ALL
                .into_iter()
                .find(|m| m.name() == s)
                .map(Metric::Rationale)
                .ok_or_else(|| format!("unknown metric `{s}`; known: {METRIC_NAMES}")),
            _ => {
                if let Some(m) = erasure(s) {
                    Ok(Metric::Erasure(m))
                } else if let Some(m) = s.strip_prefix("diag-").and_then(erasure) {
                    Ok(Metric::Diagnosticity(m))
                } else {
                    Err(format!(
                        "unknown metric `{s}`; known: {METRIC_NAMES}, and `diagnosticity` (diag-* of every erasure metric listed)"
                    ))
                }
            }
        }
    }
}

impl From<Metric> for String {
    fn from(m: Metric) -> String {
        m.name().to_string()
    }
}

impl TryFrom<String> for Metric {
    type Error = String;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

/// Attr% of one example: the share of `Σ|s_i|` over the rankable tokens that
/// falls on `truth`; `None` when G is empty or every rankable score is 0.
pub fn attribution_share(scores: &[f32], rankable: impl Fn(usize) -> bool, truth: &[usize]) -> Option<f64> {
    if truth.is_empty() {
        return None;
    }
    let (mut on_truth, mut total) = (0.0f64, 0.0f64);
    for (i, &s) in scores.iter().enumerate() {
        if !rankable(i) || s.is_nan() {
            continue;
        }
        let a = (s as f64).abs();
        total += a;
        if truth.contains(&i) {
            on_truth += a;
        }
    }
    (total > 0.0).then(|| on_truth / total)
}

/// Positions of the rankable tokens, most salient first.
pub fn ranking(scores: &[f32], rankable: impl Fn(usize) -> bool) -> Vec<usize> {
    let key = |v: f32| if v.is_nan() { f32::NEG_INFINITY } else { v };
    let mut order: Vec<usize> = (0..scores.len()).filter(|&i| rankable(i)).collect();
    order.sort_by(|&a, &b| key(scores[b]).total_cmp(&key(scores[a])).then(a.cmp(&b)));
    order
}

/// `|top_k ∩ G| / k` with `k = |G|`; `None` when G is empty.
pub fn precision_at_k(ranking: &[usize], truth: &[usize]) -> Option<f64> {
    let k = truth.len();
    if k == 0 {
        return None;
    }
    let hits = ranking.iter().take(k).filter(|p| truth.contains(p)).count();
    Some(hits as f64 / k as f64)
}

/// 1-based rank of the worst-ranked ground-truth token; `None` when G is empty or
/// a ground-truth token is not in the ranking.
pub fn rank_of_ground_truth(ranking: &[usize], truth: &[usize]) -> Option<usize> {
    if truth.is_empty() {
        return None;
    }
    truth
        .iter()
        .map(|g| ranking.iter().position(|p| p == g).map(|i| i + 1))
        .try_fold(0, |worst, r| r.map(|r| worst.max(r)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranking_breaks_ties_by_position_and_sinks_nan() {
        let scores = [0.5, 0.9, 0.5, f32::NAN, 0.9];
        assert_eq!(ranking(&scores, |_| true), vec![1, 4, 0, 2, 3]);
        assert_eq!(ranking(&scores, |i| i != 1), vec![4, 0, 2, 3]);
    }

    #[test]
    fn precision_by_hand() {
        // Ranking 2, 0, 1, 3.
        let r = [2, 0, 1, 3];
        assert_eq!(precision_at_k(&r, &[2]), Some(1.0));
        assert_eq!(precision_at_k(&r, &[0]), Some(0.0));
        assert_eq!(precision_at_k(&r, &[0, 2]), Some(1.0));
        assert_eq!(precision_at_k(&r, &[0, 3]), Some(0.5));
        assert_eq!(precision_at_k(&r, &[1, 3]), Some(0.0));
        assert_eq!(precision_at_k(&r, &[]), None);
    }

    #[test]
    fn attribution_share_by_hand() {
        // |s| = 1, 3, 2, 4 over four tokens; G = {1, 3}: (3 + 4) / 10.
        let scores = [1.0, -3.0, 2.0, 4.0];
        assert!((attribution_share(&scores, |_| true, &[1, 3]).unwrap() - 0.7).abs() < 1e-12);
        // Token 0 is special: (3 + 4) / 9.
        assert!((attribution_share(&scores, |i| i != 0, &[1, 3]).unwrap() - 7.0 / 9.0).abs() < 1e-12);
        assert_eq!(attribution_share(&scores, |_| true, &[]), None);
        assert_eq!(attribution_share(&[0.0, 0.0], |_| true, &[1]), None);
    }

    #[test]
    fn metric_names_round_trip() {
        for name in METRIC_NAMES.split(", ") {
            let m: Metric = name.parse().unwrap();
            assert_eq!(m.name(), name);
            assert_eq!(serde_json::to_string(&m).unwrap(), format!("\"{name}\""));
        }
        assert!("diag-precision".parse::<Metric>().is_err());
        assert!(!Metric::Rank.higher_is_better() && Metric::Erasure(ErasureMetric::Nc).higher_is_better());
    }

    #[test]
    fn every_metric_describes_itself() {
        for name in METRIC_NAMES.split(", ") {
            let m: Metric = name.parse().unwrap();
            let ground_truth =
                ["precision", "rank", "attr", "attr-noncorr", "sel-precision", "sel-recall", "sel-noncorr"]
                    .contains(&name);
            assert_eq!(m.needs_ground_truth(), ground_truth, "{name}");
            assert!(!m.description().is_empty() && m.description() != name, "{name}");
            assert!((1..=3).contains(&m.decimals()), "{name}");
        }
        assert_eq!((Metric::Precision.decimals(), Metric::Rank.decimals()), (2, 1));
        assert!(Metric::Diagnosticity(ErasureMetric::SoftNc).description().contains("Soft-NC"));
    }

    #[test]
    fn rank_by_hand() {
        let r = [2, 0, 1, 3];
        assert_eq!(rank_of_ground_truth(&r, &[2]), Some(1));
        assert_eq!(rank_of_ground_truth(&r, &[3]), Some(4));
        assert_eq!(rank_of_ground_truth(&r, &[0, 2]), Some(2));
        assert_eq!(rank_of_ground_truth(&r, &[1, 2]), Some(3));
        assert_eq!(rank_of_ground_truth(&r, &[9]), None);
        assert_eq!(Metric::Rank.evaluate(&r, &[3, 0]), Some(4.0));
        assert_eq!(Metric::Precision.evaluate(&r, &[3, 0]), Some(0.5));
    }
}
