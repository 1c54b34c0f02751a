//! The check every own-room encoder's equivalence test makes against the
//! fixture `scripts/family_fixtures.py` wrote: the padded batch's last
//! hidden states (at real tokens) and logits as `transformers` computed them.

use std::path::{Path, PathBuf};

use burn::prelude::*;

use crate::backend::Cpu;

/// `tests/fixtures/<name>`.
pub(crate) fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures").join(name)
}

/// Tensor `name` of the fixture's `reference.safetensors`: its shape and values.
fn reference(dir: &Path, name: &str) -> (Vec<usize>, Vec<f64>) {
    let bytes = std::fs::read(dir.join("reference.safetensors")).unwrap();
    let tensors = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let view = tensors.tensor(name).unwrap();
    let values = match view.dtype() {
        safetensors::Dtype::I64 => {
            view.data().chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap()) as f64).collect()
        }
        _ => view.data().chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64).collect(),
    };
    (view.shape().to_vec(), values)
}

/// Asserts that `hidden` and `logits` (each from the fixture's ids and
/// padding mask) are within 1e-4 of `transformers`' on fixture `dir`;
/// padded positions' hidden states are never read, so not compared.
pub(crate) fn assert_matches_transformers(
    dir: &Path,
    hidden: impl Fn(Tensor<Cpu, 2, Int>, Tensor<Cpu, 2>) -> Tensor<Cpu, 3>,
    logits: impl Fn(Tensor<Cpu, 2, Int>, Tensor<Cpu, 2>) -> Tensor<Cpu, 2>,
) {
    let device = Default::default();
    let (shape, ids) = reference(dir, "input_ids");
    let (_, mask) = reference(dir, "attention_mask");
    let (batch, time) = (shape[0], shape[1]);
    let ids: Vec<i64> = ids.iter().map(|&v| v as i64).collect();
    let ids = Tensor::<Cpu, 1, Int>::from_ints(ids.as_slice(), &device).reshape([batch, time]);
    let mask_values: Vec<f32> = mask.iter().map(|&v| v as f32).collect();
    let mask_tensor = Tensor::<Cpu, 1>::from_floats(mask_values.as_slice(), &device).reshape([batch, time]);
    let got: Vec<f32> = hidden(ids.clone(), mask_tensor.clone()).into_data().to_vec().unwrap();
    let (_, expected) = reference(dir, "last_hidden_state");
    let size = expected.len() / (batch * time);
    let mut worst = 0.0_f64;
    for (i, (got, want)) in got.iter().zip(&expected).enumerate() {
        if mask[i / size] == 1.0 {
            worst = worst.max((*got as f64 - want).abs());
        }
    }
    assert!(worst < 1e-4, "hidden states differ by up to {worst:e}");
    let got: Vec<f32> = logits(ids, mask_tensor).into_data().to_vec().unwrap();
    let (_, expected) = reference(dir, "logits");
    let worst = got.iter().zip(&expected).map(|(g, w)| (*g as f64 - w).abs()).fold(0.0, f64::max);
    assert!(worst < 1e-4, "logits differ by up to {worst:e}");
}
