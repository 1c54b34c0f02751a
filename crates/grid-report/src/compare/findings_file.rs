//! Reference files that list a paper's findings by id, for the papers that
//! plot their results and state them in words (Zhou et al.'s §5 and §7):
//! `<id column>,section,statement`, one finding a line. Each kind of file is
//! an enum of the findings it may name ([`NamedFinding`]).

use super::CompareError;
use super::published::{CsvFile, Seen};

/// A paper's findings, by the ids a reference file names them with.
pub trait NamedFinding: Copy + 'static {
    /// Every finding, in the order reports list them.
    const KNOWN: &'static [Self];
    fn id(self) -> &'static str;
}

/// A line of the reference file: the finding and the paper's words.
#[derive(Debug, Clone, PartialEq)]
pub struct FindingRow<F> {
    pub line: usize,
    pub finding: F,
    /// Where the paper states it (`5.2`, `7.1`, …).
    pub section: String,
    pub statement: String,
}

impl CsvFile<'_> {
    /// The rows of a findings file whose first column is `column`; an
    /// unknown or repeated id is an error naming its line.
    pub(super) fn finding_rows<F: NamedFinding>(
        &self,
        column: &'static str,
    ) -> Result<Vec<FindingRow<F>>, CompareError> {
        let mut out = Vec::new();
        let mut seen = Seen::default();
        for record in self.rows {
            let id = self.text(record, 0, column)?;
            let finding = F::KNOWN.iter().copied().find(|f| f.id() == id).ok_or_else(|| {
                let known: Vec<&str> = F::KNOWN.iter().map(|f| f.id()).collect();
                self.field_error(record, column, format!("unknown `{id}`; known: {}", known.join(", ")))
            })?;
            seen.check(self.path, record.line, format!("finding `{id}`"))?;
            out.push(FindingRow {
                line: record.line,
                finding,
                section: self.text(record, 1, "section")?.to_string(),
                statement: self.text(record, 2, "statement")?.to_string(),
            });
        }
        Ok(out)
    }
}
