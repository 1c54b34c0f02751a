//! Validated scalar types: a grid file's values are checked as the TOML is
//! parsed, so that an error carries the span of the offending value, and the
//! code that takes them need not check again.

use serde::{Deserialize, Serialize};

/// A number in [0, 1].
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(try_from = "f64", into = "f64")]
pub struct Share(f64);

impl Share {
    pub fn get(self) -> f64 {
        self.0
    }
    pub fn new(v: f64) -> Self {
        Self::try_from(v).expect("a share in [0, 1]")
    }
}

impl TryFrom<f64> for Share {
    type Error = String;
    fn try_from(v: f64) -> Result<Self, String> {
        if (0.0..=1.0).contains(&v) { Ok(Share(v)) } else { Err(format!("expected a number in [0, 1], got {v}")) }
    }
}

impl From<Share> for f64 {
    fn from(s: Share) -> f64 {
        s.0
    }
}

/// A whole number ≥ 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "i64", into = "u64")]
pub struct Positive(usize);

impl Positive {
    pub fn get(self) -> usize {
        self.0
    }
    pub fn new(v: usize) -> Self {
        assert!(v >= 1, "Positive::new(0)");
        Positive(v)
    }
}

impl TryFrom<i64> for Positive {
    type Error = String;
    fn try_from(v: i64) -> Result<Self, String> {
        if v >= 1 { Ok(Positive(v as usize)) } else { Err(format!("expected a whole number ≥ 1, got {v}")) }
    }
}

impl From<Positive> for u64 {
    fn from(p: Positive) -> u64 {
        p.0 as u64
    }
}
