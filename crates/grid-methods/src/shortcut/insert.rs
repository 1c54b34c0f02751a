//! Placing shortcut tokens among the words of a text.
//!
//! Everything here works on whitespace words (PROTOCOL §1): positions are
//! indices into [`grid_core::data::words`] of the *output* text, which is the words
//! joined by single spaces. That normalisation is deliberate: it makes
//! `words(text)[p]` the inserted token for every recorded position `p`, however
//! the source text was spaced, so the ground truth needs no character offsets.

use rand::Rng;

/// Draws the position of one token inserted into a text of `n` words: any of
/// the `n + 1` gaps, including before the first and after the last word.
pub(super) fn single_position<R: Rng>(rng: &mut R, n: usize) -> usize {
    rng.random_range(0..=n)
}

/// Draws two distinct output positions for a text of `n` words (output length
/// `L = n + 2`) at most `max_distance` apart.
///
/// `p1` is uniform over `0..L`, then `p2` is uniform over the positions within
/// `max_distance` of `p1` (clamped to `0..L`, `p1` excluded). The pair is
/// returned as drawn, not sorted: callers decide which token goes where.
///
/// Requires `max_distance >= 1` (checked by option validation); `L >= 2` always
/// leaves at least one candidate for `p2`, even for an empty text.
pub(super) fn pair_positions<R: Rng>(rng: &mut R, n: usize, max_distance: usize) -> (usize, usize) {
    debug_assert!(max_distance >= 1);
    let len = n + 2;
    let p1 = rng.random_range(0..len);
    let lo = p1.saturating_sub(max_distance);
    let hi = p1.saturating_add(max_distance).min(len - 1);
    // Candidates are lo..=hi without p1: draw an index into that gap-free range
    // and step over p1, so every candidate is equally likely.
    let candidates = hi - lo;
    let offset = rng.random_range(0..candidates);
    let mut p2 = lo + offset;
    if p2 >= p1 {
        p2 += 1;
    }
    (p1, p2)
}

/// Builds the output text: `placements` (output position, token), sorted by
/// position, with the original words filling every other slot in order.
pub(super) fn render(original: &[&str], placements: &[(usize, &str)]) -> String {
    debug_assert!(placements.windows(2).all(|w| w[0].0 < w[1].0));
    let total = original.len() + placements.len();
    let bytes = original.iter().map(|w| w.len()).sum::<usize>()
        + placements.iter().map(|(_, t)| t.len()).sum::<usize>()
        + total;
    let mut out = String::with_capacity(bytes);
    let mut words = original.iter();
    let mut pending = placements.iter().peekable();
    for position in 0..total {
        let word = match pending.peek() {
            Some((p, token)) if *p == position => {
                pending.next();
                *token
            }
            _ => words.next().copied().unwrap_or_default(),
        };
        if position > 0 {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn render_interleaves_tokens_and_words() {
        assert_eq!(render(&["a", "b", "c"], &[(0, "X"), (2, "Y")]), "X a Y b c");
        assert_eq!(render(&["a", "b"], &[(2, "X"), (3, "Y")]), "a b X Y");
        assert_eq!(render(&[], &[(0, "X"), (1, "Y")]), "X Y");
        assert_eq!(render(&[], &[(0, "X")]), "X");
        assert_eq!(render(&["a"], &[]), "a");
    }

    #[test]
    fn pair_positions_cover_every_admissible_pair() {
        // n = 3 words, L = 5, d = 2: every ordered pair with 1 <= |p1-p2| <= 2
        // must be reachable, and nothing else.
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..5000 {
            let (a, b) = pair_positions(&mut rng, 3, 2);
            assert!(a < 5 && b < 5 && a != b && a.abs_diff(b) <= 2);
            seen.insert((a, b));
        }
        let expected = (0..5usize)
            .flat_map(|a| (0..5usize).map(move |b| (a, b)))
            .filter(|&(a, b)| a != b && a.abs_diff(b) <= 2)
            .count();
        assert_eq!(seen.len(), expected);
    }

    #[test]
    fn single_position_reaches_both_ends() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let seen: std::collections::BTreeSet<usize> = (0..1000).map(|_| single_position(&mut rng, 4)).collect();
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), vec![0, 1, 2, 3, 4]);
    }
}
