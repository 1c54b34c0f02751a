//! Zhou et al. 2022's text tables for the article manipulations (PROTOCOL §2):
//! where each method's salience lands, beside where it would land by chance.
//!
//! | stem | paper | rows × columns |
//! |---|---|---|
//! | `zhou_table1_<model>` | Table 1 | (dataset, manipulation, method) × Attr% on correlating articles, non-correlating articles, other words, each `mean (± sd over seeds) / share of tokens` |
//! | `zhou_accuracy` | §6's accuracies | (model, dataset, manipulation) × the reassignment's bound and the verification accuracies |
//!
//! A method that spreads salience evenly scores each region's share of the
//! tokens, so the number after the slash is the bar to beat, as in the paper.

use polars::prelude::*;

use super::paper::{align, failed_notes, mean, string_frame};
use super::tables::{FAILED_MARK, first_appearance, format_fixed, mean_and_sd};
use super::{CellResult, DisplayTable, VerificationRow};
use grid_methods::metrics::Metric;
use grid_methods::salience::Method;
use grid_methods::shortcut::Regime;

/// Whether a cell's shortcut is one of the article manipulations.
fn is_article(shortcut: Regime) -> bool {
    matches!(shortcut, Regime::Shortcut(kind) if kind.article_layout().is_some())
}

/// Whether the manipulation has non-correlating articles (CN, NC).
fn has_non_correlating(shortcut: Regime) -> bool {
    shortcut.has_distractors()
}

/// Attr% on the other words, `1 − attr − attr-noncorr`, per seed of
/// `correlating`, with whether both parts' models passed verification. Where
/// the manipulation has non-correlating articles (`split`) a seed counts only
/// with both parts; without them it is `1 − attr`.
pub(super) fn other_words(
    correlating: &[&CellResult],
    non_correlating: &[&CellResult],
    split: bool,
) -> Vec<(f64, bool)> {
    correlating
        .iter()
        .filter_map(|c| {
            let (n, verified) = if split {
                let d = non_correlating.iter().find(|d| d.key.seed == c.key.seed)?;
                (d.value, d.verified)
            } else {
                (0.0, true)
            };
            Some((1.0 - c.value - n, c.verified && verified))
        })
        .collect()
}

/// `12.0% ± 8.4% / 3.8%` as Zhou et al. print it.
fn attr_cell(values: &[f64], share: Option<f64>) -> Option<String> {
    let (m, sd) = mean_and_sd(values)?;
    let mut text = format!("{}%", format_fixed(100.0 * m, 1));
    if let Some(sd) = sd {
        text.push_str(&format!(" ± {}%", format_fixed(100.0 * sd, 1)));
    }
    if let Some(share) = share {
        text.push_str(&format!(" / {}%", format_fixed(100.0 * share, 1)));
    }
    Some(text)
}

/// The per-seed cells of one (model, dataset, manipulation, method, metric),
/// in seed order.
fn seeds_of<'a>(cells: &'a [CellResult], key: &RowKey, metric: Metric) -> Vec<&'a CellResult> {
    let mut of: Vec<&CellResult> = cells
        .iter()
        .filter(|c| {
            c.key.model == key.model
                && c.key.dataset == key.dataset
                && c.key.shortcut == key.shortcut
                && c.method == key.method
                && c.metric == metric
                && c.value.is_finite()
        })
        .collect();
    of.sort_by_key(|c| c.key.seed);
    of
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct RowKey {
    model: String,
    dataset: String,
    shortcut: Regime,
    method: Method,
}

fn share_of(cells: &[&CellResult]) -> Option<f64> {
    let shares: Option<Vec<f64>> = cells.iter().map(|c| c.region_share).collect();
    mean(shares?.into_iter())
}

