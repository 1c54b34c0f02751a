//! `agreement`: top-k overlap and rank correlation between every pair of methods of one model cell
//! (Lu et al. 2024, Table 1: "mean share of common words between the top-k words of two methods").
//!
//! Inputs: the `attribute` folders of the methods, in `Options::methods` order. Examples are joined by
//! their `index` into the synthetic test set; only indices every method explained take part.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, ensure};
use serde::{Deserialize, Serialize};

use super::attribute::{self, AttributedExample};
use crate::io::{read_jsonl, write_json};
use grid_methods::metrics::{WordAggregation, agreement, words};
use grid_methods::salience::Method;

pub const FILE: &str = "agreement.json";

#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The methods compared, in input order.
    pub methods: Vec<Method>,
    /// k of the top-k overlap (Lu et al. use 40 words).
    pub top_k: usize,
    /// Compare word scores (as Lu et al. do) instead of token scores.
    pub word_aggregation: Option<WordAggregation>,
}

/// Pairwise agreement, as square matrices in `methods` order: symmetric, 1 on
/// the diagonal, and the mean over the joined examples off it.
///
/// A cell no example defines (e.g. Spearman where a method always scores every
/// token alike) is NaN in memory and `null` in JSON, since JSON has no NaN;
/// `null` reads back as NaN.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agreement {
    pub methods: Vec<Method>,
    pub top_k: usize,
    /// Examples every method explained (the joined examples).
    pub examples: usize,
    /// Mean `|top_k(a) ∩ top_k(b)| / min(k, d)`.
    #[serde(with = "nan_as_null")]
    pub overlap: Vec<Vec<f64>>,
    /// Mean Spearman ρ over the examples where it is defined.
    #[serde(with = "nan_as_null")]
    pub spearman: Vec<Vec<f64>>,
}

pub fn run(options: &Options, inputs: &[PathBuf], out: &Path) -> Result<()> {
    ensure!(
        inputs.len() == options.methods.len(),
        "agreement: {} methods but {} attribution inputs",
        options.methods.len(),
        inputs.len()
    );
    let attributions: Vec<Vec<AttributedExample>> =
        options.methods.iter().zip(inputs).map(|(method, dir)| load(method, dir)).collect::<Result<_>>()?;
    let result = compare(&options.methods, &attributions, options.top_k, options.word_aggregation);
    let all = || options.methods.iter().map(Method::to_string).collect::<Vec<_>>().join(", ");
    ensure!(result.examples > 0, "agreement: no example was explained by all of {}", all());
    write_json(&out.join(FILE), &result)
}

/// One method's attributions; an empty file is an error, as it would silently
/// empty the join.
fn load(method: &Method, dir: &Path) -> Result<Vec<AttributedExample>> {
    let path = dir.join(attribute::FILE);
    let examples: Vec<AttributedExample> =
        read_jsonl(&path).with_context(|| format!("agreement: attributions of `{method}`"))?;
    ensure!(!examples.is_empty(), "agreement: attributions of `{method}`: {} has no examples", path.display());
    Ok(examples)
}

/// The agreement of `methods[i]`, explained by `attributions[i]`, over the
/// examples all of them explained.
pub fn compare(
    methods: &[Method],
    attributions: &[Vec<AttributedExample>],
    top_k: usize,
    word_aggregation: Option<WordAggregation>,
) -> Agreement {
    assert_eq!(methods.len(), attributions.len(), "one attribution list per method");
    let joined = join(attributions);
    let n = methods.len();
    let mut overlap = vec![vec![Mean::default(); n]; n];
    let mut spearman = vec![vec![Mean::default(); n]; n];
    for example in &joined {
        let compared: Vec<Compared> = example.iter().map(|e| Compared::of(e, word_aggregation)).collect();
        for (a, b) in pairs(n) {
            let (x, y) = (&compared[a], &compared[b]);
            let rankable = |i: usize| x.is_rankable(i);
            overlap[a][b].add(agreement::top_k_overlap(&x.scores, &y.scores, rankable, top_k));
            spearman[a][b].add(agreement::spearman(&x.scores, &y.scores, rankable));
        }
    }
    Agreement {
        methods: methods.to_vec(),
        top_k,
        examples: joined.len(),
        overlap: symmetric(&overlap),
        spearman: symmetric(&spearman),
    }
}

/// The examples every method explained, by ascending index, one column per
/// method. An index whose tokenisation (`word_of_token`) differs between
/// methods is left out: their scores would not line up position by position
/// (it cannot happen within one model cell).
fn join(attributions: &[Vec<AttributedExample>]) -> Vec<Vec<&AttributedExample>> {
    let by_index: Vec<HashMap<usize, &AttributedExample>> =
        attributions.iter().map(|examples| examples.iter().map(|e| (e.index, e)).collect()).collect();
    let Some(first) = by_index.first() else { return Vec::new() };
    let mut indices: Vec<usize> = first.keys().copied().collect();
    indices.sort_unstable();
    indices
        .into_iter()
        .filter_map(|i| by_index.iter().map(|m| m.get(&i).copied()).collect::<Option<Vec<_>>>())
        .filter(|row| row.iter().all(|e| e.word_of_token == row[0].word_of_token))
        .collect()
}

