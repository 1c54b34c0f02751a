//! Zhou et al. 2022: attention's Attr% on the article manipulations (Table 1).

use super::bastings::{percent, unverified_line};
use super::published::{PaperArch, ZhouAttrRow, ZhouAttribution, ZhouDataset, ZhouRegion};
use super::render::signed;
use super::zhao::{best_method, diag_sites};
use super::{
    ComparedCell, FAITHFUL_ATTR_BAR, Finding, NONCORR_PARITY, OurCell, OurMetric, Outcome, ZHOU_MODEL_ACCURACY,
    merge_seeds,
};
use crate::tables::format_fixed;
use crate::{CellResult, VerificationRow};
use grid_methods::metrics::Metric;
use grid_methods::salience::Method;
use grid_methods::shortcut::Regime;

// --- Zhou et al.: attention Attr% on the article manipulations ---------------

/// Our attention at one (model, dataset, manipulation), beside the paper's rows.
pub(super) struct ZhouMatch<'a> {
    pub(super) model: &'a str,
    pub(super) dataset: &'a str,
    pub(super) manipulation: ZhouDataset,
    pub(super) shortcut: Regime,
    pub(super) method: Method,
    /// Our `attr`, seeds merged.
    pub(super) correlating: &'a OurCell,
    /// Our `attr-noncorr`, seeds merged (CN / NC, when the grid computed it).
    pub(super) non_correlating: Option<&'a OurCell>,
    /// The paper's rows of this manipulation and attribution, by [`ZhouRegion`].
    pub(super) published: [Option<&'a ZhouAttrRow>; 3],
    /// Our shortcut models' mean accuracy on the manipulated test set.
    pub(super) accuracy: Option<f64>,
}

impl ZhouMatch<'_> {
    pub(super) fn name(&self) -> String {
        format!(
            "{} on {}, {} ({}), {}",
            self.model,
            self.dataset,
            self.manipulation.label(),
            self.shortcut,
            self.method
        )
    }

    pub(super) fn row(&self, region: ZhouRegion) -> Option<&ZhouAttrRow> {
        self.published[region as usize]
    }
}

pub(super) fn compare_zhou_attr(
    rows: &[ZhouAttrRow],
    cells: &[CellResult],
    verification: &[VerificationRow],
) -> Outcome {
    let ours: Vec<OurCell> = merge_seeds(cells, |m| matches!(m, Metric::AttrShare | Metric::AttrNonCorrelating))
        .into_iter()
        .filter(|c| ZhouDataset::of_shortcut(c.shortcut).is_some())
        .collect();
    let mut used = vec![false; ours.len()];
    let mut matched = vec![false; rows.len()];
    let mut compared = Vec::new();
    let mut matches = Vec::new();
    for (model, dataset, shortcut) in diag_sites(&ours) {
        let Some(manipulation) = ZhouDataset::of_shortcut(shortcut) else { continue };
        let here: Vec<usize> = (0..ours.len())
            .filter(|&i| ours[i].model == model && ours[i].dataset == dataset && ours[i].shortcut == shortcut)
            .collect();
        let arch = PaperArch::of_architecture(ours[here[0]].architecture);
        let rows_here = |a: Option<ZhouAttribution>| {
            rows.iter().enumerate().filter(move |(_, r)| {
                Some(r.arch) == arch && r.dataset == manipulation && a.is_none_or(|a| r.attribution == a)
            })
        };
        let mut attributions: Vec<ZhouAttribution> = Vec::new();
        for (_, r) in rows_here(None) {
            if !attributions.contains(&r.attribution) {
                attributions.push(r.attribution);
            }
        }
        for attribution in attributions {
            let with_attr =
                here.iter().filter(|&&i| ours[i].metric == OurMetric::Grid(Metric::AttrShare)).map(|&i| ours[i].method);
            let Some(method) = best_method(|m| attribution.preference(m), with_attr) else { continue };
            let find = |metric: Metric| {
                here.iter().copied().find(|&i| ours[i].method == method && ours[i].metric == OurMetric::Grid(metric))
            };
            let Some(corr) = find(Metric::AttrShare) else { continue };
            let non_corr = find(Metric::AttrNonCorrelating);
            let other = other_words(cells, &ours[corr], non_corr.map(|i| &ours[i]), manipulation);
            let mut published = [None; 3];
            for (r, row) in rows_here(Some(attribution)) {
                published[row.region as usize] = Some(row);
                let (our, index) = match row.region {
                    ZhouRegion::Correlating => (Some(&ours[corr]), Some(corr)),
                    ZhouRegion::NonCorrelating => (non_corr.map(|i| &ours[i]), non_corr),
                    ZhouRegion::Other => (other.as_ref(), None),
                };
                let Some(our) = our else { continue };
                matched[r] = true;
                if let Some(i) = index {
                    used[i] = true;
                }
                compared.push(zhou_cell(our, row));
            }
            matches.push(ZhouMatch {
                model: &ours[corr].model,
                dataset: &ours[corr].dataset,
                manipulation,
                shortcut: ours[corr].shortcut,
                method: ours[corr].method,
                correlating: &ours[corr],
                non_correlating: non_corr.map(|i| &ours[i]),
                published,
                accuracy: manipulated_accuracy(verification, &model, &dataset, shortcut),
            });
        }
    }
    let unmatched_published = matched.iter().filter(|m| !**m).count();
    let unmatched_ours = used.iter().filter(|u| !**u).count();
    let findings = zhou_findings(&matches);
    let summary = zhou_summary(&compared, unmatched_published, unmatched_ours);
    Outcome { cells: compared, findings, summary, unmatched_published, unmatched_ours }
}

