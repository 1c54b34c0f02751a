//! A finding of a paper checked on our numbers: what every comparison
//! (`compare`), the image findings (`images`) and the ledger report. Its own
//! module, below all of them, so that they need not import each other for it.

/// A claim of the paper, checked on our numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub statement: String,
    /// `None`: undecided (a number is missing on one side, or the finding rests
    /// on a model that failed verification).
    pub holds: Option<bool>,
    pub evidence: String,
}

impl Finding {
    /// The finding as it stands on models of which `verified` says whether all
    /// passed verification: a model that failed leaves it undecided, whatever
    /// the numbers say (which the evidence keeps).
    pub(crate) fn resting_on(mut self, verified: bool) -> Finding {
        if !verified {
            let alone = match self.holds {
                Some(true) => "it would hold",
                Some(false) => "it would fail",
                None => "undecided too",
            };
            self.holds = None;
            self.evidence = format!(
                "{}; undecided: a model it rests on failed verification (on the numbers alone {alone})",
                self.evidence
            );
        }
        self
    }
}
