//! Choosing what computes: a backend (`--backend`), a device (`--device cpu`
//! or `cuda[:N]`, or `auto`: [`placement`]) and a float type (`--precision
//! f32|bf16-mixed|bf16`; bf16-mixed needs LibTorch, bf16 CUDA).
//!
//! One file per backend: [`flex`] (burn's CPU backend, the default), `cubecl`
//! (burn-cuda, feature `cuda`) and `libtorch` (burn-tch, feature `libtorch`).
//! A new backend is its file, a [`BackendKind`] variant and its arms in
//! [`with_autodiff_backend!`]. Steps are generic over the backend; the macro
//! instantiates them for the one a run chose, so no step matches on devices.

pub mod kernel_cache;
pub mod placement;

#[cfg(feature = "cuda")]
pub mod cubecl;
#[cfg(any(feature = "cuda", feature = "libtorch"))]
pub mod cuda_driver;
pub mod flex;
#[cfg(feature = "libtorch")]
pub mod libtorch;

use std::fmt;
use std::str::FromStr;

use crate::buckets::Buckets;

pub use flex::{Cpu, CpuAutodiff};

/// The libraries that run a model's tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    /// burn's pure-Rust CPU backend.
    Flex,
    /// burn-cuda (cubecl): CUDA with kernels compiled and autotuned at run time.
    Cubecl,
    /// burn-tch: PyTorch's kernels (CPU or CUDA), from an installed PyTorch.
    LibTorch,
}

impl BackendKind {
    pub const ALL: [BackendKind; 3] = [BackendKind::Flex, BackendKind::Cubecl, BackendKind::LibTorch];

    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Flex => "flex",
            BackendKind::Cubecl => "cubecl",
            BackendKind::LibTorch => "libtorch",
        }
    }

    /// The cargo feature that builds it in.
    fn feature(self) -> Option<&'static str> {
        match self {
            BackendKind::Flex => None,
            BackendKind::Cubecl => Some("cuda"),
            BackendKind::LibTorch => Some("libtorch"),
        }
    }

    pub fn is_built(self) -> bool {
        match self {
            BackendKind::Flex => true,
            BackendKind::Cubecl => cfg!(feature = "cuda"),
            BackendKind::LibTorch => cfg!(feature = "libtorch"),
        }
    }

    pub fn runs_on(self, device: DeviceChoice) -> bool {
        matches!(
            (self, device),
            (BackendKind::Flex, DeviceChoice::Cpu)
                | (BackendKind::Cubecl, DeviceChoice::Cuda(_))
                | (BackendKind::LibTorch, _)
        )
    }

    /// What `--backend auto` picks: Flex on the CPU; on CUDA, LibTorch when it is
    /// built in (measured on an H100: it trains from its first second, where
    /// burn-cuda spends minutes compiling kernels), else burn-cuda.
    pub fn default_for(device: DeviceChoice) -> Self {
        match device {
            DeviceChoice::Cpu => BackendKind::Flex,
            DeviceChoice::Cuda(_) if BackendKind::LibTorch.is_built() => BackendKind::LibTorch,
            DeviceChoice::Cuda(_) => BackendKind::Cubecl,
        }
    }

    /// Padding that pays on this backend: only cubecl compiles per shape.
    pub fn default_buckets(self) -> Buckets {
        match self {
            BackendKind::Cubecl => Buckets::GPU,
            BackendKind::Flex | BackendKind::LibTorch => Buckets::EXACT,
        }
    }
}

impl FromStr for BackendKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        BackendKind::ALL
            .into_iter()
            .find(|kind| kind.name() == s)
            .ok_or_else(|| format!("unknown backend `{s}`; use auto, flex, cubecl or libtorch"))
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceChoice {
    Cpu,
    Cuda(usize),
}

/// Runs `f` on one of rayon's worker threads, on the CPU. The parallel
/// loops inside (the kernels', burn's, the GEMM's) then start from a thread
/// of the pool; from this thread, rayon hands each loop to the pool and puts
/// this one to sleep until it is done: two context switches per loop,
/// thousands per training, and most of the system time of a step running
/// with one thread (MiniLM fine-tuning ran 55–56 → 61–65 examples/s once its
/// step ran on the pool). On a GPU the caller's thread keeps the work.
pub fn on_worker_thread<T: Send>(device: DeviceChoice, f: impl FnOnce() -> T + Send) -> T {
    match device {
        DeviceChoice::Cpu => rayon::scope(|_| f()),
        DeviceChoice::Cuda(_) => f(),
    }
}

/// Float type of model computations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Precision {
    #[default]
    F32,
    /// bf16 weights and activations throughout (CUDA).
    Bf16,
    /// Mixed precision as PyTorch's autocast runs it: f32 weights, optimizer
    /// state and layer norms; bf16 matrix products, attention and recurrence
    /// inside the fused LibTorch blocks (`kernels::libtorch`).
    Bf16Mixed,
}

