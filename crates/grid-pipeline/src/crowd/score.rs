//! Lu et al.'s scoring of crowd answers (PROTOCOL §4): per task (example i,
//! method j, top-k words) the correctness A_ijk of the answers' strict
//! majority; per method and k the accuracy p_jk = mean_i A_ijk; per method the
//! weighted score s_j = Σ_k w_k p_jk with w_k = (Σ_j Σ_k p_jk) / (K² Σ_j p_jk),
//! so a k at which people are rarely right (a small one) weighs more; the
//! examples that flip: right with some k₁ words and wrong with more, k₂ > k₁;
//! and those more words aid (Lu et al., Table 7: "Aids" = examples − Flips −
//! examples right at every k).

use std::collections::{BTreeMap, BTreeSet};

/// One person's answer to a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Answer {
    Label(u32),
    DontKnow,
}

/// A_ijk: whether the true label got strictly more of the answers than any
/// other answer, "don't know" included (a tie, or no answer, is not correct).
pub fn majority_correct(answers: &[Answer], label: u32) -> bool {
    let votes = |answer: Answer| answers.iter().filter(|&&a| a == answer).count();
    let right = votes(Answer::Label(label));
    right > 0 && answers.iter().filter(|&&a| a != Answer::Label(label)).all(|&other| votes(other) < right)
}

/// A task's aggregated outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskOutcome {
    pub example: usize,
    pub method: String,
    pub k: usize,
    /// A_ijk.
    pub correct: bool,
}

/// One method's row of Lu et al.'s tables.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MethodScore {
    pub method: String,
    /// p_jk, in ascending k.
    pub accuracy: Vec<(usize, f64)>,
    /// s_j; `None` when some k has p_jk = 0 for every method (its weight
    /// divides by zero).
    pub score: Option<f64>,
    /// Examples right with k₁ words and wrong with some k₂ > k₁.
    pub flips: usize,
    /// Examples that neither flip nor are right at every k (Lu et al.'s
    /// "Aids": 100 − Flips − always right, over their 100 examples).
    pub aids: usize,
    pub examples: usize,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ScoreError {
    #[error("no task outcomes to score")]
    Empty,
    #[error("method `{method}` has no tasks with k = {k}, which other methods have: every method needs every k")]
    MissingK { method: String, k: usize },
    #[error("example {example}, method `{method}`, k = {k} is scored twice")]
    Duplicate { example: usize, method: String, k: usize },
}

/// The weights w_k (ascending k) from the accuracies p_jk of every method.
pub fn weights(scores: &[Vec<(usize, f64)>]) -> Vec<(usize, Option<f64>)> {
    let ks: BTreeSet<usize> = scores.iter().flatten().map(|&(k, _)| k).collect();
    let column = |k: usize| scores.iter().flatten().filter(|(kk, _)| *kk == k).map(|(_, p)| p).sum::<f64>();
    let total: f64 = ks.iter().map(|&k| column(k)).sum();
    let big_k = ks.len() as f64;
    ks.iter()
        .map(|&k| {
            let c = column(k);
            (k, (c > 0.0).then(|| total / (big_k * big_k * c)))
        })
        .collect()
}

/// Every method's accuracy per k, weighted score and flips, in the order the
/// methods first appear.
pub fn score(outcomes: &[TaskOutcome]) -> Result<Vec<MethodScore>, ScoreError> {
    if outcomes.is_empty() {
        return Err(ScoreError::Empty);
    }
    let mut methods: Vec<&str> = Vec::new();
    // (method, example) → k → A_ijk
    let mut by_example: BTreeMap<(&str, usize), BTreeMap<usize, bool>> = BTreeMap::new();
    for o in outcomes {
        if !methods.contains(&o.method.as_str()) {
            methods.push(&o.method);
        }
        let seen = by_example.entry((&o.method, o.example)).or_default().insert(o.k, o.correct);
        if seen.is_some() {
            return Err(ScoreError::Duplicate { example: o.example, method: o.method.clone(), k: o.k });
        }
    }
    let ks: BTreeSet<usize> = outcomes.iter().map(|o| o.k).collect();
    let mut accuracies = Vec::new();
    for &method in &methods {
        let mut row = Vec::new();
        for &k in &ks {
            let at_k: Vec<bool> =
                outcomes.iter().filter(|o| o.method == method && o.k == k).map(|o| o.correct).collect();
            if at_k.is_empty() {
                return Err(ScoreError::MissingK { method: method.to_string(), k });
            }
            row.push((k, at_k.iter().filter(|&&c| c).count() as f64 / at_k.len() as f64));
        }
        accuracies.push(row);
    }
    let w = weights(&accuracies);
    Ok(methods
        .iter()
        .zip(accuracies)
        .map(|(&method, accuracy)| {
            let score = accuracy.iter().zip(&w).map(|(&(_, p), &(_, w))| w.map(|w| w * p)).sum::<Option<f64>>();
            let examples: Vec<&BTreeMap<usize, bool>> =
                by_example.iter().filter(|((m, _), _)| *m == method).map(|(_, ks)| ks).collect();
            let flips = examples.iter().filter(|ks| flips(ks)).count();
            let always_right = examples.iter().filter(|ks| ks.values().all(|&c| c)).count();
            let aids = examples.len() - flips - always_right;
            MethodScore { method: method.to_string(), accuracy, score, flips, aids, examples: examples.len() }
        })
        .collect())
}

