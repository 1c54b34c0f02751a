//! Method config names, as the papers print them, and what each one needs.
//!
//! | name | family | file |
//! |---|---|---|
//! | `grad{p,l}-{l1,l2,mean}`, `gxi{p,l}` | gradient | [`super::gradient`] |
//! | `ig{p,l}-{zero,mask,unk,pad}-{m}` | integrated gradients | [`super::integrated_gradients`] |
//! | `smooth-<gradient method>-<n>-<σ>` | SmoothGrad | [`super::smoothgrad`] |
//! | `lime{unk,mask,erase}-{n}` (also `lime-unk-100`) | LIME | [`super::lime`] |
//! | `kernelshap-{unk,mask,erase}-{n}` (`kernelshap-<n>` hides with `[UNK]`) | KernelSHAP | [`super::kernel_shap`] |
//! | `occlusion-{unk,mask,erase}` | leave-one-out | [`super::occlusion`] |
//! | `attn`, `attn-last`, `attn-all`, `attn-scaled` | attention | [`super::attention`] |
//! | `deeplift`, `deeplift-{zero,mask,unk,pad}` | DeepLift (Rescale) | [`super::deeplift`] |
//! | `rationale` | a rationale model's own selection | [`super::rationale`] |
//! | `random` | floor | [`super::random`] |

use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub use grid_core::model::{AttentionView, ModelTraits};

/// What is differentiated: the predicted class's probability (`p`) or logit (`l`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Target {
    Probability,
    Logit,
}

/// How a gradient vector `∂f/∂e_i` becomes one score per token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Reduction {
    /// `Σ_d |∂f/∂e_id|`
    L1,
    /// `‖∂f/∂e_i‖₂`
    L2,
    /// `mean_d ∂f/∂e_id` (signed)
    Mean,
}

/// The reference input of integrated gradients and DeepLift, at every
/// non-special position (special tokens and padding keep their own embedding).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Baseline {
    /// Zero vectors.
    Zero,
    /// The embedding of `[MASK]` (BERT only).
    Mask,
    /// The embedding of `[UNK]`.
    Unk,
    /// The embedding of `[PAD]` (zero vectors for a BiLSTM with `pad_embedding = "zero"`).
    Pad,
}

/// How a perturbation hides a token (LIME, KernelSHAP, occlusion).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Hiding {
    /// Replaced by `[UNK]`.
    Unk,
    /// Replaced by `[MASK]` (BERT only).
    Mask,
    /// Deleted: the sequence gets shorter.
    Erase,
}

/// The methods SmoothGrad can average: one gradient evaluation per noisy input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GradientMethod {
    /// `grad{p,l}-{l1,l2,mean}`
    Gradient { target: Target, reduction: Reduction },
    /// `gxi{p,l}`: `∂f/∂e_i · e_i`
    GradientTimesInput { target: Target },
    /// `ig{p,l}-{baseline}-{steps}`: `(e_i − b_i) · (1/m) Σ_j ∂f/∂e_i(b + j/m (e − b))`
    IntegratedGradients { target: Target, baseline: Baseline, steps: u32 },
}

impl GradientMethod {
    /// See [`Method::forward_passes`].
    pub fn forward_passes(&self) -> f64 {
        match self {
            GradientMethod::Gradient { .. } | GradientMethod::GradientTimesInput { .. } => 3.0,
            GradientMethod::IntegratedGradients { steps, .. } => 3.0 * f64::from(*steps) + 1.0,
        }
    }
}

/// SmoothGrad's noise level σ, a fraction of each input's embedding value range
/// (Smilkov et al. 2017 §3); finite and positive, so it can be hashed and compared.
#[derive(Debug, Clone, Copy)]
pub struct NoiseLevel(f32);

impl NoiseLevel {
    pub fn new(sigma: f32) -> Option<Self> {
        (sigma.is_finite() && sigma > 0.0).then_some(Self(sigma))
    }
    pub fn get(self) -> f32 {
        self.0
    }
}

impl PartialEq for NoiseLevel {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}
impl Eq for NoiseLevel {}
impl Hash for NoiseLevel {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.to_bits().hash(state);
    }
}

