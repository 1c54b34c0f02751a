//! Choosing where tensors live: `--device cpu` (burn's Flex backend, the
//! default) or `--device cuda[:N]` (burn-cuda, behind the `cuda` feature), and
//! in which float type (`--precision f32|bf16`; bf16 needs CUDA).
//!
//! Steps are generic over the backend; [`with_autodiff_backend!`] instantiates
//! them for the backend a run chose, so a new step kind never matches on devices.

pub mod kernel_cache;

use std::fmt;
use std::str::FromStr;

use crate::model::shapes::Buckets;

/// The CPU backend (multi-threaded, SIMD).
pub type Cpu = burn::backend::Flex;
/// The CPU backend with autodiff, for training and gradient salience.
pub type CpuAutodiff = burn::backend::Autodiff<Cpu>;

#[cfg(feature = "cuda")]
pub type Cuda = burn_cuda::Cuda<f32, i32>;
#[cfg(feature = "cuda")]
pub type CudaAutodiff = burn::backend::Autodiff<Cuda>;
/// CUDA with bf16 tensors throughout. burn 0.21 has no automatic mixed
/// precision (f32 master weights): weights are bf16 too, which suits attribution
/// and short fine-tuning, not long training runs.
#[cfg(feature = "cuda")]
pub type CudaBf16 = burn_cuda::Cuda<burn::tensor::bf16, i32>;
#[cfg(feature = "cuda")]
pub type CudaBf16Autodiff = burn::backend::Autodiff<CudaBf16>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceChoice {
    Cpu,
    Cuda(usize),
}

/// Float type of model computations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Precision {
    #[default]
    F32,
    Bf16,
}

impl FromStr for Precision {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "f32" => Ok(Precision::F32),
            "bf16" => Ok(Precision::Bf16),
            _ => Err(format!("unknown precision `{s}`; use f32 or bf16")),
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Precision::F32 => "f32",
            Precision::Bf16 => "bf16",
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
    pub device: DeviceChoice,
    pub precision: Precision,
    /// How batch shapes are padded before they reach a model: a performance
    /// knob (results equal to float rounding), so in no cache key.
    pub buckets: Buckets,
}

impl fmt::Display for Compute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.precision {
            Precision::F32 => write!(f, "{}", self.device),
            Precision::Bf16 => write!(f, "{} bf16", self.device),
        }
    }
}

impl Compute {
    pub fn cpu() -> Self {
        Self::on(DeviceChoice::Cpu, Precision::F32)
    }

    /// A device with its default buckets: exact shapes on CPU, where padding
    /// costs real arithmetic and a kernel costs nothing to compile; GPU buckets
    /// on CUDA, where each new shape is compiled and autotuned.
    pub fn on(device: DeviceChoice, precision: Precision) -> Self {
        let buckets = match device {
            DeviceChoice::Cpu => Buckets::EXACT,
            DeviceChoice::Cuda(_) => Buckets::GPU,
        };
        Self { device, precision, buckets }
    }

    /// Fails early, with a sentence, when the device cannot be used.
    pub fn check(self) -> Result<(), String> {
        match (self.device, self.precision) {
            (DeviceChoice::Cpu, Precision::F32) => Ok(()),
            (DeviceChoice::Cpu, Precision::Bf16) => {
                Err("--precision bf16 needs --device cuda; the CPU backend computes in f32".into())
            }
            (DeviceChoice::Cuda(index), _) => cuda_available(index),
        }
    }
}

#[cfg(not(feature = "cuda"))]
fn cuda_available(_index: usize) -> Result<(), String> {
    Err("this build of grid has no CUDA support; rebuild with `cargo build --release --features cuda`, \
         or run with --device cpu"
        .into())
}

/// Asks the driver itself: burn-cuda panics in a worker thread when libcuda is
/// missing, which would reach the user as a crash instead of a sentence.
#[cfg(feature = "cuda")]
fn cuda_available(index: usize) -> Result<(), String> {
    type CuInit = unsafe extern "C" fn(u32) -> i32;
    type CuDeviceGetCount = unsafe extern "C" fn(*mut i32) -> i32;
    // SAFETY: loading the CUDA driver runs no initialisers beyond the driver's own.
    let library =
        unsafe { libloading::Library::new("libcuda.so.1").or_else(|_| libloading::Library::new("libcuda.so")) }
            .map_err(|e| {
                format!(
                    "--device cuda:{index}: no CUDA driver found (libcuda.so.1: {e}); is an NVIDIA driver installed?"
                )
            })?;
    // SAFETY: the symbols have these C signatures in every CUDA driver API version.
    let count = unsafe {
        let init: libloading::Symbol<CuInit> = library.get(b"cuInit\0").map_err(|e| e.to_string())?;
        let get_count: libloading::Symbol<CuDeviceGetCount> =
            library.get(b"cuDeviceGetCount\0").map_err(|e| e.to_string())?;
        let status = init(0);
        if status != 0 {
            return Err(format!("--device cuda:{index}: the CUDA driver failed to initialise (CUresult {status})"));
        }
        let mut count = 0i32;
        let status = get_count(&mut count);
        if status != 0 {
            return Err(format!("--device cuda:{index}: cannot count CUDA devices (CUresult {status})"));
        }
        count
    };
    if index >= count.max(0) as usize {
        return Err(format!("--device cuda:{index}: this machine has {count} CUDA device(s)"));
    }
    Ok(())
}

