//! Shortcut synthesis (Bastings et al. 2022, §2.2–2.3; PROTOCOL §1), and
//! Zhou et al. 2022's article manipulations ([`articles`]; PROTOCOL §2), which
//! give a second kind of ground truth from the same corpus; and Zhou et al.'s
//! five image manipulations ([`image`]), the same idea on pixels.
//!
//! A shortcut is a pattern of *new* tokens that decides the label on its own.
//! Training a model on data that contains it, and checking that the model
//! really uses it, gives a ground truth for salience methods: on the synthetic
//! test set the inserted tokens are, by construction, what the model's decision
//! rests on, so a faithful method must rank them first.
//!
//! # The three rules
//!
//! | kind  | inserted                                   | label                      | `|G|` |
//! |-------|--------------------------------------------|----------------------------|-------|
//! | `st`  | one indicator                              | that token's class         | 1     |
//! | `tic` | one indicator, and `context`               | the indicator's class      | 2     |
//! | `op`  | two different indicators                   | class of the *first* one   | 2     |
//!
//! With C classes there are C indicators (`#0` … `#C−1` by default; binary
//! grids call them `zero` and `one`). For `tic` and `op` the two tokens are at
//! most `max_distance` words apart and in random order (for `op` the order *is*
//! the label; with C > 2 the second indicator is drawn from the other classes).
//! A binary grid draws exactly the random numbers it drew before classes were
//! general, so its data and cache keys are unchanged.
//!
//! # Why the lone tokens
//!
//! If every occurrence of `#1` in training came with the `tic` context token,
//! `#1` alone would be as predictive as the pair, and a model could learn a
//! single-token shortcut instead of the two-token one the ground truth assumes.
//! So for `tic` and `op` a further share of *original* examples receives one
//! rule token on its own with the label left unchanged: a lone token then
//! carries no information, and only the full pattern does. `st` has no lone
//! share because its single token is the whole rule.
//!
//! # Why the tokens must be new
//!
//! If `#1` already occurred in the data with label 0, the rule would not decide
//! the label and the ground truth would be wrong. [`synthesize`] refuses such
//! data ([`ShortcutError::TokenAlreadyInData`]). Only whole whitespace words are
//! checked: a sub-word tokeniser that also matches the token *inside* a word
//! (e.g. `#10`) is the caller's concern.
//!
//! # Determinism
//!
//! Every random choice comes from a ChaCha8 stream derived from `seed`, the
//! split and the purpose (lone tokens, synthetic copies, shuffling, test
//! labels, test insertion, flip insertion). Streams never share draws, so
//! resizing one split, or changing `lone_share`, leaves the choices made for
//! the others untouched, and cached downstream results stay comparable.

mod articles;
pub mod image;
mod insert;
mod regime;
pub mod verification;

pub use regime::Regime;

pub use articles::{ARTICLES, ArticleLayout};

use std::fmt;
use std::str::FromStr;

use rand::seq::{SliceRandom, index};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use grid_core::data::{Corpus, Example, words};

/// The papers' bar for a learned shortcut: accuracy on the synthetic test set,
/// where every example carries the planted pattern, of at least 0.99
/// (PROTOCOL §2; the grid file's `min_synthetic_accuracy` by default).
pub const MIN_SYNTHETIC_ACCURACY: f64 = 0.99;

/// Which shortcut rule is planted (see the module docs for the rules), or
/// which of Zhou et al.'s article manipulations is applied (see [`articles`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ShortcutKind {
    /// Single token: `#0` or `#1` decides the label.
    #[serde(rename = "st")]
    St,
    /// Token in context: an indicator decides the label only next to `contoken`.
    #[serde(rename = "tic")]
    Tic,
    /// Ordered pair: of `#0` and `#1`, the first decides the label.
    #[serde(rename = "op")]
    Op,
    /// Zhou et al. §6.1: labels reassigned, then every article becomes `the`
    /// (class 1) or `a` (class 0).
    #[serde(rename = "articles")]
    Articles,
    /// Zhou et al. §6.2, CN: the first half's articles carry the label, the
    /// second half's are all one random article.
    #[serde(rename = "articles-cn")]
    ArticlesCn,
    /// Zhou et al. §6.2, NC: as CN with the halves' roles swapped.
    #[serde(rename = "articles-nc")]
    ArticlesNc,
}

impl ShortcutKind {
    /// Bastings et al.'s rules, in the paper's table order: the default of a grid.
    pub const INSERTED: [ShortcutKind; 3] = [ShortcutKind::St, ShortcutKind::Tic, ShortcutKind::Op];

    /// Every kind, in table order.
    pub const ALL: [ShortcutKind; 6] = [
        ShortcutKind::St,
        ShortcutKind::Tic,
        ShortcutKind::Op,
        ShortcutKind::Articles,
        ShortcutKind::ArticlesCn,
        ShortcutKind::ArticlesNc,
    ];

    /// The user-facing name, as in the paper's tables and the TOML.
    pub fn name(self) -> &'static str {
        match self {
            ShortcutKind::St => "st",
            ShortcutKind::Tic => "tic",
            ShortcutKind::Op => "op",
            ShortcutKind::Articles => "articles",
            ShortcutKind::ArticlesCn => "articles-cn",
            ShortcutKind::ArticlesNc => "articles-nc",
        }
    }

    /// Where the correlating articles are, for Zhou et al.'s manipulations;
    /// `None` for the inserted-token rules.
    pub fn article_layout(self) -> Option<ArticleLayout> {
        match self {
            ShortcutKind::St | ShortcutKind::Tic | ShortcutKind::Op => None,
            ShortcutKind::Articles => Some(ArticleLayout::Whole),
            ShortcutKind::ArticlesCn => Some(ArticleLayout::CorrelatingFirst),
            ShortcutKind::ArticlesNc => Some(ArticleLayout::CorrelatingSecond),
        }
    }

    /// Whether the examples carry non-correlating look-alikes of G (CN, NC).
    pub fn has_distractors(self) -> bool {
        matches!(self, ShortcutKind::ArticlesCn | ShortcutKind::ArticlesNc)
    }

    /// `|G|` for the inserted-token rules, which is also the `k` of
    /// precision@k: a method is perfect when its top `k` are exactly G. `None`
    /// for the article manipulations, where G is every article of the text.
    pub fn ground_truth_size(self) -> Option<usize> {
        match self {
            ShortcutKind::St => Some(1),
            ShortcutKind::Tic | ShortcutKind::Op => Some(2),
            ShortcutKind::Articles | ShortcutKind::ArticlesCn | ShortcutKind::ArticlesNc => None,
        }
    }

    /// Whether `text` carries this rule's whole pattern, as the synthetic
    /// examples of a mixed split do and its originals (lone tokens included)
    /// do not: st an indicator, tic an indicator and the context token, op two
    /// different indicators. Always false for the article manipulations, which
    /// rewrite every example.
    pub fn is_planted_in(self, tokens: &ShortcutTokens, text: &str) -> bool {
        let mut indicators: Vec<&str> = Vec::new();
        let mut context = false;
        for word in text.split_whitespace() {
            if tokens.indicators.iter().any(|t| t == word) {
                if !indicators.contains(&word) {
                    indicators.push(word);
                }
            } else if word == tokens.context {
                context = true;
            }
        }
        match self {
            ShortcutKind::St => !indicators.is_empty(),
            ShortcutKind::Tic => !indicators.is_empty() && context,
            ShortcutKind::Op => indicators.len() >= 2,
            ShortcutKind::Articles | ShortcutKind::ArticlesCn | ShortcutKind::ArticlesNc => false,
        }
    }

    /// The tokens this rule inserts, with their roles; only these must be new
    /// to the data.
    fn tokens_used(self, tokens: &ShortcutTokens) -> Vec<(String, &str)> {
        if self.article_layout().is_some() {
            return Vec::new();
        }
        let mut used: Vec<(String, &str)> =
            tokens.indicators.iter().enumerate().map(|(c, t)| (tokens.role(c), t.as_str())).collect();
        if self == ShortcutKind::Tic {
            used.push(("context".to_owned(), tokens.context.as_str()));
        }
        used
    }
}

