//! Zhao & Aletras 2023: diagnosticity of the erasure metrics (Table 6) and
//! whether soft erasure beats hard erasure.

use super::bastings::{percent, unverified_line};
use super::published::{DiagnosticityRow, ZhaoAttribution};
use super::{Aliases, ComparedCell, ComparedMetric, Finding, NEAR, OurCell, OurMetric, Outcome, merge_seeds};
use crate::CellResult;
use crate::tables::format_fixed;
use grid_methods::metrics::{ErasureMetric, Metric};
use grid_methods::salience::Method;
use grid_methods::shortcut::Regime;
use std::collections::HashSet;

// --- Zhao & Aletras: diagnosticity -------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DiagMetric {
    Ns,
    SoftNs,
    Nc,
    SoftNc,
}

impl DiagMetric {
    pub(super) const ALL: [Self; 4] = [Self::Ns, Self::SoftNs, Self::Nc, Self::SoftNc];

    /// Our metric.
    pub(super) fn ours(self) -> Metric {
        Metric::Diagnosticity(match self {
            Self::Ns => ErasureMetric::Ns,
            Self::SoftNs => ErasureMetric::SoftNs,
            Self::Nc => ErasureMetric::Nc,
            Self::SoftNc => ErasureMetric::SoftNc,
        })
    }

    pub(super) fn label(self) -> &'static str {
        match self {
            Self::Ns => "NS",
            Self::SoftNs => "Soft-NS",
            Self::Nc => "NC",
            Self::SoftNc => "Soft-NC",
        }
    }

    pub(super) fn index(self) -> usize {
        self as usize
    }
}

/// One published (dataset, attribution) matched to our cells at one (model,
/// dataset, shortcut): our and the paper's value of each metric we have.
pub(super) struct DiagMatch {
    pub(super) model: String,
    pub(super) dataset: String,
    pub(super) published_dataset: String,
    pub(super) attribution: ZhaoAttribution,
    /// (ours, published) per [`DiagMetric::index`].
    pub(super) values: [Option<(f64, f64)>; 4],
    pub(super) verified: bool,
}

pub(super) fn compare_diagnosticity(rows: &[DiagnosticityRow], cells: &[CellResult], aliases: &Aliases) -> Outcome {
    let ours = merge_seeds(cells, |m| DiagMetric::ALL.iter().any(|d| d.ours() == m));
    let mut used = vec![false; ours.len()];
    let mut matched = vec![false; rows.len()];
    let mut compared = Vec::new();
    let mut matches = Vec::new();
    for (model, dataset, shortcut) in diag_sites(&ours) {
        let here: Vec<usize> = (0..ours.len())
            .filter(|&i| ours[i].model == model && ours[i].dataset == dataset && ours[i].shortcut == shortcut)
            .collect();
        for (r, row) in rows.iter().enumerate().filter(|(_, r)| aliases.matches(&dataset, &r.dataset)) {
            let Some(method) = chosen_method(row.attribution, here.iter().map(|&i| ours[i].method)) else {
                continue;
            };
            let mut m = DiagMatch {
                model: model.clone(),
                dataset: dataset.clone(),
                published_dataset: row.dataset.clone(),
                attribution: row.attribution,
                values: [None; 4],
                verified: true,
            };
            for metric in DiagMetric::ALL {
                let Some(&i) = here
                    .iter()
                    .find(|&&i| ours[i].method == method && ours[i].metric == OurMetric::Grid(metric.ours()))
                else {
                    continue;
                };
                used[i] = true;
                matched[r] = true;
                let cell = &ours[i];
                m.verified &= cell.verified;
                m.values[metric.index()] = Some((cell.value, row.value(metric)));
                compared.push(cell.compared(&row.dataset, Some(row.attribution.printed()), row.value(metric)));
            }
            matches.push(m);
        }
    }
    let unmatched_published = matched.iter().filter(|m| !**m).count();
    let unmatched_ours = used.iter().filter(|u| !**u).count();
    let findings = diagnosticity_findings(&matches);
    let summary = diagnosticity_summary(&compared, unmatched_published, unmatched_ours);
    Outcome { cells: compared, findings, summary, unmatched_published, unmatched_ours }
}

