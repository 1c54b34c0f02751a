//! Bastings et al. 2022: precision and rank per method config (Tables 10/11)
//! with their findings, and the source models' accuracy (Table 1).

use super::published::{PaperArch, PrecisionRankRow, SourceAccuracyRow};
use super::render::signed;
use super::{
    ACCURACY_TOLERANCE_PP, Aliases, ComparedCell, ComparedMetric, DROP_TOLERANCE_PP, Finding, MIN_SPEARMAN_METHODS,
    NEAR, OurCell, OurMetric, Outcome, Regimes, SPEARMAN_AGREES, merge_seeds,
};
use crate::tables::format_fixed;
use crate::{CellResult, VerificationRow};
use grid_core::model::Architecture;
use grid_methods::metrics::Metric;
use grid_methods::metrics::agreement::rank_correlation as spearman;
use grid_methods::salience::{GradientMethod, Method};
use grid_methods::shortcut::{Regime, ShortcutKind};

// --- Bastings et al.: precision and rank -------------------------------------

pub(super) fn compare_precision_rank(rows: &[PrecisionRankRow], cells: &[CellResult], aliases: &Aliases) -> Outcome {
    let ours = merge_seeds(cells, |m| matches!(m, Metric::Precision | Metric::Rank));
    let mut matched = vec![false; rows.len()];
    let mut compared = Vec::new();
    let mut unmatched_ours = 0;
    for cell in &ours {
        let arch = PaperArch::of_architecture(cell.architecture);
        let hits: Vec<usize> = (0..rows.len())
            .filter(|&i| {
                let r = &rows[i];
                Some(r.arch) == arch
                    && r.shortcut == cell.shortcut
                    && r.method == cell.method
                    && aliases.matches(&cell.dataset, &r.dataset)
                    && r.value(cell.metric).is_some()
            })
            .collect();
        if hits.is_empty() {
            unmatched_ours += 1;
        }
        for i in hits {
            matched[i] = true;
            let r = &rows[i];
            let published = r.value(cell.metric).unwrap_or(f64::NAN); // `hits` has a value
            compared.push(cell.compared(&r.dataset, Some(&r.printed_as), published));
        }
    }
    let unmatched_published = matched.iter().filter(|m| !**m).count();
    let precision: Vec<&ComparedCell> =
        compared.iter().filter(|c| c.metric == ComparedMetric::of(Metric::Precision)).collect();
    let mut findings = Vec::new();
    for site in sites(&precision) {
        findings.extend(best_method_finding(&site));
        findings.extend(spearman_finding(&site));
    }
    findings.extend(beats_random_findings(&precision, &ours, rows));
    let summary = precision_rank_summary(&compared, unmatched_published, unmatched_ours);
    Outcome { cells: compared, findings, summary, unmatched_published, unmatched_ours }
}

/// The compared precision cells of one (model, dataset, published dataset, shortcut).
pub(super) struct Site<'a> {
    pub(super) cells: Vec<&'a ComparedCell>,
}

impl Site<'_> {
    pub(super) fn name(&self) -> String {
        let c = self.cells[0];
        let alias =
            if c.published_dataset == c.dataset { String::new() } else { format!(" (as {})", c.published_dataset) };
        format!("{} on {}:{}{alias}", c.model, c.dataset, c.shortcut)
    }

    pub(super) fn any_unverified(&self) -> bool {
        self.cells.iter().any(|c| !c.verified)
    }
}

/// Groups cells by (model, dataset, published dataset, shortcut), first appearance first.
pub(super) fn sites<'a>(cells: &[&'a ComparedCell]) -> Vec<Site<'a>> {
    let mut out: Vec<Site<'a>> = Vec::new();
    for &c in cells {
        let same = |s: &&mut Site<'a>| {
            let f = s.cells[0];
            f.model == c.model
                && f.dataset == c.dataset
                && f.published_dataset == c.published_dataset
                && f.shortcut == c.shortcut
        };
        match out.iter_mut().find(same) {
            Some(site) => site.cells.push(c),
            None => out.push(Site { cells: vec![c] }),
        }
    }
    out
}

