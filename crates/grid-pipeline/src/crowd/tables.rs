//! Lu et al.'s layouts for an imported study: accuracy p_jk per k with the
//! score s_j, each with its rank in brackets (their Tables 3, 4 and, on
//! misclassified examples, 8–9), and Flips / Aids (their Table 7). Every
//! title says when the answers are simulated.

use std::fmt::Write as _;

use std::collections::{BTreeMap, HashMap};

use super::import::{CellScores, Imported};
use super::study::{Study, Subset, TaskKind};

/// Competition ranks (1 = highest; equal values share a rank, the next rank
/// skips), as Lu et al. print them.
pub fn ranks(values: &[Option<f64>]) -> Vec<Option<usize>> {
    values.iter().map(|v| v.map(|v| 1 + values.iter().flatten().filter(|&&o| o > v + 1e-12).count())).collect()
}

fn who(imported: &Imported) -> &'static str {
    if imported.simulated { "simulated annotators" } else { "people" }
}

/// Table 3/4: `method | k words … | Score`, percentages with ranks.
pub fn accuracy_markdown(imported: &Imported, cell: &CellScores) -> String {
    let ks: Vec<usize> = cell.methods.first().map(|m| m.accuracy.iter().map(|&(k, _)| k).collect()).unwrap_or_default();
    let on = match imported.subset {
        Subset::All => "(Lu et al., Tables 3–4)",
        Subset::Correct => "on examples the model classifies correctly (Lu et al., Tables 3–4)",
        Subset::Misclassified => "on examples the model misclassifies (Lu et al., Tables 8–9)",
    };
    let mut out = format!("## {}: accuracy of {} from each method's top-k words {on}\n\n", cell.cell, who(imported));
    let mut header = "| method |".to_string();
    let mut rule = "| --- |".to_string();
    for k in &ks {
        let _ = write!(header, " {k} words |");
        rule.push_str(" ---: |");
    }
    header.push_str(" Score | Flips | Aids | examples |");
    rule.push_str(" ---: | ---: | ---: | ---: |");
    let _ = writeln!(out, "{header}\n{rule}");
    let column_ranks: Vec<Vec<Option<usize>>> =
        (0..ks.len()).map(|i| ranks(&cell.methods.iter().map(|m| Some(m.accuracy[i].1)).collect::<Vec<_>>())).collect();
    let score_ranks = ranks(&cell.methods.iter().map(|m| m.score).collect::<Vec<_>>());
    for (j, m) in cell.methods.iter().enumerate() {
        let mut row = format!("| {} |", m.method);
        for (i, &(_, p)) in m.accuracy.iter().enumerate() {
            let _ = write!(row, " {:.0} ({}) |", 100.0 * p, column_ranks[i][j].unwrap_or(0));
        }
        match (m.score, score_ranks[j]) {
            (Some(s), Some(r)) => {
                let _ = write!(row, " {:.1} ({r}) |", 100.0 * s);
            }
            _ => row.push_str(" — |"),
        }
        let _ = writeln!(row, " {} | {} | {} |", m.flips, m.aids, m.examples);
        out.push_str(&row);
    }
    out.push_str(
        "\nAccuracy p_jk (%): the share of examples whose answers' strict majority is the true label; \
         Score s_j (%) = Σ_k w_k p_jk, smaller k weighing more. Flips: right with some k, wrong with a \
         larger one; Aids: neither flipping nor right at every k. Ranks in brackets.\n",
    );
    out
}

/// What one (example, method) showed per k: (k, text, recognised), ascending k.
type Shown<'a> = Vec<(usize, &'a str, bool)>;

/// Lu et al.'s Table 6 for a cell: for a few examples (those that flip
/// first), what each k showed and whether the answers' majority was right.
pub fn examples_markdown(study: &Study, imported: &Imported, cell: &str, limit: usize) -> String {
    let results: HashMap<&str, bool> = imported.tasks.iter().map(|t| (t.task.as_str(), t.correct)).collect();
    // (example, method) → [(k, text, correct)], ascending k.
    let mut rows: BTreeMap<(usize, &str), Shown> = BTreeMap::new();
    let mut labels: HashMap<usize, u32> = HashMap::new();
    for task in study.salience_tasks() {
        let TaskKind::Salience { cell: c, example, method, k } = &task.kind else { continue };
        if c != cell {
            continue;
        }
        let correct = results.get(task.id.as_str()).copied().unwrap_or(false);
        rows.entry((*example, method.as_str())).or_default().push((*k, task.text.as_str(), correct));
        labels.insert(*example, task.label);
    }
    let flips = |ks: &[(usize, &str, bool)]| ks.windows(2).any(|w| w[0].2 && !w[1].2);
    let mut chosen: Vec<(&(usize, &str), &Shown)> = rows.iter().filter(|(_, ks)| flips(ks)).collect();
    chosen.extend(rows.iter().filter(|(_, ks)| !flips(ks)));
    let mut out = format!("## {cell}: what people saw, example by example (Lu et al., Table 6)\n\n");
    for ((example, method), ks) in chosen.into_iter().take(limit) {
        let label = labels.get(example).and_then(|&l| study.labels.get(l as usize)).map_or("?", String::as_str);
        let _ = writeln!(out, "Example {example}, {method} (true label: {label}):\n");
        out.push_str("| k | words shown | recognised |\n| ---: | --- | --- |\n");
        let mut sorted = ks.clone();
        sorted.sort_by_key(|&(k, ..)| k);
        for (k, text, correct) in sorted {
            let _ = writeln!(out, "| {k} | {} | {} |", text.replace('|', "\\|"), if correct { "✓" } else { "✗" });
        }
        out.push('\n');
    }
    out
}

