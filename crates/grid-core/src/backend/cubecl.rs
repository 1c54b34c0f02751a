//! burn-cuda: cubecl's CUDA runtime, with kernel fusion and autotuning. Needs no
//! PyTorch, but compiles (NVRTC) and autotunes kernels for every new tensor
//! shape, so it is used with shape buckets and the kernel cache
//! ([`super::kernel_cache`]).

pub type Cuda = burn_cuda::Cuda<f32, i32>;
pub type CudaAutodiff = burn::backend::Autodiff<Cuda>;
/// CUDA with bf16 tensors throughout. burn 0.21 has no automatic mixed
/// precision (f32 master weights): weights are bf16 too, which suits attribution
/// and short fine-tuning, not long training runs.
pub type CudaBf16 = burn_cuda::Cuda<burn::tensor::bf16, i32>;
pub type CudaBf16Autodiff = burn::backend::Autodiff<CudaBf16>;

pub fn device(index: usize) -> burn_cuda::CudaDevice {
    burn_cuda::CudaDevice::new(index)
}