/// Distinct (model, dataset, shortcut) of our diagnosticity cells, in order.
/// Where a (model, dataset) has natural cells, only those: Zhao & Aletras
/// measured models that learnt the task, not a planted shortcut.
pub(super) fn diag_sites(ours: &[OurCell]) -> Vec<(String, String, Regime)> {
    let natural = Regime::Natural;
    let has_natural = |model: &str, dataset: &str| {
        ours.iter().any(|c| c.model == model && c.dataset == dataset && c.shortcut == natural)
    };
    let mut out: Vec<(String, String, Regime)> = Vec::new();
    for c in ours {
        if c.shortcut != natural && has_natural(&c.model, &c.dataset) {
            continue;
        }
        if !out.iter().any(|(m, d, s)| *m == c.model && *d == c.dataset && *s == c.shortcut) {
            out.push((c.model.clone(), c.dataset.clone(), c.shortcut));
        }
    }
    out
}

/// Our method that best stands for `attribution` among `methods` (first on ties).
pub(super) fn chosen_method(attribution: ZhaoAttribution, methods: impl Iterator<Item = Method>) -> Option<Method> {
    best_method(|m| attribution.preference(m), methods)
}

/// The method of `methods` with the lowest `preference` (first on ties); `None`
/// if no method stands for it.
pub(super) fn best_method(
    preference: impl Fn(&Method) -> Option<(u8, i64)>,
    methods: impl Iterator<Item = Method>,
) -> Option<Method> {
    let mut best: Option<((u8, i64), Method)> = None;
    for method in methods {
        let Some(p) = preference(&method) else { continue };
        if best.is_none_or(|(b, _)| p < b) {
            best = Some((p, method));
        }
    }
    best.map(|(_, method)| method)
}

/// Per (model, dataset) and, over two or more datasets, per model: the direction of
/// Soft-NS vs NS and of Soft-NC vs NC, averaged over the matched attributions.
pub(super) fn diagnosticity_findings(matches: &[DiagMatch]) -> Vec<Finding> {
    let mut scopes: Vec<(&str, &str, &str)> = Vec::new();
    for m in matches {
        let scope = (m.model.as_str(), m.dataset.as_str(), m.published_dataset.as_str());
        if !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }
    let mut findings = Vec::new();
    for &(model, dataset, published) in &scopes {
        let here: Vec<&DiagMatch> = matches
            .iter()
            .filter(|m| m.model == model && m.dataset == dataset && m.published_dataset == published)
            .collect();
        let alias = if dataset == published { String::new() } else { format!(" (as {published})") };
        let name = format!("{model} on {dataset}{alias}");
        findings.extend(soft_vs_hard_findings(&name, &here));
    }
    let mut models: Vec<&str> = Vec::new();
    for &(model, ..) in &scopes {
        let datasets = scopes.iter().filter(|s| s.0 == model).count();
        if datasets >= 2 && !models.contains(&model) {
            models.push(model);
            let here: Vec<&DiagMatch> = matches.iter().filter(|m| m.model == model).collect();
            findings.extend(soft_vs_hard_findings(&format!("{model}, all compared datasets"), &here));
        }
    }
    findings
}

pub(super) fn soft_vs_hard_findings(name: &str, matches: &[&DiagMatch]) -> Vec<Finding> {
    [(DiagMetric::SoftNs, DiagMetric::Ns), (DiagMetric::SoftNc, DiagMetric::Nc)]
        .into_iter()
        .filter_map(|(soft, hard)| soft_vs_hard(name, matches, soft, hard))
        .collect()
}

/// Half a unit in the last decimal Zhao & Aletras print (three decimals).
pub(super) const PRINTED_TIE: f64 = 5e-4;

