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
//!
//! Measurement overrides the prior: every training run records its rate
//! (examples per second) per model shape and device kind in the cache
//! ([`Measurements`]); a model measured on both the CPU and a GPU goes where
//! it trained faster.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

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

/// Training rates of one model shape, examples per second, per device kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Rates {
    pub cpu: Option<f64>,
    pub cuda: Option<f64>,
}

/// The rates every training run recorded, one file per model shape under
/// `<cache>/placement/`. Only the process that schedules a run writes them
/// (after each training step), so no two writers meet; a file is replaced
/// whole (written aside, renamed).
#[derive(Debug, Clone)]
pub struct Measurements {
    dir: PathBuf,
}

impl Measurements {
    pub fn in_cache(root: &Path) -> Self {
        Self { dir: root.join("placement") }
    }

    /// A model shape: what decides a training step's speed (the
    /// architecture's parameters as a train step's key has them, the length
    /// limit, the batch size), hashed.
    pub fn shape(architecture: &serde_json::Value, max_length: usize, batch_size: usize) -> String {
        let text =
            serde_json::json!({ "architecture": architecture, "max_length": max_length, "batch_size": batch_size })
                .to_string();
        hex::encode(&Sha256::digest(text.as_bytes())[..12])
    }

    fn file(&self, shape: &str) -> PathBuf {
        self.dir.join(format!("{shape}.json"))
    }

    /// What was measured for `shape` (nothing when never measured, or when
    /// the record cannot be read: the prior decides then).
    pub fn rates(&self, shape: &str) -> Rates {
        std::fs::read_to_string(self.file(shape))
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default()
    }

    /// Records a training rate of `shape` on `device`'s kind (the latest wins).
    pub fn record(&self, shape: &str, device: DeviceChoice, examples_per_second: f64) -> std::io::Result<()> {
        if !examples_per_second.is_finite() || examples_per_second <= 0.0 {
            return Ok(());
        }
        let mut rates = self.rates(shape);
        match device {
            DeviceChoice::Cpu => rates.cpu = Some(examples_per_second),
            DeviceChoice::Cuda(_) => rates.cuda = Some(examples_per_second),
        }
        std::fs::create_dir_all(&self.dir)?;
        let aside = self.dir.join(format!(".{shape}.json.{}", std::process::id()));
        std::fs::write(&aside, serde_json::to_vec_pretty(&rates).map_err(std::io::Error::other)?)?;
        std::fs::rename(&aside, self.file(shape))
    }
}

/// One model of a grid as placement sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    pub name: String,
    pub work: ModelWork,
    pub measured: Rates,
}

impl Model {
    /// The GPU when both kinds were measured and it trained faster there;
    /// unmeasured on either, the prior; with the sentence that says so.
    fn placed(&self) -> (bool, String) {
        match (self.measured.cpu, self.measured.cuda) {
            (Some(cpu), Some(cuda)) => (
                cuda > cpu,
                format!(
                    "model {}: trained at {cuda:.1} examples/s on a GPU, {cpu:.1} on the CPU (measured)",
                    self.name
                ),
            ),
            _ => {
                let relation = if self.work.pays_on_gpu() { "at least" } else { "under" };
                (
                    self.work.pays_on_gpu(),
                    format!(
                        "model {}: {}, {relation} the {:.0} M from which a GPU pays",
                        self.name,
                        self.work.describe(),
                        GPU_FROM_MACS_PER_TOKEN / 1e6
                    ),
                )
            }
        }
    }
}

/// Where `--device auto` puts a run, and the sentence that says why.
#[derive(Debug, Clone, PartialEq)]
pub struct Placed {
    pub device: DeviceChoice,
    pub why: String,
}