impl FromStr for Precision {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "f32" => Ok(Precision::F32),
            "bf16" => Ok(Precision::Bf16),
            "bf16-mixed" => Ok(Precision::Bf16Mixed),
            _ => Err(format!("unknown precision `{s}`; use f32, bf16-mixed or bf16")),
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Precision::F32 => "f32",
            Precision::Bf16 => "bf16",
            Precision::Bf16Mixed => "bf16-mixed",
        })
    }
}

impl fmt::Display for DeviceChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceChoice::Cpu => write!(f, "cpu"),
            DeviceChoice::Cuda(n) => write!(f, "cuda:{n}"),
        }
    }
}

impl FromStr for DeviceChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "cpu" => Ok(DeviceChoice::Cpu),
            "cuda" => Ok(DeviceChoice::Cuda(0)),
            _ => s
                .strip_prefix("cuda:")
                .and_then(|n| n.parse().ok())
                .map(DeviceChoice::Cuda)
                .ok_or_else(|| format!("unknown device `{s}`; use cpu, cuda or cuda:N")),
        }
    }
}

/// Where and how a run computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compute {
    pub backend: BackendKind,
    pub device: DeviceChoice,
    pub precision: Precision,
    /// How batch shapes are padded before they reach a model: a performance
    /// knob (results equal to float rounding), so in no cache key.
    pub buckets: Buckets,
}

impl fmt::Display for Compute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.device, self.backend)?;
        match self.precision {
            Precision::F32 => Ok(()),
            Precision::Bf16 => f.write_str(" bf16"),
            Precision::Bf16Mixed => f.write_str(" bf16-mixed"),
        }
    }
}

impl Compute {
    pub fn cpu() -> Self {
        Self::on(DeviceChoice::Cpu, Precision::F32)
    }

    /// A device with its default backend and that backend's buckets.
    pub fn on(device: DeviceChoice, precision: Precision) -> Self {
        Self::with_backend(BackendKind::default_for(device), device, precision)
    }

    /// A backend with its default buckets: exact shapes where a kernel costs
    /// nothing to compile and padding would cost real arithmetic; GPU buckets on
    /// cubecl, where each new shape is compiled and autotuned.
    pub fn with_backend(backend: BackendKind, device: DeviceChoice, precision: Precision) -> Self {
        Self { backend, device, precision, buckets: backend.default_buckets() }
    }

    /// Fails early, with a sentence, when the choice cannot be used.
    pub fn check(self) -> Result<(), String> {
        let backend = self.backend;
        if !backend.is_built() {
            let feature = backend.feature().unwrap_or_default();
            let no_gpu_backend = !BackendKind::Cubecl.is_built() && !BackendKind::LibTorch.is_built();
            return Err(match self.device {
                DeviceChoice::Cuda(_) if no_gpu_backend => "this build of grid has no CUDA support; rebuild with \
                     `cargo build --release --features cuda` (burn-cuda) or `--features libtorch` (PyTorch's \
                     kernels), or run with --device cpu"
                    .into(),
                _ => format!(
                    "this build of grid has no {backend} backend; rebuild with `cargo build --release --features \
                     {feature}`"
                ),
            });
        }
        if !backend.runs_on(self.device) {
            return Err(match self.device {
                DeviceChoice::Cpu => format!("the {backend} backend runs on CUDA only; use --backend flex or libtorch"),
                DeviceChoice::Cuda(_) => {
                    format!("the {backend} backend runs on the CPU only; use --backend cubecl or libtorch")
                }
            });
        }
        if self.precision == Precision::Bf16 && self.device == DeviceChoice::Cpu {
            return Err("--precision bf16 needs --device cuda; on the CPU grid computes in f32".into());
        }
        if self.precision == Precision::Bf16Mixed && backend != BackendKind::LibTorch {
            return Err(format!(
                "--precision bf16-mixed runs on --backend libtorch (bf16 products inside its fused blocks); \
                 the {backend} backend computes in f32 (or bf16 throughout on CUDA)"
            ));
        }
        match backend {
            BackendKind::Flex => Ok(()),
            #[cfg(feature = "cuda")]
            BackendKind::Cubecl => match self.device {
                DeviceChoice::Cuda(index) => cuda_driver::available(index),
                DeviceChoice::Cpu => Ok(()),
            },
            #[cfg(feature = "libtorch")]
            BackendKind::LibTorch => libtorch::check(self.device),
            #[allow(unreachable_patterns)] // not built: refused above
            _ => Ok(()),
        }
    }
}

