//! Lu et al.'s tasks from attributions: an example's words in their original
//! order, the method's top-k words shown and every other word hidden as a dot,
//! so a person sees where words are missing and how many.

use sha2::{Digest, Sha256};

/// What a hidden word becomes: one per word.
pub const HIDDEN: &str = "…";

/// The `k` highest-scoring rankable words (word indices into the text,
/// ascending); ties go to the earlier word, so a task is reproducible.
/// Unrankable words (punctuation, as Lu et al. leave it out) are never shown.
pub fn top_k_words(scores: &[(usize, f32)], rankable: impl Fn(usize) -> bool, k: usize) -> Vec<usize> {
    let mut ranked: Vec<(usize, f32)> = scores.iter().copied().filter(|&(w, _)| rankable(w)).collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut shown: Vec<usize> = ranked.into_iter().take(k).map(|(w, _)| w).collect();
    shown.sort_unstable();
    shown
}

/// The text a task shows: the words of `shown` in place, the others [`HIDDEN`].
pub fn render(words: &[&str], shown: &[usize]) -> String {
    words
        .iter()
        .enumerate()
        .map(|(w, word)| if shown.contains(&w) { *word } else { HIDDEN })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A task's id: stable across exports of the same study (the cell, example,
/// method and k name it), short enough for a platform's column.
pub fn task_id(cell: &str, example: usize, method: &str, k: usize) -> String {
    let digest = Sha256::digest(format!("{cell}\u{0}{example}\u{0}{method}\u{0}{k}").as_bytes());
    format!("t{}", hex::encode(&digest[..6]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_top_words_stay_in_place_and_the_rest_become_dots() {
        let words = ["the", "acting", "is", "superb", ",", "but", "dull"];
        let scores = [(0, 0.1), (1, 0.5), (2, 0.0), (3, 0.9), (4, 2.0), (5, 0.5), (6, -0.7)];
        let punctuation = |w: usize| w != 4;
        // 0.9 (superb), then the tie 0.5 goes to the earlier word (acting); the
        // comma's 2.0 never counts.
        assert_eq!(top_k_words(&scores, punctuation, 2), [1, 3]);
        assert_eq!(render(&words, &[1, 3]), "… acting … superb … … …");
        assert_eq!(top_k_words(&scores, punctuation, 3), [1, 3, 5]);
        // k beyond the words shows every rankable word.
        assert_eq!(render(&words, &top_k_words(&scores, punctuation, 40)), "the acting is superb … but dull");
    }

    #[test]
    fn task_ids_are_stable_and_distinct() {
        let id = task_id("sst2/natural/lstm", 12, "gxil", 5);
        assert_eq!(id, task_id("sst2/natural/lstm", 12, "gxil", 5));
        assert_eq!(id.len(), 13);
        assert_ne!(id, task_id("sst2/natural/lstm", 12, "gxil", 10));
        assert_ne!(id, task_id("sst2/natural/lstm", 1, "2gxil", 5), "fields do not run together");
    }
}
