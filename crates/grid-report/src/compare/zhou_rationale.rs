//! Zhou et al. 2022 §7, rationale models: the paper plots its results
//! (Figures 10–11) and states its findings in words, so the reference file
//! lists findings, and each is checked on our `zhou_rationale` rows:
//!
//! | finding | holds when |
//! |---|---|
//! | `accuracy_over_97` | every rationale model is over 97% accurate on its manipulated test set |
//! | `near_optimal` | on Article, precision and recall are within [`NEAR_OPTIMAL`] of the dataset-wide optimum at the realised %Sel, for every model but CR at its lowest target |
//! | `cr_lowest_short` | CR at its lowest target on Article falls short of that optimum by more than [`NEAR_OPTIMAL`] in precision or recall |
//! | `rl_more_non_correlating` | on CN and NC, RL selects a larger share of the non-correlating articles than CR, averaged over the target rates both ran |
//!
//! There are no published numbers, so the comparison has findings and no cells.

use super::findings_file::{FindingRow, NamedFinding};
use super::{Finding, Outcome};
use crate::rationale::{RationaleRow, rows};
use crate::tables::format_fixed;
use crate::{CellResult, VerificationRow};
use grid_methods::shortcut::{Regime, ShortcutKind};

/// "Near-perfect … track the dataset-wide optimal values": within this of it.
pub const NEAR_OPTIMAL: f64 = 0.1;
/// "All with over 97% accuracy".
const MIN_ACCURACY: f64 = 0.97;

/// One of the paper's findings, as the reference file names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RationaleFinding {
    AccuracyOver97,
    NearOptimal,
    CrLowestShort,
    RlMoreNonCorrelating,
}

impl RationaleFinding {
    pub const ALL: [Self; 4] =
        [Self::AccuracyOver97, Self::NearOptimal, Self::CrLowestShort, Self::RlMoreNonCorrelating];

    pub fn id(self) -> &'static str {
        match self {
            Self::AccuracyOver97 => "accuracy_over_97",
            Self::NearOptimal => "near_optimal",
            Self::CrLowestShort => "cr_lowest_short",
            Self::RlMoreNonCorrelating => "rl_more_non_correlating",
        }
    }

    /// Whether a row is one its section's models: §7.1 trains on the
    /// Article manipulation, §7.2 on CN and NC. A finding is judged on those
    /// rows alone, so a grid of the other section leaves it undecided.
    fn judges(self, row: &RationaleRow) -> bool {
        match self {
            Self::AccuracyOver97 | Self::NearOptimal | Self::CrLowestShort => is(row, ShortcutKind::Articles),
            Self::RlMoreNonCorrelating => is(row, ShortcutKind::ArticlesCn) || is(row, ShortcutKind::ArticlesNc),
        }
    }
}

/// A line of the reference file.
pub type ZhouRationaleRow = FindingRow<RationaleFinding>;

impl NamedFinding for RationaleFinding {
    const KNOWN: &'static [Self] = &RationaleFinding::ALL;
    fn id(self) -> &'static str {
        RationaleFinding::id(self)
    }
}

fn is(row: &RationaleRow, kind: ShortcutKind) -> bool {
    row.shortcut == Regime::Shortcut(kind)
}

fn pct(v: f64) -> String {
    format!("{}%", format_fixed(100.0 * v, 1))
}

/// The row's largest shortfall below the dataset-wide optimum, precision or
/// recall (`None` without the numbers).
fn shortfall(row: &RationaleRow) -> Option<f64> {
    let (best_precision, best_recall) = row.optimal_dataset?;
    Some((best_precision - row.precision?).max(best_recall - row.recall?))
}

/// The lowest target rate CR ran on Article, per (dataset).
fn cr_lowest(rows: &[RationaleRow]) -> Vec<&RationaleRow> {
    let articles: Vec<&RationaleRow> =
        rows.iter().filter(|r| is(r, ShortcutKind::Articles) && r.selector == "CR").collect();
    let mut lowest: Vec<&RationaleRow> = Vec::new();
    for row in &articles {
        let min =
            articles.iter().filter(|r| r.dataset == row.dataset).map(|r| r.target_rate).fold(f64::INFINITY, f64::min);
        if row.target_rate == min {
            lowest.push(row);
        }
    }
    lowest
}