/// A salience method config, named as in the papers' tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    Gradient(GradientMethod),
    /// `smooth-<method>-<samples>-<σ>`: the mean of `method` over `samples` noisy copies of the input.
    SmoothGrad {
        inner: GradientMethod,
        samples: u32,
        sigma: NoiseLevel,
    },
    /// `lime{hiding}-{samples}`
    Lime {
        hiding: Hiding,
        samples: u32,
    },
    /// `kernelshap-{hiding}-{samples}`
    KernelShap {
        hiding: Hiding,
        samples: u32,
    },
    /// `occlusion-{hiding}`: `f(x) − f(x with token i hidden)`.
    Occlusion {
        hiding: Hiding,
    },
    Attention(AttentionView),
    /// `attn-scaled`: `α · ∂f/∂α` (Serrano & Smith 2019).
    ScaledAttention,
    /// `deeplift[-baseline]`: DeepLift with the Rescale rule (Shrikumar et al. 2017).
    DeepLift {
        baseline: Baseline,
    },
    /// `rationale`: the words a rationale model selects, its own
    /// explanation (Zhou et al. 2022 §7).
    Rationale,
    /// `random`: uniform scores, the floor every method must beat.
    Random,
}

impl Method {
    /// What explaining one example of `tokens` tokens costs, in forward
    /// passes of the model over it (a backward pass counts as two): the
    /// work `grid plan --estimate` predicts an attribution step from.
    pub fn forward_passes(&self, tokens: f64) -> f64 {
        /// A forward pass and the backward pass to the embeddings.
        const GRADIENT: f64 = 3.0;
        match self {
            Method::Gradient(inner) => inner.forward_passes(),
            Method::SmoothGrad { inner, samples, .. } => f64::from(*samples) * inner.forward_passes(),
            Method::Lime { samples, .. } | Method::KernelShap { samples, .. } => f64::from(*samples) + 1.0,
            Method::Occlusion { .. } => tokens + 1.0,
            Method::Attention(_) | Method::Rationale => 1.0,
            Method::ScaledAttention => GRADIENT,
            // The input and its baseline forward, then one backward of the
            // multipliers through both.
            Method::DeepLift { .. } => 2.0 + GRADIENT,
            Method::Random => 0.0,
        }
    }

    /// Why the method does not apply to a model with `traits`, if it does not
    /// (PROTOCOL §1: "LSTM has no [MASK]"; attention views are per architecture).
    pub fn unsupported_reason(&self, traits: ModelTraits) -> Option<&'static str> {
        let needs_mask = match self {
            Method::Gradient(g) | Method::SmoothGrad { inner: g, .. } => {
                matches!(g, GradientMethod::IntegratedGradients { baseline: Baseline::Mask, .. })
            }
            Method::DeepLift { baseline } => *baseline == Baseline::Mask,
            Method::Lime { hiding, .. } | Method::KernelShap { hiding, .. } | Method::Occlusion { hiding } => {
                *hiding == Hiding::Mask
            }
            Method::Attention(_) | Method::ScaledAttention | Method::Rationale | Method::Random => false,
        };
        if needs_mask && !traits.mask_token {
            return Some("the model's vocabulary has no [MASK] token");
        }
        // What the method reads of the model, and whether the model has it.
        let (has_it, reason) = match self {
            Method::Attention(AttentionView::Additive) => (
                traits.additive_attention,
                "`attn` reads additive attention (BiLSTM); use attn-last or attn-all for a transformer",
            ),
            Method::Attention(AttentionView::LastLayer | AttentionView::AllLayers) => {
                (traits.transformer_attention, "needs transformer self-attention; use `attn` for the BiLSTM")
            }
            Method::ScaledAttention => {
                (traits.additive_attention || traits.transformer_attention, "the model has no attention")
            }
            Method::Rationale => {
                (traits.rationale, "only a rationale model (`architecture = \"rationale\"`) selects words of its own")
            }
            Method::Gradient(_)
            | Method::SmoothGrad { .. }
            | Method::Lime { .. }
            | Method::KernelShap { .. }
            | Method::Occlusion { .. }
            | Method::DeepLift { .. }
            | Method::Random => return None,
        };
        (!has_it).then_some(reason)
    }

    /// Methods whose scores depend on a random draw (seeded per example).
    pub fn is_stochastic(&self) -> bool {
        matches!(self, Method::SmoothGrad { .. } | Method::Lime { .. } | Method::KernelShap { .. } | Method::Random)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown salience method `{name}`{hint}; known: grad{{p,l}}-{{l1,l2,mean}}, gxi{{p,l}}, \
     ig{{p,l}}-{{zero,mask,unk,pad}}-<steps>, smooth-<gradient method>-<samples>-<sigma>, \
     lime{{unk,mask,erase}}-<samples>, kernelshap-[{{unk,mask,erase}}-]<samples>, occlusion-{{unk,mask,erase}}, \
     attn, attn-last, attn-all, attn-scaled, deeplift[-{{zero,mask,unk,pad}}], rationale, random"
)]
pub struct UnknownMethod {
    pub name: String,
    /// A sentence fragment saying what was wrong, or empty.
    pub hint: String,
}