/// Our "other words" beside `correlating`: 1 − attr − attr-noncorr per seed
/// (1 − attr for Article), from the seeds that have every part, then averaged.
/// `None` for CN / NC without `attr-noncorr`. Only Article keeps an interval
/// (`attr`'s, mirrored); a difference of two bootstrapped means has none here.
pub(super) fn other_words(
    cells: &[CellResult],
    correlating: &OurCell,
    non_correlating: Option<&OurCell>,
    manipulation: ZhouDataset,
) -> Option<OurCell> {
    let split = manipulation.has_non_correlating();
    if split && non_correlating.is_none() {
        return None;
    }
    let seeds = |metric: Metric| -> Vec<&CellResult> {
        cells
            .iter()
            .filter(|c| {
                c.key.model == correlating.model
                    && c.key.dataset == correlating.dataset
                    && c.key.shortcut == correlating.shortcut
                    && c.metric == metric
                    && c.method == correlating.method
            })
            .collect()
    };
    let parts = crate::zhou::other_words(&seeds(Metric::AttrShare), &seeds(Metric::AttrNonCorrelating), split);
    if parts.is_empty() {
        return None;
    }
    let share = match non_correlating {
        Some(d) if split => correlating.share.zip(d.share).map(|(c, d)| 1.0 - c - d),
        _ => correlating.share.map(|c| 1.0 - c),
    };
    let (ci_low, ci_high) =
        if split { (None, None) } else { (correlating.ci_high.map(|h| 1.0 - h), correlating.ci_low.map(|l| 1.0 - l)) };
    Some(OurCell {
        model: correlating.model.clone(),
        architecture: correlating.architecture,
        dataset: correlating.dataset.clone(),
        shortcut: correlating.shortcut,
        method: correlating.method,
        metric: OurMetric::AttrOther,
        runs: parts.len() as u32,
        value: parts.iter().map(|p| p.0).sum::<f64>() / parts.len() as f64,
        ci_low,
        ci_high,
        verified: parts.iter().all(|p| p.1),
        share,
    })
}

/// Our cell beside one of the paper's, in percent.
pub(super) fn zhou_cell(our: &OurCell, row: &ZhouAttrRow) -> ComparedCell {
    let pct = |v: Option<f64>| v.map(|v| 100.0 * v);
    ComparedCell {
        ours: 100.0 * our.value,
        ci_low: pct(our.ci_low),
        ci_high: pct(our.ci_high),
        published_sd: Some(row.attr_sd_pct),
        share: pct(our.share),
        published_share: Some(row.frequency_pct),
        ..our.compared(row.dataset.printed(), Some(row.attribution.printed()), row.attr_pct)
    }
}