/// Right with some k₁ words, wrong with some k₂ > k₁ (`by_k` ascending).
fn flips(by_k: &BTreeMap<usize, bool>) -> bool {
    let mut right_before = false;
    for &correct in by_k.values() {
        if right_before && !correct {
            return true;
        }
        right_before |= correct;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use Answer::{DontKnow, Label};

    #[test]
    fn the_true_label_must_strictly_win() {
        assert!(majority_correct(&[Label(1), Label(1), Label(0), DontKnow, Label(1)], 1));
        assert!(!majority_correct(&[Label(1), Label(1), Label(0), DontKnow, DontKnow], 1), "a tie with don't know");
        assert!(!majority_correct(&[Label(1), Label(1), Label(0), Label(0), DontKnow], 1), "a tie");
        assert!(!majority_correct(&[DontKnow, DontKnow, DontKnow, Label(1), Label(1)], 1));
        assert!(!majority_correct(&[Label(2), Label(0), Label(1)], 2), "one vote each");
        assert!(
            majority_correct(&[Label(2), Label(2), Label(0), Label(1), Label(3)], 2),
            "a plurality of four classes"
        );
        assert!(!majority_correct(&[], 0));
    }

    fn outcome(example: usize, method: &str, k: usize, correct: bool) -> TaskOutcome {
        TaskOutcome { example, method: method.into(), k, correct }
    }

    #[test]
    fn accuracy_weights_score_and_flips_by_hand() {
        // a: example 0 right at k=5, wrong at k=10 (a flip); example 1 the reverse.
        // b: wrong at k=5, right at k=10 on both.
        let outcomes = [
            outcome(0, "a", 5, true),
            outcome(0, "a", 10, false),
            outcome(1, "a", 5, false),
            outcome(1, "a", 10, true),
            outcome(0, "b", 5, false),
            outcome(0, "b", 10, true),
            outcome(1, "b", 10, true),
            outcome(1, "b", 5, false),
        ];
        let scores = score(&outcomes).unwrap();
        // p_a = (0.5, 0.5), p_b = (0, 1); column sums 0.5 and 1.5, total 2, K = 2:
        // w_5 = 2 / (4 · 0.5) = 1, w_10 = 2 / (4 · 1.5) = 1/3.
        assert_eq!(
            weights(&[vec![(5, 0.5), (10, 0.5)], vec![(5, 0.0), (10, 1.0)]]),
            [(5, Some(1.0)), (10, Some(1.0 / 3.0))]
        );
        let [a, b] = &scores[..] else { panic!("{scores:?}") };
        assert_eq!((a.method.as_str(), b.method.as_str()), ("a", "b"));
        assert_eq!(a.accuracy, [(5, 0.5), (10, 0.5)]);
        assert_eq!(b.accuracy, [(5, 0.0), (10, 1.0)]);
        // s_a = 1 · 0.5 + 1/3 · 0.5 = 2/3; s_b = 1 · 0 + 1/3 · 1 = 1/3.
        assert!((a.score.unwrap() - 2.0 / 3.0).abs() < 1e-12, "{a:?}");
        assert!((b.score.unwrap() - 1.0 / 3.0).abs() < 1e-12, "{b:?}");
        assert_eq!((a.flips, b.flips), (1, 0));
        // a: example 1 (wrong, then right) is aided; b: both are.
        assert_eq!((a.aids, b.aids), (1, 2));
        assert_eq!((a.examples, b.examples), (2, 2));
    }

    #[test]
    fn equal_accuracies_weigh_each_k_one_over_k() {
        let w = weights(&[vec![(5, 0.6), (10, 0.6), (20, 0.6)]]);
        assert!(w.iter().all(|(_, w)| (w.unwrap() - 1.0 / 3.0).abs() < 1e-12), "{w:?}");
        // Nobody right at k = 5: its weight is undefined, and so is every score.
        let scores = score(&[outcome(0, "a", 5, false), outcome(0, "a", 10, true)]).unwrap();
        assert_eq!(scores[0].score, None);
        assert_eq!(weights(&[vec![(5, 0.0), (10, 1.0)]])[0], (5, None));
    }

    #[test]
    fn missing_and_repeated_tasks_are_errors() {
        assert_eq!(score(&[]), Err(ScoreError::Empty));
        let e = score(&[outcome(0, "a", 5, true), outcome(0, "b", 10, true)]).unwrap_err();
        assert_eq!(e, ScoreError::MissingK { method: "a".into(), k: 10 });
        let e = score(&[outcome(0, "a", 5, true), outcome(0, "a", 5, false)]).unwrap_err();
        assert!(e.to_string().contains("scored twice"), "{e}");
    }

    #[test]
    fn a_flip_needs_right_then_wrong() {
        let of = |pairs: &[(usize, bool)]| flips(&pairs.iter().copied().collect());
        assert!(of(&[(5, true), (10, true), (20, false)]));
        assert!(!of(&[(5, false), (10, true), (20, true)]));
        assert!(!of(&[(5, false), (10, false)]));
        assert!(of(&[(5, true), (40, false)]));
    }
}