/// Zhou et al. Table 1, one per model, every method of the grid as a row.
pub fn attribution_tables(cells: &[CellResult]) -> PolarsResult<Vec<DisplayTable>> {
    let attr: Vec<&CellResult> =
        cells.iter().filter(|c| c.metric == Metric::AttrShare && is_article(c.key.shortcut)).collect();
    let mut out = Vec::new();
    for model in first_appearance(attr.iter().map(|c| c.key.model.clone())) {
        let keys = first_appearance(attr.iter().filter(|c| c.key.model == model).map(|c| RowKey {
            model: c.key.model.clone(),
            dataset: c.key.dataset.clone(),
            shortcut: c.key.shortcut,
            method: c.method,
        }));
        let rows: Vec<Vec<Option<String>>> = keys
            .iter()
            .map(|key| {
                let correlating = seeds_of(cells, key, Metric::AttrShare);
                let non_correlating = seeds_of(cells, key, Metric::AttrNonCorrelating);
                let split = has_non_correlating(key.shortcut);
                let other: Vec<f64> =
                    other_words(&correlating, &non_correlating, split).into_iter().map(|(v, _)| v).collect();
                let (corr_share, non_share) = (share_of(&correlating), share_of(&non_correlating));
                let other_share = if split {
                    corr_share.zip(non_share).map(|(c, n)| 1.0 - c - n)
                } else {
                    corr_share.map(|c| 1.0 - c)
                };
                let values = |of: &[&CellResult]| of.iter().map(|c| c.value).collect::<Vec<f64>>();
                let failed = correlating.iter().chain(&non_correlating).any(|c| !c.verified);
                let mark = |text: Option<String>| text.map(|t| if failed { t + FAILED_MARK } else { t });
                vec![
                    Some(key.dataset.clone()),
                    Some(key.shortcut.to_string()),
                    Some(key.method.to_string()),
                    mark(attr_cell(&values(&correlating), corr_share)),
                    if split { mark(attr_cell(&values(&non_correlating), non_share)) } else { Some("NA".into()) },
                    mark(attr_cell(&other, other_share)),
                ]
            })
            .collect();
        let header: Vec<String> =
            ["dataset", "manipulation", "method", "corr. articles", "non-corr. articles", "other words"]
                .map(String::from)
                .to_vec();
        let mut notes = vec![
            "Attr% = the share of |salience| on the region: mean (± sd over seeds) / the region's share of the \
             tokens, which is what spreading salience evenly scores. A faithful method puts nearly everything on \
             the correlating articles and nothing on the non-correlating ones."
                .to_string(),
        ];
        notes.extend(failed_notes(&rows));
        out.push(DisplayTable {
            stem: format!("zhou_table1_{model}"),
            title: format!("Attr% on the article manipulations, model {model} (Zhou et al. Table 1)"),
            frame: string_frame(&header, &rows)?,
            align: align(3, 3),
            notes,
        });
    }
    Ok(out)
}

