//! How batch shapes are rounded up before they reach a model: the padding
//! policy a backend chooses (exact on a CPU, buckets on a GPU, which compiles
//! kernels per shape) and `model::shapes` applies. A value of its own, below
//! both the backends and the models.

use std::fmt;
use std::str::FromStr;

/// How batch shapes are rounded up before they reach a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Buckets {
    /// Sequence lengths are padded up to a multiple of this (1: exact lengths).
    pub length_multiple: usize,
    /// Batches are padded up to the next power of two rows.
    pub pad_rows: bool,
}

impl Buckets {
    /// Exact shapes: the cheapest on CPU, where a kernel costs nothing to compile
    /// and a padded position costs a real multiply.
    pub const EXACT: Buckets = Buckets { length_multiple: 1, pad_rows: false };
    /// Lengths to multiples of 16 (the tensor-core tile) and rows to powers of two.
    pub const GPU: Buckets = Buckets { length_multiple: 16, pad_rows: true };

    /// The padded length of a batch whose longest sequence has `time` tokens,
    /// never beyond `limit` (a transformer's position table) nor below `time`.
    pub fn time(self, time: usize, limit: Option<usize>) -> usize {
        let multiple = self.length_multiple.max(1);
        let padded = time.max(1).div_ceil(multiple) * multiple;
        match limit {
            Some(limit) => padded.min(limit.max(time)),
            None => padded,
        }
    }

    /// The padded number of rows of a batch of `rows` examples.
    pub fn rows(self, rows: usize) -> usize {
        if self.pad_rows { rows.max(1).next_power_of_two() } else { rows }
    }

    pub fn is_exact(self) -> bool {
        self == Buckets::EXACT
    }
}

impl fmt::Display for Buckets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.length_multiple, self.pad_rows) {
            (1, false) => f.write_str("exact"),
            (m, true) => write!(f, "{m}"),
            (m, false) => write!(f, "{m}/rows-exact"),
        }
    }
}

impl FromStr for Buckets {
    type Err = String;
    /// `exact`, or a length multiple `N` (rows padded to powers of two).
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "exact" => Ok(Buckets::EXACT),
            _ => match s.parse::<usize>() {
                Ok(n) if n >= 1 => Ok(Buckets { length_multiple: n, pad_rows: true }),
                _ => Err(format!("unknown shape buckets `{s}`; use `exact` or a length multiple such as 16")),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_round_up_to_the_multiple_within_the_limit() {
        let b = Buckets::GPU;
        assert_eq!(b.time(1, None), 16);
        assert_eq!(b.time(16, None), 16);
        assert_eq!(b.time(17, None), 32);
        assert_eq!(b.time(17, Some(20)), 20, "never past the position table");
        assert_eq!(b.time(30, Some(20)), 30, "never below the batch itself");
        assert_eq!(Buckets::EXACT.time(17, None), 17);
        assert_eq!(b.rows(1), 1);
        assert_eq!(b.rows(3), 4);
        assert_eq!(b.rows(32), 32);
        assert_eq!(b.rows(33), 64);
        assert_eq!(Buckets::EXACT.rows(33), 33);
    }

    #[test]
    fn buckets_parse_and_print() {
        assert_eq!("exact".parse(), Ok(Buckets::EXACT));
        assert_eq!("16".parse(), Ok(Buckets::GPU));
        assert!("0".parse::<Buckets>().is_err());
        assert!("wide".parse::<Buckets>().is_err());
        assert_eq!(Buckets::GPU.to_string(), "16");
        assert_eq!(Buckets::EXACT.to_string(), "exact");
    }
}
