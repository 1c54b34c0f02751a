//! An imported study beside Lu et al.'s published accuracies
//! (`experiments/reference/lu2024_crowd_accuracy.csv`: dataset, method,
//! top5 … top40, score), read by `crowd::csv`. Our method configs map to the
//! paper's methods by family (`igl-zero-100` → "integrated gradient"); a
//! family's best config stands for it. Checked findings: the paper's first
//! method is ours, accuracy rises with k, the families' order agrees, and
//! gradient × input, DeepLift and LIME help no more than random (each scores
//! nearer random than integrated gradients). Simulated annotators (the
//! explained model itself) cannot test that last one: it is about what people
//! make of the highlights, so with them it is undecided, with the numbers.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result, bail, ensure};

use super::import::{CellScores, Imported};
use grid_report::compare::Finding;

/// One published row: a method on a dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct PublishedRow {
    pub dataset: String,
    pub method: String,
    /// Accuracy in percent per k, ascending k.
    pub accuracy: Vec<(usize, f64)>,
    pub score: f64,
}

pub fn read_published(path: &Path) -> Result<Vec<PublishedRow>> {
    let table = super::csv::TextTable::read(path)?;
    let names = table.names();
    let ks: Vec<(String, usize)> = names
        .iter()
        .filter_map(|n| n.strip_prefix("top").and_then(|k| k.parse().ok()).map(|k| (n.clone(), k)))
        .collect();
    for needed in ["dataset", "method", "score"] {
        ensure!(
            names.iter().any(|n| n == needed),
            "{}: no `{needed}` column (it has: {})",
            path.display(),
            names.join(", ")
        );
    }
    ensure!(!ks.is_empty(), "{}: no `topK` columns (top5, top10, …)", path.display());
    let strings = |name: &str| -> Result<Vec<String>> {
        Ok(table.column(&[name])?.into_iter().map(Option::unwrap_or_default).collect())
    };
    let number = |name: &str, row: usize, text: &str| -> Result<f64> {
        match text.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => bail!("{}:{}: column `{name}`: `{text}` is not a number", path.display(), table.line(row)),
        }
    };
    let (datasets, methods, scores) = (strings("dataset")?, strings("method")?, strings("score")?);
    let per_k: Vec<(usize, Vec<String>)> =
        ks.iter().map(|(n, k)| strings(n).map(|v| (*k, v))).collect::<Result<_>>()?;
    let mut rows = Vec::new();
    for row in 0..table.rows() {
        let mut accuracy: Vec<(usize, f64)> = per_k
            .iter()
            .map(|(k, v)| number(&format!("top{k}"), row, &v[row]).map(|p| (*k, p)))
            .collect::<Result<_>>()?;
        accuracy.sort_by_key(|&(k, _)| k);
        rows.push(PublishedRow {
            dataset: datasets[row].to_lowercase(),
            method: methods[row].to_lowercase(),
            accuracy,
            score: number("score", row, &scores[row])?,
        });
    }
    Ok(rows)
}

/// The paper's method for one of our configs.
pub fn family(config: &str) -> Option<&'static str> {
    let c = config.to_lowercase();
    Some(match () {
        _ if c == "random" => "random",
        _ if c.starts_with("grad") => "vanilla gradient",
        _ if c.starts_with("gxi") => "inputxgrad",
        _ if c.starts_with("ig") => "integrated gradient",
        _ if c.starts_with("deeplift") => "deeplift",
        _ if c.starts_with("lime") => "lime",
        _ if c.starts_with("attn") || c.starts_with("attention") => "all attention",
        _ => return None,
    })
}

#[derive(Debug, Clone, PartialEq)]
pub struct CellComparison {
    pub cell: String,
    pub published_dataset: String,
    /// (family, our best config, our score %, the paper's score %).
    pub rows: Vec<(String, String, Option<f64>, f64)>,
    pub findings: Vec<Finding>,
}

/// Each cell of `imported` beside the published dataset it is compared with
/// (its own dataset name, or the one `aliases` maps it to).
pub fn compare(imported: &Imported, published: &[PublishedRow], aliases: &[(String, String)]) -> Vec<CellComparison> {
    imported.cells.iter().filter_map(|cell| compare_cell(cell, published, aliases, imported.simulated)).collect()
}

/// The paper's methods it finds no more helpful than random.
const NO_BETTER_THAN_RANDOM: [&str; 3] = ["inputxgrad", "deeplift", "lime"];

