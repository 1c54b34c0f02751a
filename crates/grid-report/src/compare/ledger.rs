//! The findings ledger: every finding the comparisons check, over one grid or
//! several, per paper: holds, fails or undecided, with the numbers it rests
//! on. A finding on a model that failed verification is undecided, never
//! holds ([`Finding::resting_on`]); the ledger only gathers and counts, so what
//! it says is what `--compare` says, cell by cell.

use super::{Comparison, Finding, PublishedKind};

/// The papers whose findings the ledger lists, in its order. Lu et al.'s
/// rest on a crowd study's answers (`grid ledger --crowd`), the others on a
/// grid's report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Paper {
    Bastings,
    Zhou,
    Zhao,
    Lu,
}

impl Paper {
    pub fn of(kind: PublishedKind) -> Paper {
        match kind {
            PublishedKind::PrecisionRank | PublishedKind::SourceAccuracy => Paper::Bastings,
            PublishedKind::ZhouAttr | PublishedKind::ZhouRationale | PublishedKind::ZhouImages => Paper::Zhou,
            PublishedKind::Diagnosticity => Paper::Zhao,
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Paper::Bastings => "Bastings et al. (2022), Will you find these shortcuts?",
            Paper::Zhou => "Zhou et al. (2022), Do feature attribution methods correctly attribute features?",
            Paper::Zhao => {
                "Zhao & Aletras (2023), Incorporating attribution importance for improving faithfulness metrics"
            }
            Paper::Lu => "Lu et al. (2024), saliency methods judged by what a crowd guesses from their top words",
        }
    }
}

/// One finding, where it was checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub paper: Paper,
    /// The grid whose cells it was checked on.
    pub grid: String,
    /// The published file it comes from.
    pub source: String,
    pub finding: Finding,
}

/// Every finding of the comparisons added, and what could not be compared.
#[derive(Debug, Clone, Default)]
pub struct Ledger {
    pub entries: Vec<Entry>,
    /// One sentence per grid or file left out, and why.
    pub notes: Vec<String>,
}

/// How many findings hold, fail, are undecided.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub holds: usize,
    pub fails: usize,
    pub undecided: usize,
}

impl Ledger {
    /// Adds the findings of `comparison`, checked on the cells of `grid`.
    pub fn add(&mut self, grid: &str, comparison: &Comparison) {
        self.add_findings(Paper::of(comparison.kind), grid, &comparison.source, comparison.findings.iter().cloned());
    }

    /// Adds `paper`'s `findings`, checked on `grid` against `source`.
    pub fn add_findings(
        &mut self,
        paper: Paper,
        grid: &str,
        source: &str,
        findings: impl IntoIterator<Item = Finding>,
    ) {
        self.entries.extend(findings.into_iter().map(|finding| Entry {
            paper,
            grid: grid.to_string(),
            source: source.to_string(),
            finding,
        }));
    }

    pub fn tally(&self, paper: Paper) -> Tally {
        let mut tally = Tally::default();
        for entry in self.entries.iter().filter(|e| e.paper == paper) {
            match entry.finding.holds {
                Some(true) => tally.holds += 1,
                Some(false) => tally.fails += 1,
                None => tally.undecided += 1,
            }
        }
        tally
    }
}

/// The ledger as Markdown: per paper, its tally, then every finding (✓ holds,
/// ✗ fails, ? undecided) with the grid and the numbers it rests on.
pub fn render_ledger(ledger: &Ledger) -> String {
    let mut out = String::from("# Findings ledger\n\n");
    let mut papers: Vec<Paper> = ledger.entries.iter().map(|e| e.paper).collect();
    papers.sort();
    papers.dedup();
    if papers.is_empty() {
        out.push_str("No finding could be checked: no grid's cells match a published number.\n");
    }
    for paper in papers {
        let t = ledger.tally(paper);
        out.push_str(&format!(
            "## {}\n\n{} finding(s): {} hold, {} fail, {} undecided\n\n",
            paper.title(),
            t.holds + t.fails + t.undecided,
            t.holds,
            t.fails,
            t.undecided
        ));
        out.push_str("| | finding | grid | the numbers |\n|---|---|---|---|\n");
        for e in ledger.entries.iter().filter(|e| e.paper == paper) {
            out.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                super::render::mark(e.finding.holds),
                cell(&e.finding.statement),
                cell(&e.grid),
                cell(&e.finding.evidence)
            ));
        }
        out.push('\n');
    }
    if !ledger.notes.is_empty() {
        out.push_str("## Not compared\n\n");
        for note in &ledger.notes {
            out.push_str(&format!("- {note}\n"));
        }
    }
    out
}

/// Text safe inside a Markdown table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comparison(kind: PublishedKind, findings: Vec<Finding>) -> Comparison {
        Comparison {
            kind,
            source: "published.csv".into(),
            summary: Vec::new(),
            cells: Vec::new(),
            table: polars::prelude::DataFrame::empty(),
            findings,
            unmatched_published: 0,
            unmatched_ours: 0,
        }
    }

    fn finding(statement: &str, holds: Option<bool>) -> Finding {
        Finding { statement: statement.into(), holds, evidence: format!("numbers of {statement}") }
    }

    #[test]
    fn the_ledger_counts_per_paper_and_a_finding_on_a_failed_model_is_undecided() {
        let mut ledger = Ledger::default();
        let failed_model = finding("gxi wins on op", Some(true)).resting_on(false);
        assert_eq!(failed_model.holds, None, "never holds on a model that failed verification");
        assert!(failed_model.evidence.ends_with("(on the numbers alone it would hold)"), "{failed_model:?}");
        ledger.add(
            "sst2_lstm",
            &comparison(
                PublishedKind::PrecisionRank,
                vec![finding("gxi wins on st", Some(true)), finding("ρ ≥ 0.5 | tic", Some(false)), failed_model],
            ),
        );
        ledger
            .add("sst2_natural", &comparison(PublishedKind::Diagnosticity, vec![finding("soft > hard", Some(false))]));
        ledger.notes.push("imdb_lstm: not run yet".into());
        ledger.add_findings(Paper::Lu, "sst2_minilm", "lu.csv", [finding("ig is best", None)]);
        assert_eq!(ledger.tally(Paper::Bastings), Tally { holds: 1, fails: 1, undecided: 1 });
        assert_eq!(ledger.tally(Paper::Lu), Tally { holds: 0, fails: 0, undecided: 1 });
        assert_eq!(ledger.tally(Paper::Zhao), Tally { holds: 0, fails: 1, undecided: 0 });
        let text = render_ledger(&ledger);
        let bastings = text.find("## Bastings et al.").unwrap();
        let zhao = text.find("## Zhao & Aletras").unwrap();
        let lu = text.find("## Lu et al.").unwrap();
        assert!(bastings < zhao && zhao < lu, "papers in a fixed order:\n{text}");
        assert!(text.contains("3 finding(s): 1 hold, 1 fail, 1 undecided"), "{text}");
        assert!(text.contains("| ✓ | gxi wins on st | sst2_lstm | numbers of gxi wins on st |"), "{text}");
        assert!(text.contains("| ✗ | ρ ≥ 0.5 \\| tic | sst2_lstm |"), "a `|` is escaped:\n{text}");
        assert!(text.contains("| ? | gxi wins on op |"), "{text}");
        assert!(text.ends_with("## Not compared\n\n- imdb_lstm: not run yet\n"), "{text}");
    }
}
