//! Choosing where tensors live: `--device cpu` (burn's Flex backend, the
//! default) or `--device cuda[:N]` (burn-cuda, behind the `cuda` feature).

use std::fmt;
use std::str::FromStr;

/// The CPU backend (multi-threaded, SIMD).
pub type Cpu = burn::backend::Flex;
/// The CPU backend with autodiff, for training and gradient salience.
pub type CpuAutodiff = burn::backend::Autodiff<Cpu>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceChoice {
    Cpu,
    Cuda(usize),
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

impl DeviceChoice {
    /// Fails early, with a sentence, when the device cannot be used.
    pub fn check(self) -> Result<(), String> {
        match self {
            DeviceChoice::Cpu => Ok(()),
            DeviceChoice::Cuda(_) => Err(
                "CUDA support is not available yet in this build; run with --device cpu (CUDA arrives with the `cuda` cargo feature)"
                    .into(),
            ),
        }
    }
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
    }
}