fn compare_cell(
    cell: &CellScores,
    published: &[PublishedRow],
    aliases: &[(String, String)],
    simulated: bool,
) -> Option<CellComparison> {
    let dataset = cell.cell.split('/').next().unwrap_or_default();
    let theirs = aliases.iter().find(|(ours, _)| ours == dataset).map(|(_, p)| p.as_str()).unwrap_or(dataset);
    let paper: Vec<&PublishedRow> = published.iter().filter(|r| r.dataset == theirs.to_lowercase()).collect();
    if paper.is_empty() {
        return None;
    }
    // A family's best-scoring config stands for it.
    let mut best: BTreeMap<&str, (&str, Option<f64>)> = BTreeMap::new();
    for m in &cell.methods {
        let Some(f) = family(&m.method) else { continue };
        let better = match best.get(f) {
            Some((_, Some(s))) => m.score.is_some_and(|x| x > *s),
            _ => true,
        };
        if better {
            best.insert(f, (&m.method, m.score));
        }
    }
    let mut rows: Vec<(String, String, Option<f64>, f64)> = Vec::new();
    for row in &paper {
        if let Some((config, score)) = best.get(row.method.as_str()) {
            rows.push((row.method.clone(), config.to_string(), score.map(|s| 100.0 * s), row.score));
        }
    }
    let mut findings = Vec::new();
    // 1. The paper's first method.
    let paper_first = paper.iter().max_by(|a, b| a.score.total_cmp(&b.score)).map(|r| r.method.clone());
    let ours_first = rows
        .iter()
        .filter_map(|(f, c, s, _)| s.map(|s| (f, c, s)))
        .max_by(|a, b| a.2.total_cmp(&b.2))
        .map(|(f, c, s)| (f.clone(), c.clone(), s));
    findings.push(match (&paper_first, &ours_first) {
        (Some(p), Some((f, c, s))) if rows.iter().any(|(family, ..)| family == p) => Finding {
            statement: format!("the paper's best method ({p}) is ours"),
            holds: Some(p == f),
            evidence: format!("ours: {f} ({c}, score {s:.1})"),
        },
        (Some(p), _) => Finding {
            statement: format!("the paper's best method ({p}) is not in this study"),
            holds: None,
            evidence: String::new(),
        },
        _ => Finding { statement: "no scores to rank".into(), holds: None, evidence: String::new() },
    });
    // 2. Accuracy rises with k (mean over methods, smallest k vs largest).
    let rises = |rows: Vec<&Vec<(usize, f64)>>| -> Option<(f64, f64)> {
        let first: Vec<f64> = rows.iter().filter_map(|a| a.first().map(|x| x.1)).collect();
        let last: Vec<f64> = rows.iter().filter_map(|a| a.last().map(|x| x.1)).collect();
        (!first.is_empty()).then(|| (mean(&first), mean(&last)))
    };
    let ours_k: Vec<Vec<(usize, f64)>> =
        cell.methods.iter().map(|m| m.accuracy.iter().map(|&(k, p)| (k, 100.0 * p)).collect()).collect();
    let (ks_ours, ks_paper) = (
        ours_k.first().map(|a| (a[0].0, a[a.len() - 1].0)),
        paper.first().map(|r| (r.accuracy[0].0, r.accuracy[r.accuracy.len() - 1].0)),
    );
    if let (Some((o1, o2)), Some((p1, p2)), Some((ko1, ko2)), Some((kp1, kp2))) =
        (rises(ours_k.iter().collect()), rises(paper.iter().map(|r| &r.accuracy).collect()), ks_ours, ks_paper)
    {
        findings.push(Finding {
            statement: format!(
                "mean accuracy over methods {} with more words",
                if p2 > p1 { "rises" } else { "does not rise" }
            ),
            holds: Some((o2 > o1) == (p2 > p1)),
            evidence: format!(
                "ours {o1:.0}% at k = {ko1}, {o2:.0}% at k = {ko2}; paper {p1:.0}% at k = {kp1}, {p2:.0}% at k = {kp2}"
            ),
        });
    }
    // 3. The order of the common families.
    let pairs: Vec<(f32, f32)> = rows.iter().filter_map(|(_, _, s, p)| s.map(|s| (s as f32, *p as f32))).collect();
    if pairs.len() >= 3 {
        let (a, b): (Vec<f32>, Vec<f32>) = pairs.iter().copied().unzip();
        let rho = grid_methods::metrics::agreement::spearman(&a, &b, |_| true);
        findings.push(match rho {
            Some(rho) => Finding {
                statement: format!(
                    "our scores order the {} common methods as the paper's (Spearman ρ ≥ 0.5)",
                    pairs.len()
                ),
                holds: Some(rho >= 0.5),
                evidence: format!("ρ = {rho:.2}"),
            },
            None => Finding {
                statement: "the method order is undefined (tied scores)".into(),
                holds: None,
                evidence: String::new(),
            },
        });
    }
    // 4. Gradient × input, DeepLift and LIME no more helpful than random.
    if let Some(finding) = no_better_than_random(&rows, simulated) {
        findings.push(finding);
    }
    Some(CellComparison { cell: cell.cell.clone(), published_dataset: theirs.to_string(), rows, findings })
}