pub(super) fn method_of(c: &ComparedCell) -> String {
    c.method.map(|m| m.to_string()).unwrap_or_default()
}

/// `0.97 [0.93, 1.00]`
pub(super) fn value_with_interval(c: &ComparedCell) -> String {
    let d = c.metric.decimals();
    match (c.ci_low, c.ci_high) {
        (Some(lo), Some(hi)) => {
            format!("{} [{}, {}]", format_fixed(c.ours, d), format_fixed(lo, d), format_fixed(hi, d))
        }
        _ => format!("{} (no interval)", format_fixed(c.ours, d)),
    }
}

/// Our intervals of `a` and `b` overlap (equal values without intervals count too).
pub(super) fn statistically_tied(a: &ComparedCell, b: &ComparedCell) -> bool {
    match (a.ci_low, a.ci_high, b.ci_low, b.ci_high) {
        (Some(al), Some(ah), Some(bl), Some(bh)) => al <= bh && bl <= ah,
        _ => a.ours == b.ours,
    }
}

/// Finding (1): the paper's best method among the common ones is our best too.
/// Tied with our best (the 95% intervals overlap), it is undecided: the
/// difference lies inside the intervals. Needs two methods to be a question at all.
pub(super) fn best_method_finding(site: &Site) -> Option<Finding> {
    if site.cells.len() < 2 {
        return None;
    }
    let top = site.cells.iter().map(|c| c.published).fold(f64::NEG_INFINITY, f64::max);
    // The paper often prints several 1.00s: any of them may be the one.
    let published_best: Vec<&ComparedCell> = site.cells.iter().copied().filter(|c| c.published == top).collect();
    let our_best = site.cells.iter().copied().fold(site.cells[0], |b, c| if c.ours > b.ours { c } else { b });
    let names: Vec<String> = published_best.iter().map(|c| method_of(c)).collect();
    let statement = format!(
        "{}: the published best method ({}, {}) is also ours",
        site.name(),
        names.join(" = "),
        format_fixed(top, 2)
    );
    let (holds, how) = if published_best.iter().any(|c| std::ptr::eq(*c, our_best)) {
        (Some(true), format!("{} is our best: {}", method_of(our_best), value_with_interval(our_best)))
    } else {
        let tied = published_best.iter().find(|c| statistically_tied(c, our_best));
        let shown = tied.unwrap_or(&published_best[0]);
        let verdict = if tied.is_some() { "intervals overlap: tied, undecided" } else { "intervals do not overlap" };
        let how = format!(
            "our best is {} {}; {} {} ({verdict})",
            method_of(our_best),
            value_with_interval(our_best),
            method_of(shown),
            value_with_interval(shown)
        );
        (if tied.is_some() { None } else { Some(false) }, how)
    };
    Some(Finding { statement, holds, evidence: how }.resting_on(!site.any_unverified()))
}

/// Finding (2): the common methods rank alike (Spearman ρ ≥ [`SPEARMAN_AGREES`]).
pub(super) fn spearman_finding(site: &Site) -> Option<Finding> {
    let n = site.cells.len();
    if n < MIN_SPEARMAN_METHODS {
        return None;
    }
    let ours: Vec<f64> = site.cells.iter().map(|c| c.ours).collect();
    let published: Vec<f64> = site.cells.iter().map(|c| c.published).collect();
    let statement = format!(
        "{}: our precision ranks the {n} common methods as the paper does (Spearman ρ ≥ {SPEARMAN_AGREES})",
        site.name()
    );
    let (holds, evidence) = match spearman(&ours, &published) {
        Some(rho) => (Some(rho >= SPEARMAN_AGREES), format!("ρ = {rho:.2} over {n} methods")),
        None => (None, format!("ρ is undefined: one side gives all {n} methods the same precision")),
    };
    Some(Finding { statement, holds, evidence }.resting_on(!site.any_unverified()))
}