/// Mean accuracy of our shortcut models on the manipulated test set.
pub(super) fn manipulated_accuracy(
    rows: &[VerificationRow],
    model: &str,
    dataset: &str,
    shortcut: Regime,
) -> Option<f64> {
    let of: Vec<f64> = rows
        .iter()
        .filter(|r| r.key.model == model && r.key.dataset == dataset && r.key.shortcut == shortcut)
        .map(|r| r.verification.shortcut_model_on_synthetic)
        .collect();
    (!of.is_empty()).then(|| of.iter().sum::<f64>() / of.len() as f64)
}

/// A fraction as a percentage with one decimal: `12.3%`.
pub(super) fn pct(fraction: f64) -> String {
    format!("{}%", format_fixed(100.0 * fraction, 1))
}

/// A published percentage: `12.3%`.
pub(super) fn pct_printed(percent: f64) -> String {
    format!("{}%", format_fixed(percent, 1))
}

/// Per (model, dataset), first appearance first; within it, Article, CN, NC.
pub(super) fn zhou_findings(matches: &[ZhouMatch]) -> Vec<Finding> {
    let mut scopes: Vec<(&str, &str)> = Vec::new();
    for m in matches {
        if !scopes.contains(&(m.model, m.dataset)) {
            scopes.push((m.model, m.dataset));
        }
    }
    let mut findings = Vec::new();
    for (model, dataset) in scopes {
        let mut here: Vec<&ZhouMatch> = matches.iter().filter(|m| m.model == model && m.dataset == dataset).collect();
        here.sort_by_key(|m| m.manipulation as usize);
        for m in here {
            findings.extend(beats_frequency_finding(m));
            findings.extend(far_from_faithful_finding(m));
            if m.manipulation == ZhouDataset::Nc {
                findings.extend(noncorr_parity_finding(m));
            }
        }
    }
    findings
}

/// "Better than random, albeit barely": more Attr% on the correlating articles
/// than their share of the tokens (what spreading attention evenly scores).
pub(super) fn beats_frequency_finding(m: &ZhouMatch) -> Option<Finding> {
    let row = m.row(ZhouRegion::Correlating)?;
    let c = m.correlating;
    let statement = format!(
        "{}: attention puts more than the word frequency on the correlating articles, as in the paper (published {} on {} of the words)",
        m.name(),
        pct_printed(row.attr_pct),
        pct_printed(row.frequency_pct)
    );
    let (holds, evidence) = match c.share {
        Some(share) => (
            Some(c.value > share),
            format!(
                "ours {} on {} of the tokens ({} points) over {} seed(s)",
                pct(c.value),
                pct(share),
                signed(100.0 * (c.value - share), 1),
                c.runs
            ),
        ),
        None => (None, format!("ours {}, but our cells carry no region share (`region_share`)", pct(c.value))),
    };
    Some(Finding { statement, holds, evidence }.resting_on(c.verified))
}

/// "Attention weights cannot be readily and reliably interpreted as attributions":
/// Attr% on the correlating articles stays under [`FAITHFUL_ATTR_BAR`] although the
/// paper's models are over 97% accurate.
pub(super) fn far_from_faithful_finding(m: &ZhouMatch) -> Option<Finding> {
    let row = m.row(ZhouRegion::Correlating)?;
    let c = m.correlating;
    let statement = format!(
        "{}: attention is far from a faithful attribution: under {} on the correlating articles, where a faithful attribution of a model that relies on them puts nearly 100% (published {} ± {}, models over {} accurate)",
        m.name(),
        pct(FAITHFUL_ATTR_BAR),
        pct_printed(row.attr_pct),
        pct_printed(row.attr_sd_pct),
        pct(ZHOU_MODEL_ACCURACY)
    );
    let accuracy = match m.accuracy {
        Some(a) if a < ZHOU_MODEL_ACCURACY => format!(
            "our models' accuracy on the manipulated test set is {}, below the paper's {}: they may not rely on the articles alone, so low Attr% proves less",
            pct(a),
            pct(ZHOU_MODEL_ACCURACY)
        ),
        Some(a) => format!("our models' accuracy on the manipulated test set is {}", pct(a)),
        None => "no verification of ours gives the models' accuracy".into(),
    };
    Some(
        Finding {
            statement,
            holds: Some(c.value < FAITHFUL_ATTR_BAR),
            evidence: format!("ours {} over {} seed(s); {accuracy}", pct(c.value), c.runs),
        }
        .resting_on(c.verified),
    )
}

