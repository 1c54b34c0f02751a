//! Zhou et al. 2022's text manipulation (§3, §6.1–6.2, Fig. 8; PROTOCOL §2):
//! reassign labels, then let the articles carry them.
//!
//! Unlike the inserted rules, nothing new enters the text: words that are
//! already there are rewritten. Two steps make the articles the only thing a
//! model can rely on beyond chance:
//!
//! 1. **Label reassignment.** Every example, in every split, keeps its label
//!    `y` with probability `r` (`keep_probability`) and gets the other label
//!    otherwise; call the result `ŷ`. The text no longer predicts `ŷ` better
//!    than `max(r, 1 − r)` (chance at the paper's `r = 0.5`), so any accuracy
//!    above that must come from step 2.
//! 2. **Manipulation.** In the correlating part of the text every article
//!    (`a` / `an` / `the`) becomes `the` when `ŷ = 1` and `a` when `ŷ = 0`.
//!    Those articles are the effective region: G, recorded as
//!    `shortcut_positions` with [`GroundTruth::Region`], since each of them
//!    says the label on its own.
//!
//! # Layouts
//!
//! | layout                     | correlating part   | non-correlating part |
//! |----------------------------|--------------------|----------------------|
//! | `Whole` (§6.1)             | every word         | none                 |
//! | `CorrelatingFirst` (CN)    | `words[..n / 2]`   | `words[n / 2..]`     |
//! | `CorrelatingSecond` (NC)   | `words[n / 2..]`   | `words[..n / 2]`     |
//!
//! The paper splits "at the midpoint" without saying how it rounds; here the
//! midpoint of `n` words is `n / 2` rounded down, so the middle word of an odd
//! text belongs to the second half. In the non-correlating part (CN, NC) one
//! article is drawn uniformly from [`ARTICLES`] per example, and every article
//! of that part becomes it: these distractors look like G but say nothing
//! about the label (`distractor_positions`).
//!
//! # What counts as an article
//!
//! Texts are whitespace words (PROTOCOL §1); the output is the words joined by
//! single spaces, so recorded positions index `words(text)` of the output. A
//! word is an article when, after stripping leading and trailing ASCII
//! punctuation, what is left is exactly `a`, `an` or `the` in any case: `The`,
//! `(the`, `a,` and `A.` are articles; `another`, `theater`, `the-end` and
//! `the's` are not, nor is `the’` (the curly quote is not ASCII). A rewritten
//! article keeps its punctuation and whether its first letter was a capital
//! (`The` → `A`, `(an` → `(the`, `THE` → `A` or `The`), so sentence starts stay
//! sentence starts. A stray capital `A` (a grade, a list item) cannot be told
//! from an article and is treated as one, as a word list would.
//!
//! # Left out
//!
//! An example whose correlating part has no article carries nothing of `ŷ`:
//! under reassignment its label is noise a model could only memorise, and it
//! has no ground truth. It is left out of its split (train, validation and
//! test alike) and counted in [`LeftOut`]. This depends on the text and the
//! layout only, never on a random draw, so changing `r` or the seed keeps the
//! same examples. An example without non-correlating articles is kept, with no
//! distractors.
//!
//! # The test sets
//!
//! `test` holds every kept test example manipulated for its reassigned label
//! `ŷ` (`original_label = y`); a model that ignores the articles can expect
//! `max(r, 1 − r)` there. `test_flip` holds the same examples, in the same
//! order, manipulated for `1 − y`: the articles argue against the original
//! label, so a model that reads them scores near 100% and one that reads the
//! rest of the text near 0. Positions mean the same in both.
//!
//! # Determinism
//!
//! Every random choice comes from a ChaCha8 stream derived from `seed` and a
//! purpose: the reassignment of each split, the distractor article of each
//! split, and the distractors of `test_flip`, each its own id in the module's
//! one `Stream` enum. Each stream gives exactly one draw to every
//! source example, left-out ones included, so an example's draws depend on its
//! index alone: the three layouts reassign the same labels under one seed, and
//! since an example keeps its label when its draw `u ∈ [0, 1)` is below `r`,
//! raising `r` only turns flips into keeps.

use std::borrow::Cow;
use std::ops::Range;

use rand::Rng;

use grid_core::data::{Corpus, Example, words};

use super::{GroundTruth, LeftOut, ShortcutData, Stream, SyntheticExample, stream};