/// What the metrics see of one method on one example: token scores with the
/// special tokens masked, or word scores; punctuation is masked in both, as
/// Lu et al. ignore it when they compare the methods' top words.
struct Compared {
    scores: Vec<f32>,
    rankable: Vec<bool>,
}

impl Compared {
    fn of(example: &AttributedExample, word_aggregation: Option<WordAggregation>) -> Self {
        let punctuation = |t: usize| example.tokens.get(t).is_some_and(|text| is_punctuation(text));
        match word_aggregation {
            None => Compared {
                scores: example.scores.clone(),
                rankable: example
                    .word_of_token
                    .iter()
                    .enumerate()
                    .map(|(t, w)| w.is_some() && !punctuation(t))
                    .collect(),
            },
            Some(how) => {
                // The ground truth plays no part in agreement.
                let scores = words::aggregate(&example.scores, &example.word_of_token, &[], how).scores;
                // A word is punctuation when every token of it is.
                let mut rankable = vec![false; scores.len()];
                for (t, w) in example.word_of_token.iter().enumerate() {
                    if let Some(&w) = w.as_ref().filter(|&&w| w < rankable.len()) {
                        rankable[w] |= !punctuation(t);
                    }
                }
                Compared { rankable, scores }
            }
        }
    }

    fn is_rankable(&self, position: usize) -> bool {
        self.rankable.get(position).copied().unwrap_or(false)
    }
}

/// A token of nothing but punctuation (`,` `.` `'s` is not: it has letters).
/// Subword markers (`##`, `Ġ`) are not punctuation of the text.
pub(crate) fn is_punctuation(token: &str) -> bool {
    let text = token.trim_start_matches("##").trim_start_matches('Ġ');
    !text.is_empty() && text.chars().all(|c| c.is_ascii_punctuation() || (!c.is_alphanumeric() && !c.is_whitespace()))
}

/// The pairs `(a, b)` with `a < b`: the upper triangle.
fn pairs(n: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..n).flat_map(move |a| (a + 1..n).map(move |b| (a, b)))
}

/// A running mean of the defined per-example values.
#[derive(Debug, Clone, Copy, Default)]
struct Mean {
    sum: f64,
    count: usize,
}

impl Mean {
    fn add(&mut self, value: Option<f64>) {
        if let Some(v) = value {
            self.sum += v;
            self.count += 1;
        }
    }

    /// NaN when no value was defined.
    fn value(self) -> f64 {
        if self.count == 0 { f64::NAN } else { self.sum / self.count as f64 }
    }
}

/// The full matrix from the upper triangle's means, with 1 on the diagonal (a
/// method agrees fully with itself).
fn symmetric(upper: &[Vec<Mean>]) -> Vec<Vec<f64>> {
    let n = upper.len();
    let mut matrix = vec![vec![1.0; n]; n];
    for (a, b) in pairs(n) {
        let v = upper[a][b].value();
        matrix[a][b] = v;
        matrix[b][a] = v;
    }
    matrix
}