/// "Soft-X is more diagnostic than X" (or the reverse, as the paper's averages
/// say), checked on our averages over the same matches; no claim where the
/// paper's averages tie.
pub(super) fn soft_vs_hard(name: &str, matches: &[&DiagMatch], soft: DiagMetric, hard: DiagMetric) -> Option<Finding> {
    // The matches with both metrics, and each one's (ours, published) pairs.
    let both: Vec<(&DiagMatch, [(f64, f64); 2])> =
        matches.iter().filter_map(|m| Some((*m, [m.values[soft.index()]?, m.values[hard.index()]?]))).collect();
    if both.is_empty() {
        return None;
    }
    let mean = |metric: usize, published: bool| {
        both.iter().map(|(_, v)| if published { v[metric].1 } else { v[metric].0 }).sum::<f64>() / both.len() as f64
    };
    let (ours_soft, paper_soft) = (mean(0, false), mean(0, true));
    let (ours_hard, paper_hard) = (mean(1, false), mean(1, true));
    let paper_soft_wins = paper_soft > paper_hard;
    let (winner, loser) = if paper_soft_wins { (soft, hard) } else { (hard, soft) };
    let distinct: HashSet<ZhaoAttribution> = both.iter().map(|(m, _)| m.attribution).collect();
    let verified = both.iter().all(|(m, _)| m.verified);
    let ours_differ = ours_soft != ours_hard;
    // A tie as printed (Zhao SST gradients: NC = Soft-NC = 0.394) claims no direction.
    let paper_ties = (paper_soft - paper_hard).abs() < PRINTED_TIE;
    let (statement, holds) = if paper_ties {
        (
            format!(
                "{name}: {} and {} are equally diagnostic in the paper (mean over attributions); no direction to check",
                soft.label(),
                hard.label()
            ),
            None,
        )
    } else {
        (
            format!(
                "{name}: {} is more diagnostic than {} (mean over attributions), as in the paper",
                winner.label(),
                loser.label()
            ),
            Some(ours_differ && (ours_soft > ours_hard) == paper_soft_wins),
        )
    };
    Some(
        Finding {
            statement,
            holds,
            evidence: format!(
                "published {} {} vs {} {}; ours {} vs {}; over {} attribution(s), {} match(es)",
                soft.label(),
                format_fixed(paper_soft, 3),
                hard.label(),
                format_fixed(paper_hard, 3),
                format_fixed(ours_soft, 3),
                format_fixed(ours_hard, 3),
                distinct.len(),
                both.len()
            ),
        }
        .resting_on(verified),
    )
}

pub(super) fn diagnosticity_summary(
    compared: &[ComparedCell],
    unmatched_published: usize,
    unmatched_ours: usize,
) -> Vec<String> {
    let mut out = vec![format!(
        "{} of our cells compared; {unmatched_published} published (dataset, attribution) rows have no cell of ours; {unmatched_ours} of our diagnosticity cells have no published number.",
        compared.len()
    )];
    let cells: Vec<ComparedCell> = compared
        .iter()
        .filter(|c| matches!(c.metric, ComparedMetric::Ours(OurMetric::Grid(Metric::Diagnosticity(_)))))
        .cloned()
        .collect();
    if !cells.is_empty() {
        let close = cells.iter().filter(|c| c.difference().abs() <= NEAR).count();
        out.push(format!(
            "Diagnosticity: {close} of {} cells ({}) within {} of the published number.",
            cells.len(),
            percent(close, cells.len()),
            format_fixed(NEAR, 2)
        ));
    }
    out.push(
        "The paper's models are BERT (SST, AG), SciBERT (Ev.Inf) and RoBERTa (M.RC); attributions map to attn (BiLSTM) or attn-last (BERT), attn-scaled, gxil, igl-zero-<most steps>, deeplift."
            .into(),
    );
    out.extend(unverified_line(compared));
    out
}
