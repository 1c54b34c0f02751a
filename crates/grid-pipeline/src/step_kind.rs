//! The step kinds: one per pipeline stage, each with the implementation
//! version that goes into its steps' keys.

use serde::{Deserialize, Serialize};

/// The kinds of step, one per pipeline stage: what the cache files a step
/// under (`cache/<kind>/`) and versions its key by ([`grid_cache::Kind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepKind {
    Corpus,
    Synth,
    Train,
    Verify,
    /// A natural model's accuracy and macro-F1 on its test set.
    Evaluate,
    Attribute,
    Erasure,
    Agreement,
    Score,
    Report,
    /// An imported crowd study's answers, scored (`grid crowd import`). No
    /// grid plans it, so it is not in [`StepKind::ALL`]: `grid gc` and the
    /// plan's views leave it alone.
    Crowd,
}

impl StepKind {
    /// Every kind, in pipeline order.
    pub const ALL: [StepKind; 10] = [
        StepKind::Corpus,
        StepKind::Synth,
        StepKind::Train,
        StepKind::Verify,
        StepKind::Evaluate,
        StepKind::Attribute,
        StepKind::Erasure,
        StepKind::Agreement,
        StepKind::Score,
        StepKind::Report,
    ];

    pub fn name(self) -> &'static str {
        match self {
            StepKind::Corpus => "corpus",
            StepKind::Synth => "synth",
            StepKind::Train => "train",
            StepKind::Verify => "verify",
            StepKind::Evaluate => "evaluate",
            StepKind::Attribute => "attribute",
            StepKind::Erasure => "erasure",
            StepKind::Agreement => "agreement",
            StepKind::Score => "score",
            StepKind::Report => "report",
            StepKind::Crowd => "crowd",
        }
    }

    /// Steps that run a model (train, verify, attribute, erasure): minutes to
    /// hours each, and the ones a GPU or a cluster node is for.
    pub fn is_model_step(self) -> bool {
        matches!(
            self,
            StepKind::Train | StepKind::Verify | StepKind::Evaluate | StepKind::Attribute | StepKind::Erasure
        )
    }

    /// Steps that read and shape data (corpus, synth): seconds each, and where
    /// bad data shows, so they run before any model trains.
    pub fn is_data_step(self) -> bool {
        matches!(self, StepKind::Corpus | StepKind::Synth)
    }

    /// Implementation version: part of every key of this kind.
    pub fn version(self) -> u32 {
        match self {
            StepKind::Corpus => 1,
            StepKind::Synth => 1,
            StepKind::Train => 1,
            // 2: synthetic examples whose shortcut truncation cut are left out.
            // 3: macro-F1 on the original test set beside accuracy.
            // 4: 95% intervals and close calls (seconds per step to recompute;
            //    nothing but the report reads a verification).
            StepKind::Verify => 4,
            StepKind::Evaluate => 1,
            // 2: probability targets differentiate through a stable surrogate.
            StepKind::Attribute => 2,
            StepKind::Erasure => 1,
            // 2: punctuation is left out, as Lu et al. do.
            StepKind::Agreement => 2,
            // 2: NS / NC scores carry their means per rationale ratio.
            // 3: Attr% records the region's share of tokens.
            // 4: diagnosticity of NS / NC per rationale ratio.
            StepKind::Score => 4,
            // 2: seeds, erasure, agreement, paper tables, plots and HTML.
            // 3: Zhou et al.'s article tables.
            // 4: report_data.json keeps per-example values (one seed merge).
            StepKind::Report => 4,
            StepKind::Crowd => 1,
        }
    }
}

impl std::fmt::Display for StepKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl grid_cache::Kind for StepKind {
    const ALL: &'static [StepKind] = &StepKind::ALL;

    fn name(self) -> &'static str {
        StepKind::name(self)
    }

    fn version(self) -> u32 {
        StepKind::version(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kind_serialises_as_its_folder_name() {
        for kind in StepKind::ALL.into_iter().chain([StepKind::Crowd]) {
            assert_eq!(serde_json::to_value(kind).unwrap(), serde_json::json!(kind.name()));
            assert_eq!(
                <StepKind as grid_cache::Kind>::named(kind.name()),
                StepKind::ALL.into_iter().find(|k| *k == kind)
            );
        }
    }

    /// The keys of `{"n": 1}` without inputs, as the documented formula gives
    /// them (`sha256` of `{"inputs":[],"kind":…,"params":{"n":1},"version":…}`,
    /// keys sorted, no spaces) with each kind's version at 92c6231, before the
    /// kinds moved here from the cache: caches written before still serve. A
    /// version bump changes its kind's pin, on purpose.
    #[test]
    fn keys_are_those_caches_hold() {
        let pinned = [
            (StepKind::Corpus, "2590176410af93bde391088ff2d15e3a0f99d7d8a2b12d99132bbc7f73b2c446"),
            (StepKind::Synth, "7dca1cf3b2df996d7ae2ab6a2d3e3c37423547a6578489610f70ea6470f3602f"),
            (StepKind::Train, "4c03ead3f39ba02324b74087492bcab9e3fdd6ab4e07649f4081eadadf610979"),
            (StepKind::Verify, "c5b94b57d8ac6cf77d5c1801bd654eb8fbe0d3a2904373c8977ecee87493e09c"),
            (StepKind::Evaluate, "8fedf8905cbb79f756f4bb45b26486b08593beef72531248c498ce9227e25c2a"),
            (StepKind::Attribute, "67e90654abfeaee15bdb0488ab78ef25fb13909406a6974ea113ad43f96bee91"),
            (StepKind::Erasure, "77f070ce84035b53a9e4cb7efd8102609e17bb0bf1fb5a993d84348d14dd627a"),
            (StepKind::Agreement, "0099ee11ab945bc5e9e7e6b06b0b40a5fea78c76d5c5e7495ecba16e80dbbc3e"),
            (StepKind::Score, "3a95cbffe09d5ebb0998d2ee61715a07fcdccc7b4cc9fe03b65d4ef6b89498c0"),
            (StepKind::Report, "f8c860b7ed29a9bddb48d46f5b9893f8548ce4c231db69fab20c1d2fecffcf95"),
            (StepKind::Crowd, "c6ae86ed83b527fa94eada3ac593f7523496a7254372b30eb1da4d75a47cf305"),
        ];
        for (kind, key) in pinned {
            assert_eq!(grid_cache::StepKey::compute(kind, &serde_json::json!({ "n": 1 }), &[]).as_str(), key, "{kind}");
        }
    }
}