/// The article words (matched case-insensitively on a word's letters).
pub const ARTICLES: [&str; 3] = ["a", "an", "the"];

/// Which words carry the label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArticleLayout {
    /// Every article of the text (§6.1).
    Whole,
    /// CN (§6.2): the first half's articles; the second half's all become one
    /// random article.
    CorrelatingFirst,
    /// NC (§6.2): the second half's articles; the first half's are the
    /// non-correlating ones.
    CorrelatingSecond,
}

impl ArticleLayout {
    /// The word ranges of the correlating and the non-correlating part of a
    /// text of `n` words, split at `n / 2` (the middle word of an odd text goes
    /// to the second half).
    fn parts(self, n: usize) -> (Range<usize>, Range<usize>) {
        let mid = n / 2;
        match self {
            ArticleLayout::Whole => (0..n, n..n),
            ArticleLayout::CorrelatingFirst => (0..mid, mid..n),
            ArticleLayout::CorrelatingSecond => (mid..n, 0..mid),
        }
    }
}

/// The article every correlating article becomes: `the` for class 1, `a` for
/// class 0 (§6.1: positive → "the", negative → "a").
fn label_article(label: u32) -> &'static str {
    if label == 1 { "the" } else { "a" }
}

/// Splits a word into leading ASCII punctuation, core and trailing ASCII
/// punctuation. A word of punctuation only is all lead, with an empty core.
fn split_punctuation(word: &str) -> (&str, &str, &str) {
    let punctuation = |c: char| c.is_ascii_punctuation();
    let rest = word.trim_start_matches(punctuation);
    let core = rest.trim_end_matches(punctuation);
    (&word[..word.len() - rest.len()], core, &rest[core.len()..])
}

/// Whether the word's core (see [`split_punctuation`]) is an article.
fn is_article(word: &str) -> bool {
    let (_, core, _) = split_punctuation(word);
    ARTICLES.iter().any(|article| core.eq_ignore_ascii_case(article))
}

/// `word` (an article) with its core replaced by `article`, keeping the
/// punctuation around it and a capital first letter.
fn replace_article(word: &str, article: &str) -> String {
    let (lead, core, trail) = split_punctuation(word);
    let mut out = String::with_capacity(lead.len() + article.len() + trail.len());
    out.push_str(lead);
    let mut letters = article.chars();
    match letters.next() {
        Some(first) if core.starts_with(|c: char| c.is_uppercase()) => {
            out.extend(first.to_uppercase());
            out.push_str(letters.as_str());
        }
        _ => out.push_str(article),
    }
    out.push_str(trail);
    out
}

/// A source text split into words, with the positions of its articles sorted
/// by role.
struct Sites<'a> {
    words: Vec<&'a str>,
    /// Articles in the correlating part (G), ascending; never empty.
    correlating: Vec<usize>,
    /// Articles in the non-correlating part, ascending.
    distractors: Vec<usize>,
}

impl<'a> Sites<'a> {
    /// `None` when the correlating part has no article: the example is left out.
    fn find(text: &'a str, layout: ArticleLayout) -> Option<Self> {
        let words = words(text);
        let (correlating, other) = layout.parts(words.len());
        let articles_in = |range: Range<usize>| -> Vec<usize> { range.filter(|&p| is_article(words[p])).collect() };
        let correlating = articles_in(correlating);
        if correlating.is_empty() {
            return None;
        }
        let distractors = articles_in(other);
        Some(Sites { words, correlating, distractors })
    }

    /// The text with the correlating articles saying `label` and every
    /// distractor turned into `distractor`, words joined by single spaces.
    fn render(&self, label: u32, distractor: &str) -> String {
        let mut out: Vec<Cow<'_, str>> = self.words.iter().map(|&word| Cow::Borrowed(word)).collect();
        let rewrites = self.correlating.iter().map(|&p| (p, label_article(label)));
        for (p, article) in rewrites.chain(self.distractors.iter().map(|&p| (p, distractor))) {
            out[p] = Cow::Owned(replace_article(self.words[p], article));
        }
        out.join(" ")
    }

    fn synthetic(&self, original_label: u32, label: u32, distractor: &str) -> SyntheticExample {
        SyntheticExample {
            text: self.render(label, distractor),
            label,
            original_label,
            shortcut_positions: self.correlating.clone(),
            distractor_positions: self.distractors.clone(),
            ground_truth: GroundTruth::Region,
        }
    }
}

