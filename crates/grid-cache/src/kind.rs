//! What the cache needs to know of a step kind: the folder its steps live
//! in and the implementation version that goes into their keys. The kinds
//! themselves are the pipeline's (`grid_pipeline::step_kind::StepKind`): the
//! cache stores any kind it is given and reads back only the ones it knows.

use std::fmt::{Debug, Display};
use std::hash::Hash;

use serde::Serialize;
use serde::de::DeserializeOwned;

/// A kind of step. Its serialised form is its [`Kind::name`] (manifests,
/// failure records and remote records carry it), a folder name: lowercase
/// ASCII letters.
pub trait Kind:
    Copy + Eq + Ord + Hash + Debug + Display + Serialize + DeserializeOwned + Send + Sync + 'static
{
    /// The kinds whose folders the cache walks (`gc`, leftovers, resume
    /// folders), in pipeline order. A kind left out is never collected.
    const ALL: &'static [Self];

    /// The folder of this kind's steps, `cache/<name>/`.
    fn name(self) -> &'static str;

    /// Implementation version: part of every key of this kind; bumped when
    /// a kind's semantics change.
    fn version(self) -> u32;

    /// The kind in [`Kind::ALL`] whose folder is `name`.
    fn named(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|kind| kind.name() == name)
    }
}

/// Kinds for the cache's own tests, named as the pipeline's are.
#[cfg(test)]
pub(crate) mod testing {
    use serde::{Deserialize, Serialize};

    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum StepKind {
        Corpus,
        Train,
        Verify,
        Attribute,
        Score,
    }

    impl super::Kind for StepKind {
        const ALL: &'static [StepKind] =
            &[StepKind::Corpus, StepKind::Train, StepKind::Verify, StepKind::Attribute, StepKind::Score];

        fn name(self) -> &'static str {
            match self {
                StepKind::Corpus => "corpus",
                StepKind::Train => "train",
                StepKind::Verify => "verify",
                StepKind::Attribute => "attribute",
                StepKind::Score => "score",
            }
        }

        fn version(self) -> u32 {
            1
        }
    }

    impl std::fmt::Display for StepKind {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(super::Kind::name(*self))
        }
    }
}