fn target_letter(target: Target) -> char {
    match target {
        Target::Probability => 'p',
        Target::Logit => 'l',
    }
}

fn baseline_name(baseline: Baseline) -> &'static str {
    match baseline {
        Baseline::Zero => "zero",
        Baseline::Mask => "mask",
        Baseline::Unk => "unk",
        Baseline::Pad => "pad",
    }
}

fn hiding_name(hiding: Hiding) -> &'static str {
    match hiding {
        Hiding::Unk => "unk",
        Hiding::Mask => "mask",
        Hiding::Erase => "erase",
    }
}

impl fmt::Display for GradientMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GradientMethod::Gradient { target, reduction } => {
                let r = match reduction {
                    Reduction::L1 => "l1",
                    Reduction::L2 => "l2",
                    Reduction::Mean => "mean",
                };
                write!(f, "grad{}-{r}", target_letter(*target))
            }
            GradientMethod::GradientTimesInput { target } => write!(f, "gxi{}", target_letter(*target)),
            GradientMethod::IntegratedGradients { target, baseline, steps } => {
                write!(f, "ig{}-{}-{steps}", target_letter(*target), baseline_name(*baseline))
            }
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Method::Gradient(g) => write!(f, "{g}"),
            Method::SmoothGrad { inner, samples, sigma } => write!(f, "smooth-{inner}-{samples}-{}", sigma.get()),
            // The paper's spelling: `limeunk-100`.
            Method::Lime { hiding, samples } => write!(f, "lime{}-{samples}", hiding_name(*hiding)),
            Method::KernelShap { hiding, samples } => write!(f, "kernelshap-{}-{samples}", hiding_name(*hiding)),
            Method::Occlusion { hiding } => write!(f, "occlusion-{}", hiding_name(*hiding)),
            Method::Attention(AttentionView::Additive) => f.write_str("attn"),
            Method::Attention(AttentionView::LastLayer) => f.write_str("attn-last"),
            Method::Attention(AttentionView::AllLayers) => f.write_str("attn-all"),
            Method::ScaledAttention => f.write_str("attn-scaled"),
            Method::DeepLift { baseline: Baseline::Zero } => f.write_str("deeplift"),
            Method::DeepLift { baseline } => write!(f, "deeplift-{}", baseline_name(*baseline)),
            Method::Rationale => f.write_str("rationale"),
            Method::Random => f.write_str("random"),
        }
    }
}

fn parse_target(s: &str) -> Option<Target> {
    match s {
        "p" => Some(Target::Probability),
        "l" => Some(Target::Logit),
        _ => None,
    }
}

fn parse_baseline(s: &str) -> Option<Baseline> {
    match s {
        "zero" => Some(Baseline::Zero),
        "mask" => Some(Baseline::Mask),
        "unk" => Some(Baseline::Unk),
        "pad" => Some(Baseline::Pad),
        _ => None,
    }
}

fn parse_hiding(s: &str) -> Option<Hiding> {
    match s {
        "unk" => Some(Hiding::Unk),
        "mask" => Some(Hiding::Mask),
        "erase" => Some(Hiding::Erase),
        _ => None,
    }
}

/// A count of samples or steps: a positive integer without sign or leading zeros.
fn parse_count(s: &str, at_least: u32) -> Option<u32> {
    if s.is_empty() || s.starts_with('0') || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok().filter(|&n| n >= at_least)
}

impl FromStr for GradientMethod {
    type Err = ();

    fn from_str(name: &str) -> Result<Self, ()> {
        if let Some(rest) = name.strip_prefix("gxi") {
            return Ok(GradientMethod::GradientTimesInput { target: parse_target(rest).ok_or(())? });
        }
        if let Some(rest) = name.strip_prefix("grad") {
            let (t, reduction) = rest.split_once('-').ok_or(())?;
            let reduction = match reduction {
                "l1" => Reduction::L1,
                "l2" => Reduction::L2,
                "mean" => Reduction::Mean,
                _ => return Err(()),
            };
            return Ok(GradientMethod::Gradient { target: parse_target(t).ok_or(())?, reduction });
        }
        if let Some(rest) = name.strip_prefix("ig") {
            let mut parts = rest.splitn(3, '-');
            let target = parts.next().and_then(parse_target).ok_or(())?;
            let baseline = parts.next().and_then(parse_baseline).ok_or(())?;
            let steps = parts.next().and_then(|s| parse_count(s, 1)).ok_or(())?;
            return Ok(GradientMethod::IntegratedGradients { target, baseline, steps });
        }
        Err(())
    }
}