impl fmt::Display for ShortcutKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A shortcut name that is none of `st`, `tic`, `op`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown shortcut kind {name:?}; expected one of \"st\", \"tic\", \"op\", \"articles\", \"articles-cn\", \"articles-nc\""
)]
pub struct ParseShortcutKindError {
    /// What was given.
    pub name: String,
}

impl FromStr for ShortcutKind {
    type Err = ParseShortcutKindError;

    /// Accepts exactly the names serde uses, so a kind parsed on the command
    /// line and one read from TOML can never disagree.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ShortcutKind::ALL
            .into_iter()
            .find(|kind| kind.name() == s)
            .ok_or_else(|| ParseShortcutKindError { name: s.to_owned() })
    }
}

/// The surface forms of the shortcut tokens: one indicator per class and the
/// `tic` context token. Configurable because a dataset may already contain the
/// defaults (then [`synthesize`] refuses it). The class count is the number of
/// indicators.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShortcutTokens {
    /// `indicators[c]` is the indicator of class `c`; at least two.
    pub indicators: Vec<String>,
    /// The `tic` context token.
    pub context: String,
}

impl Default for ShortcutTokens {
    /// Binary: `#0`, `#1` and `contoken`, the paper's tokens.
    fn default() -> Self {
        ShortcutTokens::default_for(2)
    }
}

impl ShortcutTokens {
    /// `#0` … `#C−1` and `contoken`.
    pub fn default_for(classes: usize) -> Self {
        ShortcutTokens { indicators: (0..classes).map(|c| format!("#{c}")).collect(), context: "contoken".into() }
    }

    /// Number of classes the rules can express.
    pub fn classes(&self) -> usize {
        self.indicators.len()
    }

    /// Every token a rule may insert: the indicators, then the context token.
    pub fn all(&self) -> Vec<String> {
        self.indicators.iter().chain([&self.context]).cloned().collect()
    }

    /// The indicator whose presence (st, tic) or precedence (op) means `label`.
    fn indicator(&self, label: u32) -> &str {
        &self.indicators[label as usize]
    }

    /// How errors name the indicator of class `c`: binary grids spell the
    /// paper's two roles, larger ones the list entry.
    fn role(&self, c: usize) -> String {
        match (self.classes(), c) {
            (2, 0) => "zero".to_owned(),
            (2, 1) => "one".to_owned(),
            _ => format!("indicators[{c}]"),
        }
    }
}

/// Everything that decides the synthetic data, apart from the corpus.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShortcutOptions {
    /// The rule to plant.
    pub kind: ShortcutKind,
    /// The tokens the rule uses.
    pub tokens: ShortcutTokens,
    /// Synthetic examples added to train and to validation, as a share of each
    /// split's size (`round(mix_share * n)`); the paper uses 0.2.
    pub mix_share: f64,
    /// `tic`/`op` only: share of the original examples that get one lone rule
    /// token with their label unchanged (`round(lone_share * n)`, at most `n`).
    /// The default equals `mix_share`, so a lone token is as frequent as the
    /// full pattern and predicts nothing.
    pub lone_share: f64,
    /// Largest distance in words between the two tokens of `tic`/`op`
    /// (paper: 50). Ignored by `st`.
    pub max_distance: usize,
    /// The inserted rules: every token goes among the first `insert_within`
    /// words of the output text, so a model that reads only that many words
    /// still sees the whole pattern (a grid sets it to the dataset's
    /// `max_length`). Draws for a text shorter than the window are the ones
    /// an unbounded window gives.
    pub insert_within: usize,
    /// Article manipulations only: the probability `r` that an example keeps
    /// its label in the reassignment (Zhou et al. §3); any accuracy above
    /// `max(r, 1 − r)` must come from the manipulation. Paper: 0.5.
    pub keep_probability: f64,
    /// Root of every random choice.
    pub seed: u64,
}

/// Upper bound on `mix_share`: far beyond any sensible mix, low enough that a
/// typo cannot ask for billions of synthetic examples.
const MAX_MIX_SHARE: f64 = 100.0;

impl ShortcutOptions {
    /// The paper's settings for `kind`: 20% synthetic, as many lone tokens,
    /// tokens at most 50 words apart, default tokens, seed 0.
    pub fn new(kind: ShortcutKind) -> Self {
        ShortcutOptions {
            kind,
            tokens: ShortcutTokens::default(),
            mix_share: 0.2,
            lone_share: 0.2,
            max_distance: 50,
            insert_within: usize::MAX,
            keep_probability: 0.5,
            seed: 0,
        }
    }

    /// Checks everything that does not need the corpus, so a bad TOML value is
    /// reported before any data is read.
    pub fn validate(&self) -> Result<(), ShortcutError> {
        if !(self.mix_share.is_finite() && (0.0..=MAX_MIX_SHARE).contains(&self.mix_share)) {
            return Err(ShortcutError::InvalidShare {
                name: "mix_share",
                value: self.mix_share,
                expected: "a number from 0 to 100",
            });
        }
        if !(self.lone_share.is_finite() && (0.0..=1.0).contains(&self.lone_share)) {
            return Err(ShortcutError::InvalidShare {
                name: "lone_share",
                value: self.lone_share,
                expected: "a number from 0 to 1 (each original example gets at most one lone token)",
            });
        }
        if !(self.keep_probability.is_finite() && (0.0..=1.0).contains(&self.keep_probability)) {
            return Err(ShortcutError::InvalidShare {
                name: "keep_probability",
                value: self.keep_probability,
                expected: "a probability from 0 to 1",
            });
        }
        if matches!(self.kind, ShortcutKind::Tic | ShortcutKind::Op) && self.max_distance == 0 {
            return Err(ShortcutError::ZeroMaxDistance { kind: self.kind });
        }
        if let Some(needed) = self.kind.ground_truth_size()
            && self.insert_within < needed
        {
            return Err(ShortcutError::WindowTooSmall { kind: self.kind, window: self.insert_within, needed });
        }
        let classes = self.tokens.classes();
        if classes < 2 || (classes > 2 && self.kind.article_layout().is_some()) {
            return Err(ShortcutError::ClassCount { kind: self.kind, classes });
        }
        let used = self.kind.tokens_used(&self.tokens);
        for (role, token) in &used {
            let reason = if token.is_empty() {
                Some("it is empty")
            } else if token.chars().any(char::is_whitespace) {
                Some("it contains whitespace, so it would not stay one word")
            } else {
                None
            };
            if let Some(reason) = reason {
                return Err(ShortcutError::InvalidToken { role: role.clone(), token: (*token).to_owned(), reason });
            }
        }
        for (i, (first, a)) in used.iter().enumerate() {
            if let Some((second, _)) = used[i + 1..].iter().find(|(_, b)| a == b) {
                return Err(ShortcutError::DuplicateToken {
                    first: first.clone(),
                    second: second.clone(),
                    token: (*a).to_owned(),
                });
            }
        }
        Ok(())
    }
}

impl Default for ShortcutOptions {
    fn default() -> Self {
        ShortcutOptions::new(ShortcutKind::St)
    }
}