/// Finding 4 on `rows` (family, config, our score, the paper's): each of
/// [`NO_BETTER_THAN_RANDOM`] that both sides scored lies nearer random's score
/// than integrated gradients'. `None` without random, IG and one of them.
fn no_better_than_random(rows: &[(String, String, Option<f64>, f64)], simulated: bool) -> Option<Finding> {
    let score = |family: &str| rows.iter().find(|r| r.0 == family);
    let (random, ig) = (score("random")?, score("integrated gradient")?);
    let (our_random, our_ig) = (random.2?, ig.2?);
    let near_random = |s: f64, r: f64, ig: f64| (s - r).abs() < (ig - s).abs();
    let mut ours = Vec::new();
    let mut holds = true;
    for family in NO_BETTER_THAN_RANDOM {
        let Some((_, _, Some(s), p)) = score(family) else { continue };
        holds &= near_random(*s, our_random, our_ig);
        ours.push(format!("{family} {s:.1} (paper {p:.1})"));
    }
    if ours.is_empty() {
        return None;
    }
    let numbers = format!(
        "ours: {}; random {our_random:.1} (paper {:.1}), integrated gradient {our_ig:.1} (paper {:.1})",
        ours.join(", "),
        random.3,
        ig.3
    );
    let statement = "gradient × input, DeepLift and LIME help no more than random (nearer random's score than integrated gradients')".to_string();
    Some(if simulated {
        let verdict = if holds { "agrees with it" } else { "contradicts it" };
        Finding {
            statement,
            holds: None,
            evidence: format!(
                "undecided: the simulated crowd {verdict}, but a simulated annotator is the explained model \
                 reading its own evidence, which a faithful method's top words carry, while Lu et al. measure what \
                 people make of them; run the study with people (`grid crowd export` / `import`) — {numbers}"
            ),
        }
    } else {
        Finding { statement, holds: Some(holds), evidence: numbers }
    })
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len().max(1) as f64
}

/// Writes the comparison (`render_markdown`) as `compare_lu2024.md` in `dir`.
pub fn write_markdown(text: &str, dir: &Path) -> Result<std::path::PathBuf> {
    let file = dir.join("compare_lu2024.md");
    std::fs::write(&file, text).with_context(|| format!("writing {}", file.display()))?;
    Ok(file)
}

