//! What a model cell's model learnt from: a planted shortcut, or the task itself.

use std::fmt;

use super::ShortcutKind;

/// The regime of a model cell. Shortcut cells have a ground truth (the planted
/// tokens) and a verify step; natural cells (a grid without `[shortcuts]`)
/// have neither, and are explained on the dataset's own test set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Regime {
    Shortcut(ShortcutKind),
    Natural,
}

impl Regime {
    /// The `shortcut` column of every table: the kind's name, or `natural`.
    pub fn name(self) -> &'static str {
        match self {
            Regime::Shortcut(kind) => kind.name(),
            Regime::Natural => "natural",
        }
    }

    /// Whether its test examples carry non-correlating look-alikes of G.
    pub fn has_distractors(self) -> bool {
        matches!(self, Regime::Shortcut(kind) if kind.has_distractors())
    }
}

impl fmt::Display for Regime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Regime {
    type Err = super::ParseShortcutKindError;

    /// The names [`Regime::name`] writes: a kind's, or `natural`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "natural" => Ok(Regime::Natural),
            kind => kind.parse().map(Regime::Shortcut),
        }
    }
}

impl<'de> serde::Deserialize<'de> for Regime {
    /// Reads what [`serde::Serialize`] writes, so `report_data.json` files
    /// written when the regime was a plain string read the same.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

impl serde::Serialize for Regime {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_regime_reads_back_from_its_name() {
        let all = ShortcutKind::ALL.into_iter().map(Regime::Shortcut).chain([Regime::Natural]);
        for regime in all {
            assert_eq!(regime.name().parse::<Regime>().unwrap(), regime);
            let json = serde_json::to_string(&regime).unwrap();
            assert_eq!(json, format!("\"{}\"", regime.name()));
            assert_eq!(serde_json::from_str::<Regime>(&json).unwrap(), regime);
        }
        assert!("nope".parse::<Regime>().is_err());
        assert!(serde_json::from_str::<Regime>("\"nope\"").is_err());
    }

    #[test]
    fn a_natural_cell_is_named_apart_from_every_shortcut_kind() {
        assert_eq!(Regime::Shortcut(ShortcutKind::Op).name(), "op");
        assert_eq!(Regime::Natural.to_string(), "natural");
        assert!("natural".parse::<ShortcutKind>().is_err());
        assert!(Regime::Shortcut(ShortcutKind::ArticlesCn).has_distractors());
        assert!(!Regime::Natural.has_distractors());
    }
}
