//! Planning `[images]`: per image dataset one `corpus`; per manipulation
//! (at each visibility level and `r` the grid sweeps) one `synth`; per
//! (manipulation, model, seed) a `train` and a `verify`;
//! per pixel method an `attribute` and a `score`. The report reads every
//! verify and score step. Keys name content: the photographs' bytes or the
//! folder's fingerprint, never a path.

use std::path::Path;

use sha2::{Digest, Sha256};

use super::{PlanError, Planner};
use crate::dag::params;
use crate::paths::resolve;
use crate::spec::image_checkpoints::Checkpoint;
use crate::spec::images::{ImageDatasetSpec, ImageGrid, ImageModelKey, ImageSource};
use crate::step_kind::StepKind;
use crate::steps::Work;
use crate::steps::images::ImageWork;
use crate::steps::work::ImageCellCoordinates;
use grid_core::image::folder::ImageFolder;
use grid_core::image::samples;
use grid_methods::shortcut::image::{ImageShortcut, ManipulationKind, Visibility};

/// A model to explain: the trained one or one of its checkpoints.
struct ExplainedModel<'a> {
    /// `images/dataset/manipulation/model[/seed-N]`, the tail of its labels.
    cell: &'a str,
    train: usize,
    synth: usize,
    checkpoint: Option<Checkpoint>,
    model: &'a str,
    dataset: &'a str,
    manipulation: ManipulationKind,
    keep_probability: f64,
    visibility: Option<Visibility>,
    seed: u64,
}

/// One planted manipulation: at a visibility level when the grid sweeps
/// them, and with its `r`.
struct Planted {
    manipulation: ImageShortcut,
    visibility: Option<Visibility>,
    keep_probability: f64,
    /// The manipulation as labels name it: with the level and `r` when the
    /// grid sweeps them (`noise/v-2/r-0.7`).
    label: String,
}

impl Planted {
    fn all(images: &ImageGrid) -> Vec<Planted> {
        let levels: Vec<Option<Visibility>> = if images.visibilities.is_empty() {
            vec![None]
        } else {
            images.visibilities.iter().copied().map(Some).collect()
        };
        let sweep_r = images.keep_probabilities.len() > 1;
        let mut out = Vec::new();
        for manipulation in &images.manipulations {
            for &visibility in &levels {
                for &r in &images.keep_probabilities {
                    let mut label = manipulation.name().to_string();
                    if let Some(level) = visibility {
                        label.push_str(&format!("/v-{level}"));
                    }
                    if sweep_r {
                        label.push_str(&format!("/r-{r}"));
                    }
                    out.push(Planted {
                        manipulation: visibility
                            .map_or_else(|| manipulation.clone(), |v| manipulation.at_visibility(v)),
                        visibility,
                        keep_probability: r,
                        label,
                    });
                }
            }
        }
        out
    }
}