pub fn render_markdown(imported: &Imported, comparisons: &[CellComparison], path: &Path) -> String {
    let who = if imported.simulated { "simulated annotators" } else { "people" };
    let mut out = format!("## Compared with {} (Lu et al. 2024, Tables 3–4)\n\n", path.display());
    if comparisons.is_empty() {
        out.push_str("No cell's dataset is in the published file (use --compare-as OURS=PUBLISHED).\n");
    }
    for c in comparisons {
        let _ = writeln!(out, "### {} ({who}) vs the paper's {}\n", c.cell, c.published_dataset);
        for f in &c.findings {
            let mark = grid_report::compare::mark(f.holds);
            match f.evidence.as_str() {
                "" => writeln!(out, "- {mark} {}", f.statement),
                evidence => writeln!(out, "- {mark} {} — {evidence}", f.statement),
            }
            .ok();
        }
        out.push_str("\n| method | our config | our score | published score |\n| --- | --- | ---: | ---: |\n");
        for (family, config, ours, theirs) in &c.rows {
            let ours = ours.map(|s| format!("{s:.1}")).unwrap_or_else(|| "—".into());
            let _ = writeln!(out, "| {family} | {config} | {ours} | {theirs:.1} |");
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crowd::score::MethodScore;

    fn method(name: &str, p: [f64; 2], score: f64) -> MethodScore {
        MethodScore {
            method: name.into(),
            accuracy: vec![(5, p[0]), (40, p[1])],
            score: Some(score),
            flips: 0,
            aids: 0,
            examples: 10,
        }
    }

    #[test]
    fn reads_the_reference_file() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/reference/lu2024_crowd_accuracy.csv");
        let rows = read_published(&path).unwrap();
        let ig = rows.iter().find(|r| r.dataset == "imdb" && r.method == "integrated gradient").unwrap();
        assert_eq!(ig.accuracy, [(5, 74.0), (10, 81.0), (20, 87.0), (30, 80.0), (40, 87.0)]);
        assert_eq!(ig.score, 82.3);
    }

    /// Lu et al.'s gradient × input, DeepLift and LIME at random's level: the
    /// simulated crowd contradicts it, and says why it cannot test it.
    #[test]
    fn no_better_than_random_is_undecided_with_simulated_annotators() {
        let row = |family: &str, ours: f64, paper: f64| (family.to_string(), String::new(), Some(ours), paper);
        let rows = vec![
            row("random", 67.4, 42.9),
            row("integrated gradient", 82.0, 82.3),
            row("inputxgrad", 81.0, 52.1),
            row("deeplift", 81.3, 53.5),
        ];
        let simulated = no_better_than_random(&rows, true).unwrap();
        assert_eq!(simulated.holds, None);
        assert!(
            simulated.evidence.contains("undecided: the simulated crowd contradicts it")
                && simulated.evidence.contains("inputxgrad 81.0 (paper 52.1), deeplift 81.3 (paper 53.5)"),
            "{}",
            simulated.evidence
        );
        assert_eq!(no_better_than_random(&rows, false).unwrap().holds, Some(false), "people's answers decide it");
        let at_random =
            vec![row("random", 42.9, 42.9), row("integrated gradient", 82.3, 82.3), row("lime", 39.0, 39.0)];
        assert_eq!(no_better_than_random(&at_random, false).unwrap().holds, Some(true));
        assert_eq!(no_better_than_random(&rows[..2], false), None, "none of the three was in the study");
    }

    #[test]
    fn families_best_configs_and_findings() {
        let published = vec![
            PublishedRow {
                dataset: "imdb".into(),
                method: "integrated gradient".into(),
                accuracy: vec![(5, 74.0), (40, 87.0)],
                score: 82.3,
            },
            PublishedRow {
                dataset: "imdb".into(),
                method: "vanilla gradient".into(),
                accuracy: vec![(5, 75.0), (40, 85.0)],
                score: 79.5,
            },
            PublishedRow {
                dataset: "imdb".into(),
                method: "random".into(),
                accuracy: vec![(5, 25.0), (40, 54.0)],
                score: 42.9,
            },
            PublishedRow {
                dataset: "imdb".into(),
                method: "lime".into(),
                accuracy: vec![(5, 30.0), (40, 44.0)],
                score: 39.0,
            },
        ];
        let cell = CellScores {
            cell: "sst2/natural/lstm".into(),
            methods: vec![
                method("igl-zero-100", [0.6, 0.9], 0.70),
                method("igl-pad-100", [0.7, 0.9], 0.80),
                method("gradl-l2", [0.5, 0.8], 0.60),
                method("random", [0.2, 0.5], 0.30),
                method("limeunk-100", [0.3, 0.4], 0.35),
            ],
        };
        let imported = Imported {
            grid: "g".into(),
            subset: Default::default(),
            tasks: vec![],
            simulated: false,
            answers: 0,
            workers: vec![],
            cells: vec![cell],
            warnings: vec![],
        };
        assert!(compare(&imported, &published, &[]).is_empty(), "sst2 is not in the file");
        let [c] = &compare(&imported, &published, &[("sst2".into(), "IMDB".into())])[..] else { panic!() };
        assert_eq!(c.rows[0], ("integrated gradient".into(), "igl-pad-100".into(), Some(80.0), 82.3));
        assert!(c.findings.iter().all(|f| f.holds == Some(true)), "{:?}", c.findings);
        let md = render_markdown(&imported, std::slice::from_ref(c), Path::new("lu.csv"));
        assert!(md.contains("✓ the paper's best method (integrated gradient) is ours"), "{md}");
        assert!(md.contains("| integrated gradient | igl-pad-100 | 80.0 | 82.3 |"), "{md}");
        // random and LIME swap places (ours 30 < 35, the paper 42.9 > 39.0): ρ = 1 − 6·2/(4·15).
        assert!(md.contains("ρ = 0.80"), "{md}");
    }
}