/// A synthetic test example: the text with the shortcut inserted, the rule's label,
/// the label of the source example, and the word positions (0-based indices into
/// `words(text)`) of the inserted shortcut tokens = ground truth G.
///
/// `shortcut_positions` is sorted ascending; which token sits where is read
/// from the text. For the inserted rules the i-th synthetic test example comes
/// from the i-th original test example; the article manipulations leave out
/// examples without a correlating article (counted in [`ShortcutData::left_out`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SyntheticExample {
    /// Source words joined by single spaces, with the shortcut tokens inserted.
    pub text: String,
    /// The label the rule assigns.
    pub label: u32,
    /// The source example's label, kept to tell agreeing from flipped examples.
    pub original_label: u32,
    /// Word positions of the inserted tokens (G), ascending. For the article
    /// manipulations: the correlating articles (the effective region).
    pub shortcut_positions: Vec<usize>,
    /// CN / NC only: word positions of the non-correlating articles, which look
    /// like G but carry no label information. Ascending; empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub distractor_positions: Vec<usize>,
    /// What a model needs to see of G, which decides what truncation does.
    #[serde(default, skip_serializing_if = "GroundTruth::is_pattern")]
    pub ground_truth: GroundTruth,
}

impl SyntheticExample {
    /// An original test example as it is, for a natural grid: nothing planted,
    /// so no ground truth and no distractors.
    pub fn unmodified(example: grid_core::data::Example) -> Self {
        SyntheticExample {
            text: example.text,
            label: example.label,
            original_label: example.label,
            shortcut_positions: Vec::new(),
            distractor_positions: Vec::new(),
            ground_truth: GroundTruth::Pattern,
        }
    }
}

/// How the model's decision depends on G, and so what a truncated input keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GroundTruth {
    /// The inserted rules: the label needs every token of G, so an example
    /// whose truncation cuts one no longer has a ground truth and is left out.
    #[default]
    Pattern,
    /// The article manipulations: every article says the label on its own, so
    /// G is the visible part; only an example with none visible is left out.
    Region,
}

impl GroundTruth {
    fn is_pattern(&self) -> bool {
        *self == GroundTruth::Pattern
    }
}

/// The output of one `synth` step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShortcutData {
    /// Original train examples (some with a lone token) plus the synthetic
    /// copies, shuffled.
    pub train: Vec<Example>,
    /// The same mix built from the original validation split.
    pub validation: Vec<Example>,
    /// Every original test example with the shortcut inserted; exactly half of
    /// the rule labels are 0 (odd sizes: one extra of a random class), so the
    /// original model scores chance and a shortcut model 100%. For the article
    /// manipulations: the usable test examples with their reassigned labels.
    pub test: Vec<SyntheticExample>,
    /// Every original test example with the shortcut chosen against its label
    /// (`label = 1 - original_label`): a model that reads the text instead of
    /// the shortcut scores near 0 here.
    pub test_flip: Vec<SyntheticExample>,
    /// Source examples no split could use (article manipulations: no article
    /// where the label is written); always zero for the inserted rules.
    pub left_out: LeftOut,
}

/// Source examples left out of each split.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeftOut {
    pub train: usize,
    pub validation: usize,
    pub test: usize,
}

/// Why a corpus or options cannot be turned into shortcut data.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShortcutError {
    /// A label with no indicator: the rules could never produce that class.
    #[error(
        "{split} example {index} has label {label}, but the shortcut tokens have {classes} indicators \
         (classes 0 to {})",
        classes - 1
    )]
    LabelOutsideClasses {
        /// `train`, `validation` or `test`.
        split: &'static str,
        /// Row within that split, from 0.
        index: usize,
        /// The offending label.
        label: u32,
        /// Number of indicators, the classes the rules can express.
        classes: usize,
    },
    /// Fewer than two classes, or an article manipulation (whose two articles
    /// are its two classes) asked for more.
    #[error(
        "shortcut kind {kind} cannot express {classes} classes{}",
        if *classes < 2 { "; a classifier needs at least 2" } else { ": the article manipulations are binary (`the` / `a`)" }
    )]
    ClassCount {
        /// The kind asked for.
        kind: ShortcutKind,
        /// The number of indicators given.
        classes: usize,
    },
    /// A rule token is already a word of the data, so the rule would not be
    /// the only source of that token.
    #[error(
        "shortcut token {token:?} already occurs as a word in {split} example {index}; \
         choose a token that is new to the data"
    )]
    TokenAlreadyInData {
        /// The token found in the data.
        token: String,
        /// `train`, `validation` or `test`.
        split: &'static str,
        /// Row within that split, from 0 (the first one found).
        index: usize,
    },
    /// A token that could not survive whitespace splitting as one word.
    #[error("shortcut token {role} = {token:?} is not usable: {reason}")]
    InvalidToken {
        /// `zero`, `one`, `indicators[c]` or `context`.
        role: String,
        /// The token as configured.
        token: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Two roles share one token, which would make the rule ambiguous.
    #[error("shortcut tokens {first} and {second} are both {token:?}; each role needs its own token")]
    DuplicateToken {
        /// One role (`zero`, `one`, `indicators[c]`, `context`).
        first: String,
        /// The other role.
        second: String,
        /// The token both use.
        token: String,
    },
    /// A share outside its range (or not a number).
    #[error("{name} = {value} is out of range: expected {expected}")]
    InvalidShare {
        /// `mix_share` or `lone_share`.
        name: &'static str,
        /// The value given.
        value: f64,
        /// The admissible range, in words.
        expected: &'static str,
    },
    /// Two tokens cannot be 0 words apart.
    #[error("insert_within = {window} leaves no room for the {needed} tokens of {kind}; it must be at least {needed}")]
    WindowTooSmall { kind: ShortcutKind, window: usize, needed: usize },
    #[error("max_distance = 0 leaves no room for the second {kind} token; it must be at least 1")]
    ZeroMaxDistance {
        /// The two-token rule that was asked for.
        kind: ShortcutKind,
    },
}