impl FromStr for Method {
    type Err = UnknownMethod;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        let unknown = |hint: &str| UnknownMethod { name: name.to_string(), hint: hint.to_string() };
        match name {
            "random" => return Ok(Method::Random),
            "rationale" => return Ok(Method::Rationale),
            "attn" => return Ok(Method::Attention(AttentionView::Additive)),
            "attn-last" => return Ok(Method::Attention(AttentionView::LastLayer)),
            "attn-all" => return Ok(Method::Attention(AttentionView::AllLayers)),
            "attn-scaled" => return Ok(Method::ScaledAttention),
            "deeplift" => return Ok(Method::DeepLift { baseline: Baseline::Zero }),
            _ => {}
        }
        if let Ok(g) = name.parse::<GradientMethod>() {
            return Ok(Method::Gradient(g));
        }
        if let Some(rest) = name.strip_prefix("deeplift-") {
            let baseline = parse_baseline(rest).ok_or_else(|| unknown(" (baselines: zero, mask, unk, pad)"))?;
            return Ok(Method::DeepLift { baseline });
        }
        if let Some(rest) = name.strip_prefix("occlusion-") {
            let hiding = parse_hiding(rest).ok_or_else(|| unknown(" (hiding: unk, mask, erase)"))?;
            return Ok(Method::Occlusion { hiding });
        }
        if let Some(rest) = name.strip_prefix("lime") {
            let rest = rest.strip_prefix('-').unwrap_or(rest);
            let (hiding, samples) = rest.split_once('-').ok_or_else(|| unknown(""))?;
            let hiding = parse_hiding(hiding).ok_or_else(|| unknown(" (hiding: unk, mask, erase)"))?;
            let samples = parse_count(samples, 2).ok_or_else(|| unknown(" (LIME needs at least 2 samples)"))?;
            return Ok(Method::Lime { hiding, samples });
        }
        if let Some(rest) = name.strip_prefix("kernelshap-") {
            let (hiding, samples) = match rest.split_once('-') {
                Some((h, n)) => (parse_hiding(h).ok_or_else(|| unknown(" (hiding: unk, mask, erase)"))?, n),
                None => (Hiding::Unk, rest),
            };
            let samples = parse_count(samples, 2).ok_or_else(|| unknown(" (KernelSHAP needs at least 2 samples)"))?;
            return Ok(Method::KernelShap { hiding, samples });
        }
        if let Some(rest) = name.strip_prefix("smooth-") {
            // The inner name has dashes of its own: samples and σ are the last two fields.
            let (rest, sigma) = rest.rsplit_once('-').ok_or_else(|| unknown(""))?;
            let (inner, samples) = rest.rsplit_once('-').ok_or_else(|| unknown(""))?;
            let inner: GradientMethod =
                inner.parse().map_err(|()| unknown(" (SmoothGrad wraps grad*, gxi* or ig* methods)"))?;
            let samples = parse_count(samples, 1).ok_or_else(|| unknown(" (samples: a positive integer)"))?;
            let sigma = sigma
                .parse::<f32>()
                .ok()
                .and_then(NoiseLevel::new)
                .ok_or_else(|| unknown(" (sigma: a positive number, a fraction of the embedding range)"))?;
            return Ok(Method::SmoothGrad { inner, samples, sigma });
        }
        Err(unknown(""))
    }
}

impl Serialize for Method {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Method {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use grid_core::model::Architecture;

    #[test]
    fn canonical_names_round_trip() {
        for name in [
            "gradp-l1",
            "gradl-l2",
            "gradp-mean",
            "gxip",
            "gxil",
            "igl-zero-100",
            "igp-mask-1000",
            "igl-unk-7",
            "igp-pad-1",
            "smooth-gradl-l2-50-0.1",
            "smooth-igp-zero-20-10-0.25",
            "smooth-gxil-8-1",
            "limeunk-100",
            "limemask-3000",
            "limeerase-1000",
            "kernelshap-unk-500",
            "kernelshap-erase-64",
            "occlusion-unk",
            "occlusion-mask",
            "occlusion-erase",
            "attn",
            "attn-last",
            "attn-all",
            "attn-scaled",
            "deeplift",
            "deeplift-pad",
            "deeplift-mask",
            "rationale",
            "random",
        ] {
            let m: Method = name.parse().unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(m.to_string(), name);
        }
    }

