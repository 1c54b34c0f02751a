//! `[images]`: Zhou et al.'s image protocol as a grid (2022, section 5;
//! issue 47). Image datasets × manipulations × ResNets × pixel methods,
//! beside (or instead of) the text grid's `[[datasets]]` × shortcuts ×
//! models × methods:
//!
//! ```toml
//! [images]
//! side = 32
//! manipulations = ["watermark", "hue", { kind = "noise", probability = 0.3 }]
//! keep_probability = 0.5            # or a sweep: [0.5, 0.7, 0.9] (§5.4)
//! visibility = [1, 3, 5]            # optional: a sweep of levels (§5.3)
//! [[images.datasets]]
//! name = "photos"
//! embedded = { train = 400, validation = 20, test = 20 }
//! [[images.models]]
//! name = "resnet18-w8"
//! depth = 18
//! width = 8
//! training = { max_steps = 300 }
//! [images.attribution]
//! methods = ["gradient", "gradcam", "kernel-shap"]
//! checkpoints = 4   # Figure 4: also explain four models met during training
//! ```

use std::ops::Range;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use super::image_checkpoints::{Checkpoints, evaluation_steps, spaced_evaluation};
use super::values::{Positive, Share};
use crate::architectures::table::{RawTraining, SpanError, image_training};
use grid_core::model::resnet::{Depth, ResNetConfig, Stem};
use grid_core::train::recipe::{Keep, TrainingSpec};
use grid_methods::salience::image::{PixelMethod, PixelSettings};
use grid_methods::shortcut::image::verification::ImageThresholds;
use grid_methods::shortcut::image::{ImageShortcut, Manipulation, Visibility};

/// A validated `[images]` section.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageGrid {
    /// Pixels of an image's side after the centre crop and resize.
    pub side: usize,
    /// `r`: the probability that an image keeps its label before the
    /// positive class is manipulated (0.5: the labels say nothing). Several
    /// values sweep it (Zhou et al. §5.4, Figure 6), each its own models.
    pub keep_probabilities: Vec<f64>,
    /// Visibility levels each manipulation is planted at (Zhou et al.
    /// §5.3, Figure 5), each its own models; empty: the manipulations as
    /// listed, not swept.
    pub visibilities: Vec<Visibility>,
    pub manipulations: Vec<ImageShortcut>,
    /// Seeds the splits, the crops and the manipulations' draws.
    pub seed: u64,
    pub datasets: Vec<ImageDatasetSpec>,
    pub models: Vec<ImageModelSpec>,
    pub attribution: ImageAttribution,
    pub verification: ImageThresholds,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ImageDatasetSpec {
    pub name: String,
    pub source: ImageSource,
}

/// Where a dataset's images come from.
#[derive(Debug, Clone, PartialEq)]
pub enum ImageSource {
    /// Random crops of the embedded photographs (no download): per class,
    /// the photographs it groups, and how many crops each split takes.
    Embedded { classes: Vec<Vec<String>>, train: usize, validation: usize, test: usize },
    /// Class folders of image files (torchvision's `ImageFolder` layout,
    /// two classes), split at random by the shares.
    Folder { path: PathBuf, validation_share: f64, test_share: f64 },
}

#[derive(Debug, Clone, PartialEq)]
pub struct ImageModelSpec {
    pub name: String,
    /// Two classes: the manipulations are binary.
    pub config: ResNetConfig,
    pub training: TrainingSpec,
}

/// `[images.attribution]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageAttribution {
    pub methods: Vec<PixelMethod>,
    /// Test images explained per model (the first of its test set).
    pub sample: usize,
    pub settings: PixelSettings,
    /// Training checkpoints explained besides the kept model, log-spaced
    /// over the evaluations (Zhou et al.'s Figure 4); 0: none.
    pub checkpoints: usize,
}