/// The method family a config belongs to (`None` for `random`).
pub(super) fn family(method: Method) -> Option<&'static str> {
    Some(match method {
        Method::Gradient(GradientMethod::Gradient { .. }) => "grad",
        Method::Gradient(GradientMethod::GradientTimesInput { .. }) => "gxi",
        Method::Gradient(GradientMethod::IntegratedGradients { .. }) => "ig",
        Method::SmoothGrad { .. } => "smoothgrad",
        Method::Lime { .. } => "lime",
        Method::KernelShap { .. } => "kernelshap",
        Method::Occlusion { .. } => "occlusion",
        Method::Attention(_) | Method::ScaledAttention => "attention",
        Method::DeepLift { .. } => "deeplift",
        Method::Rationale => "rationale",
        Method::Random => return None,
    })
}

/// Finding (3), per (model, family): the family beats random on average (mean
/// precision margin over `random` on the same dataset and shortcut), in the paper
/// and in ours alike.
pub(super) fn beats_random_findings(
    precision: &[&ComparedCell],
    ours: &[OurCell],
    rows: &[PrecisionRankRow],
) -> Vec<Finding> {
    let mut groups: Vec<(&str, Architecture, &str, Vec<&ComparedCell>)> = Vec::new();
    for &c in precision {
        let Some(fam) = c.method.and_then(family) else { continue };
        match groups.iter_mut().find(|g| g.0 == c.model && g.2 == fam) {
            Some(g) => g.3.push(c),
            None => groups.push((&c.model, c.architecture, fam, vec![c])),
        }
    }
    let randoms: Vec<&OurCell> =
        ours.iter().filter(|c| c.method == Method::Random && c.metric == OurMetric::Grid(Metric::Precision)).collect();
    groups
        .into_iter()
        .map(|(model, arch, fam, cells)| beats_random_finding(model, arch, fam, &cells, &randoms, rows))
        .collect()
}

pub(super) fn beats_random_finding(
    model: &str,
    architecture: Architecture,
    family: &str,
    cells: &[&ComparedCell],
    our_randoms: &[&OurCell],
    rows: &[PrecisionRankRow],
) -> Finding {
    let arch = PaperArch::of_architecture(architecture);
    let mut margins = Vec::new(); // (ours, published)
    let (mut our_random_missing, mut paper_random_missing) = (false, false);
    for c in cells {
        let our_random = our_randoms
            .iter()
            .find(|r| r.model == c.model && r.dataset == c.dataset && c.shortcut.single() == Some(r.shortcut));
        let paper_random = rows
            .iter()
            .find(|r| {
                Some(r.arch) == arch
                    && r.dataset == c.published_dataset
                    && c.shortcut.single() == Some(r.shortcut)
                    && r.method == Method::Random
            })
            .and_then(|r| r.precision);
        our_random_missing |= our_random.is_none();
        paper_random_missing |= paper_random.is_none();
        if let (Some(o), Some(p)) = (our_random, paper_random) {
            margins.push((c.ours - o.value, c.published - p));
        }
    }
    let subject = format!("{model} ({architecture}): {family} methods");
    if margins.is_empty() {
        let missing = match (our_random_missing, paper_random_missing) {
            (true, true) => "neither side has",
            (true, false) => "we have no",
            _ => "the paper prints no",
        };
        return Finding {
            statement: format!("{subject} beat random as often as in the paper"),
            holds: None,
            evidence: format!("{missing} `random` precision beside these {} cell(s)", cells.len()),
        };
    }
    let n = margins.len();
    let ours_mean = margins.iter().map(|m| m.0).sum::<f64>() / n as f64;
    let paper_mean = margins.iter().map(|m| m.1).sum::<f64>() / n as f64;
    let ours_wins = margins.iter().filter(|m| m.0 > 0.0).count();
    let paper_wins = margins.iter().filter(|m| m.1 > 0.0).count();
    let verb = if paper_mean > 0.0 { "beat" } else { "do not beat" };
    Finding {
        statement: format!("{subject} {verb} random on average, as in the paper"),
        holds: Some((ours_mean > 0.0) == (paper_mean > 0.0)),
        evidence: format!(
            "mean precision margin over random: published {}, ours {}, over {n} cell(s) (above random: published {paper_wins}/{n}, ours {ours_wins}/{n})",
            signed(paper_mean, 2),
            signed(ours_mean, 2)
        ),
    }
}