impl Planner<'_> {
    pub(super) fn images(&mut self, images: &ImageGrid, base: &Path) -> Result<(), PlanError> {
        let seeds = |training_seed: u64| self.grid.seeds.clone().unwrap_or_else(|| vec![training_seed]);
        let many_seeds = self.grid.seeds.as_ref().is_some_and(|s| s.len() > 1);
        for dataset in &images.datasets {
            let corpus = self.image_corpus(images, dataset, base)?;
            for planted in Planted::all(images) {
                let synth = self.image_synth(images, dataset, &planted, corpus);
                let (manipulation, r) = (&planted.manipulation, planted.keep_probability);
                for model in &images.models {
                    for seed in seeds(model.training.seed) {
                        let mut model = model.clone();
                        model.training.seed = seed;
                        let name = if many_seeds { format!("{}/seed-{seed}", model.name) } else { model.name.clone() };
                        let cell = format!("images/{}/{}/{name}", dataset.name, planted.label);
                        let checkpoints = model.checkpoints(images.attribution.checkpoints);
                        let key = ImageModelKey { config: &model.config, training: &model.training };
                        let mut train_params = serde_json::json!({ "image_model": key });
                        // Only a grid that asks for checkpoints has them in its keys.
                        if !checkpoints.is_empty() {
                            train_params["checkpoints"] = serde_json::json!(checkpoints);
                        }
                        let train = self.b.add(
                            StepKind::Train,
                            format!("train/{cell}"),
                            vec![synth],
                            params::with_precision(train_params, self.precision),
                            Work::Image(ImageWork::Train { model: model.clone(), checkpoints: checkpoints.clone() }),
                        );
                        let at = std::iter::once(None).chain(checkpoints.each().into_iter().map(Some));
                        for checkpoint in at {
                            let explained = ExplainedModel {
                                cell: &cell,
                                train,
                                synth,
                                checkpoint,
                                model: &model.name,
                                dataset: &dataset.name,
                                manipulation: manipulation.kind(),
                                keep_probability: r,
                                visibility: planted.visibility,
                                seed,
                            };
                            self.explain_image_model(images, &explained);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// A trained model's (or a checkpoint's) `verify` step, and per method
    /// its `attribute` and `score` steps: one image cell each.
    fn explain_image_model(&mut self, images: &ImageGrid, m: &ExplainedModel) {
        let suffix = m.checkpoint.map(|c| format!("/{}", c.label())).unwrap_or_default();
        let with_checkpoint = |mut params: serde_json::Value| {
            if let Some(checkpoint) = m.checkpoint {
                params["checkpoint"] = serde_json::json!(checkpoint);
            }
            params
        };
        let verify = self.b.add(
            StepKind::Verify,
            format!("verify/{}{suffix}", m.cell),
            vec![m.train, m.synth],
            with_checkpoint(serde_json::json!({
                "image_thresholds": images.verification,
                "keep_probability": m.keep_probability,
            })),
            Work::Image(ImageWork::Verify {
                thresholds: images.verification,
                keep_probability: m.keep_probability,
                checkpoint: m.checkpoint,
            }),
        );
        self.report_inputs.push(verify);
        let a = &images.attribution;
        for &method in &a.methods {
            let attribute = self.b.add(
                StepKind::Attribute,
                format!("attribute/{}/{method}{suffix}", m.cell),
                vec![m.train, m.synth],
                params::with_precision(
                    with_checkpoint(serde_json::json!({
                        "pixel_method": method,
                        "settings": method.settings_json(&a.settings),
                        "sample": a.sample,
                    })),
                    self.precision,
                ),
                Work::Image(ImageWork::Attribute {
                    method,
                    settings: a.settings,
                    sample: a.sample,
                    checkpoint: m.checkpoint,
                }),
            );
            let score = self.b.add(
                StepKind::Score,
                format!("score/{}/{method}{suffix}/attr", m.cell),
                vec![attribute, m.synth],
                serde_json::json!({ "image_metric": "attr" }),
                Work::Image(ImageWork::Score),
            );
            self.report_inputs.push(score);
            // The trained model's maps are overlaid on its test images.
            if m.checkpoint.is_none() {
                self.report_inputs.push(attribute);
                if !self.report_inputs.contains(&m.synth) {
                    self.report_inputs.push(m.synth);
                }
            }
            self.image_cells.push(ImageCellCoordinates {
                score,
                verify,
                maps: m.checkpoint.is_none().then_some([attribute, m.synth]),
                model: m.model.to_string(),
                dataset: m.dataset.to_string(),
                manipulation: m.manipulation,
                keep_probability: m.keep_probability,
                visibility: m.visibility,
                method,
                seed: m.seed,
                checkpoint: m.checkpoint,
            });
        }
    }

    /// The dataset's `corpus` step, keyed by what its images are.
    fn image_corpus(
        &mut self,
        images: &ImageGrid,
        dataset: &ImageDatasetSpec,
        base: &Path,
    ) -> Result<usize, PlanError> {
        let (source, folder) = match &dataset.source {
            ImageSource::Embedded { classes, train, validation, test } => {
                // The photographs' bytes: a grid keeps its keys only while they stay.
                let mut hasher = Sha256::new();
                for name in classes.iter().flatten() {
                    let photo = samples::sample(name)
                        .map_err(|e| PlanError::ImageData { dataset: dataset.name.clone(), message: e.to_string() })?;
                    hasher.update(photo.bytes);
                }
                let json = serde_json::json!({
                    "embedded": { "classes": classes, "photos": hex::encode(hasher.finalize()),
                                  "train": train, "validation": validation, "test": test },
                });
                (json, None)
            }
            ImageSource::Folder { path, validation_share, test_share } => {
                let full = resolve(base, path);
                if !full.is_dir() {
                    return Err(PlanError::MissingFile {
                        dataset: dataset.name.clone(),
                        path: full,
                        base: base.to_path_buf(),
                    });
                }
                let fingerprint = ImageFolder::open(&full).and_then(|f| f.fingerprint()).map_err(|e| {
                    PlanError::ImageData { dataset: dataset.name.clone(), message: grid_core::errors::one_line(&e) }
                })?;
                let json = serde_json::json!({
                    "folder": fingerprint, "validation_share": validation_share, "test_share": test_share,
                });
                (json, Some(full))
            }
        };
        Ok(self.b.add(
            StepKind::Corpus,
            format!("corpus/images/{}", dataset.name),
            vec![],
            serde_json::json!({ "images": source, "side": images.side, "seed": images.seed }),
            Work::Image(ImageWork::Corpus { dataset: dataset.clone(), side: images.side, seed: images.seed, folder }),
        ))
    }

    /// The manipulated set: its key holds the manipulation's settings (a
    /// visibility level is the strength it sets), `r` and the seed.
    fn image_synth(
        &mut self,
        images: &ImageGrid,
        dataset: &ImageDatasetSpec,
        planted: &Planted,
        corpus: usize,
    ) -> usize {
        self.b.add(
            StepKind::Synth,
            format!("synth/images/{}/{}", dataset.name, planted.label),
            vec![corpus],
            serde_json::json!({
                "manipulation": planted.manipulation,
                "keep_probability": planted.keep_probability,
                "seed": images.seed,
            }),
            Work::Image(ImageWork::Synth {
                manipulation: planted.manipulation.clone(),
                keep_probability: planted.keep_probability,
                seed: images.seed,
            }),
        )
    }
}
