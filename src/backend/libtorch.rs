//! burn's LibTorch backend (`burn-tch`): PyTorch's own kernels — cuBLAS and
//! cuDNN on CUDA, MKL-DNN / OpenMP on the CPU — with nothing compiled at run
//! time, so a new tensor shape costs nothing (NOTES-gpu: from its first second
//! on an H100, where burn-cuda had not finished a step in 110 s).
//!
//! Built with `--features libtorch` against the libtorch of an installed
//! PyTorch (`LIBTORCH`, see the README); the binary links it dynamically, so
//! PyTorch's `torch/lib` must be on `LD_LIBRARY_PATH` at run time.

use super::DeviceChoice;
use burn_tch::LibTorchDevice;

pub type LibTorch = burn_tch::LibTorch<f32>;
pub type LibTorchAutodiff = burn::backend::Autodiff<LibTorch>;
/// bf16 weights and activations, as [`super::cubecl::CudaBf16`].
pub type LibTorchBf16 = burn_tch::LibTorch<burn::tensor::bf16>;
pub type LibTorchBf16Autodiff = burn::backend::Autodiff<LibTorchBf16>;

pub fn device(choice: DeviceChoice) -> LibTorchDevice {
    match choice {
        DeviceChoice::Cpu => LibTorchDevice::Cpu,
        DeviceChoice::Cuda(index) => LibTorchDevice::Cuda(index),
    }
}

/// Fails with a sentence when LibTorch cannot use the device. A binary linked
/// with `--as-needed` may not have loaded `libtorch_cuda.so` (nothing in it is
/// called by name; its kernels register themselves when it loads), and then
/// LibTorch sees no GPU even on a GPU machine: load it here, once.
pub fn check(choice: DeviceChoice) -> Result<(), String> {
    let DeviceChoice::Cuda(index) = choice else { return Ok(()) };
    super::cuda_driver::available(index)?;
    if !tch::Cuda::is_available() {
        // SAFETY: loading PyTorch's CUDA library runs its static initialisers,
        // which register CUDA kernels with the already loaded libtorch_cpu; the
        // library stays loaded for the life of the process.
        match unsafe { libloading::Library::new("libtorch_cuda.so") } {
            Ok(library) => std::mem::forget(library),
            Err(e) => {
                return Err(format!(
                    "--backend libtorch --device cuda:{index}: this libtorch has no CUDA \
                     (libtorch_cuda.so: {e}); put a CUDA build of PyTorch's torch/lib on LD_LIBRARY_PATH"
                ));
            }
        }
    }
    let count = tch::Cuda::device_count();
    if !tch::Cuda::is_available() || index as i64 >= count {
        return Err(format!("--backend libtorch --device cuda:{index}: LibTorch sees {count} CUDA device(s)"));
    }
    Ok(())
}

/// Equivalence with Flex, on the CPU: every method, both architectures, the
/// same seeded models. Flex agrees with Captum and transformers, so LibTorch
/// does too where these agree.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::CpuAutodiff;
    use crate::salience::test_models::{
        EVERY_METHOD, VOCAB, bert_examples, bert_on, bilstm_on, lstm_examples, settings, three_examples,
    };
    use crate::salience::{Method, attribute};

    /// The two libraries' kernels sum in different orders; measured: 4.8e-7
    /// relative at most, over every method and both architectures.
    const TOLERANCE: f32 = 1e-5;

    #[test]
    fn every_method_scores_as_on_flex() {
        let (lstm_ids, bert_ids) = three_examples();
        let methods = EVERY_METHOD;
        let flex = Default::default();
        let torch = LibTorchDevice::Cpu;
        let lstm_flex = bilstm_on::<CpuAutodiff>(11, &flex);
        let lstm_torch = bilstm_on::<LibTorchAutodiff>(11, &torch);
        let bert_flex = bert_on::<CpuAutodiff>(12, 2, &flex);
        let bert_torch = bert_on::<LibTorchAutodiff>(12, 2, &torch);
        let mut compared = 0;
        let mut worst = 0f32;
        for name in methods {
            let method: Method = name.parse().unwrap_or_else(|e| panic!("{name}: {e:?}"));
            let lstm = lstm_examples(&lstm_ids);
            let bert = bert_examples(&bert_ids);
            let pairs = [
                (
                    attribute::<CpuAutodiff, _>(&lstm_flex, method, &lstm, &VOCAB, &settings(), &flex),
                    attribute::<LibTorchAutodiff, _>(&lstm_torch, method, &lstm, &VOCAB, &settings(), &torch),
                ),
                (
                    attribute::<CpuAutodiff, _>(&bert_flex, method, &bert, &VOCAB, &settings(), &flex),
                    attribute::<LibTorchAutodiff, _>(&bert_torch, method, &bert, &VOCAB, &settings(), &torch),
                ),
            ];
            for (on_flex, on_torch) in pairs {
                let (on_flex, on_torch) = match (on_flex, on_torch) {
                    (Ok(a), Ok(b)) => (a, b),
                    (Err(_), Err(_)) => continue, // a method the architecture lacks, on both
                    (a, b) => panic!("{name}: flex {:?} but libtorch {:?}", a.err(), b.err()),
                };
                compared += 1;
                assert_eq!(on_flex.predicted, on_torch.predicted, "{name}");
                assert_eq!(
                    on_flex.scores.iter().map(Vec::len).collect::<Vec<_>>(),
                    on_torch.scores.iter().map(Vec::len).collect::<Vec<_>>()
                );
                for (a, b) in on_flex.scores.iter().flatten().zip(on_torch.scores.iter().flatten()) {
                    let difference = (a - b).abs() / a.abs().max(1.0);
                    worst = worst.max(difference);
                    assert!(difference <= TOLERANCE, "{name}: flex {a} vs libtorch {b}");
                }
            }
        }
        assert_eq!(compared, 2 * methods.len() - 3, "every method ran on every model it supports");
        eprintln!("largest relative difference, libtorch vs flex: {worst:e}");
    }

    #[test]
    fn cuda_without_a_gpu_is_a_sentence() {
        // The machines that run the tests have no GPU (or not 99 of them).
        let error = check(DeviceChoice::Cuda(99)).unwrap_err();
        assert!(error.contains("cuda"), "{error}");
        assert_eq!(check(DeviceChoice::Cpu), Ok(()));
    }
}