fn check(finding: RationaleFinding, rows: &[RationaleRow]) -> (Option<bool>, String) {
    let section: Vec<RationaleRow> = rows.iter().filter(|r| finding.judges(r)).cloned().collect();
    let all = section.as_slice();
    // The paper's claims are about models over 97% accurate: a model that
    // failed verification did not learn the task, and its selections say
    // nothing about what a model that did would select.
    let verified: Vec<RationaleRow> = all.iter().filter(|r| r.verified).cloned().collect();
    let rows = if finding == RationaleFinding::AccuracyOver97 { all } else { verified.as_slice() };
    let left_out = all.len() - rows.len();
    let (holds, evidence) = check_on(finding, rows);
    match left_out {
        0 => (holds, evidence),
        n => (holds, format!("{evidence}; left out for failing verification: {n}")),
    }
}

fn check_on(finding: RationaleFinding, rows: &[RationaleRow]) -> (Option<bool>, String) {
    let none = |what: &str| (None, format!("no {what} in our results"));
    match finding {
        RationaleFinding::AccuracyOver97 => {
            let measured: Vec<(&RationaleRow, f64)> = rows.iter().filter_map(|r| Some((r, r.accuracy?))).collect();
            let Some((worst, accuracy)) = measured.iter().min_by(|a, b| a.1.total_cmp(&b.1)) else {
                return none("rationale model on the Article manipulation");
            };
            let below = measured.iter().filter(|(_, a)| *a <= MIN_ACCURACY).count();
            (
                Some(below == 0),
                format!(
                    "{below} of {} models at or below 97%; lowest {} ({} on {}:{})",
                    measured.len(),
                    pct(*accuracy),
                    worst.model,
                    worst.dataset,
                    worst.shortcut
                ),
            )
        }
        RationaleFinding::NearOptimal => {
            let lowest = cr_lowest(rows);
            let judged: Vec<(&RationaleRow, f64)> = rows
                .iter()
                .filter(|r| is(r, ShortcutKind::Articles) && !lowest.contains(r))
                .filter_map(|r| Some((r, shortfall(r)?)))
                .collect();
            let Some((worst, gap)) = judged.iter().max_by(|a, b| a.1.total_cmp(&b.1)) else {
                return none("rationale model on the Article manipulation");
            };
            let far = judged.iter().filter(|(_, g)| *g > NEAR_OPTIMAL).count();
            (
                Some(far == 0),
                format!(
                    "{far} of {} models more than {NEAR_OPTIMAL} below the optimum; largest shortfall {} ({}, target \
                     %Sel {}, precision {} / recall {} against {} / {})",
                    judged.len(),
                    format_fixed(*gap, 3),
                    worst.model,
                    worst.target_rate,
                    worst.precision.map_or("–".into(), |v| format_fixed(v, 3)),
                    worst.recall.map_or("–".into(), |v| format_fixed(v, 3)),
                    worst.optimal_dataset.map_or("–".into(), |o| format_fixed(o.0, 3)),
                    worst.optimal_dataset.map_or("–".into(), |o| format_fixed(o.1, 3)),
                ),
            )
        }
        RationaleFinding::CrLowestShort => {
            let judged: Vec<(&RationaleRow, f64)> =
                cr_lowest(rows).into_iter().filter_map(|r| Some((r, shortfall(r)?))).collect();
            if judged.is_empty() {
                return none("CR model on the Article manipulation");
            }
            let short = judged.iter().filter(|(_, g)| *g > NEAR_OPTIMAL).count();
            let list: Vec<String> = judged
                .iter()
                .map(|(r, g)| {
                    format!(
                        "{} on {} (target {}): shortfall {}",
                        r.model,
                        r.dataset,
                        r.target_rate,
                        format_fixed(*g, 3)
                    )
                })
                .collect();
            (Some(short == judged.len()), list.join("; "))
        }
        RationaleFinding::RlMoreNonCorrelating => {
            let split = |r: &&RationaleRow| is(r, ShortcutKind::ArticlesCn) || is(r, ShortcutKind::ArticlesNc);
            let of = |selector: &str| -> Vec<&RationaleRow> {
                rows.iter().filter(split).filter(|r| r.selector == selector && r.non_correlating.is_some()).collect()
            };
            let (rl, cr) = (of("RL"), of("CR"));
            // Rates both selectors ran, on the same data and manipulation.
            let paired = |mine: &[&RationaleRow], other: &[&RationaleRow]| -> Vec<f64> {
                mine.iter()
                    .filter(|r| {
                        other.iter().any(|o| {
                            o.dataset == r.dataset && o.shortcut == r.shortcut && o.target_rate == r.target_rate
                        })
                    })
                    .filter_map(|r| r.non_correlating)
                    .collect()
            };
            let (rl_values, cr_values) = (paired(&rl, &cr), paired(&cr, &rl));
            if rl_values.is_empty() || cr_values.is_empty() {
                return none("pair of RL and CR models on CN or NC at one target rate");
            }
            let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
            let (rl_mean, cr_mean) = (mean(&rl_values), mean(&cr_values));
            (
                Some(rl_mean > cr_mean),
                format!(
                    "RL selects {} of the non-correlating articles, CR {} (means over {} models each)",
                    pct(rl_mean),
                    pct(cr_mean),
                    rl_values.len()
                ),
            )
        }
    }
}