/// The GPU's model and the driver's version, e.g. `NVIDIA H100 80GB HBM3 cuda-13000`:
/// compiled kernels are valid for that pair, so it names their cache folder.
#[cfg(feature = "cuda")]
pub fn cuda_device_tag(index: usize) -> Result<String, String> {
    type CuInit = unsafe extern "C" fn(u32) -> i32;
    type CuDeviceGet = unsafe extern "C" fn(*mut i32, i32) -> i32;
    type CuDeviceGetName = unsafe extern "C" fn(*mut std::ffi::c_char, i32, i32) -> i32;
    type CuDriverGetVersion = unsafe extern "C" fn(*mut i32) -> i32;
    // SAFETY: as in `cuda_available`; the symbols have these C signatures in
    // every CUDA driver API version, and the name buffer outlives the call.
    unsafe {
        let library = libloading::Library::new("libcuda.so.1")
            .or_else(|_| libloading::Library::new("libcuda.so"))
            .map_err(|e| e.to_string())?;
        let init: libloading::Symbol<CuInit> = library.get(b"cuInit\0").map_err(|e| e.to_string())?;
        let get: libloading::Symbol<CuDeviceGet> = library.get(b"cuDeviceGet\0").map_err(|e| e.to_string())?;
        let name: libloading::Symbol<CuDeviceGetName> = library.get(b"cuDeviceGetName\0").map_err(|e| e.to_string())?;
        let version: libloading::Symbol<CuDriverGetVersion> =
            library.get(b"cuDriverGetVersion\0").map_err(|e| e.to_string())?;
        if init(0) != 0 {
            return Err("the CUDA driver failed to initialise".into());
        }
        let mut device = 0i32;
        if get(&mut device, index as i32) != 0 {
            return Err(format!("no CUDA device {index}"));
        }
        let mut buffer = [0 as std::ffi::c_char; 256];
        if name(buffer.as_mut_ptr(), buffer.len() as i32, device) != 0 {
            return Err(format!("cannot read the name of CUDA device {index}"));
        }
        let mut driver = 0i32;
        if version(&mut driver) != 0 {
            return Err("cannot read the CUDA driver's version".into());
        }
        let model = std::ffi::CStr::from_ptr(buffer.as_ptr()).to_string_lossy().into_owned();
        Ok(format!("{model} cuda-{driver}"))
    }
}

/// Runs `$body` with `$B` bound to the autodiff backend a [`Compute`] names and
/// `$device` to its device; evaluates to `anyhow::Result<_>`.
#[macro_export]
macro_rules! with_autodiff_backend {
    ($compute:expr, |$B:ident, $device:ident| $body:expr) => {{
        use $crate::backend::{DeviceChoice, Precision};
        let compute: $crate::backend::Compute = $compute;
        match (compute.device, compute.precision) {
            (DeviceChoice::Cpu, Precision::F32) => {
                type $B = $crate::backend::CpuAutodiff;
                let $device = Default::default();
                $body
            }
            #[cfg(feature = "cuda")]
            (DeviceChoice::Cuda(index), Precision::F32) => {
                type $B = $crate::backend::CudaAutodiff;
                let $device = burn_cuda::CudaDevice::new(index);
                $body
            }
            #[cfg(feature = "cuda")]
            (DeviceChoice::Cuda(index), Precision::Bf16) => {
                type $B = $crate::backend::CudaBf16Autodiff;
                let $device = burn_cuda::CudaDevice::new(index);
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
        assert!("fp8".parse::<Precision>().is_err());
    }

    #[test]
    fn unusable_choices_are_sentences_not_panics() {
        assert_eq!(Compute::cpu().check(), Ok(()));
        let bf16_on_cpu = Compute::on(DeviceChoice::Cpu, Precision::Bf16);
        assert!(bf16_on_cpu.check().unwrap_err().contains("needs --device cuda"));
        // No GPU on the machines that run the tests: either no CUDA in this build,
        // or no driver, or no such device. All three are errors, none a panic.
        let cuda = Compute::on(DeviceChoice::Cuda(7), Precision::F32);
        assert_eq!(cuda.buckets, Buckets::GPU);
        assert_eq!(Compute::cpu().buckets, Buckets::EXACT);
        assert!(cuda.check().unwrap_err().contains("cuda"));
    }
}
