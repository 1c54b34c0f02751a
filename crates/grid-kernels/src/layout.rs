//! Copies that change a tensor's layout. burn's CPU backend swaps two
//! dimensions as a strided view and makes it contiguous later, one computed
//! index per element (its `StridedIter`: with the copies around it, 16% of
//! the tiny BERT's training profile, from splitting and merging attention
//! heads); here each contiguous run of the innermost dimension is one copy.

use crate::chunks::for_each_chunk;

/// From this many values, split over threads (by the first dimension).
const PARALLEL_ELEMENTS: usize = 1 << 16;

/// `[a, b, c, d]` → `[a, c, b, d]`, row-major: the two middle dimensions
/// swapped (attention's `[batch, time, heads, head]` ↔ `[batch, heads, time,
/// head]`). Its own inverse, with `b` and `c` exchanged.
pub fn swap_middle(values: &[f32], [a, b, c, d]: [usize; 4]) -> Vec<f32> {
    assert_eq!(values.len(), a * b * c * d, "values for the shape");
    let mut out = vec![0.0f32; values.len()];
    if out.is_empty() {
        return out;
    }
    let block = b * c * d; // one index of the first dimension, either layout
    let copy = |(i, out): (usize, &mut [f32])| {
        let from = &values[i * block..(i + 1) * block];
        for j in 0..b {
            for k in 0..c {
                let (src, dst) = ((j * c + k) * d, (k * b + j) * d);
                out[dst..dst + d].copy_from_slice(&from[src..src + d]);
            }
        }
    };
    for_each_chunk(&mut out, block, values.len() >= PARALLEL_ELEMENTS, copy);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swaps_the_middle_dimensions_and_undoes_itself() {
        let shape = [2, 3, 4, 5];
        let values: Vec<f32> = (0..120).map(|v| v as f32).collect();
        let swapped = swap_middle(&values, shape);
        for i in 0..2 {
            for j in 0..3 {
                for k in 0..4 {
                    for l in 0..5 {
                        assert_eq!(swapped[((i * 4 + k) * 3 + j) * 5 + l], values[((i * 3 + j) * 4 + k) * 5 + l]);
                    }
                }
            }
        }
        assert_eq!(swap_middle(&swapped, [2, 4, 3, 5]), values);
        // Past the threshold for threads: the same as a serial copy.
        let big: Vec<f32> = (0..PARALLEL_ELEMENTS * 2).map(|v| v as f32).collect();
        let there = swap_middle(&big, [4, 16, 32, PARALLEL_ELEMENTS / 1024]);
        assert_eq!(swap_middle(&there, [4, 32, 16, PARALLEL_ELEMENTS / 1024]), big);
        assert!(swap_middle(&[], [0, 2, 3, 4]).is_empty());
    }
}
