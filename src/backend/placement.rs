//! `--device auto`: the device a grid's model steps finish first on.
//!
//! A GPU pays a kernel launch (and an FFI call) per operation whatever the
//! operation's size; the CPU pays for arithmetic. So small models stay on the
//! CPU: on an H200 the quickstart's tiny BERT and BiLSTM trained at 15–24 ms
//! a step, slower than Flex on two cores (BENCHMARKS, "GPU (issue 20)"), while
//! a MiniLM-sized BERT trained there at several times a CPU's rate. The
//! prior here is the work per token: a grid goes to the GPU when one of its
//! models does at least [`GPU_FROM_MACS_PER_TOKEN`] multiply-adds per token
//! (MiniLM: 10.6 M; BERT-base: 85 M; the quickstart's tiny BERT: 0.1 M;
//! the paper's BiLSTM: 1.4 M). Pretrained checkpoints are BERT-sized.

use super::DeviceChoice;

/// Multiply-adds per token from which a model pays its way on a GPU.
pub const GPU_FROM_MACS_PER_TOKEN: f64 = 5.0e6;

/// How much work a model does per token, as far as the grid file says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ModelWork {
    /// Multiply-adds per token of a forward pass.
    MacsPerToken(f64),
    /// A pretrained checkpoint, read only when its step runs: BERT-sized.
    Pretrained,
}

impl ModelWork {
    fn pays_on_gpu(self) -> bool {
        match self {
            ModelWork::MacsPerToken(macs) => macs >= GPU_FROM_MACS_PER_TOKEN,
            ModelWork::Pretrained => true,
        }
    }

    fn describe(self) -> String {
        match self {
            ModelWork::MacsPerToken(macs) => format!("{:.1} M multiply-adds per token", macs / 1e6),
            ModelWork::Pretrained => "a pretrained checkpoint".into(),
        }
    }

    fn macs(self) -> f64 {
        match self {
            ModelWork::MacsPerToken(macs) => macs,
            ModelWork::Pretrained => f64::INFINITY,
        }
    }
}

/// Where `--device auto` puts a run, and the sentence that says why.
#[derive(Debug, Clone, PartialEq)]
pub struct Placed {
    pub device: DeviceChoice,
    pub why: String,
}

/// The device for a grid whose models do `work` (name, work), given whether
/// a usable GPU is there (`gpu`: the reason when not).
pub fn auto_device(work: &[(String, ModelWork)], gpu: Result<(), String>) -> Placed {
    let cpu = |why: String| Placed { device: DeviceChoice::Cpu, why };
    if let Err(reason) = gpu {
        return cpu(format!("no GPU to use ({reason})"));
    }
    let largest = work.iter().max_by(|a, b| a.1.macs().total_cmp(&b.1.macs()));
    match largest {
        None => cpu("the grid trains no model".into()),
        Some((name, work)) if work.pays_on_gpu() => Placed {
            device: DeviceChoice::Cuda(0),
            why: format!(
                "model {name}: {}, at least the {:.0} M from which a GPU pays",
                work.describe(),
                GPU_FROM_MACS_PER_TOKEN / 1e6
            ),
        },
        Some((name, work)) => cpu(format!(
            "its largest model, {name}, does {}, under the {:.0} M from which a GPU pays: \
             small models are bound by kernel launches there",
            work.describe(),
            GPU_FROM_MACS_PER_TOKEN / 1e6
        )),
    }
}

/// Whether this build has a GPU backend and the machine a CUDA device 0.
pub fn gpu_available() -> Result<(), String> {
    #[cfg(any(feature = "cuda", feature = "libtorch"))]
    {
        super::cuda_driver::available(0)
    }
    #[cfg(not(any(feature = "cuda", feature = "libtorch")))]
    {
        Err("this build has no GPU backend".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(work: &[(&str, ModelWork)]) -> Vec<(String, ModelWork)> {
        work.iter().map(|(n, w)| (n.to_string(), *w)).collect()
    }

    #[test]
    fn small_models_stay_on_the_cpu_and_large_ones_go_to_the_gpu() {
        let quickstart =
            named(&[("lstm", ModelWork::MacsPerToken(0.05e6)), ("tiny-bert", ModelWork::MacsPerToken(0.1e6))]);
        let placed = auto_device(&quickstart, Ok(()));
        assert_eq!(placed.device, DeviceChoice::Cpu);
        assert!(placed.why.contains("tiny-bert") && placed.why.contains("kernel launches"), "{}", placed.why);

        let sweep = named(&[("lstm", ModelWork::MacsPerToken(1.4e6)), ("minilm", ModelWork::MacsPerToken(10.6e6))]);
        let placed = auto_device(&sweep, Ok(()));
        assert_eq!(placed.device, DeviceChoice::Cuda(0));
        assert!(placed.why.contains("minilm") && placed.why.contains("10.6 M"), "{}", placed.why);

        let pretrained = named(&[("bert", ModelWork::Pretrained)]);
        assert_eq!(auto_device(&pretrained, Ok(())).device, DeviceChoice::Cuda(0));
    }

    #[test]
    fn without_a_gpu_everything_stays_on_the_cpu_and_says_why() {
        let sweep = named(&[("minilm", ModelWork::MacsPerToken(10.6e6))]);
        let placed = auto_device(&sweep, Err("no CUDA driver found".into()));
        assert_eq!(placed.device, DeviceChoice::Cpu);
        assert!(placed.why.contains("no CUDA driver found"));
        assert_eq!(auto_device(&[], Ok(())).device, DeviceChoice::Cpu);
    }

    #[test]
    fn this_machine_has_no_gpu_or_says_so() {
        // The machines that run the tests have none.
        assert!(gpu_available().is_err());
    }
}