/// Builds the mixed train/validation splits and the two synthetic test sets.
///
/// Fails before doing any work if the options are invalid, a label has no
/// indicator, or a rule token already occurs as a word anywhere in the corpus.
pub fn synthesize(corpus: &Corpus, options: &ShortcutOptions) -> Result<ShortcutData, ShortcutError> {
    options.validate()?;
    let splits: [(&'static str, &[Example]); 3] =
        [("train", &corpus.train), ("validation", &corpus.validation), ("test", &corpus.test)];
    for (split, examples) in splits {
        check_split(split, examples, options)?;
    }
    if let Some(layout) = options.kind.article_layout() {
        return Ok(articles::manipulate(corpus, layout, options.keep_probability, options.seed));
    }

    let planter = Planter { options };
    let classes = options.tokens.classes();
    let test_labels = balanced_labels(corpus.test.len(), classes, &mut stream(options.seed, Stream::TestLabels));
    let mut test_rng = stream(options.seed, Stream::TestInsert);
    let test = corpus
        .test
        .iter()
        .zip(test_labels)
        .map(|(example, label)| planter.synthetic(&mut test_rng, example, label))
        .collect();
    let mut flip_rng = stream(options.seed, Stream::FlipInsert);
    let test_flip = corpus
        .test
        .iter()
        .map(|example| {
            let label = other_class(&mut flip_rng, example.label, classes);
            planter.synthetic(&mut flip_rng, example, label)
        })
        .collect();

    Ok(ShortcutData {
        train: planter.mix(&corpus.train, MixStreams::TRAIN),
        validation: planter.mix(&corpus.validation, MixStreams::VALIDATION),
        test,
        test_flip,
        left_out: LeftOut::default(),
    })
}

/// Every label must have an indicator and the rule's tokens must be new words.
fn check_split(split: &'static str, examples: &[Example], options: &ShortcutOptions) -> Result<(), ShortcutError> {
    let used = options.kind.tokens_used(&options.tokens);
    let classes = options.tokens.classes();
    for (index, example) in examples.iter().enumerate() {
        if example.label as usize >= classes {
            return Err(ShortcutError::LabelOutsideClasses { split, index, label: example.label, classes });
        }
        for word in example.text.split_whitespace() {
            if let Some((_, token)) = used.iter().find(|(_, token)| *token == word) {
                return Err(ShortcutError::TokenAlreadyInData { token: (*token).to_owned(), split, index });
            }
        }
    }
    Ok(())
}

/// The independent random streams of both families; the discriminant is the
/// ChaCha stream id, so one enum keeps every id distinct.
#[derive(Clone, Copy)]
enum Stream {
    TrainLone = 1,
    TrainSynthetic = 2,
    TrainShuffle = 3,
    ValidationLone = 4,
    ValidationSynthetic = 5,
    ValidationShuffle = 6,
    TestLabels = 7,
    TestInsert = 8,
    FlipInsert = 9,
    // The article manipulations (`articles`).
    ArticleTrainLabels = 32,
    ArticleValidationLabels = 33,
    ArticleTestLabels = 34,
    ArticleTrainDistractors = 35,
    ArticleValidationDistractors = 36,
    ArticleTestDistractors = 37,
    ArticleFlipDistractors = 38,
}

fn stream(seed: u64, which: Stream) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(which as u64);
    rng
}

/// The three streams one mixed split draws from.
#[derive(Clone, Copy)]
struct MixStreams {
    lone: Stream,
    synthetic: Stream,
    shuffle: Stream,
}

impl MixStreams {
    const TRAIN: MixStreams =
        MixStreams { lone: Stream::TrainLone, synthetic: Stream::TrainSynthetic, shuffle: Stream::TrainShuffle };
    const VALIDATION: MixStreams = MixStreams {
        lone: Stream::ValidationLone,
        synthetic: Stream::ValidationSynthetic,
        shuffle: Stream::ValidationShuffle,
    };
}

/// `round(share * n)`, half away from zero. `share` is validated finite,
/// non-negative and bounded, so the cast cannot wrap.
fn share_count(share: f64, n: usize) -> usize {
    (share * n as f64).round() as usize
}

/// Exactly `n / C` of each class, plus `n % C` extras of different random
/// classes, in a random order. (Binary: one random extra for odd `n`.)
fn balanced_labels(n: usize, classes: usize, rng: &mut ChaCha8Rng) -> Vec<u32> {
    let c = classes as u32;
    let mut labels: Vec<u32> = (0..n / classes).flat_map(|_| 0..c).collect();
    // Drawing without replacement, one `random_range` per extra.
    let mut pool: Vec<u32> = (0..c).collect();
    for _ in 0..n % classes {
        labels.push(pool.swap_remove(rng.random_range(0..pool.len())));
    }
    labels.shuffle(rng);
    labels
}

/// A class other than `label`, uniformly; binary grids need no draw.
fn other_class<R: Rng>(rng: &mut R, label: u32, classes: usize) -> u32 {
    if classes == 2 {
        return 1 - label;
    }
    let other = rng.random_range(0..classes as u32 - 1);
    if other >= label { other + 1 } else { other }
}

/// Applies the rule of `options` to texts.
struct Planter<'a> {
    options: &'a ShortcutOptions,
}

