//! Training-time randomness (dropout masks) drawn from the step's own seeded RNG,
//! for the same reason as [`super::init`]: reproducible under any backend and any
//! number of concurrent steps.

use std::cell::{Cell, RefCell};

use burn::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::{ChaCha8Rng, ChaCha12Rng};

thread_local! {
    /// Masks drawn from the backend's RNG so far on this thread (a training
    /// run's forward passes run on its thread): a run snapshots itself
    /// between evaluations only while this has not moved since it seeded
    /// the backend (`crate::train::snapshot::Interrupted`).
    static DEVICE_DRAWS: Cell<u64> = const { Cell::new(0) };
}

/// burn's CPU backend RNG as [`seed_device`] left it, kept here: burn-flex
/// seeds a `StdRng` (ChaCha12) from the same `u64` but keeps it private, and
/// draws a dropout mask one Bernoulli sampler per element (most of
/// dropout's cost in a MiniLM step). Drawn here in one fill, the masks are
/// burn's bit for bit (`the_cpu_masks_are_burns`), so cached models stay
/// valid; and unlike burn's, this stream's position can be saved, so a
/// training stopped between evaluations resumes where it stopped.
struct CpuStream {
    rng: ChaCha12Rng,
    /// Whether a mask since the last seeding came from burn's own RNG
    /// instead (another backend, or kernels turned off): this stream's
    /// position then says nothing of where the masks are.
    burn_drew: bool,
}

thread_local! {
    static CPU_STREAM: RefCell<Option<CpuStream>> = const { RefCell::new(None) };
}

/// Seeds the backend's RNG (`B::seed`) for this thread's dropout masks. Every
/// seeding of a training's masks goes through here, so the CPU's masks
/// ([`CpuStream`]) follow the same stream burn's would.
pub fn seed_device<B: Backend>(device: &B::Device, seed: u64) {
    B::seed(device, seed);
    CPU_STREAM.set(Some(CpuStream { rng: ChaCha12Rng::seed_from_u64(seed), burn_drew: false }));
}

/// The word position of this thread's CPU mask stream, where every mask
/// since the last [`seed_device`] came from it; `None` otherwise.
pub fn cpu_stream_position() -> Option<u128> {
    CPU_STREAM.with_borrow(|stream| stream.as_ref().filter(|s| !s.burn_drew).map(|s| s.rng.get_word_pos()))
}

/// Puts this thread's CPU mask stream (seeded by [`seed_device`]) at
/// `position`, where [`cpu_stream_position`] read it in an earlier run.
/// `false` where `B` does not draw its masks from it (the position would
/// mean nothing there).
pub fn restore_cpu_stream<B: Backend>(position: u128) -> bool {
    crate::kernels::backend_applies::<B>()
        && CPU_STREAM.with_borrow_mut(|stream| stream.as_mut().map(|s| s.rng.set_word_pos(position)).is_some())
}

/// Inverted dropout's mask for `n` elements as burn's CPU backend draws it
/// (`Distribution::Bernoulli(keep)`, then divided by `keep`): element `i`
/// keeps when the stream's `i`-th `u64` is below `keep · 2⁶⁴` (rand's
/// `Bernoulli`), and is then `1 / keep` in f32 (burn's `div_scalar`).
/// `None` where the backend is not the CPU one or was never seeded here;
/// burn's RNG draws that mask, which the stream notes.
fn cpu_mask<B: Backend, const D: usize>(like: &Tensor<B, D>, n: usize, keep: f64) -> Option<Vec<f32>> {
    CPU_STREAM.with_borrow_mut(|stream| {
        let stream = stream.as_mut()?;
        if !crate::kernels::applies(like) {
            stream.burn_drew = true;
            return None;
        }
        let threshold = (keep * 2.0 * (1u64 << 63) as f64) as u64;
        let scale = 1.0f32 / keep as f32;
        Some(map_words(&mut stream.rng, n, |word| if word < threshold { scale } else { 0.0 }))
    })
}

/// See [`DEVICE_DRAWS`].
pub fn device_draws() -> u64 {
    DEVICE_DRAWS.get()
}

fn count_device_draw() {
    DEVICE_DRAWS.set(DEVICE_DRAWS.get() + 1);
}

/// Dropout with masks from a host RNG. `None` (inference) is the identity.
pub struct Noise<'a> {
    rng: &'a mut ChaCha8Rng,
}