/// The two streams one split draws from.
#[derive(Clone, Copy)]
struct SplitStreams {
    labels: Stream,
    distractors: Stream,
}

impl SplitStreams {
    const TRAIN: SplitStreams =
        SplitStreams { labels: Stream::ArticleTrainLabels, distractors: Stream::ArticleTrainDistractors };
    const VALIDATION: SplitStreams =
        SplitStreams { labels: Stream::ArticleValidationLabels, distractors: Stream::ArticleValidationDistractors };
    const TEST: SplitStreams =
        SplitStreams { labels: Stream::ArticleTestLabels, distractors: Stream::ArticleTestDistractors };
}

fn random_article<R: Rng>(rng: &mut R) -> &'static str {
    ARTICLES[rng.random_range(0..ARTICLES.len())]
}

/// Per source example, in order: the reassigned label `ŷ` and the article its
/// distractors become. One draw from each stream per example, left-out ones
/// included (see the module docs).
fn draws(
    examples: &[Example],
    keep_probability: f64,
    seed: u64,
    streams: SplitStreams,
) -> impl Iterator<Item = (u32, &'static str)> + '_ {
    let mut labels = stream(seed, streams.labels);
    let mut distractors = stream(seed, streams.distractors);
    examples.iter().map(move |example| {
        debug_assert!(example.label <= 1, "labels are checked binary by the caller");
        let keep = labels.random::<f64>() < keep_probability;
        let label = if keep { example.label } else { 1 - example.label };
        (label, random_article(&mut distractors))
    })
}

/// Applies the manipulation of `layout` to every split; see the module docs.
/// Labels must be 0/1 and `keep_probability` in `[0, 1]` (both checked by
/// `synthesize`).
pub(super) fn manipulate(corpus: &Corpus, layout: ArticleLayout, keep_probability: f64, seed: u64) -> ShortcutData {
    let (train, train_left_out) = training_split(&corpus.train, layout, keep_probability, seed, SplitStreams::TRAIN);
    let (validation, validation_left_out) =
        training_split(&corpus.validation, layout, keep_probability, seed, SplitStreams::VALIDATION);

    let mut test = Vec::with_capacity(corpus.test.len());
    let mut test_flip = Vec::with_capacity(corpus.test.len());
    let mut test_left_out = 0;
    let mut flip_distractors = stream(seed, Stream::ArticleFlipDistractors);
    for (example, (label, distractor)) in
        corpus.test.iter().zip(draws(&corpus.test, keep_probability, seed, SplitStreams::TEST))
    {
        // Drawn before the left-out check: one draw per source example.
        let flip_distractor = random_article(&mut flip_distractors);
        let Some(sites) = Sites::find(&example.text, layout) else {
            test_left_out += 1;
            continue;
        };
        test.push(sites.synthetic(example.label, label, distractor));
        test_flip.push(sites.synthetic(example.label, 1 - example.label, flip_distractor));
    }

    ShortcutData {
        train,
        validation,
        test,
        test_flip,
        left_out: LeftOut { train: train_left_out, validation: validation_left_out, test: test_left_out },
    }
}

/// A train or validation split: the kept examples, manipulated for their
/// reassigned labels, and how many were left out. Kept in source order: every
/// example is rewritten in place and nothing is appended, so unlike the
/// inserted rules' mix there is no block of synthetic examples to shuffle in.
fn training_split(
    examples: &[Example],
    layout: ArticleLayout,
    keep_probability: f64,
    seed: u64,
    streams: SplitStreams,
) -> (Vec<Example>, usize) {
    let mut kept = Vec::with_capacity(examples.len());
    let mut left_out = 0;
    for (example, (label, distractor)) in examples.iter().zip(draws(examples, keep_probability, seed, streams)) {
        match Sites::find(&example.text, layout) {
            Some(sites) => kept.push(Example { text: sites.render(label, distractor), label }),
            None => left_out += 1,
        }
    }
    (kept, left_out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shortcut::{ShortcutKind, ShortcutOptions, synthesize};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use std::collections::BTreeSet;

    const LAYOUTS: [ArticleLayout; 3] =
        [ArticleLayout::Whole, ArticleLayout::CorrelatingFirst, ArticleLayout::CorrelatingSecond];

    fn example(text: &str, label: u32) -> Example {
        Example { text: text.into(), label }
    }

    fn only_test(test: Vec<Example>) -> Corpus {
        Corpus { train: vec![], validation: vec![], test }
    }

    /// The lower-case core of a word, for comparing articles.
    fn core(word: &str) -> String {
        split_punctuation(word).1.to_lowercase()
    }

    /// `n` texts of 0 to 24 words drawn from a vocabulary with articles in
    /// every spelling this module handles and look-alikes that are not
    /// articles; irregular spacing; both labels.
    fn random_examples(n: usize, seed: u64) -> Vec<Example> {
        const VOCABULARY: [&str; 16] = [
            "the", "a", "an", "The", "A", "(an", "the,", "film", "plot", "actors,", "another", "theater", "then",
            "was", "good.", "bad!",
        ];
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                let len = rng.random_range(0..25);
                let mut text = String::new();
                for _ in 0..len {
                    text.push_str(if rng.random_bool(0.2) { " \t " } else { " " });
                    text.push_str(VOCABULARY[rng.random_range(0..VOCABULARY.len())]);
                }
                Example { text, label: rng.random_range(0..2) }
            })
            .collect()
    }

    /// `n` texts that keep an article in both halves under every layout.
    fn articled_examples(n: usize) -> Vec<Example> {
        (0..n).map(|i| example(&format!("the review {i} is a  delight and an hour"), (i % 3 % 2) as u32)).collect()
    }

    /// Checks a synthetic example against its source, with the halves worked
    /// out here rather than by `ArticleLayout::parts`: every non-article word
    /// is unchanged and in place; the articles are exactly the recorded
    /// positions; correlating ones say the label, distractors are one article;
    /// punctuation and capitals survive.
    fn check(layout: ArticleLayout, source: &Example, s: &SyntheticExample) {
        let before = words(&source.text);
        let after = words(&s.text);
        assert_eq!(before.len(), after.len(), "{:?} -> {:?}", source.text, s.text);
        assert_eq!(s.text, after.join(" "), "words are joined by single spaces");
        assert_eq!(s.ground_truth, GroundTruth::Region);
        assert_eq!(s.original_label, source.label);
        assert!(!s.shortcut_positions.is_empty());
        assert!(s.shortcut_positions.windows(2).all(|w| w[0] < w[1]));
        assert!(s.distractor_positions.windows(2).all(|w| w[0] < w[1]));
        let mid = before.len() / 2;
        let in_correlating_half = |p: usize| match layout {
            ArticleLayout::Whole => true,
            ArticleLayout::CorrelatingFirst => p < mid,
            ArticleLayout::CorrelatingSecond => p >= mid,
        };
        let mut distractor_words = BTreeSet::new();
        for (p, (old, new)) in before.iter().zip(&after).enumerate() {
            let correlating = s.shortcut_positions.contains(&p);
            let distractor = s.distractor_positions.contains(&p);
            if !is_article(old) {
                assert!(!correlating && !distractor, "{old:?} at {p} is no article");
                assert_eq!(old, new);
                continue;
            }
            assert!(correlating != distractor, "article {old:?} at {p} must be exactly one of G and distractors");
            assert_eq!(correlating, in_correlating_half(p), "{old:?} at {p} of {}", before.len());
            let (old_lead, old_core, old_trail) = split_punctuation(old);
            let (new_lead, new_core, new_trail) = split_punctuation(new);
            assert_eq!((old_lead, old_trail), (new_lead, new_trail));
            let capital = |w: &str| w.starts_with(|c: char| c.is_uppercase());
            assert_eq!(capital(old_core), capital(new_core), "{old:?} -> {new:?}");
            if correlating {
                assert_eq!(core(new), if s.label == 1 { "the" } else { "a" }, "{:?}", s.text);
            } else {
                distractor_words.insert(core(new));
            }
        }
        assert!(distractor_words.len() <= 1, "distractors differ: {distractor_words:?}");
        if layout == ArticleLayout::Whole {
            assert!(s.distractor_positions.is_empty());
        }
    }

    #[test]
    fn detects_articles_through_punctuation_and_case() {
        for word in ["a", "an", "the", "The", "THE", "A", "An", "aN", "(the", "a,", "A.", "\"the\"", "the...", "'An'"] {
            assert!(is_article(word), "{word:?}");
        }
        for word in [
            "", "...", "(", "another", "theater", "then", "ah", "la", "the-end", "the's", "a's", "thé", "the’", "anthe",
        ] {
            assert!(!is_article(word), "{word:?}");
        }
        assert_eq!(split_punctuation("(the),"), ("(", "the", "),"));
        assert_eq!(split_punctuation("..."), ("...", "", ""));
        assert_eq!(split_punctuation("the-end!"), ("", "the-end", "!"));
    }

    #[test]
    fn replacement_keeps_punctuation_and_capitals() {
        let cases = [
            ("the", "a", "a"),
            ("The", "a", "A"),
            ("a", "the", "the"),
            ("(an", "the", "(the"),
            ("a,", "the", "the,"),
            ("A.", "an", "An."),
            ("THE", "a", "A"),
            ("THE", "the", "The"),
            ("\"the\"", "a", "\"a\""),
            ("'An'", "an", "'An'"),
        ];
        for (word, article, want) in cases {
            assert_eq!(replace_article(word, article), want, "{word:?} -> {article:?}");
        }
    }

    #[test]
    fn whole_turns_every_article_into_the_label_word() {
        let text = "The film is  an odd one,\ta (the) mess. Another theater!";
        let corpus = only_test(vec![example(text, 1), example(text, 0)]);
        let data = manipulate(&corpus, ArticleLayout::Whole, 1.0, 3);
        assert_eq!(data.left_out, LeftOut::default());
        let [positive, negative] = &data.test[..] else { panic!("two test examples expected") };
        assert_eq!(positive.text, "The film is the odd one, the (the) mess. Another theater!");
        assert_eq!(negative.text, "A film is a odd one, a (a) mess. Another theater!");
        for (source, s) in corpus.test.iter().zip(&data.test) {
            assert_eq!(s.shortcut_positions, [0, 3, 6, 7]);
            assert!(s.distractor_positions.is_empty());
            assert_eq!(s.ground_truth, GroundTruth::Region);
            check(ArticleLayout::Whole, source, s);
        }
        // The flip argues against the original label.
        assert_eq!(data.test_flip[0].text, negative.text);
        assert_eq!(data.test_flip[1].text, positive.text);

        let corpus = Corpus { train: random_examples(300, 1), validation: vec![], test: random_examples(300, 2) };
        let data = manipulate(&corpus, ArticleLayout::Whole, 0.5, 7);
        let kept: Vec<&Example> = corpus.test.iter().filter(|e| words(&e.text).iter().any(|w| is_article(w))).collect();
        assert_eq!(data.test.len(), kept.len());
        assert_eq!(data.left_out.test, corpus.test.len() - kept.len());
        for (source, s) in kept.iter().zip(&data.test) {
            check(ArticleLayout::Whole, source, s);
        }
    }

    #[test]
    fn halves_split_at_n_over_2() {
        // 5 words: mid = 2, so the middle word `the` (2) belongs to the second half.
        let odd = "a b the c an";
        // 6 words: mid = 3.
        let even = "x the a y an z";
        let cases = [
            (odd, ArticleLayout::CorrelatingFirst, vec![0], vec![2, 4]),
            (odd, ArticleLayout::CorrelatingSecond, vec![2, 4], vec![0]),
            (odd, ArticleLayout::Whole, vec![0, 2, 4], vec![]),
            (even, ArticleLayout::CorrelatingFirst, vec![1, 2], vec![4]),
            (even, ArticleLayout::CorrelatingSecond, vec![4], vec![1, 2]),
        ];
        for (text, layout, correlating, distractors) in cases {
            let data = manipulate(&only_test(vec![example(text, 0)]), layout, 1.0, 0);
            let s = &data.test[0];
            assert_eq!((&s.shortcut_positions, &s.distractor_positions), (&correlating, &distractors), "{layout:?}");
            check(layout, &example(text, 0), s);
            let after = words(&s.text);
            assert!(correlating.iter().all(|&p| after[p] == "a"));
        }
    }

    #[test]
    fn cn_and_nc_keep_correlating_and_distractor_articles_apart() {
        let corpus = only_test(random_examples(400, 5));
        for layout in [ArticleLayout::CorrelatingFirst, ArticleLayout::CorrelatingSecond] {
            let data = manipulate(&corpus, layout, 0.5, 11);
            let kept: Vec<&Example> = corpus.test.iter().filter(|e| Sites::find(&e.text, layout).is_some()).collect();
            assert_eq!(data.test.len(), kept.len());
            assert!(kept.len() > 200, "the generator should give most texts a correlating article");
            let mut seen = [0usize; 3];
            for (source, (s, flip)) in kept.iter().zip(data.test.iter().zip(&data.test_flip)) {
                check(layout, source, s);
                check(layout, source, flip);
                if let Some(&p) = s.distractor_positions.first() {
                    let word = core(words(&s.text)[p]);
                    let i = ARTICLES.iter().position(|a| *a == word).expect("a distractor is an article");
                    seen[i] += 1;
                }
            }
            // Uniform over three: each article far from absent (loose bound).
            let total: usize = seen.iter().sum();
            assert!(seen.iter().all(|&count| count * 5 > total), "{layout:?}: {seen:?}");
        }
    }

    #[test]
    fn keep_probability_sets_the_share_of_kept_labels() {
        let corpus = Corpus { train: articled_examples(400), validation: vec![], test: articled_examples(400) };
        let kept_share = |r: f64| {
            let data = manipulate(&corpus, ArticleLayout::Whole, r, 2);
            assert_eq!(data.test.len(), 400);
            let test_kept = data.test.iter().filter(|s| s.label == s.original_label).count();
            let train_kept = data.train.iter().zip(&corpus.train).filter(|(e, source)| e.label == source.label).count();
            (test_kept, train_kept)
        };
        assert_eq!(kept_share(1.0), (400, 400));
        assert_eq!(kept_share(0.0), (0, 0));
        let (test_kept, train_kept) = kept_share(0.5);
        // Binomial(400, 0.5): mean 200, sd 10.
        assert!((150..=250).contains(&test_kept), "{test_kept}");
        assert!((150..=250).contains(&train_kept), "{train_kept}");
    }

    #[test]
    fn reassignment_is_shared_by_layouts_and_monotone_in_r() {
        let corpus = only_test(articled_examples(200));
        let labels = |layout, r| -> Vec<u32> {
            let data = manipulate(&corpus, layout, r, 8);
            assert_eq!(data.test.len(), 200, "{layout:?}");
            data.test.iter().map(|s| s.label).collect()
        };
        let whole = labels(ArticleLayout::Whole, 0.5);
        assert_eq!(labels(ArticleLayout::CorrelatingFirst, 0.5), whole);
        assert_eq!(labels(ArticleLayout::CorrelatingSecond, 0.5), whole);
        // An example kept at r = 0.3 is kept at r = 0.7 too.
        let low = labels(ArticleLayout::Whole, 0.3);
        let high = labels(ArticleLayout::Whole, 0.7);
        for ((source, low), high) in corpus.test.iter().zip(low).zip(high) {
            assert!(low != source.label || high == source.label);
        }
    }

    #[test]
    fn examples_without_correlating_articles_are_left_out() {
        let none = "no articles here, another theater";
        let second_half_only = "good film, the end"; // 4 words, article at 2
        let first_half_only = "the end of it"; // article at 0
        let lone = "The"; // 1 word: mid = 0, the first half is empty
        let corpus = Corpus {
            train: vec![example(none, 0), example(second_half_only, 1), example(first_half_only, 0)],
            validation: vec![example(lone, 1), example(none, 1)],
            test: vec![
                example(first_half_only, 1),
                example(none, 0),
                example(second_half_only, 0),
                example("", 1),
                example(lone, 0),
            ],
        };
        let cases = [
            (ArticleLayout::Whole, LeftOut { train: 1, validation: 1, test: 2 }),
            (ArticleLayout::CorrelatingFirst, LeftOut { train: 2, validation: 2, test: 4 }),
            (ArticleLayout::CorrelatingSecond, LeftOut { train: 2, validation: 1, test: 3 }),
        ];
        for (layout, left_out) in cases {
            for r in [0.0, 0.5, 1.0] {
                let data = manipulate(&corpus, layout, r, 4);
                assert_eq!(data.left_out, left_out, "{layout:?} r={r}");
                assert_eq!(data.train.len(), corpus.train.len() - left_out.train);
                assert_eq!(data.validation.len(), corpus.validation.len() - left_out.validation);
                assert_eq!(data.test.len(), corpus.test.len() - left_out.test);
                assert_eq!(data.test_flip.len(), data.test.len());
            }
        }
        // Which ones are kept: the article in the correlating half.
        let cn = manipulate(&corpus, ArticleLayout::CorrelatingFirst, 1.0, 4);
        assert_eq!(cn.train, [example("a end of it", 0)]);
        assert_eq!(cn.test[0].text, "the end of it");
        let nc = manipulate(&corpus, ArticleLayout::CorrelatingSecond, 1.0, 4);
        assert_eq!(nc.train[0], example("good film, the end", 1));
        assert_eq!(nc.validation, [example("The", 1)]);
        let texts: Vec<&str> = nc.test.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(texts, ["good film, a end", "A"]);
        // Kept without distractors: the first half of "The" is empty.
        assert!(nc.test[1].distractor_positions.is_empty());
    }

    #[test]
    fn flip_articles_argue_against_the_original_label() {
        let corpus = only_test(random_examples(300, 9));
        for layout in LAYOUTS {
            let data = manipulate(&corpus, layout, 0.5, 12);
            assert_eq!(data.test.len(), data.test_flip.len());
            let kept = corpus.test.iter().filter(|e| Sites::find(&e.text, layout).is_some());
            let mut agreeing = 0;
            for (source, (s, flip)) in kept.zip(data.test.iter().zip(&data.test_flip)) {
                assert_eq!(flip.original_label, source.label);
                assert_eq!(flip.label, 1 - source.label);
                assert_eq!(s.original_label, flip.original_label);
                assert_eq!(
                    (&s.shortcut_positions, &s.distractor_positions),
                    (&flip.shortcut_positions, &flip.distractor_positions)
                );
                check(layout, source, flip);
                agreeing += usize::from(s.label == s.original_label);
            }
            // In `test` the reassignment keeps about half, unlike the flip.
            assert!(agreeing > 0 && agreeing < data.test.len(), "{layout:?}: {agreeing}");
        }
    }

    #[test]
    fn deterministic_under_a_seed() {
        let corpus = Corpus {
            train: random_examples(150, 1),
            validation: random_examples(60, 2),
            test: random_examples(150, 3),
        };
        for layout in LAYOUTS {
            let a = manipulate(&corpus, layout, 0.5, 5);
            assert_eq!(a, manipulate(&corpus, layout, 0.5, 5));
            let c = manipulate(&corpus, layout, 0.5, 6);
            assert_eq!(a.left_out, c.left_out, "left-out examples do not depend on the seed");
            let labels = |examples: &[Example]| examples.iter().map(|e| e.label).collect::<Vec<_>>();
            assert_ne!(labels(&a.train), labels(&c.train));
            assert_ne!(labels(&a.validation), labels(&c.validation));
            assert_ne!(a.test, c.test);
            if layout != ArticleLayout::Whole {
                // Only the distractors are random in the flip set.
                assert_ne!(a.test_flip, c.test_flip);
            }
        }
    }

    #[test]
    fn synthesize_hands_article_kinds_to_manipulate() {
        let corpus =
            Corpus { train: random_examples(40, 1), validation: random_examples(10, 2), test: random_examples(30, 3) };
        for (kind, layout) in [
            (ShortcutKind::Articles, ArticleLayout::Whole),
            (ShortcutKind::ArticlesCn, ArticleLayout::CorrelatingFirst),
            (ShortcutKind::ArticlesNc, ArticleLayout::CorrelatingSecond),
        ] {
            let options = ShortcutOptions { keep_probability: 0.3, seed: 17, ..ShortcutOptions::new(kind) };
            let data = synthesize(&corpus, &options).expect("binary labels and a valid probability");
            assert_eq!(data, manipulate(&corpus, layout, 0.3, 17), "{kind}");
        }
    }

    #[test]
    fn empty_texts_and_empty_splits_work() {
        let empty = Corpus {
            train: vec![example("", 0); 3],
            validation: vec![],
            test: vec![example(" \t ", 1), example("", 0)],
        };
        for layout in LAYOUTS {
            let data = manipulate(&empty, layout, 0.5, 1);
            assert!(data.train.is_empty() && data.validation.is_empty());
            assert!(data.test.is_empty() && data.test_flip.is_empty());
            assert_eq!(data.left_out, LeftOut { train: 3, validation: 0, test: 2 });
        }
        let nothing = Corpus { train: vec![], validation: vec![], test: vec![] };
        let data = manipulate(&nothing, ArticleLayout::CorrelatingFirst, 0.5, 0);
        assert!(data.train.is_empty() && data.test.is_empty() && data.test_flip.is_empty());
        assert_eq!(data.left_out, LeftOut::default());
    }
}