/// Serialises NaN cells as `null` and reads `null` back as NaN.
mod nan_as_null {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(matrix: &[Vec<f64>], serializer: S) -> Result<S::Ok, S::Error> {
        let cells: Vec<Vec<Option<f64>>> =
            matrix.iter().map(|row| row.iter().map(|&v| (!v.is_nan()).then_some(v)).collect()).collect();
        cells.serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Vec<f64>>, D::Error> {
        let cells = Vec::<Vec<Option<f64>>>::deserialize(deserializer)?;
        Ok(cells.into_iter().map(|row| row.into_iter().map(|v| v.unwrap_or(f64::NAN)).collect()).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{read_json, write_jsonl};

    /// `[CLS] w0 w1 w2 [SEP]`: five tokens, three rankable.
    fn sentence(index: usize, scores: [f32; 5]) -> AttributedExample {
        let word_of_token = vec![None, Some(0), Some(1), Some(2), None];
        example(index, scores.to_vec(), word_of_token)
    }

    fn example(index: usize, scores: Vec<f32>, word_of_token: Vec<Option<usize>>) -> AttributedExample {
        AttributedExample {
            index,
            tokens: vec![String::new(); scores.len()],
            word_of_token,
            ground_truth: vec![],
            distractors: vec![],
            label: 0,
            predicted: 0,
            scores,
            completeness_gap: None,
        }
    }

    fn names(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    /// The first `n` of three distinct method configs.
    fn methods(n: usize) -> Vec<Method> {
        ["gradl-l1", "gradp-l1", "gxil"].iter().take(n).map(|m| m.parse().unwrap()).collect()
    }

    fn assert_matrix(actual: &[Vec<f64>], expected: &[[f64; 3]]) {
        assert_eq!(actual.len(), expected.len());
        for (row, want) in actual.iter().zip(expected) {
            for (v, w) in row.iter().zip(want) {
                assert!((v - w).abs() < 1e-9, "{actual:?} != {expected:?}");
            }
        }
    }

    /// Three methods; indices 0 and 1 are shared, 2 and 5 are not (and would
    /// change every mean if they leaked in).
    fn three_methods() -> Vec<Vec<AttributedExample>> {
        let a = vec![
            sentence(0, [9.0, 0.3, 0.2, 0.1, 9.0]),
            sentence(1, [0.0, 0.3, 0.2, 0.1, 0.0]),
            sentence(2, [0.0, 0.1, 0.2, 0.3, 0.0]),
        ];
        let b = vec![
            // Out of order on purpose: the join goes by index.
            sentence(1, [0.0, 0.3, 0.2, 0.1, 0.0]),
            sentence(0, [0.0, 0.1, 0.2, 0.3, 0.0]),
        ];
        let c = vec![
            sentence(0, [0.0, 0.3, 0.2, 0.1, 0.0]),
            sentence(1, [0.0, 0.5, 0.5, 0.5, 0.0]), // constant: ρ undefined
            sentence(5, [0.0, 0.1, 0.2, 0.3, 0.0]),
        ];
        vec![a, b, c]
    }

    #[test]
    fn compares_every_pair_over_the_joined_examples() {
        let result = compare(&methods(3), &three_methods(), 1, None);
        assert_eq!(result.methods, methods(3));
        assert_eq!((result.top_k, result.examples), (1, 2));
        // Example 0: a = c (top token 1), b reversed (top token 3).
        // Example 1: a = b (top token 1); c constant, whose tie goes to token 1.
        // overlap(a,b) = (0 + 1)/2, overlap(a,c) = (1 + 1)/2, overlap(b,c) = (0 + 1)/2.
        assert_matrix(&result.overlap, &[[1.0, 0.5, 1.0], [0.5, 1.0, 0.5], [1.0, 0.5, 1.0]]);
        // ρ(a,b) = (−1 + 1)/2; ρ(a,c) and ρ(b,c) from example 0 only (c constant in 1).
        assert_matrix(&result.spearman, &[[1.0, 0.0, 1.0], [0.0, 1.0, -1.0], [1.0, -1.0, 1.0]]);
    }

    #[test]
    fn punctuation_is_left_out_as_lu_et_al_do() {
        // [CLS] good , film [SEP]: `a` puts its most on the comma.
        let with_tokens = |scores: Vec<f32>| AttributedExample {
            tokens: names(&["[CLS]", "good", ",", "film", "[SEP]"]),
            ..example(0, scores, vec![None, Some(0), Some(1), Some(2), None])
        };
        let a = with_tokens(vec![0.0, 0.2, 0.9, 0.1, 0.0]);
        let b = with_tokens(vec![0.0, 0.3, 0.0, 0.1, 0.0]);
        for aggregation in [None, Some(WordAggregation::Sum)] {
            let r = compare(&methods(2), &[vec![a.clone()], vec![b.clone()]], 1, aggregation);
            // Top word of both, the comma aside: `good`.
            assert_eq!(r.overlap[0][1], 1.0, "{aggregation:?}");
        }
        assert!(is_punctuation(",") && is_punctuation("...") && is_punctuation("##.") && is_punctuation("Ġ!"));
        assert!(!is_punctuation("'s") && !is_punctuation("film") && !is_punctuation("") && !is_punctuation("##s"));
    }

    #[test]
    fn word_scores_change_the_answer() {
        // [CLS] un ##like ly film [SEP]: words 0 (two tokens), 1, 2.
        let word_of_token = vec![None, Some(0), Some(0), Some(1), Some(2), None];
        let a = example(0, vec![9.0, 0.1, 0.5, 0.3, 0.2, 9.0], word_of_token.clone());
        let b = example(0, vec![0.0, 0.4, -0.3, 0.2, 0.5, 0.0], word_of_token);
        let methods = methods(2);
        let attributions = vec![vec![a], vec![b]];
        let cell = |r: &Agreement| (r.overlap[0][1], r.spearman[0][1]);

        // Tokens: ranks a 1, 4, 3, 2 and b 3, 1, 2, 4 → Σ = −4, Σa² = Σb² = 5 → ρ = −0.8;
        // top_2 {2, 3} vs {4, 1} share nothing.
        let (overlap, rho) = cell(&compare(&methods, &attributions, 2, None));
        assert!(overlap == 0.0 && (rho + 0.8).abs() < 1e-9, "{overlap} {rho}");

        // Sum: words a 0.6, 0.3, 0.2 and b 0.1, 0.2, 0.5 are reversed → ρ = −1;
        // top_2 {0, 1} vs {2, 1} share one.
        let (overlap, rho) = cell(&compare(&methods, &attributions, 2, Some(WordAggregation::Sum)));
        assert!((overlap - 0.5).abs() < 1e-12 && (rho + 1.0).abs() < 1e-9, "{overlap} {rho}");

        // Max: words a 0.5, 0.3, 0.2 (ranks 3, 2, 1) and b 0.4, 0.2, 0.5 (ranks 2, 1, 3)
        // → Σ = 0 + 0 − 1, Σa² = Σb² = 2 → ρ = −0.5.
        let (_, rho) = cell(&compare(&methods, &attributions, 2, Some(WordAggregation::Max)));
        assert!((rho + 0.5).abs() < 1e-9, "{rho}");
    }

    #[test]
    fn mismatched_tokenisation_is_not_joined() {
        let a = vec![sentence(0, [0.0, 0.3, 0.2, 0.1, 0.0]), sentence(1, [0.0, 0.3, 0.2, 0.1, 0.0])];
        let mut b = vec![sentence(0, [0.0, 0.1, 0.2, 0.3, 0.0]), sentence(1, [0.0, 0.3, 0.2, 0.1, 0.0])];
        b[0].word_of_token = vec![None, Some(0), Some(0), Some(1), None];
        let result = compare(&methods(2), &[a, b], 1, None);
        // Only example 1 (identical) remains.
        assert_eq!(result.examples, 1);
        assert_eq!((result.overlap[0][1], result.spearman[0][1]), (1.0, 1.0));
    }

    #[test]
    fn undefined_cells_are_null_in_json_and_nan_again_when_read() {
        let constant = vec![sentence(0, [0.0, 0.5, 0.5, 0.5, 0.0])];
        let varied = vec![sentence(0, [0.0, 0.1, 0.2, 0.3, 0.0])];
        let result = compare(&methods(2), &[constant, varied], 40, None);
        assert!(result.spearman[0][1].is_nan() && result.spearman[1][0].is_nan());
        assert_eq!(result.spearman[0][0], 1.0);
        // k = 40 > d = 3, so the top sets are all three tokens.
        assert_eq!(result.overlap[0][1], 1.0);

        let json = serde_json::to_value(&result).unwrap();
        assert_eq!(json["spearman"], serde_json::json!([[1.0, null], [null, 1.0]]));
        let back: Agreement = serde_json::from_value(json).unwrap();
        assert!(back.spearman[0][1].is_nan());
        assert_eq!(back.overlap, result.overlap);
    }

    #[test]
    fn run_reads_the_inputs_and_writes_the_matrices() {
        let root = tempfile::tempdir().unwrap();
        let inputs: Vec<PathBuf> = ["a", "b", "c"].iter().map(|m| root.path().join(m)).collect();
        for (dir, examples) in inputs.iter().zip(three_methods()) {
            std::fs::create_dir(dir).unwrap();
            write_jsonl(&dir.join(attribute::FILE), &examples).unwrap();
        }
        let options = Options { methods: methods(3), top_k: 1, word_aggregation: None };
        run(&options, &inputs, root.path()).unwrap();
        let written: Agreement = read_json(&root.path().join(FILE)).unwrap();
        assert_eq!(written, compare(&options.methods, &three_methods(), 1, None));
        assert_eq!(written.spearman[1][2], -1.0);
    }

    #[test]
    fn run_names_the_method_without_examples() {
        let root = tempfile::tempdir().unwrap();
        let inputs: Vec<PathBuf> = ["a", "b"].iter().map(|m| root.path().join(m)).collect();
        for dir in &inputs {
            std::fs::create_dir(dir).unwrap();
        }
        write_jsonl(&inputs[0].join(attribute::FILE), &three_methods()[0]).unwrap();
        write_jsonl::<AttributedExample>(&inputs[1].join(attribute::FILE), &[]).unwrap();
        let options = Options { methods: methods(2), top_k: 1, word_aggregation: None };
        let error = format!("{:#}", run(&options, &inputs, root.path()).unwrap_err());
        assert!(error.contains("`gradp-l1`") && error.contains("no examples"), "{error}");
        // A missing file names its method too.
        std::fs::remove_file(inputs[0].join(attribute::FILE)).unwrap();
        let error = format!("{:#}", run(&options, &inputs, root.path()).unwrap_err());
        assert!(error.contains("`gradl-l1`"), "{error}");
    }
}