impl ImageModelSpec {
    /// The evaluation steps of `checkpoints` checkpoints, spaced evenly on
    /// a log scale from the first evaluation to the last: accuracy moves
    /// most early in training, where Figure 4's curves need their points.
    pub fn checkpoint_steps(&self, checkpoints: usize) -> Vec<usize> {
        let evaluations = evaluation_steps(self.training.max_steps.get(), self.training.eval_every.get());
        let n = checkpoints.min(evaluations.len());
        let mut steps: Vec<usize> =
            (0..n).map(|k| evaluations[spaced_evaluation(k, n, evaluations.len()) - 1]).collect();
        steps.dedup();
        steps
    }

    /// Whether training can end before `max_steps`: at an accuracy bar, or
    /// out of patience.
    pub fn may_stop_early(&self) -> bool {
        let t = &self.training;
        t.stop_at_accuracy.is_some()
            || matches!(t.keep, Keep::Best { patience, .. } if patience.get() < t.max_steps.get())
    }

    /// The checkpoints training keeps for `checkpoints = n`: steps known
    /// now for a run of fixed length, positions resolved at its end for one
    /// that may stop early (see [`super::image_checkpoints`]).
    pub fn checkpoints(&self, n: usize) -> Checkpoints {
        if n > 0 && self.may_stop_early() {
            Checkpoints::Spaced { spaced: n }
        } else {
            Checkpoints::Steps(self.checkpoint_steps(n))
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawImages {
    #[serde(default = "side")]
    side: Spanned<Positive>,
    /// One share, or a list of them.
    keep_probability: Option<Spanned<toml::Value>>,
    /// Levels 1–5, a sweep.
    visibility: Option<Spanned<Vec<u8>>>,
    manipulations: Spanned<Vec<Spanned<toml::Value>>>,
    #[serde(default)]
    seed: u64,
    #[serde(default)]
    datasets: Vec<RawImageDataset>,
    #[serde(default)]
    models: Vec<RawImageModel>,
    attribution: Spanned<RawImageAttribution>,
    #[serde(default)]
    verification: RawImageVerification,
}

fn side() -> Spanned<Positive> {
    Spanned::new(0..0, Positive::new(224))
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawImageDataset {
    name: Spanned<String>,
    embedded: Option<Spanned<RawEmbedded>>,
    folder: Option<Spanned<String>>,
    validation_share: Option<Spanned<Share>>,
    test_share: Option<Spanned<Share>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEmbedded {
    /// Per class, the names of its photographs; default: the two groups of
    /// `grid_core::image::samples::DEFAULT_CLASSES`.
    classes: Option<Vec<Vec<String>>>,
    train: Positive,
    validation: Positive,
    test: Positive,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawImageModel {
    name: Spanned<String>,
    depth: Spanned<u32>,
    width: Option<Positive>,
    stem: Option<Stem>,
    #[serde(default)]
    training: RawTraining,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawImageAttribution {
    methods: Vec<Spanned<String>>,
    #[serde(default = "image_sample")]
    sample: Positive,
    superpixels: Option<Positive>,
    smoothgrad_samples: Option<Positive>,
    smoothgrad_spread: Option<f32>,
    perturbation_samples: Option<Positive>,
    gradient_shap_samples: Option<Positive>,
    background: Option<Positive>,
    per_eval: Option<Positive>,
    seed: Option<u64>,
    #[serde(default)]
    checkpoints: usize,
}

impl RawImageAttribution {
    fn settings(&self) -> PixelSettings {
        let d = PixelSettings::default();
        let count = |v: Option<Positive>, default: usize| v.map_or(default, Positive::get);
        PixelSettings {
            superpixels: count(self.superpixels, d.superpixels),
            smoothgrad_samples: count(self.smoothgrad_samples, d.smoothgrad_samples),
            smoothgrad_spread: self.smoothgrad_spread.unwrap_or(d.smoothgrad_spread),
            perturbation_samples: count(self.perturbation_samples, d.perturbation_samples),
            gradient_shap_samples: count(self.gradient_shap_samples, d.gradient_shap_samples),
            background: count(self.background, d.background),
            per_eval: count(self.per_eval, d.per_eval),
            seed: self.seed.unwrap_or(d.seed),
        }
    }
}

fn image_sample() -> Positive {
    Positive::new(40)
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawImageVerification {
    min_accuracy: Option<Share>,
    max_luck: Option<Share>,
}

/// Validates `[images]`; errors carry the span of the key at fault.
pub(super) fn images(raw: RawImages) -> Result<ImageGrid, SpanError> {
    let side = raw.side.get_ref().get();
    let visibilities = visibilities(raw.visibility)?;
    let mut manipulations: Vec<ImageShortcut> = Vec::new();
    if raw.manipulations.get_ref().is_empty() {
        return Err((Some(raw.manipulations.span()), "`images.manipulations` is empty".into()));
    }
    for entry in raw.manipulations.get_ref() {
        let at = |message: String| (Some(entry.span()), message);
        let names = ImageShortcut::NAMES.join(", ");
        let manipulation = match entry.get_ref() {
            toml::Value::String(name) => ImageShortcut::default_of(name)
                .ok_or_else(|| at(format!("unknown manipulation `{name}` (there are {names})")))?,
            table @ toml::Value::Table(_) => ImageShortcut::deserialize(table.clone())
                .map_err(|e| at(format!("manipulation {table}: {} (kinds: {names})", e.message().trim_end())))?,
            other => return Err(at(format!("a manipulation is a name or a table with `kind`, not {other}"))),
        };
        manipulation.check(side, side).map_err(|e| at(format!("on {side}×{side} images: {e}")))?;
        for &level in &visibilities {
            manipulation
                .at_visibility(level)
                .check(side, side)
                .map_err(|e| at(format!("at visibility {level} on {side}×{side} images: {e}")))?;
        }
        // A sweep sets the strength: a table that sets it too contradicts it.
        if let toml::Value::Table(table) = entry.get_ref()
            && !visibilities.is_empty()
            && table.contains_key(manipulation.visibility_setting())
        {
            return Err(at(format!(
                "manipulation `{}` sets `{}`, which `images.visibility` sweeps: leave one of them out",
                manipulation.name(),
                manipulation.visibility_setting()
            )));
        }
        if manipulations.iter().any(|m| m.name() == manipulation.name()) {
            return Err(at(format!("manipulation `{}` is listed twice", manipulation.name())));
        }
        manipulations.push(manipulation);
    }
    if raw.datasets.is_empty() {
        return Err((None, "`[images]` declares no `[[images.datasets]]`".into()));
    }
    if raw.models.is_empty() {
        return Err((None, "`[images]` declares no `[[images.models]]`".into()));
    }
    names(raw.datasets.iter().map(|d| &d.name), "image dataset")?;
    names(raw.models.iter().map(|m| &m.name), "image model")?;
    let datasets = raw.datasets.into_iter().map(dataset).collect::<Result<Vec<_>, _>>()?;
    let models = raw.models.into_iter().map(|m| model(m, side)).collect::<Result<Vec<_>, _>>()?;

    let attribution_span = raw.attribution.span();
    let attribution = raw.attribution.into_inner();
    let mut methods = Vec::new();
    for name in &attribution.methods {
        let method: PixelMethod = name.get_ref().parse().map_err(|e| (Some(name.span()), e))?;
        if methods.contains(&method) {
            return Err((Some(name.span()), format!("method `{method}` is listed twice")));
        }
        methods.push(method);
    }
    if methods.is_empty() {
        return Err((Some(attribution_span), "`images.attribution.methods` is empty".into()));
    }
    let settings = attribution.settings();
    if !(settings.smoothgrad_spread.is_finite() && settings.smoothgrad_spread > 0.0) {
        return Err((Some(attribution_span), "`images.attribution.smoothgrad_spread` must be > 0".into()));
    }
    let defaults = ImageThresholds::default();
    Ok(ImageGrid {
        side,
        keep_probabilities: keep_probabilities(raw.keep_probability)?,
        visibilities,
        manipulations,
        seed: raw.seed,
        datasets,
        models,
        attribution: ImageAttribution {
            methods,
            sample: attribution.sample.get(),
            settings,
            checkpoints: attribution.checkpoints,
        },
        verification: ImageThresholds {
            min_accuracy: raw.verification.min_accuracy.map_or(defaults.min_accuracy, Share::get),
            max_luck: raw.verification.max_luck.map_or(defaults.max_luck, Share::get),
        },
    })
}

/// `keep_probability = 0.5` or `= [0.5, 0.7, 0.9]`: shares, each once.
fn keep_probabilities(raw: Option<Spanned<toml::Value>>) -> Result<Vec<f64>, SpanError> {
    let Some(raw) = raw else { return Ok(vec![0.5]) };
    let at = |message: String| (Some(raw.span()), message);
    let values: Vec<&toml::Value> = match raw.get_ref() {
        toml::Value::Array(list) => list.iter().collect(),
        one => vec![one],
    };
    let mut out: Vec<f64> = Vec::new();
    for value in values {
        let r = match value {
            toml::Value::Float(f) => *f,
            toml::Value::Integer(i) => *i as f64,
            other => return Err(at(format!("`images.keep_probability` takes shares in [0, 1], not {other}"))),
        };
        if !(0.0..=1.0).contains(&r) {
            return Err(at(format!("`images.keep_probability` = {r} is outside [0, 1]")));
        }
        if out.contains(&r) {
            return Err(at(format!("`images.keep_probability` lists {r} twice")));
        }
        out.push(r);
    }
    if out.is_empty() {
        return Err(at("`images.keep_probability` is empty".into()));
    }
    Ok(out)
}

/// `visibility = [1, 3, 5]`: levels, each once; every level is checked
/// against every manipulation on the grid's images.
fn visibilities(raw: Option<Spanned<Vec<u8>>>) -> Result<Vec<Visibility>, SpanError> {
    let Some(raw) = raw else { return Ok(Vec::new()) };
    let at = |message: String| (Some(raw.span()), message);
    let mut out: Vec<Visibility> = Vec::new();
    for &level in raw.get_ref() {
        let level = Visibility::try_from(level).map_err(|e| at(format!("`images.visibility`: {e}")))?;
        if out.contains(&level) {
            return Err(at(format!("`images.visibility` lists level {level} twice")));
        }
        out.push(level);
    }
    if out.is_empty() {
        return Err(at("`images.visibility` is empty (leave it out to plant each manipulation as listed)".into()));
    }
    out.sort();
    Ok(out)
}

fn names<'a>(names: impl Iterator<Item = &'a Spanned<String>>, what: &str) -> Result<(), SpanError> {
    super::check_names(names, what).map_err(|(span, message)| (Some(span), message))
}

fn dataset(raw: RawImageDataset) -> Result<ImageDatasetSpec, SpanError> {
    let name = raw.name.get_ref().clone();
    let span: Range<usize> = raw.name.span();
    let source = match (raw.embedded, raw.folder) {
        (Some(embedded), None) => {
            let share = raw.validation_share.as_ref().or(raw.test_share.as_ref());
            if let Some(share) = share {
                return Err((
                    Some(share.span()),
                    format!(
                        "image dataset `{name}`: the embedded crops give each split its count \
                         (`embedded = {{ train, validation, test }}`); shares split a folder"
                    ),
                ));
            }
            let at = embedded.span();
            let embedded = embedded.into_inner();
            let classes = embedded.classes.unwrap_or_else(|| {
                grid_core::image::samples::DEFAULT_CLASSES
                    .iter()
                    .map(|c| c.iter().map(|n| n.to_string()).collect())
                    .collect()
            });
            if classes.len() != 2 {
                return Err((
                    Some(at),
                    format!("image dataset `{name}`: {} classes; the manipulations are binary", classes.len()),
                ));
            }
            for photo in classes.iter().flatten() {
                grid_core::image::samples::sample(photo)
                    .map_err(|e| (Some(at.clone()), format!("image dataset `{name}`: {e}")))?;
            }
            if let Some(empty) = classes.iter().position(Vec::is_empty) {
                return Err((Some(at), format!("image dataset `{name}`: class {empty} names no photograph")));
            }
            ImageSource::Embedded {
                classes,
                train: embedded.train.get(),
                validation: embedded.validation.get(),
                test: embedded.test.get(),
            }
        }
        (None, Some(folder)) => {
            let share = |s: &Option<Spanned<Share>>, default: f64| s.as_ref().map_or(default, |s| s.get_ref().get());
            let (validation_share, test_share) = (share(&raw.validation_share, 0.1), share(&raw.test_share, 0.2));
            if validation_share <= 0.0 || test_share <= 0.0 || validation_share + test_share >= 1.0 {
                let at = raw.validation_share.or(raw.test_share).map_or(folder.span(), |s| s.span());
                return Err((
                    Some(at),
                    format!(
                        "image dataset `{name}`: validation_share ({validation_share}) and test_share \
                         ({test_share}) must each be > 0 and leave a training share"
                    ),
                ));
            }
            ImageSource::Folder { path: folder.into_inner().into(), validation_share, test_share }
        }
        (Some(_), Some(folder)) => {
            return Err((Some(folder.span()), format!("image dataset `{name}`: `embedded` or `folder`, not both")));
        }
        (None, None) => {
            return Err((
                Some(span),
                format!(
                    "image dataset `{name}` needs `folder = \"…\"` (class folders of images) or \
                     `embedded = {{ train = …, validation = …, test = … }}` (crops of the embedded photographs)"
                ),
            ));
        }
    };
    Ok(ImageDatasetSpec { name, source })
}

fn model(raw: RawImageModel, side: usize) -> Result<ImageModelSpec, SpanError> {
    let name = raw.name.get_ref().clone();
    let depth = match *raw.depth.get_ref() {
        18 => Depth::R18,
        34 => Depth::R34,
        other => {
            return Err((Some(raw.depth.span()), format!("image model `{name}`: depth {other}; ResNet-18 or -34")));
        }
    };
    // Below 100 pixels torchvision's stem would leave a 1-pixel map or less.
    let stem = raw.stem.unwrap_or(if side < 100 { Stem::Small } else { Stem::ImageNet });
    let config = ResNetConfig { depth, width: raw.width.map_or(64, Positive::get), stem, classes: 2 };
    let training = image_training(raw.training, &name)?;
    Ok(ImageModelSpec { name, config, training })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoints_are_log_spaced_evaluations_from_the_first_to_the_last() {
        let model = |max_steps: usize, eval_every: usize| {
            let mut training = image_training(RawTraining::default(), "m").unwrap();
            training.max_steps = Positive::new(max_steps);
            training.eval_every = Positive::new(eval_every);
            let config = ResNetConfig { depth: Depth::R18, width: 8, stem: Stem::Small, classes: 2 };
            ImageModelSpec { name: "m".into(), config, training }
        };
        // Twelve evaluations: 12^(k/3) = 1, 2.3, 5.2, 12.
        assert_eq!(model(300, 25).checkpoint_steps(4), [25, 50, 125, 300]);
        assert_eq!(model(300, 25).checkpoint_steps(1), [300]);
        assert_eq!(model(300, 25).checkpoint_steps(0), Vec::<usize>::new());
        // More checkpoints than evaluations: every evaluation once.
        assert_eq!(model(100, 40).checkpoint_steps(5), [40, 80, 100]);
        assert_eq!(model(100, 40).checkpoint_steps(2), [40, 100]);
    }
}

/// The keys' view of an image model: its shape and recipe.
#[derive(Debug, Serialize)]
pub struct ImageModelKey<'a> {
    pub config: &'a ResNetConfig,
    pub training: &'a TrainingSpec,
}