impl<'a> Noise<'a> {
    pub fn new(rng: &'a mut ChaCha8Rng) -> Self {
        Self { rng }
    }

    /// Inverted dropout: zero each element with probability `p`, scale the rest by `1/(1-p)`.
    pub fn dropout<B: Backend, const D: usize>(&mut self, x: Tensor<B, D>, p: f64) -> Tensor<B, D> {
        if p <= 0.0 {
            return x;
        }
        let shape = x.shape();
        let n = shape.num_elements();
        let keep = 1.0 - p;
        let scale = (1.0 / keep) as f32;
        let mask = Tensor::<B, D>::from_data(TensorData::new(self.mask(n, keep, scale), shape), &x.device());
        x * mask
    }

    /// `n` values, each `scale` with probability `keep`, else 0: element `i`
    /// keeps when the `i`-th uniform draw of the stream (`rng.random::<f64>()`)
    /// is below `keep`. The draws' 64-bit words come in one fill and are made
    /// uniforms here as rand makes them, so the mask and the stream's state
    /// afterwards are those of `n` calls, at a fraction of the cost (the
    /// calls were a tenth of the BiLSTM's training time).
    fn mask(&mut self, n: usize, keep: f64, scale: f32) -> Vec<f32> {
        map_words(self.rng, n, |word| if unit_interval(word) < keep { scale } else { 0.0 })
    }

    /// Inverted dropout with the mask drawn from the backend's RNG (seeded with
    /// [`seed_device`]): on the device, where a host mask would cost a
    /// host→device copy per layer for large activations (a transformer's
    /// attention probabilities); on the CPU backend, burn's mask drawn in one
    /// fill ([`cpu_mask`]).
    pub fn dropout_on_device<B: Backend, const D: usize>(&mut self, x: Tensor<B, D>, p: f64) -> Tensor<B, D> {
        if p <= 0.0 {
            return x;
        }
        let keep = 1.0 - p;
        count_device_draw();
        let mask = match cpu_mask(&x, x.shape().num_elements(), keep) {
            Some(mask) => Tensor::from_data(TensorData::new(mask, x.shape()), &x.device()),
            None => x.random_like(burn::tensor::Distribution::Bernoulli(keep)).div_scalar(keep),
        };
        x * mask
    }

    /// [`Self::dropout_on_device`] on the first rows along `dim` of a tensor
    /// `len` long there: the mask is drawn for the whole tensor and cut, so
    /// the backend's random stream advances as for the whole, and `x` gets
    /// the whole's mask on its rows.
    pub fn dropout_on_device_part<B: Backend, const D: usize>(
        &mut self,
        x: Tensor<B, D>,
        len: usize,
        dim: usize,
        p: f64,
    ) -> Tensor<B, D> {
        if p <= 0.0 {
            return x;
        }
        let keep = 1.0 - p;
        let mut whole = x.dims();
        let rows = whole[dim];
        whole[dim] = len;
        count_device_draw();
        let n = whole.iter().product();
        let mask = match cpu_mask(&x, n, keep) {
            Some(mask) => Tensor::<B, D>::from_data(TensorData::new(mask, whole), &x.device()),
            None => Tensor::random(whole, burn::tensor::Distribution::Bernoulli(keep), &x.device()).div_scalar(keep),
        };
        x * mask.narrow(dim, 0, rows)
    }

    /// `n` uniform draws in `(0, 1)`, from the same stream as the masks: a
    /// rationale model's sampled selections. Open at both ends (each draw is
    /// at least half a step of 2⁻⁵³ from either), so logarithms of `u` and
    /// `1 − u` stay finite.
    pub fn uniforms(&mut self, n: usize) -> Vec<f32> {
        map_words(self.rng, n, |word| (unit_interval(word) as f32).clamp(1e-7, 1.0 - 1e-7))
    }

    /// Word dropout (on ids): replace each real token by `unk_id` with probability `p`.
    pub fn word_dropout(&mut self, ids: &mut [u32], p: f64, unk_id: u32) {
        if p <= 0.0 {
            return;
        }
        for id in ids {
            if self.rng.random::<f64>() < p {
                *id = unk_id;
            }
        }
    }
}