/// NC: "the model sometimes assigns higher than random weights on non-correlating
/// articles, especially for the NC dataset": attr-noncorr ≥ [`NONCORR_PARITY`] × attr.
pub(super) fn noncorr_parity_finding(m: &ZhouMatch) -> Option<Finding> {
    let (corr_row, non_row) = (m.row(ZhouRegion::Correlating)?, m.row(ZhouRegion::NonCorrelating)?);
    let c = m.correlating;
    let statement = format!(
        "{}: attention gives the non-correlating articles about as much as the correlating ones (at least {} times as much), as in the paper (published {} vs {})",
        m.name(),
        format_fixed(NONCORR_PARITY, 1),
        pct_printed(non_row.attr_pct),
        pct_printed(corr_row.attr_pct)
    );
    let Some(n) = m.non_correlating else {
        return Some(Finding {
            statement,
            holds: None,
            evidence: format!("we have no `attr-noncorr` for {} here", m.method),
        });
    };
    let ratio = if c.value > 0.0 { format!("ratio {}", format_fixed(n.value / c.value, 2)) } else { "no ratio".into() };
    Some(
        Finding {
            statement,
            holds: Some(n.value >= NONCORR_PARITY * c.value),
            evidence: format!("ours {} vs {} ({ratio}) over {} seed(s)", pct(n.value), pct(c.value), c.runs),
        }
        .resting_on(c.verified && n.verified),
    )
}

pub(super) fn zhou_summary(
    compared: &[ComparedCell],
    unmatched_published: usize,
    unmatched_ours: usize,
) -> Vec<String> {
    let mut out = vec![format!(
        "{} of our cells compared; {unmatched_published} published (dataset, region) rows have no cell of ours; {unmatched_ours} of our `attr` / `attr-noncorr` cells on the article manipulations (other methods than attention, or an architecture without a published row) have no published number.",
        compared.len()
    )];
    if !compared.is_empty() {
        let n = compared.len();
        let within_sd = compared.iter().filter(|c| c.published_sd.is_some_and(|sd| c.difference().abs() <= sd)).count();
        let mut line = format!(
            "Attr%: {within_sd} of {n} cells ({}) within one published standard deviation of the published mean",
            percent(within_sd, n)
        );
        let with_interval: Vec<bool> = compared.iter().filter_map(|c| c.within_interval()).collect();
        if !with_interval.is_empty() {
            let inside = with_interval.iter().filter(|b| **b).count();
            line.push_str(&format!("; published inside our 95% interval in {inside} of {}", with_interval.len()));
        }
        out.push(format!("{line}."));
    }
    out.push(
        "Zhou et al. manipulate BeerAdvocate reviews, which this grid does not have: each of our datasets is compared with theirs, manipulation by manipulation (article = `articles`, cn = `articles-cn`, nc = `articles-nc`). Attention is `attn` on the BiLSTM (the paper's model is a BiLSTM with attention), `attn-last` (else `attn-all`) on BERT."
            .into(),
    );
    out.push(
        "Attr% in percent, seeds averaged; `attr-other` = 100% − attr − attr-noncorr per seed (the seeds with both), then averaged. `published_sd` is the paper's standard deviation over its 11 runs; `region_share` is our region's share of the tokens, beside the paper's word frequency (`published_frequency`)."
            .into(),
    );
    out.extend(unverified_line(compared));
    out
}
