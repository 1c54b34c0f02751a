//! burn's LibTorch backend (`burn-tch`): PyTorch's own kernels — cuBLAS and
//! cuDNN on CUDA, MKL-DNN / OpenMP on the CPU — with nothing compiled at run
//! time, so a new tensor shape costs nothing (NOTES-gpu: from its first second
//! on an H100, where burn-cuda had not finished a step in 110 s).
//!
//! Built with `--features libtorch` against the libtorch of an installed
//! PyTorch (`LIBTORCH`, see docs/backends.md); the binary links it dynamically, so
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_without_a_gpu_is_a_sentence() {
        // The machines that run the tests have no GPU (or not 99 of them).
        let error = check(DeviceChoice::Cuda(99)).unwrap_err();
        assert!(error.contains("cuda"), "{error}");
        assert_eq!(check(DeviceChoice::Cpu), Ok(()));
    }
}