/// `f` of each of the stream's next `n` 64-bit words, drawn a cache-sized
/// run at a time: the same words as one fill of `n` (the stream's bytes in
/// order), without writing and reading back 8 bytes per element (a BiLSTM's
/// masks on 500-word reviews are 10 M words a step).
fn map_words(rng: &mut impl rand::Rng, n: usize, f: impl Fn(u64) -> f32) -> Vec<f32> {
    const RUN: usize = 2048;
    let mut words = [0u64; RUN];
    let mut out = Vec::with_capacity(n);
    for start in (0..n).step_by(RUN) {
        let words = &mut words[..RUN.min(n - start)];
        rng.fill(words);
        out.extend(words.iter().map(|&word| f(word)));
    }
    out
}

/// rand's `StandardUniform` f64 from one 64-bit word: its top 53 bits, scaled
/// to `[0, 1)`.
fn unit_interval(word: u64) -> f64 {
    (word >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

#[cfg(test)]
mod tests {
    use rand::{Rng, RngCore, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::Noise;

    /// The mask from one fill is the mask of one `random::<f64>()` per
    /// element, and leaves the stream where those calls leave it, whatever
    /// the stream's position in its block (even after a lone 32-bit draw).
    #[test]
    fn the_mask_is_that_of_one_draw_per_element() {
        for (seed, offset_u32s, n) in
            [(1, 0, 1), (7, 1, 63), (11, 0, 4096), (13, 3, 1000), (17, 15, 17), (19, 1, 10_007)]
        {
            let (keep, scale) = (0.7, 1.0 / 0.7f32);
            let mut ours = ChaCha8Rng::seed_from_u64(seed);
            let mut calls = ours.clone();
            for _ in 0..offset_u32s {
                ours.next_u32();
                calls.next_u32();
            }
            let mask = Noise::new(&mut ours).mask(n, keep, scale);
            let expected: Vec<f32> = (0..n).map(|_| if calls.random::<f64>() < keep { scale } else { 0.0 }).collect();
            assert_eq!(mask, expected, "seed {seed}, {n} values");
            assert_eq!(ours.next_u64(), calls.next_u64(), "the stream goes on alike");
            assert!(mask.contains(&0.0) || n < 10, "some are dropped");
        }
    }

    /// The CPU backend's dropout drawn here in one fill gives burn's own
    /// values bit for bit (`random_like(Bernoulli)`, `div_scalar`, the
    /// product), mask after mask of odd sizes, whole and cut.
    #[test]
    fn the_cpu_masks_are_burns() {
        use burn::backend::Flex;
        use burn::prelude::*;
        use burn::tensor::Distribution;

        type Ad = burn::backend::Autodiff<Flex>;
        // burn's RNG is global: no training may draw from it meanwhile.
        let _turn = crate::train::ONE_TRAINING_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
        let device = Default::default();
        let x = Tensor::<Ad, 3>::random([3, 7, 11], Distribution::Normal(0.0, 1.0), &device);
        for (seed, p) in [(21, 0.1), (5, 0.5), (8, 0.37)] {
            let keep = 1.0 - p;
            let mut rng = ChaCha8Rng::seed_from_u64(1);
            let mut noise = Noise::new(&mut rng);
            super::seed_device::<Ad>(&device, seed);
            let ours = [
                noise.dropout_on_device(x.clone(), p),
                noise.dropout_on_device_part(x.clone(), 9, 1, p),
                noise.dropout_on_device(x.clone(), p),
            ];
            Ad::seed(&device, seed);
            let burns = [
                x.clone() * x.random_like(Distribution::Bernoulli(keep)).div_scalar(keep),
                x.clone()
                    * Tensor::random([3, 9, 11], Distribution::Bernoulli(keep), &device)
                        .narrow(1, 0, 7)
                        .div_scalar(keep),
                x.clone() * x.random_like(Distribution::Bernoulli(keep)).div_scalar(keep),
            ];
            for (i, (ours, burns)) in ours.into_iter().zip(burns).enumerate() {
                let bits = |t: Tensor<Ad, 3>| {
                    t.into_data().to_vec::<f32>().unwrap().iter().map(|v| v.to_bits()).collect::<Vec<_>>()
                };
                let (ours, burns) = (bits(ours), bits(burns));
                assert_eq!(ours, burns, "seed {seed}, p {p}, mask {i}");
                assert!(ours.iter().any(|&b| b == 0 || b == 1 << 31), "some are dropped");
            }
        }
    }
}