/// Every finding of the file, checked on our rows.
pub(super) fn compare_zhou_rationale(
    published: &[ZhouRationaleRow],
    cells: &[CellResult],
    verification: &[VerificationRow],
) -> Outcome {
    let rows = rows(cells, verification);
    let findings = published
        .iter()
        .map(|p| {
            let (holds, evidence) = check(p.finding, &rows);
            Finding { statement: format!("§{}: {}", p.section, p.statement), holds, evidence }
        })
        .collect();
    let summary = vec![format!(
        "{} rationale model rows (model × dataset × manipulation, seeds averaged); the paper gives figures, so \
         its findings are checked and no number is matched",
        rows.len()
    )];
    Outcome { cells: Vec::new(), findings, summary, unmatched_published: 0, unmatched_ours: 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(
        selector: &'static str,
        target: f64,
        shortcut: &str,
        precision: f64,
        recall: f64,
        noncorr: Option<f64>,
    ) -> RationaleRow {
        RationaleRow {
            model: format!("{selector}-{target}"),
            selector,
            target_rate: target,
            dataset: "gen".into(),
            shortcut: shortcut.parse().unwrap(),
            seeds: 1,
            accuracy: Some(0.99),
            rate: Some(target),
            per_review_rate: Some(target),
            precision: Some(precision),
            recall: Some(recall),
            non_correlating: noncorr,
            optimal_dataset: Some((1.0, 0.9)),
            optimal_per_review: Some((0.95, 0.85)),
            verified: true,
        }
    }

    #[test]
    fn the_findings_by_hand() {
        let mut rows = vec![
            row("RL", 0.07, "articles", 0.98, 0.88, None),
            row("RL", 0.15, "articles", 0.95, 0.85, None),
            // CR's lowest falls short (selects the first words), its next does not.
            row("CR", 0.07, "articles", 0.6, 0.5, None),
            row("CR", 0.15, "articles", 0.97, 0.86, None),
            row("RL", 0.05, "articles-nc", 0.8, 0.7, Some(0.3)),
            row("CR", 0.05, "articles-nc", 0.9, 0.7, Some(0.1)),
        ];
        let holds = |f: RationaleFinding, rows: &[RationaleRow]| check(f, rows).0;
        assert_eq!(holds(RationaleFinding::AccuracyOver97, &rows), Some(true));
        assert_eq!(holds(RationaleFinding::NearOptimal, &rows), Some(true));
        assert_eq!(holds(RationaleFinding::CrLowestShort, &rows), Some(true));
        let (held, evidence) = check(RationaleFinding::RlMoreNonCorrelating, &rows);
        assert_eq!(held, Some(true));
        assert!(evidence.contains("RL selects 30.0%") && evidence.contains("CR 10.0%"), "{evidence}");
        // An RL model far from the optimum breaks the second finding.
        rows[1].recall = Some(0.5);
        assert_eq!(holds(RationaleFinding::NearOptimal, &rows), Some(false));
        rows[0].accuracy = Some(0.9);
        let (held, evidence) = check(RationaleFinding::AccuracyOver97, &rows);
        assert_eq!(held, Some(false));
        assert!(evidence.contains("lowest 90.0% (RL-0.07 on gen:articles)"), "{evidence}");
        // Nothing on CN / NC: cannot tell.
        assert_eq!(holds(RationaleFinding::RlMoreNonCorrelating, &rows[..4]), None);
        // Each section's findings read its own models: a CN / NC model below
        // 97% or failing verification says nothing of §7.1.
        rows[4].accuracy = Some(0.5);
        rows[4].verified = false;
        let (held, evidence) = check(RationaleFinding::NearOptimal, &rows);
        assert_eq!(held, Some(false));
        assert!(!evidence.contains("left out"), "{evidence}");
        rows[0].accuracy = Some(0.99);
        assert_eq!(holds(RationaleFinding::AccuracyOver97, &rows), Some(true));
        rows[4].verified = true;
        // A model that failed verification is left out of the selection findings.
        rows[5].verified = false;
        let (held, evidence) = check(RationaleFinding::RlMoreNonCorrelating, &rows);
        assert_eq!(held, None);
        assert!(evidence.ends_with("left out for failing verification: 1"), "{evidence}");
    }
}