    #[test]
    fn aliases_normalise() {
        let alias = |a: &str, canonical: &str| assert_eq!(a.parse::<Method>().unwrap().to_string(), canonical);
        alias("lime-unk-100", "limeunk-100");
        alias("kernelshap-200", "kernelshap-unk-200");
        alias("deeplift-zero", "deeplift");
        alias("smooth-gradl-l2-50-0.10", "smooth-gradl-l2-50-0.1");
        assert_eq!("lime-unk-100".parse::<Method>(), "limeunk-100".parse::<Method>());
    }

    #[test]
    fn bad_names_are_refused() {
        for bad in [
            "grad-l1",
            "gradx-l1",
            "gradp-l3",
            "gxi",
            "gxipp",
            "ig",
            "igl-zero",
            "igl-zero-0",
            "igl-zero-010",
            "igl-black-100",
            "igl-zero-100-1",
            "lime-100",
            "limeunk-1",
            "limefoo-100",
            "kernelshap-",
            "kernelshap-unk-x",
            "occlusion-pad",
            "smooth-gradl-l2-50",
            "smooth-gradl-l2-50-0",
            "smooth-gradl-l2-50--1",
            "smooth-random-5-0.1",
            "smooth-limeunk-100-5-0.1",
            "attn-first",
            "deeplift-black",
        ] {
            assert!(bad.parse::<Method>().is_err(), "{bad}");
        }
        let e = "limeunk-1".parse::<Method>().unwrap_err().to_string();
        assert!(e.contains("at least 2 samples"), "{e}");
    }

    #[test]
    fn every_config_of_the_published_tables_parses_and_applies() {
        use polars::prelude::*;
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../experiments/reference/bastings2022_precision_rank.csv");
        let df = CsvReadOptions::default().try_into_reader_with_file_path(Some(path)).unwrap().finish().unwrap();
        let arch = df.column("arch").unwrap().str().unwrap();
        let method = df.column("method").unwrap().str().unwrap();
        let mut parsed = 0;
        for (arch, pattern) in arch.iter().zip(method.iter()) {
            let (arch, pattern) = (arch.unwrap(), pattern.unwrap());
            let traits = match arch {
                "lstm" => Architecture::Bilstm.traits(),
                "bert" => Architecture::Bert.traits(),
                other => panic!("unknown arch {other}"),
            };
            for name in crate::salience::expand::expand(pattern).unwrap() {
                let m: Method = name.parse().unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(m.to_string(), name, "the paper's spelling is the canonical one");
                assert_eq!(m.unsupported_reason(traits), None, "{name} on {arch}");
                parsed += 1;
            }
        }
        assert!(parsed > 100, "{parsed}");
    }

    #[test]
    fn support_follows_the_architecture() {
        let (lstm, bert, rationale) =
            (Architecture::Bilstm.traits(), Architecture::Bert.traits(), Architecture::Rationale.traits());
        let on = |name: &str, traits| name.parse::<Method>().unwrap().unsupported_reason(traits).is_none();
        for name in ["igl-unk-100", "limeunk-100", "attn", "attn-scaled", "deeplift", "occlusion-erase"] {
            assert!(on(name, lstm), "{name} on the LSTM");
        }
        for name in ["igl-mask-100", "limemask-100", "smooth-igl-mask-4-8-0.1", "attn-last", "deeplift-mask"] {
            assert!(!on(name, lstm), "{name} must not run on the LSTM");
        }
        for name in ["igl-mask-100", "limemask-100", "attn-last", "attn-all", "attn-scaled", "deeplift-mask"] {
            assert!(on(name, bert), "{name} on BERT");
        }
        assert!(!on("attn", bert));
        // The rationale model's own selection, and what its predictor offers.
        for name in ["rationale", "attn", "attn-scaled", "igl-unk-100", "limeunk-100", "occlusion-unk"] {
            assert!(on(name, rationale), "{name} on a rationale model");
        }
        assert!(!on("rationale", lstm) && !on("rationale", bert));
        assert!(!on("attn-last", rationale) && !on("igl-mask-100", rationale));
    }
}