/// Runs `$body` with `$B` bound to the autodiff backend a [`Compute`] names and
/// `$device` to its device; evaluates to `anyhow::Result<_>`. Each backend's
/// arms sit behind its feature.
#[macro_export]
macro_rules! with_autodiff_backend {
    ($compute:expr, |$B:ident, $device:ident| $body:expr) => {{
        #[allow(unused_imports)]
        use $crate::backend::{BackendKind, DeviceChoice, Precision};
        let compute: $crate::backend::Compute = $compute;
        match (compute.backend, compute.device, compute.precision) {
            (BackendKind::Flex, DeviceChoice::Cpu, Precision::F32) => {
                type $B = $crate::backend::CpuAutodiff;
                let $device = Default::default();
                $body
            }
            #[cfg(feature = "cuda")]
            (BackendKind::Cubecl, DeviceChoice::Cuda(index), Precision::F32) => {
                type $B = $crate::backend::cubecl::CudaAutodiff;
                let $device = $crate::backend::cubecl::device(index);
                $body
            }
            #[cfg(feature = "cuda")]
            (BackendKind::Cubecl, DeviceChoice::Cuda(index), Precision::Bf16) => {
                type $B = $crate::backend::cubecl::CudaBf16Autodiff;
                let $device = $crate::backend::cubecl::device(index);
                $body
            }
            #[cfg(feature = "libtorch")]
            (BackendKind::LibTorch, device, Precision::F32) => {
                type $B = $crate::backend::libtorch::LibTorchAutodiff;
                let $device = $crate::backend::libtorch::device(device);
                $body
            }
            #[cfg(feature = "libtorch")]
            (BackendKind::LibTorch, device, Precision::Bf16Mixed) => {
                type $B = $crate::backend::libtorch::LibTorchAutodiff;
                let $device = $crate::backend::libtorch::device(device);
                $crate::kernels::with_bf16_products(|| $body)
            }
            #[cfg(feature = "libtorch")]
            (BackendKind::LibTorch, device @ DeviceChoice::Cuda(_), Precision::Bf16) => {
                type $B = $crate::backend::libtorch::LibTorchBf16Autodiff;
                let $device = $crate::backend::libtorch::device(device);
                $body
            }
            _ => Err(anyhow::anyhow!(compute.check().err().unwrap_or_else(|| format!("{compute:?} is not built in")))),
        }
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_devices() {
        assert_eq!("cpu".parse(), Ok(DeviceChoice::Cpu));
        assert_eq!("cuda".parse(), Ok(DeviceChoice::Cuda(0)));
        assert_eq!("cuda:3".parse(), Ok(DeviceChoice::Cuda(3)));
        assert!("gpu".parse::<DeviceChoice>().is_err());
        assert!("cuda:x".parse::<DeviceChoice>().is_err());
        assert_eq!("bf16".parse(), Ok(Precision::Bf16));
        assert_eq!("bf16-mixed".parse(), Ok(Precision::Bf16Mixed));
        assert_eq!(Precision::Bf16Mixed.to_string(), "bf16-mixed");
        assert!("fp8".parse::<Precision>().is_err());
    }

    #[test]
    fn unusable_choices_are_sentences_not_panics() {
        assert_eq!(Compute::cpu().check(), Ok(()));
        let bf16_on_cpu = Compute::on(DeviceChoice::Cpu, Precision::Bf16);
        assert!(bf16_on_cpu.check().unwrap_err().contains("needs --device cuda"));
        let mixed_on_flex = Compute::on(DeviceChoice::Cpu, Precision::Bf16Mixed);
        assert!(mixed_on_flex.check().unwrap_err().contains("--backend libtorch"));
        // No GPU on the machines that run the tests: either no CUDA in this build,
        // or no driver, or no such device. All three are errors, none a panic.
        let cuda = Compute::on(DeviceChoice::Cuda(7), Precision::F32);
        assert_eq!(cuda.buckets, cuda.backend.default_buckets());
        assert!(cuda.check().unwrap_err().contains("cuda"));
        let cubecl = Compute::with_backend(BackendKind::Cubecl, DeviceChoice::Cuda(7), Precision::F32);
        assert_eq!(cubecl.buckets, Buckets::GPU);
        assert!(cubecl.check().unwrap_err().contains("cuda"));
        assert_eq!(Compute::cpu().buckets, Buckets::EXACT);
        assert_eq!(Compute::cpu().backend, BackendKind::Flex);
        // A backend on a device it does not run on names the ones that do.
        let flex_on_cuda = Compute::with_backend(BackendKind::Flex, DeviceChoice::Cuda(0), Precision::F32);
        assert!(flex_on_cuda.check().unwrap_err().contains("CPU only"));
        let cubecl_on_cpu = Compute::with_backend(BackendKind::Cubecl, DeviceChoice::Cpu, Precision::F32);
        let error = cubecl_on_cpu.check().unwrap_err();
        assert!(error.contains("CUDA only") || error.contains("--features cuda"), "{error}");
    }

    #[test]
    fn backends_parse_by_name() {
        for kind in BackendKind::ALL {
            assert_eq!(kind.name().parse(), Ok(kind));
        }
        assert!("torch".parse::<BackendKind>().unwrap_err().contains("libtorch"));
    }
}