/// The device for a grid of `models`, given whether a usable GPU is there
/// (`gpu`: the reason when not): the GPU when one of its models belongs
/// there ([`Model::placed`]), else the CPU.
pub fn auto_device(models: &[Model], gpu: Result<(), String>) -> Placed {
    let cpu = |why: String| Placed { device: DeviceChoice::Cpu, why };
    if let Err(reason) = gpu {
        return cpu(format!("no GPU to use ({reason})"));
    }
    let placed: Vec<(bool, String)> = models.iter().map(Model::placed).collect();
    if let Some((_, why)) = placed.iter().find(|(gpu, _)| *gpu) {
        return Placed { device: DeviceChoice::Cuda(0), why: why.clone() };
    }
    // Every model stays: name the largest, the one nearest to moving.
    let largest = models.iter().zip(&placed).max_by(|a, b| a.0.work.macs().total_cmp(&b.0.work.macs()));
    match largest {
        None => cpu("the grid trains no model".into()),
        Some((model, (_, why))) if model.measured.cpu.is_some() && model.measured.cuda.is_some() => cpu(why.clone()),
        Some((_, (_, why))) => cpu(format!("{why}: small models are bound by kernel launches there")),
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

/// The NVIDIA GPUs this machine shows, by model name, whatever this build
/// can use: the driver lists each under `/proc/driver/nvidia/gpus/*/information`
/// (`Model: NVIDIA H200`). Empty without the driver.
pub fn visible_gpus() -> Vec<String> {
    visible_gpus_in(std::path::Path::new("/proc/driver/nvidia/gpus"))
}

fn visible_gpus_in(root: &std::path::Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(root) else { return Vec::new() };
    let mut gpus: Vec<(std::ffi::OsString, String)> = entries
        .flatten()
        .filter_map(|entry| {
            let info = std::fs::read_to_string(entry.path().join("information")).ok()?;
            let model = info.lines().find_map(|l| l.strip_prefix("Model:"))?.trim().to_string();
            Some((entry.file_name(), model))
        })
        .collect();
    gpus.sort();
    gpus.into_iter().map(|(_, model)| model).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visible_gpus_are_read_from_the_drivers_listing() {
        let root = tempfile::tempdir().unwrap();
        assert!(visible_gpus_in(&root.path().join("none")).is_empty());
        for (bus, model) in [("0000:1b:00.0", "NVIDIA H200"), ("0000:0a:00.0", "NVIDIA A100-SXM4-80GB")] {
            std::fs::create_dir_all(root.path().join(bus)).unwrap();
            std::fs::write(root.path().join(bus).join("information"), format!("Model: \t {model}\nIRQ: 12\n")).unwrap();
        }
        assert_eq!(visible_gpus_in(root.path()), ["NVIDIA A100-SXM4-80GB", "NVIDIA H200"]);
    }

    fn named(work: &[(&str, ModelWork)]) -> Vec<Model> {
        work.iter().map(|(n, w)| Model { name: n.to_string(), work: *w, measured: Rates::default() }).collect()
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

    /// A stand-in device cost: rates recorded for each kind decide over the
    /// prior, either way.
    #[test]
    fn measured_rates_decide_over_the_prior() {
        let mut small = named(&[("tiny-bert", ModelWork::MacsPerToken(0.1e6))]);
        small[0].measured = Rates { cpu: Some(300.0), cuda: Some(900.0) };
        let placed = auto_device(&small, Ok(()));
        assert_eq!(placed.device, DeviceChoice::Cuda(0), "measured faster on the GPU: {}", placed.why);
        assert!(placed.why.contains("measured"));

        let mut large = named(&[("minilm", ModelWork::MacsPerToken(10.6e6))]);
        large[0].measured = Rates { cpu: Some(120.0), cuda: Some(80.0) };
        let placed = auto_device(&large, Ok(()));
        assert_eq!(placed.device, DeviceChoice::Cpu, "measured faster on the CPU: {}", placed.why);

        // Measured on one kind only: the prior still decides.
        large[0].measured = Rates { cpu: Some(120.0), cuda: None };
        assert_eq!(auto_device(&large, Ok(())).device, DeviceChoice::Cuda(0));
    }

    #[test]
    fn rates_are_kept_per_shape_and_device_kind() {
        let dir = tempfile::tempdir().unwrap();
        let store = Measurements::in_cache(dir.path());
        let shape = Measurements::shape(&serde_json::json!({"bert": {"hidden_size": 384}}), 100, 16);
        assert_ne!(shape, Measurements::shape(&serde_json::json!({"bert": {"hidden_size": 768}}), 100, 16));
        assert_eq!(store.rates(&shape), Rates::default());
        store.record(&shape, DeviceChoice::Cpu, 98.8).unwrap();
        store.record(&shape, DeviceChoice::Cuda(1), 400.0).unwrap();
        store.record(&shape, DeviceChoice::Cpu, f64::NAN).unwrap();
        assert_eq!(store.rates(&shape), Rates { cpu: Some(98.8), cuda: Some(400.0) });
        std::fs::write(dir.path().join("placement").join(format!("{shape}.json")), "not json").unwrap();
        assert_eq!(store.rates(&shape), Rates::default(), "an unreadable record is no measurement");
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