pub(super) fn precision_rank_summary(
    compared: &[ComparedCell],
    unmatched_published: usize,
    unmatched_ours: usize,
) -> Vec<String> {
    let mut out = vec![format!(
        "{} of our cells compared; {unmatched_published} published configs have no cell of ours; {unmatched_ours} of our precision/rank cells have no published number.",
        compared.len()
    )];
    out.extend(closeness_line("Precision", compared, ComparedMetric::of(Metric::Precision), Some(NEAR)));
    out.extend(closeness_line("Mean rank", compared, ComparedMetric::of(Metric::Rank), None));
    out.push(
        "A number the paper printed for a brace group (e.g. `grad{p,l}-l1`) is compared with each config of the group."
            .into(),
    );
    out.extend(unverified_line(compared));
    out
}

/// `Precision: 2 of 5 cells (40%) within 0.10 of the published number; published
/// inside our 95% interval in 1 of 5.` `None` when no cell has `metric`.
pub(super) fn closeness_line(
    label: &str,
    cells: &[ComparedCell],
    metric: ComparedMetric,
    near: Option<f64>,
) -> Option<String> {
    let cells: Vec<&ComparedCell> = cells.iter().filter(|c| c.metric == metric).collect();
    if cells.is_empty() {
        return None;
    }
    let n = cells.len();
    let mut parts = Vec::new();
    if let Some(near) = near {
        let close = cells.iter().filter(|c| c.difference().abs() <= near).count();
        let d = metric.decimals();
        parts.push(format!(
            "{close} of {n} cells ({}) within {} of the published number",
            percent(close, n),
            format_fixed(near, d)
        ));
    } else {
        let mean_abs = cells.iter().map(|c| c.difference().abs()).sum::<f64>() / n as f64;
        parts.push(format!("mean absolute difference {} over {n} cells", format_fixed(mean_abs, metric.decimals())));
    }
    let with_interval: Vec<bool> = cells.iter().filter_map(|c| c.within_interval()).collect();
    if !with_interval.is_empty() {
        let inside = with_interval.iter().filter(|b| **b).count();
        parts.push(format!("published inside our 95% interval in {inside} of {}", with_interval.len()));
    }
    Some(format!("{label}: {}.", parts.join("; ")))
}

pub(super) fn unverified_line(cells: &[ComparedCell]) -> Option<String> {
    let failed = cells.iter().filter(|c| !c.verified).count();
    (failed > 0)
        .then(|| format!("⚠ {failed} compared cells come from models that failed verification (`verified` = no)."))
}

pub(super) fn percent(k: usize, n: usize) -> String {
    format!("{:.0}%", 100.0 * k as f64 / n as f64)
}

// --- Bastings et al.: source-model accuracy ----------------------------------

pub(super) fn compare_source_accuracy(
    rows: &[SourceAccuracyRow],
    verification: &[VerificationRow],
    aliases: &Aliases,
) -> Outcome {
    let mut matched = vec![false; rows.len()];
    let mut compared = Vec::new();
    let mut findings = Vec::new();
    let mut unmatched_ours = 0;
    // The paper's shortcuts are inserted tokens. An article manipulation
    // reassigns the labels, so its models lose the original task by design:
    // no drop of theirs is the paper's.
    let inserted: Vec<VerificationRow> = verification
        .iter()
        .filter(|r| matches!(r.key.shortcut, Regime::Shortcut(kind) if ShortcutKind::INSERTED.contains(&kind)))
        .cloned()
        .collect();
    for group in verification_groups(&inserted) {
        let first = group[0];
        let arch = PaperArch::of_architecture(first.key.architecture);
        let hits: Vec<usize> = (0..rows.len())
            .filter(|&i| Some(rows[i].arch) == arch && aliases.matches(&first.key.dataset, &rows[i].dataset))
            .collect();
        if hits.is_empty() {
            unmatched_ours += 1;
        }
        for i in hits {
            matched[i] = true;
            let (original, drop) = accuracy_cells(&group, &rows[i]);
            findings.push(accuracy_finding(&original));
            findings.push(drop_finding(&drop));
            compared.extend([original, drop]);
        }
    }
    let unmatched_published = matched.iter().filter(|m| !**m).count();
    let mut summary = vec![format!(
        "{} of our numbers compared; {unmatched_published} published (arch, dataset) rows have no verification of ours; {unmatched_ours} of our (model, dataset) verifications have no published row.",
        compared.len()
    )];
    summary.push(
        "Accuracies in percent on the original test set; the drop is the original model's accuracy minus the shortcut model's, averaged over our shortcuts (as the paper averages over its three)."
            .into(),
    );
    summary.extend(unverified_line(&compared));
    Outcome { cells: compared, findings, summary, unmatched_published, unmatched_ours }
}