/// The accuracies behind Zhou et al.'s sanity check, per manipulated model:
/// only an accuracy well above the bound proves the model reads the articles.
pub fn accuracy_table(rows: &[VerificationRow]) -> PolarsResult<Option<DisplayTable>> {
    let rows: Vec<&VerificationRow> = rows.iter().filter(|r| is_article(r.key.shortcut)).collect();
    if rows.is_empty() {
        return Ok(None);
    }
    let groups = first_appearance(rows.iter().map(|r| (r.key.model.clone(), r.key.dataset.clone(), r.key.shortcut)));
    let pct = |v: Option<f64>| v.map(|v| format_fixed(v * 100.0, 1));
    let table: Vec<Vec<Option<String>>> = groups
        .iter()
        .map(|(model, dataset, shortcut)| {
            let of: Vec<&&VerificationRow> = rows
                .iter()
                .filter(|r| &r.key.model == model && &r.key.dataset == dataset && &r.key.shortcut == shortcut)
                .collect();
            let avg = |f: &dyn Fn(&VerificationRow) -> f64| pct(mean(of.iter().map(|r| f(r))));
            let passed = of.iter().filter(|r| r.verification.passed).count();
            vec![
                Some(model.clone()),
                Some(dataset.clone()),
                Some(shortcut.to_string()),
                pct(mean(of.iter().filter_map(|r| r.verification.accuracy_without_shortcut))),
                avg(&|r| r.verification.shortcut_model_on_synthetic),
                avg(&|r| r.verification.shortcut_model_on_flip),
                avg(&|r| r.verification.original_model_on_synthetic),
                avg(&|r| r.verification.shortcut_model_on_original),
                Some(format!("{passed}/{}", of.len())),
            ]
        })
        .collect();
    let header: Vec<String> = [
        "model",
        "dataset",
        "manipulation",
        "bound without articles %",
        "manipulated test %",
        "flipped articles %",
        "original model on manipulated %",
        "on original test %",
        "verified",
    ]
    .map(String::from)
    .to_vec();
    Ok(Some(DisplayTable {
        stem: "zhou_accuracy".into(),
        title: "Article manipulations: accuracy against the label-reassignment bound (Zhou et al. §3, §6)".into(),
        notes: vec![
            "The bound is max(r, 1 − r): what a model that ignores the articles can expect. \"Flipped articles\" \
             write the opposite of the original label; a model reading the articles follows them. Means over seeds."
                .into(),
        ],
        frame: string_frame(&header, &table)?,
        align: align(3, 6),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(shortcut: &str, method: &str, metric: &str, seed: u64, value: f64, share: f64) -> CellResult {
        use crate::testing::CellChanges;
        CellResult {
            region_share: Some(share),
            ..crate::testing::cell("lstm", shortcut, method, metric, value).seed(seed)
        }
    }

    fn strings(df: &DataFrame, name: &str) -> Vec<Option<String>> {
        df.column(name).unwrap().str().unwrap().iter().map(|v| v.map(String::from)).collect()
    }

    #[test]
    fn table1_by_hand() {
        let cells = vec![
            // Whole-text articles, one seed: 60% on 8% of the tokens.
            cell("articles", "attn", "attr", 1, 0.6, 0.08),
            // CN over two seeds: corr 0.5 / 0.7, non-corr 0.1 / 0.1.
            cell("articles-cn", "attn", "attr", 1, 0.5, 0.04),
            cell("articles-cn", "attn", "attr-noncorr", 1, 0.1, 0.03),
            cell("articles-cn", "attn", "attr", 2, 0.7, 0.04),
            cell("articles-cn", "attn", "attr-noncorr", 2, 0.1, 0.05),
            // Bastings' shortcuts are not Zhou's table.
            cell("st", "attn", "attr", 1, 0.9, 0.05),
        ];
        let tables = attribution_tables(&cells).unwrap();
        assert_eq!(tables.len(), 1);
        let t = &tables[0];
        assert_eq!(t.stem, "zhou_table1_lstm");
        assert_eq!(strings(&t.frame, "manipulation"), [Some("articles".into()), Some("articles-cn".into())]);
        assert_eq!(
            strings(&t.frame, "corr. articles"),
            [Some("60.0% / 8.0%".into()), Some("60.0% ± 14.1% / 4.0%".into())]
        );
        assert_eq!(strings(&t.frame, "non-corr. articles"), [Some("NA".into()), Some("10.0% ± 0.0% / 4.0%".into())]);
        // Other words: 1 − 0.6 = 40% on 92%; CN 0.4 / 0.2 → 30% ± 14.1% on 1 − 0.04 − 0.04.
        assert_eq!(
            strings(&t.frame, "other words"),
            [Some("40.0% / 92.0%".into()), Some("30.0% ± 14.1% / 92.0%".into())]
        );
    }

    #[test]
    fn cn_without_attr_noncorr_leaves_both_other_parts_blank() {
        // Without the non-correlating part, "other words" is unknown, not 1 − attr.
        let t = attribution_tables(&[cell("articles-cn", "attn", "attr", 1, 0.5, 0.04)]).unwrap().remove(0);
        assert_eq!(strings(&t.frame, "corr. articles"), [Some("50.0% / 4.0%".into())]);
        assert_eq!(strings(&t.frame, "non-corr. articles"), [None]);
        assert_eq!(strings(&t.frame, "other words"), [None]);
    }

    #[test]
    fn failed_models_are_marked() {
        let mut c = cell("articles-nc", "gradl-l2", "attr", 1, 0.2, 0.1);
        c.verified = false;
        let t = attribution_tables(&[c]).unwrap().remove(0);
        assert!(strings(&t.frame, "corr. articles")[0].as_deref().unwrap().ends_with(FAILED_MARK));
        assert_eq!(t.notes.len(), 2);
    }

    #[test]
    fn accuracy_table_keeps_article_rows() {
        let row = |shortcut: &str, bound: Option<f64>, synthetic: f64, passed: bool| VerificationRow {
            key: crate::CellKey {
                model: "lstm".into(),
                architecture: grid_core::model::Architecture::Bilstm,
                dataset: "sst2".into(),
                shortcut: shortcut.parse().unwrap(),
                seed: 1,
            },
            verification: grid_methods::shortcut::verification::Verification {
                shortcut_model_on_synthetic: synthetic,
                original_model_on_synthetic: 0.5,
                shortcut_model_on_flip: 0.98,
                shortcut_model_on_original: 0.55,
                original_model_on_original: 0.8,
                shortcut_model_macro_f1: None,
                original_model_macro_f1: None,
                accuracy_without_shortcut: bound,
                passed,
                close_calls: Vec::new(),
                failures: vec![],
                synthetic_examples: 0,
                synthetic_truncated: 0,
                original_examples: 0,
                shortcut_model_on_synthetic_interval: None,
                original_drop_interval: None,
            },
            min_synthetic_accuracy: None,
            max_original_drop: None,
        };
        let rows = [
            row("st", None, 1.0, true),
            row("articles", Some(0.5), 0.995, true),
            row("articles-cn", Some(0.7), 0.9, false),
        ];
        let t = accuracy_table(&rows).unwrap().unwrap();
        assert_eq!(strings(&t.frame, "manipulation"), [Some("articles".into()), Some("articles-cn".into())]);
        assert_eq!(strings(&t.frame, "bound without articles %"), [Some("50.0".into()), Some("70.0".into())]);
        assert_eq!(strings(&t.frame, "manipulated test %"), [Some("99.5".into()), Some("90.0".into())]);
        assert_eq!(strings(&t.frame, "verified"), [Some("1/1".into()), Some("0/1".into())]);
        assert!(accuracy_table(&rows[..1]).unwrap().is_none());
    }
}
