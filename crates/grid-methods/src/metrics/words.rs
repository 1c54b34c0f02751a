//! Word-level salience: one score per whitespace word instead of per subword
//! token, because people read words. A BiLSTM's tokens are words already, so
//! aggregation changes nothing there.
//!
//! | option | a word's score |
//! |---|---|
//! | `sum` | the sum of its tokens' scores (additive methods — IG, DeepLift, LIME, KernelSHAP, occlusion of one token — stay additive) |
//! | `max` | the largest of its tokens' scores (signed: positive salience points towards the prediction) |
//! | `first` | the score of its first token (the convention of token-classification heads) |
//!
//! Special tokens (no word) are dropped; the ground truth becomes the words of
//! the ground-truth tokens.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WordAggregation {
    Sum,
    Max,
    First,
}

impl WordAggregation {
    pub fn name(self) -> &'static str {
        match self {
            WordAggregation::Sum => "sum",
            WordAggregation::Max => "max",
            WordAggregation::First => "first",
        }
    }
}

/// Scores per word and the ground truth as word positions (indices into the
/// returned scores, which follow the words' order in the text).
#[derive(Debug, Clone, PartialEq)]
pub struct WordScores {
    pub scores: Vec<f32>,
    pub ground_truth: Vec<usize>,
}

pub fn aggregate(
    scores: &[f32],
    word_of_token: &[Option<usize>],
    ground_truth_tokens: &[usize],
    how: WordAggregation,
) -> WordScores {
    // Words in order of first appearance; a word's tokens are contiguous.
    let mut words: Vec<usize> = Vec::new();
    let mut word_scores: Vec<f32> = Vec::new();
    for (&score, word) in scores.iter().zip(word_of_token) {
        let Some(word) = *word else { continue };
        if words.last() == Some(&word) {
            let last = word_scores.last_mut().expect("a score per word");
            match how {
                WordAggregation::Sum => *last += score,
                WordAggregation::Max => *last = last.max(score),
                WordAggregation::First => {}
            }
        } else {
            words.push(word);
            word_scores.push(score);
        }
    }
    let mut ground_truth: Vec<usize> = ground_truth_tokens
        .iter()
        .filter_map(|&t| word_of_token.get(t).copied().flatten())
        .filter_map(|w| words.iter().position(|&x| x == w))
        .collect();
    ground_truth.sort_unstable();
    ground_truth.dedup();
    WordScores { scores: word_scores, ground_truth }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_hand() {
        // [CLS] un ##believ ##able film #1 [SEP]
        let scores = [9.0, 0.1, 0.5, -0.2, 0.3, 0.7, 9.0];
        let words = [None, Some(0), Some(0), Some(0), Some(1), Some(2), None];
        let truth = [5];
        let sum = aggregate(&scores, &words, &truth, WordAggregation::Sum);
        assert_eq!(sum.ground_truth, vec![2]);
        assert_eq!(sum.scores.len(), 3);
        assert!((sum.scores[0] - 0.4).abs() < 1e-6 && sum.scores[1] == 0.3 && sum.scores[2] == 0.7);
        assert_eq!(aggregate(&scores, &words, &truth, WordAggregation::Max).scores, vec![0.5, 0.3, 0.7]);
        assert_eq!(aggregate(&scores, &words, &truth, WordAggregation::First).scores, vec![0.1, 0.3, 0.7]);
    }

    #[test]
    fn word_tokens_are_unchanged() {
        let scores = [0.3, 0.1, 0.2];
        let words = [Some(0), Some(1), Some(2)];
        for how in [WordAggregation::Sum, WordAggregation::Max, WordAggregation::First] {
            let w = aggregate(&scores, &words, &[2, 0], how);
            assert_eq!(w.scores, scores.to_vec());
            assert_eq!(w.ground_truth, vec![0, 2]);
        }
    }
}