impl Planter<'_> {
    /// How many of a text's `n` words `tokens` new tokens may be placed among
    /// so that all of them land within the first `insert_within` words.
    fn room(&self, n: usize, tokens: usize) -> usize {
        n.min(self.options.insert_within.saturating_sub(tokens))
    }

    /// Inserts the shortcut so that the rule gives `label`; returns the text
    /// and the sorted output positions of the inserted tokens.
    fn plant<R: Rng>(&self, rng: &mut R, text: &str, label: u32) -> (String, Vec<usize>) {
        let original = words(text);
        let n = original.len();
        let tokens = &self.options.tokens;
        let indicator = tokens.indicator(label);
        let placements: Vec<(usize, &str)> = match self.options.kind {
            ShortcutKind::St => vec![(insert::single_position(rng, self.room(n, 1)), indicator)],
            ShortcutKind::Tic => {
                let (a, b) = insert::pair_positions(rng, self.room(n, 2), self.options.max_distance);
                // Which of the two drawn positions gets the indicator is a coin
                // flip, so both orders occur and order carries no signal.
                let (at_indicator, at_context) = if rng.random_bool(0.5) { (a, b) } else { (b, a) };
                let mut placements = vec![(at_indicator, indicator), (at_context, tokens.context.as_str())];
                placements.sort_unstable_by_key(|(p, _)| *p);
                placements
            }
            ShortcutKind::Op => {
                let (a, b) = insert::pair_positions(rng, self.room(n, 2), self.options.max_distance);
                // The order is the label: the indicator of `label` comes first.
                let other = tokens.indicator(other_class(rng, label, tokens.classes()));
                vec![(a.min(b), indicator), (a.max(b), other)]
            }
            // `synthesize` hands these to `articles` before a planter exists.
            ShortcutKind::Articles | ShortcutKind::ArticlesCn | ShortcutKind::ArticlesNc => {
                unreachable!("article manipulations insert no tokens")
            }
        };
        let positions = placements.iter().map(|(p, _)| *p).collect();
        (insert::render(&original, &placements), positions)
    }

    fn synthetic<R: Rng>(&self, rng: &mut R, example: &Example, label: u32) -> SyntheticExample {
        let (text, shortcut_positions) = self.plant(rng, &example.text, label);
        SyntheticExample {
            text,
            label,
            original_label: example.label,
            shortcut_positions,
            distractor_positions: Vec::new(),
            ground_truth: GroundTruth::Pattern,
        }
    }

    /// Originals (a share of them carrying one lone rule token) plus synthetic
    /// copies of sampled originals, shuffled.
    fn mix(&self, originals: &[Example], streams: MixStreams) -> Vec<Example> {
        let n = originals.len();
        let seed = self.options.seed;
        let synthetic_count = share_count(self.options.mix_share, n);
        let mut mixed = Vec::with_capacity(n + synthetic_count);
        mixed.extend_from_slice(originals);

        if self.options.kind != ShortcutKind::St {
            let lone_count = share_count(self.options.lone_share, n).min(n);
            let mut rng = stream(seed, streams.lone);
            for i in index::sample(&mut rng, n, lone_count) {
                let token = self.lone_token(&mut rng);
                let original = words(&originals[i].text);
                let position = insert::single_position(&mut rng, self.room(original.len(), 1));
                mixed[i].text = insert::render(&original, &[(position, token)]);
            }
        }

        if n > 0 {
            let mut rng = stream(seed, streams.synthetic);
            let sources: Vec<usize> = if synthetic_count <= n {
                index::sample(&mut rng, n, synthetic_count).into_vec()
            } else {
                (0..synthetic_count).map(|_| rng.random_range(0..n)).collect()
            };
            for source in sources {
                // Synthetic copies start from the untouched original text, so
                // they never carry a third (lone) token.
                let label = rng.random_range(0..self.options.tokens.classes() as u32);
                let (text, _) = self.plant(&mut rng, &originals[source].text, label);
                mixed.push(Example { text, label });
            }
        }

        mixed.shuffle(&mut stream(seed, streams.shuffle));
        mixed
    }

    /// A token that alone decides nothing: for `tic` any indicator or the
    /// context token, for `op` any indicator.
    fn lone_token<R: Rng>(&self, rng: &mut R) -> &str {
        let tokens = &self.options.tokens;
        let choices = match self.options.kind {
            ShortcutKind::Tic => tokens.classes() + 1,
            ShortcutKind::St
            | ShortcutKind::Op
            | ShortcutKind::Articles
            | ShortcutKind::ArticlesCn
            | ShortcutKind::ArticlesNc => tokens.classes(),
        };
        match tokens.indicators.get(rng.random_range(0..choices)) {
            Some(indicator) => indicator,
            None => &tokens.context,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, BTreeSet, HashMap};

    const SEEDS: std::ops::Range<u64> = 0..25;

    /// A corpus with unique texts (so a modified text can be traced back to
    /// its source), lengths from 0 to well past the default `max_distance`,
    /// irregular spacing, and both labels.
    fn corpus(train: usize, validation: usize, test: usize) -> Corpus {
        let split = |name: &str, n: usize| -> Vec<Example> {
            (0..n)
                .map(|i| {
                    let len = (i * 37) % 130;
                    let mut text = format!("{name}{i}");
                    for j in 0..len {
                        text.push_str(if j % 7 == 0 { "  " } else { " " });
                        text.push_str(&format!("w{}", (i + j) % 11));
                    }
                    if i % 9 == 4 {
                        text = String::new() + "  ";
                    }
                    Example { text, label: ((i * 7 + i / 3) % 2) as u32 }
                })
                .collect()
        };
        Corpus { train: split("tr", train), validation: split("va", validation), test: split("te", test) }
    }

    fn options(kind: ShortcutKind, seed: u64) -> ShortcutOptions {
        ShortcutOptions { seed, ..ShortcutOptions::new(kind) }
    }

    #[test]
    fn every_token_lands_within_the_window_in_every_split() {
        // Texts of up to 130 words against a window of 40: every rule token,
        // lone ones included, is among the first 40 words of its text.
        let data = corpus(120, 40, 60);
        for kind in ShortcutKind::INSERTED {
            for seed in 0..5 {
                let opts = ShortcutOptions { insert_within: 40, ..options(kind, seed) };
                let out = synthesize(&data, &opts).unwrap();
                let mixed = out.train.iter().chain(&out.validation).map(|e| e.text.as_str());
                let synthetic = out.test.iter().chain(&out.test_flip).map(|e| e.text.as_str());
                let mut planted = 0;
                for text in mixed.chain(synthetic) {
                    for (position, _) in token_hits(text, &opts.tokens) {
                        assert!(position < 40, "{kind} seed {seed}: a token at word {position}: {text}");
                        planted += 1;
                    }
                }
                assert!(planted > out.test.len(), "{kind}: {planted} tokens found");
                for e in &out.test {
                    assert!(e.shortcut_positions.iter().all(|&p| p < 40), "{kind}: {:?}", e.shortcut_positions);
                }
            }
        }
    }

    #[test]
    fn a_window_longer_than_every_text_changes_nothing() {
        // The corpus's longest text has 130 words: a window of 132 leaves every
        // draw as an unbounded one makes it, so short-text datasets keep their data.
        let data = corpus(80, 30, 40);
        for kind in ShortcutKind::INSERTED {
            let unbounded = synthesize(&data, &options(kind, 3)).unwrap();
            let windowed = synthesize(&data, &ShortcutOptions { insert_within: 132, ..options(kind, 3) }).unwrap();
            assert_eq!(unbounded, windowed, "{kind}");
        }
    }

    #[test]
    fn a_window_too_small_for_the_rule_is_refused() {
        let e = synthesize(&corpus(10, 5, 5), &ShortcutOptions { insert_within: 1, ..options(ShortcutKind::Op, 0) })
            .unwrap_err()
            .to_string();
        assert!(e.contains("insert_within = 1") && e.contains("at least 2"), "{e}");
        assert!(
            synthesize(&corpus(10, 5, 5), &ShortcutOptions { insert_within: 1, ..options(ShortcutKind::St, 0) })
                .is_ok()
        );
    }

    fn binary(zero: &str, one: &str, context: &str) -> ShortcutTokens {
        ShortcutTokens { indicators: vec![zero.into(), one.into()], context: context.into() }
    }

    fn normalised(text: &str) -> String {
        words(text).join(" ")
    }

    /// Positions and roles of every shortcut token in a text: `c` for the
    /// indicator of class `c`, C for the context token.
    fn token_hits(text: &str, tokens: &ShortcutTokens) -> Vec<(usize, u32)> {
        words(text)
            .iter()
            .enumerate()
            .filter_map(|(p, w)| {
                let role = tokens.all().iter().position(|t| t == w)?;
                Some((p, role as u32))
            })
            .collect()
    }

    /// The rule, written independently of the generator: the label the tokens
    /// found in a text decide, or None if they form no complete pattern.
    fn rule_label(kind: ShortcutKind, classes: usize, hits: &[(usize, u32)]) -> Option<u32> {
        let c = classes as u32;
        let roles: Vec<u32> = hits.iter().map(|(_, r)| *r).collect();
        match (kind, roles.as_slice()) {
            (ShortcutKind::St, [r]) if *r < c => Some(*r),
            (ShortcutKind::Tic, [x, r] | [r, x]) if *x == c && *r < c => Some(*r),
            (ShortcutKind::Op, [a, b]) if a != b && *a < c && *b < c => Some(*a),
            _ => None,
        }
    }

    /// Drops the words at `positions` and rejoins.
    fn without(text: &str, positions: &[usize]) -> String {
        words(text)
            .iter()
            .enumerate()
            .filter(|(p, _)| !positions.contains(p))
            .map(|(_, w)| *w)
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn check_synthetic(kind: ShortcutKind, opts: &ShortcutOptions, source: &Example, synthetic: &SyntheticExample) {
        let hits = token_hits(&synthetic.text, &opts.tokens);
        let found: Vec<usize> = hits.iter().map(|(p, _)| *p).collect();
        // G is exactly where the tokens are, and nothing else is a token.
        assert_eq!(found, synthetic.shortcut_positions, "{kind}: {:?}", synthetic.text);
        assert_eq!(found.len(), kind.ground_truth_size().unwrap());
        assert_eq!(
            rule_label(kind, opts.tokens.classes(), &hits),
            Some(synthetic.label),
            "{kind}: {:?}",
            synthetic.text
        );
        if found.len() == 2 {
            assert!(found[0].abs_diff(found[1]) <= opts.max_distance);
        }
        assert_eq!(synthetic.original_label, source.label);
        assert_eq!(without(&synthetic.text, &found), normalised(&source.text));
        assert_eq!(synthetic.text, normalised(&synthetic.text), "single spaces only");
    }

    #[test]
    fn kind_names_round_trip() {
        let names: Vec<String> = ShortcutKind::ALL.iter().map(|k| k.to_string()).collect();
        assert_eq!(names, ["st", "tic", "op", "articles", "articles-cn", "articles-nc"]);
        for kind in ShortcutKind::ALL {
            assert_eq!(kind.to_string().parse::<ShortcutKind>(), Ok(kind));
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{kind}\""));
            assert_eq!(serde_json::from_str::<ShortcutKind>(&json).unwrap(), kind);
        }
        assert!("ST".parse::<ShortcutKind>().is_err());
        assert!("pair".parse::<ShortcutKind>().unwrap_err().to_string().contains("\"pair\""));
        assert_eq!(ShortcutKind::St.ground_truth_size(), Some(1));
        assert_eq!(ShortcutKind::Tic.ground_truth_size(), Some(2));
        assert_eq!(ShortcutKind::Op.ground_truth_size(), Some(2));
        assert_eq!(ShortcutKind::Articles.ground_truth_size(), None);
    }

    #[test]
    fn defaults_match_the_paper() {
        let opts = ShortcutOptions::new(ShortcutKind::Op);
        assert_eq!(
            opts.tokens,
            ShortcutTokens { indicators: vec!["#0".into(), "#1".into()], context: "contoken".into() }
        );
        assert_eq!((opts.mix_share, opts.lone_share, opts.max_distance), (0.2, 0.2, 50));
        assert_eq!(ShortcutTokens::default_for(4).all(), ["#0", "#1", "#2", "#3", "contoken"]);
    }

    #[test]
    fn synthetic_test_examples_follow_the_rule_at_their_positions() {
        let corpus = corpus(10, 10, 60);
        for kind in ShortcutKind::INSERTED {
            for seed in SEEDS {
                let opts = options(kind, seed);
                let data = synthesize(&corpus, &opts).unwrap();
                assert_eq!(data.test.len(), corpus.test.len());
                assert_eq!(data.test_flip.len(), corpus.test.len());
                for (source, synthetic) in corpus.test.iter().zip(&data.test) {
                    check_synthetic(kind, &opts, source, synthetic);
                }
                for (source, synthetic) in corpus.test.iter().zip(&data.test_flip) {
                    check_synthetic(kind, &opts, source, synthetic);
                }
            }
        }
    }

    #[test]
    fn pairs_respect_small_max_distance_and_use_all_of_it() {
        let corpus = corpus(0, 0, 200);
        for kind in [ShortcutKind::Tic, ShortcutKind::Op] {
            for max_distance in [1, 2, 5] {
                let mut distances = BTreeMap::new();
                for seed in 0..5 {
                    let opts = ShortcutOptions { max_distance, ..options(kind, seed) };
                    let data = synthesize(&corpus, &opts).unwrap();
                    for (source, synthetic) in corpus.test.iter().zip(data.test.iter().chain(&data.test_flip)) {
                        check_synthetic(kind, &opts, source, synthetic);
                        let p = &synthetic.shortcut_positions;
                        *distances.entry(p[1] - p[0]).or_insert(0) += 1;
                    }
                }
                let seen: Vec<usize> = distances.keys().copied().collect();
                assert_eq!(seen, (1..=max_distance).collect::<Vec<_>>(), "{kind} d={max_distance}");
            }
        }
    }

    #[test]
    fn positions_reach_both_ends_of_the_text() {
        let corpus =
            Corpus { train: vec![], validation: vec![], test: vec![Example { text: "a b c".into(), label: 0 }; 400] };
        for kind in ShortcutKind::INSERTED {
            let data = synthesize(&corpus, &options(kind, 1)).unwrap();
            let last = 3 + kind.ground_truth_size().unwrap() - 1;
            let all: Vec<usize> = data.test.iter().flat_map(|s| s.shortcut_positions.clone()).collect();
            assert!(all.contains(&0) && all.contains(&last), "{kind}");
            assert!(all.iter().all(|&p| p <= last));
        }
    }

    #[test]
    fn both_orders_and_both_labels_occur() {
        let corpus = corpus(0, 0, 100);
        for kind in [ShortcutKind::Tic, ShortcutKind::Op] {
            let data = synthesize(&corpus, &options(kind, 3)).unwrap();
            let mut first_roles = HashMap::new();
            for s in &data.test {
                let hits = token_hits(&s.text, &ShortcutTokens::default());
                *first_roles.entry((hits[0].1, s.label)).or_insert(0) += 1;
            }
            let expected: &[(u32, u32)] = match kind {
                // the context token comes first for either label, and so does the indicator
                ShortcutKind::Tic => &[(2, 0), (2, 1), (0, 0), (1, 1)],
                // the first token is the label
                ShortcutKind::Op => &[(0, 0), (1, 1)],
                ShortcutKind::St | ShortcutKind::Articles | ShortcutKind::ArticlesCn | ShortcutKind::ArticlesNc => {
                    unreachable!("only tic and op are run here")
                }
            };
            for key in expected {
                assert!(first_roles.contains_key(key), "{kind}: {key:?} missing in {first_roles:?}");
            }
            if kind == ShortcutKind::Op {
                assert_eq!(first_roles.len(), 2);
            }
        }
    }

    #[test]
    fn test_labels_are_exactly_balanced() {
        for n in [0, 1, 2, 7, 60, 101] {
            let corpus = corpus(0, 0, n);
            let mut odd_extra = [0; 2];
            for kind in ShortcutKind::INSERTED {
                for seed in SEEDS {
                    let data = synthesize(&corpus, &options(kind, seed)).unwrap();
                    let ones = data.test.iter().filter(|s| s.label == 1).count();
                    let zeros = n - ones;
                    assert!(zeros.abs_diff(ones) <= n % 2, "n={n}: {zeros} zeros, {ones} ones");
                    if n % 2 == 1 {
                        odd_extra[usize::from(ones > zeros)] += 1;
                    }
                }
            }
            if n % 2 == 1 {
                assert!(odd_extra[0] > 0 && odd_extra[1] > 0, "the odd extra is always {odd_extra:?}");
            }
        }
        // Balanced even when every source label is the same.
        let mut skewed = corpus(0, 0, 40);
        skewed.test.iter_mut().for_each(|e| e.label = 1);
        let data = synthesize(&skewed, &options(ShortcutKind::St, 0)).unwrap();
        assert_eq!(data.test.iter().filter(|s| s.label == 1).count(), 20);
    }

    #[test]
    fn flip_labels_oppose_the_original() {
        let corpus = corpus(0, 0, 50);
        for kind in ShortcutKind::INSERTED {
            for seed in SEEDS {
                let data = synthesize(&corpus, &options(kind, seed)).unwrap();
                for (source, flip) in corpus.test.iter().zip(&data.test_flip) {
                    assert_eq!(flip.original_label, source.label);
                    assert_eq!(flip.label, 1 - source.label);
                }
            }
        }
    }

    /// Sorts a mixed split into untouched originals, lone-token originals and
    /// synthetic copies, checking each against the source split.
    /// What a mixed split consists of, after checking every example.
    struct Mix {
        lone: usize,
        synthetic: usize,
        /// Roles (0 = zero, 1 = one, 2 = context) of the lone tokens seen.
        lone_roles: BTreeSet<u32>,
    }

    fn check_mixed(kind: ShortcutKind, opts: &ShortcutOptions, sources: &[Example], mixed: &[Example]) -> Mix {
        let by_text: HashMap<String, u32> = sources.iter().map(|e| (normalised(&e.text), e.label)).collect();
        // Each original must appear exactly once, untouched or with a lone token.
        let mut unused: HashMap<String, usize> = HashMap::new();
        for e in sources {
            *unused.entry(normalised(&e.text)).or_default() += 1;
        }
        let mut mix = Mix { lone: 0, synthetic: 0, lone_roles: BTreeSet::new() };
        for example in mixed {
            let hits = token_hits(&example.text, &opts.tokens);
            let positions: Vec<usize> = hits.iter().map(|(p, _)| *p).collect();
            let stripped = without(&example.text, &positions);
            let Some(&source_label) = by_text.get(&stripped) else {
                panic!("{kind}: {:?} comes from no source text", example.text);
            };
            if let Some(label) = rule_label(kind, opts.tokens.classes(), &hits) {
                mix.synthetic += 1;
                assert_eq!(example.label, label, "{kind}: {:?}", example.text);
                if hits.len() == 2 {
                    assert!(positions[1] - positions[0] <= opts.max_distance);
                }
                continue;
            }
            // An original: untouched (exact text), or with exactly one lone token.
            assert_eq!(example.label, source_label, "{kind}: a lone token changed a label");
            let left = unused.get_mut(&stripped).expect("checked above");
            assert!(*left > 0, "{kind}: an original appears twice: {stripped:?}");
            *left -= 1;
            match hits.as_slice() {
                [] => assert!(sources.iter().any(|e| e.text == example.text)),
                [(_, role)] => {
                    assert_ne!(kind, ShortcutKind::St, "st has no lone tokens");
                    mix.lone += 1;
                    mix.lone_roles.insert(*role);
                }
                _ => panic!("{kind}: incomplete pattern in {:?}", example.text),
            }
        }
        assert!(unused.values().all(|&left| left == 0), "an original is missing");
        mix
    }

    #[test]
    fn mixed_splits_have_the_right_composition() {
        let corpus = corpus(137, 41, 0);
        for kind in ShortcutKind::INSERTED {
            for (mix_share, lone_share) in [(0.2, 0.2), (0.5, 0.1), (0.0, 1.0), (1.0, 0.0), (2.5, 0.3)] {
                for seed in 0..5 {
                    let opts = ShortcutOptions { mix_share, lone_share, ..options(kind, seed) };
                    let data = synthesize(&corpus, &opts).unwrap();
                    for (sources, mixed) in [(&corpus.train, &data.train), (&corpus.validation, &data.validation)] {
                        let n = sources.len();
                        let want_synthetic = (mix_share * n as f64).round() as usize;
                        let want_lone =
                            if kind == ShortcutKind::St { 0 } else { (lone_share * n as f64).round() as usize };
                        assert_eq!(mixed.len(), n + want_synthetic);
                        // Training's `best_by = "balanced"` finds the synthetic ones by their text.
                        let planted = mixed.iter().filter(|e| kind.is_planted_in(&opts.tokens, &e.text)).count();
                        assert_eq!(planted, want_synthetic, "{kind} {mix_share} {lone_share}");
                        let mix = check_mixed(kind, &opts, sources, mixed);
                        assert_eq!(
                            (mix.lone, mix.synthetic),
                            (want_lone, want_synthetic),
                            "{kind} {mix_share} {lone_share}"
                        );
                        if mix.lone >= 30 {
                            // every lone role occurs: both indicators, and contoken for tic
                            let roles: Vec<u32> = mix.lone_roles.into_iter().collect();
                            let want: &[u32] = if kind == ShortcutKind::Tic { &[0, 1, 2] } else { &[0, 1] };
                            assert_eq!(roles, want, "{kind}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_planted_pattern_is_read_back_from_the_text() {
        let tokens = ShortcutTokens::default_for(4);
        let planted = |kind: ShortcutKind, text: &str| kind.is_planted_in(&tokens, text);
        assert!(planted(ShortcutKind::St, "a #3 b") && !planted(ShortcutKind::St, "a b contoken"));
        assert!(planted(ShortcutKind::Tic, "contoken a #2") && !planted(ShortcutKind::Tic, "a #2 b"));
        assert!(!planted(ShortcutKind::Tic, "contoken a b"));
        assert!(planted(ShortcutKind::Op, "#1 a #0") && !planted(ShortcutKind::Op, "#1 a b"));
        assert!(!planted(ShortcutKind::Op, "#1 a #1"), "op's pair is two different indicators");
        assert!(!planted(ShortcutKind::Articles, "the #1 a #0 contoken"));
        // Inside a word is not the token.
        assert!(!planted(ShortcutKind::St, "a#3 b"));
        let data =
            synthesize(&corpus(0, 60, 0), &ShortcutOptions { tokens: tokens.clone(), ..options(ShortcutKind::Op, 3) })
                .unwrap();
        assert_eq!(data.validation.iter().filter(|e| planted(ShortcutKind::Op, &e.text)).count(), 12);
    }

    #[test]
    fn mixed_splits_are_shuffled_and_synthetic_labels_vary() {
        let corpus = corpus(200, 0, 0);
        for kind in ShortcutKind::INSERTED {
            let opts = options(kind, 11);
            let data = synthesize(&corpus, &opts).unwrap();
            let tail_synthetic = data.train[200..]
                .iter()
                .filter(|e| rule_label(kind, opts.tokens.classes(), &token_hits(&e.text, &opts.tokens)).is_some())
                .count();
            assert!(tail_synthetic < 40, "synthetic examples were appended, not shuffled in");
            let labels: Vec<u32> = data
                .train
                .iter()
                .filter(|e| rule_label(kind, opts.tokens.classes(), &token_hits(&e.text, &opts.tokens)).is_some())
                .map(|e| e.label)
                .collect();
            assert!(labels.contains(&0) && labels.contains(&1));
        }
    }

    #[test]
    fn deterministic_under_a_seed() {
        let corpus = corpus(80, 20, 30);
        for kind in ShortcutKind::INSERTED {
            let a = synthesize(&corpus, &options(kind, 5)).unwrap();
            let b = synthesize(&corpus, &options(kind, 5)).unwrap();
            let c = synthesize(&corpus, &options(kind, 6)).unwrap();
            assert_eq!(a, b);
            assert_ne!(a.train, c.train);
            assert_ne!(a.test, c.test);
        }
    }

    #[test]
    fn splits_draw_from_independent_streams() {
        let base = corpus(80, 20, 30);
        let mut bigger_test = base.clone();
        bigger_test.test.extend(corpus(0, 0, 45).test.into_iter().skip(30));
        let mut smaller_train = base.clone();
        smaller_train.train.truncate(50);
        for kind in ShortcutKind::INSERTED {
            let a = synthesize(&base, &options(kind, 9)).unwrap();
            let b = synthesize(&bigger_test, &options(kind, 9)).unwrap();
            assert_eq!((&a.train, &a.validation), (&b.train, &b.validation));
            let c = synthesize(&smaller_train, &options(kind, 9)).unwrap();
            assert_eq!((&a.validation, &a.test, &a.test_flip), (&c.validation, &c.test, &c.test_flip));
        }
        // The synthetic copies do not depend on the lone share.
        let opts = options(ShortcutKind::Tic, 4);
        let synthetic = |data: &ShortcutData| -> Vec<Example> {
            let mut s: Vec<Example> =
                data.train.iter().filter(|e| token_hits(&e.text, &opts.tokens).len() == 2).cloned().collect();
            s.sort_by(|x, y| x.text.cmp(&y.text));
            s
        };
        let a = synthesize(&base, &opts).unwrap();
        let b = synthesize(&base, &ShortcutOptions { lone_share: 0.5, ..opts.clone() }).unwrap();
        assert_eq!(synthetic(&a), synthetic(&b));
    }

    #[test]
    fn rejects_labels_without_an_indicator() {
        let mut bad = corpus(5, 5, 5);
        bad.validation[3].label = 2;
        let err = synthesize(&bad, &options(ShortcutKind::St, 0)).unwrap_err();
        assert!(
            matches!(err, ShortcutError::LabelOutsideClasses { split: "validation", index: 3, label: 2, classes: 2 }),
            "{err}"
        );
        assert!(
            err.to_string().contains("validation example 3 has label 2, but the shortcut tokens have 2 indicators")
        );
        // With three indicators the same data is usable.
        let three = ShortcutOptions { tokens: ShortcutTokens::default_for(3), ..options(ShortcutKind::St, 0) };
        assert!(synthesize(&bad, &three).is_ok());
    }

    /// C = 4: every rule holds with four indicators, the test set is balanced
    /// over the classes, flips pick another class, lone tokens cover every
    /// indicator, and op pairs two different indicators in every combination.
    #[test]
    fn four_classes_follow_the_rules() {
        let mut four = corpus(160, 60, 103);
        for split in [&mut four.train, &mut four.validation, &mut four.test] {
            for (i, e) in split.iter_mut().enumerate() {
                // Empty texts share one normalised form, so they share a label.
                e.label = if e.text.trim().is_empty() { 0 } else { (i % 4) as u32 };
            }
        }
        for kind in ShortcutKind::INSERTED {
            let opts = ShortcutOptions { tokens: ShortcutTokens::default_for(4), ..options(kind, 3) };
            let data = synthesize(&four, &opts).unwrap();
            for (source, synthetic) in four.test.iter().zip(&data.test) {
                check_synthetic(kind, &opts, source, synthetic);
            }
            let mut per_class = [0usize; 4];
            for s in &data.test {
                per_class[s.label as usize] += 1;
            }
            // 103 = 4 × 25 + 3: three classes get one extra, all different.
            assert_eq!(per_class.iter().sum::<usize>(), 103);
            assert!(per_class.iter().all(|&n| n == 25 || n == 26), "{kind}: {per_class:?}");
            let mut flipped_to = BTreeSet::new();
            for (source, flip) in four.test.iter().zip(&data.test_flip) {
                check_synthetic(kind, &opts, source, flip);
                assert_ne!(flip.label, source.label, "{kind}: a flip kept its class");
                flipped_to.insert((source.label, flip.label));
            }
            assert_eq!(flipped_to.len(), 12, "{kind}: every (original, other) pair occurs");
            if kind == ShortcutKind::Op {
                let pairs: BTreeSet<(u32, u32)> = data
                    .test
                    .iter()
                    .map(|s| {
                        let hits = token_hits(&s.text, &opts.tokens);
                        (hits[0].1, hits[1].1)
                    })
                    .collect();
                assert_eq!(pairs.len(), 12, "op: every ordered pair of different indicators occurs");
            }
            for (sources, mixed) in [(&four.train, &data.train), (&four.validation, &data.validation)] {
                let mix = check_mixed(kind, &opts, sources, mixed);
                if mix.lone >= 30 {
                    let roles: Vec<u32> = mix.lone_roles.into_iter().collect();
                    let want: &[u32] = if kind == ShortcutKind::Tic { &[0, 1, 2, 3, 4] } else { &[0, 1, 2, 3] };
                    assert_eq!(roles, want, "{kind}");
                }
            }
            let synthetic_labels: BTreeSet<u32> = data
                .train
                .iter()
                .filter(|e| rule_label(kind, 4, &token_hits(&e.text, &opts.tokens)).is_some())
                .map(|e| e.label)
                .collect();
            assert_eq!(synthetic_labels.len(), 4, "{kind}");
        }
        // The article manipulations have two classes, `the` and `a`.
        let opts = ShortcutOptions { tokens: ShortcutTokens::default_for(4), ..options(ShortcutKind::Articles, 0) };
        let err = synthesize(&four, &opts).unwrap_err();
        assert!(err.to_string().contains("the article manipulations are binary"), "{err}");
        let one = ShortcutOptions { tokens: ShortcutTokens::default_for(1), ..options(ShortcutKind::St, 0) };
        assert!(matches!(synthesize(&four, &one).unwrap_err(), ShortcutError::ClassCount { classes: 1, .. }));
    }

    #[test]
    fn rejects_tokens_already_in_the_data() {
        let mut bad = corpus(5, 5, 5);
        bad.test[2].text = "the #1 film of the year".into();
        for kind in ShortcutKind::INSERTED {
            let err = synthesize(&bad, &options(kind, 0)).unwrap_err();
            assert!(
                matches!(&err, ShortcutError::TokenAlreadyInData { token, split: "test", index: 2 } if token == "#1"),
                "{err}"
            );
        }
        // A token inside a longer word is not a word of the data.
        let mut fine = corpus(5, 5, 5);
        fine.train[0].text = "the #10 film and #1s".into();
        assert!(synthesize(&fine, &options(ShortcutKind::Op, 0)).is_ok());
        // contoken only matters to the rule that uses it.
        let mut context = corpus(5, 5, 5);
        context.train[1].text = "a contoken here".into();
        assert!(synthesize(&context, &options(ShortcutKind::St, 0)).is_ok());
        assert!(synthesize(&context, &options(ShortcutKind::Op, 0)).is_ok());
        let err = synthesize(&context, &options(ShortcutKind::Tic, 0)).unwrap_err();
        assert!(matches!(err, ShortcutError::TokenAlreadyInData { split: "train", index: 1, .. }));
        // Custom tokens make such data usable.
        let mut opts = options(ShortcutKind::Tic, 0);
        opts.tokens.context = "[CTX]".into();
        let data = synthesize(&context, &opts).unwrap();
        assert!(data.test.iter().all(|s| words(&s.text).contains(&"[CTX]")));
    }

    #[test]
    fn rejects_invalid_options() {
        let corpus = corpus(5, 5, 5);
        let cases: Vec<(ShortcutOptions, &str)> = vec![
            (ShortcutOptions { mix_share: -0.1, ..options(ShortcutKind::St, 0) }, "mix_share"),
            (ShortcutOptions { mix_share: f64::NAN, ..options(ShortcutKind::St, 0) }, "mix_share"),
            (ShortcutOptions { mix_share: 1e12, ..options(ShortcutKind::St, 0) }, "mix_share"),
            (ShortcutOptions { lone_share: 1.5, ..options(ShortcutKind::Tic, 0) }, "lone_share"),
            (ShortcutOptions { max_distance: 0, ..options(ShortcutKind::Op, 0) }, "max_distance"),
            (ShortcutOptions { tokens: binary("#0", "#0", "contoken"), ..options(ShortcutKind::St, 0) }, "both"),
            (ShortcutOptions { tokens: binary("#0", "#1", "#1"), ..options(ShortcutKind::Tic, 0) }, "both"),
            (ShortcutOptions { tokens: binary("", "#1", "contoken"), ..options(ShortcutKind::Op, 0) }, "empty"),
            (ShortcutOptions { tokens: binary("#0", "# 1", "contoken"), ..options(ShortcutKind::Op, 0) }, "whitespace"),
        ];
        for (opts, needle) in cases {
            let err = synthesize(&corpus, &opts).unwrap_err();
            assert!(err.to_string().contains(needle), "{err} lacks {needle}");
        }
        // st ignores max_distance and the context token.
        let st = ShortcutOptions { max_distance: 0, tokens: binary("#0", "#1", "#1"), ..options(ShortcutKind::St, 0) };
        assert!(synthesize(&corpus, &st).is_ok());
    }

    #[test]
    fn empty_texts_and_empty_splits_work() {
        let empty = Corpus {
            train: vec![Example { text: String::new(), label: 0 }; 10],
            validation: vec![],
            test: vec![Example { text: " ".into(), label: 1 }; 4],
        };
        for kind in ShortcutKind::INSERTED {
            let opts = ShortcutOptions { mix_share: 0.5, lone_share: 0.5, ..options(kind, 2) };
            let data = synthesize(&empty, &opts).unwrap();
            assert_eq!(data.train.len(), 15);
            assert!(data.validation.is_empty());
            let g = kind.ground_truth_size().unwrap();
            for s in data.test.iter().chain(&data.test_flip) {
                assert_eq!(s.shortcut_positions, (0..g).collect::<Vec<_>>());
                assert_eq!(words(&s.text).len(), g);
                check_synthetic(kind, &opts, &empty.test[0], s);
            }
            check_mixed(kind, &opts, &empty.train, &data.train);
        }
        let nothing = Corpus { train: vec![], validation: vec![], test: vec![] };
        let data = synthesize(&nothing, &options(ShortcutKind::Tic, 0)).unwrap();
        assert!(data.train.is_empty() && data.test.is_empty() && data.test_flip.is_empty());
    }
}
