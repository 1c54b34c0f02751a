//! `random`: uniform scores in [0, 1), seeded per example so that results do not
//! depend on batching or on which other examples were sampled.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

pub fn random_scores(seed: u64, example_id: u64, len: usize) -> Vec<f32> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(example_id);
    (0..len).map(|_| rng.random::<f32>()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_example_streams() {
        assert_eq!(random_scores(1, 5, 4), random_scores(1, 5, 4));
        assert_ne!(random_scores(1, 5, 4), random_scores(1, 6, 4));
        assert!(random_scores(2, 0, 100).iter().all(|&v| (0.0..1.0).contains(&v)));
    }
}