/// The same numbers as CSV, one row per method.
pub fn accuracy_csv(cell: &CellScores) -> String {
    let ks: Vec<usize> = cell.methods.first().map(|m| m.accuracy.iter().map(|&(k, _)| k).collect()).unwrap_or_default();
    let mut out = "cell,method".to_string();
    for k in &ks {
        let _ = write!(out, ",top{k}");
    }
    out.push_str(",score,flips,aids,examples\n");
    for m in &cell.methods {
        let _ = write!(out, "{},{}", cell.cell, m.method);
        for &(_, p) in &m.accuracy {
            let _ = write!(out, ",{:.4}", 100.0 * p);
        }
        let score = m.score.map(|s| format!("{:.4}", 100.0 * s)).unwrap_or_default();
        let _ = writeln!(out, ",{score},{},{},{}", m.flips, m.aids, m.examples);
    }
    out
}

/// Attention checks per worker.
pub fn workers_markdown(imported: &Imported) -> String {
    let mut out = format!("## Workers: attention checks ({})\n\n", who(imported));
    out.push_str("| worker | tasks answered | checks failed / seen | excluded |\n| --- | ---: | ---: | --- |\n");
    for w in &imported.workers {
        let _ = writeln!(
            out,
            "| {} | {} | {} / {} | {} |",
            w.worker,
            w.answered,
            w.checks_failed,
            w.checks_seen,
            if w.excluded { "yes" } else { "no" }
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crowd::score::MethodScore;

    #[test]
    fn competition_ranks() {
        assert_eq!(
            ranks(&[Some(0.81), Some(0.74), Some(0.81), None, Some(0.28)]),
            [Some(1), Some(3), Some(1), None, Some(4)]
        );
    }

    #[test]
    fn the_table_reads_like_lus() {
        let method = |name: &str, p5, p10, score| MethodScore {
            method: name.into(),
            accuracy: vec![(5, p5), (10, p10)],
            score,
            flips: 1,
            aids: 2,
            examples: 4,
        };
        let cell = CellScores {
            cell: "sst2/natural/lstm".into(),
            methods: vec![method("gxil", 0.75, 0.5, Some(0.6)), method("random", 0.25, 0.5, None)],
        };
        let imported = Imported {
            grid: "g".into(),
            subset: Default::default(),
            tasks: vec![],
            simulated: true,
            answers: 0,
            workers: vec![],
            cells: vec![cell.clone()],
            warnings: vec![],
        };
        let md = accuracy_markdown(&imported, &cell);
        assert!(md.contains("simulated annotators"), "{md}");
        assert!(md.contains("| gxil | 75 (1) | 50 (1) | 60.0 (1) | 1 | 2 | 4 |"), "{md}");
        assert!(md.contains("| random | 25 (2) | 50 (1) | — | 1 | 2 | 4 |"), "{md}");
        let csv = accuracy_csv(&cell);
        assert!(csv.starts_with("cell,method,top5,top10,score,flips,aids,examples\n"), "{csv}");
        assert!(csv.contains("sst2/natural/lstm,random,25.0000,50.0000,,1,2,4"), "{csv}");
    }

    #[test]
    fn table_6_shows_a_flipping_example_first_and_misclassified_studies_say_so() {
        use crate::crowd::import::TaskResult;
        use crate::crowd::study::{Study, Task, VERSION};
        let task = |id: &str, example, k, text: &str| Task {
            id: id.into(),
            kind: TaskKind::Salience { cell: "c".into(), example, method: "ig".into(), k },
            text: text.into(),
            label: 1,
        };
        let study = Study {
            version: VERSION,
            grid: "g".into(),
            seed: 0,
            ks: vec![5, 10],
            answers_per_task: 1,
            labels: vec!["negative".into(), "positive".into()],
            methods: vec!["ig".into()],
            subset: Subset::Misclassified,
            tasks: vec![
                task("a5", 0, 5, "… fine …"),
                task("a10", 0, 10, "… fine | dull …"),
                task("b5", 1, 5, "great …"),
                task("b10", 1, 10, "great film"),
            ],
            batches: vec![],
        };
        let result = |task: &str, correct| TaskResult { task: task.into(), correct, answers: 1 };
        let imported = Imported {
            grid: "g".into(),
            subset: Subset::Misclassified,
            simulated: false,
            answers: 4,
            workers: vec![],
            cells: vec![],
            tasks: vec![result("a5", false), result("a10", true), result("b5", true), result("b10", false)],
            warnings: vec![],
        };
        let md = examples_markdown(&study, &imported, "c", 1);
        assert!(md.contains("Example 1, ig (true label: positive)"), "the flipping one first: {md}");
        assert!(md.contains("| 5 | great … | ✓ |\n| 10 | great film | ✗ |"), "{md}");
        assert!(!md.contains("Example 0"), "{md}");
        assert!(examples_markdown(&study, &imported, "c", 2).contains("| 10 | … fine \\| dull … | ✓ |"));
        let cell = CellScores { cell: "c".into(), methods: vec![] };
        assert!(
            accuracy_markdown(&imported, &cell).contains("on examples the model misclassifies (Lu et al., Tables 8–9)")
        );
    }
}