/// Our verification rows grouped by (model, dataset), first appearance first.
pub(super) fn verification_groups(rows: &[VerificationRow]) -> Vec<Vec<&VerificationRow>> {
    let mut out: Vec<Vec<&VerificationRow>> = Vec::new();
    for r in rows {
        match out.iter_mut().find(|g| g[0].key.model == r.key.model && g[0].key.dataset == r.key.dataset) {
            Some(g) => g.push(r),
            None => out.push(vec![r]),
        }
    }
    out
}

/// The regimes of a (non-empty) group's verifications, each once, in order.
pub(super) fn distinct_shortcuts(group: &[&VerificationRow]) -> Regimes {
    Regimes::of(group[0].key.shortcut, group.iter().map(|r| r.key.shortcut))
}

/// Our original-model accuracy and mean shortcut drop (percent) beside the row's:
/// means over every verification of the (model, dataset), seeds and shortcuts.
pub(super) fn accuracy_cells(group: &[&VerificationRow], row: &SourceAccuracyRow) -> (ComparedCell, ComparedCell) {
    let n = group.len() as f64;
    let original = 100.0 * group.iter().map(|r| r.verification.original_model_on_original).sum::<f64>() / n;
    let drop = 100.0
        * group
            .iter()
            .map(|r| r.verification.original_model_on_original - r.verification.shortcut_model_on_original)
            .sum::<f64>()
        / n;
    let first = group[0];
    let cell = |metric: ComparedMetric, ours: f64, published: f64| ComparedCell {
        model: first.key.model.clone(),
        architecture: first.key.architecture,
        dataset: first.key.dataset.clone(),
        published_dataset: row.dataset.clone(),
        shortcut: distinct_shortcuts(group),
        method: None,
        published_method: None,
        metric,
        runs: group.len() as u32,
        ours,
        ci_low: None,
        ci_high: None,
        published,
        verified: group.iter().all(|r| r.verification.passed),
        published_sd: None,
        share: None,
        published_share: None,
    };
    (
        cell(ComparedMetric::OriginalAccuracy, original, row.original_test_accuracy_pct),
        cell(ComparedMetric::AccuracyDrop, drop, row.mean_drop_with_shortcut_pct),
    )
}

pub(super) fn accuracy_finding(c: &ComparedCell) -> Finding {
    Finding {
        statement: format!(
            "{} on {}: the original model's test accuracy is within {} points of the published {}%",
            c.model,
            c.dataset,
            format_fixed(ACCURACY_TOLERANCE_PP, 1),
            format_fixed(c.published, 1)
        ),
        holds: Some(c.difference().abs() <= ACCURACY_TOLERANCE_PP),
        evidence: format!("ours {}% ({} points)", format_fixed(c.ours, 1), signed(c.difference(), 1)),
    }
}

pub(super) fn drop_finding(c: &ComparedCell) -> Finding {
    Finding {
        statement: format!(
            "{} on {}: the shortcut costs at most {} point(s) more original-test accuracy than the published mean drop of {}",
            c.model,
            c.dataset,
            format_fixed(DROP_TOLERANCE_PP, 1),
            format_fixed(c.published, 1)
        ),
        holds: Some(c.ours <= c.published + DROP_TOLERANCE_PP),
        evidence: format!(
            "our mean drop {} points over {} shortcut model(s) ({})",
            format_fixed(c.ours, 1),
            c.runs,
            c.shortcut
        ),
    }
}
