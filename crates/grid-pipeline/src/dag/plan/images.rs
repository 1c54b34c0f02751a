//! Planning `[images]`: per image dataset one `corpus`; per manipulation
//! one `synth`; per (manipulation, model, seed) a `train` and a `verify`;
//! per pixel method an `attribute` and a `score`. The report reads every
//! verify and score step. Keys name content: the photographs' bytes or the
//! folder's fingerprint, never a path.

use std::path::Path;

use sha2::{Digest, Sha256};

use super::{PlanError, Planner, resolve};
use crate::cache::StepKind;
use crate::dag::params;
use crate::image::folder::ImageFolder;
use crate::image::samples;
use crate::shortcut::image::ImageShortcut;
use crate::spec::images::{ImageDatasetSpec, ImageGrid, ImageModelKey, ImageSource};
use crate::steps::Work;
use crate::steps::images::ImageWork;
use crate::steps::work::ImageCellCoordinates;

impl Planner<'_> {
    pub(super) fn images(&mut self, images: &ImageGrid, base: &Path) -> Result<(), PlanError> {
        let seeds = |training_seed: u64| self.grid.seeds.clone().unwrap_or_else(|| vec![training_seed]);
        let many_seeds = self.grid.seeds.as_ref().is_some_and(|s| s.len() > 1);
        for dataset in &images.datasets {
            let corpus = self.image_corpus(images, dataset, base)?;
            for manipulation in &images.manipulations {
                let synth = self.image_synth(images, dataset, manipulation, corpus);
                for model in &images.models {
                    for seed in seeds(model.training.seed) {
                        let mut model = model.clone();
                        model.training.seed = seed;
                        let name = if many_seeds { format!("{}/seed-{seed}", model.name) } else { model.name.clone() };
                        let cell = format!("images/{}/{}/{name}", dataset.name, manipulation.name());
                        let key = ImageModelKey { config: &model.config, training: &model.training };
                        let train = self.b.add(
                            StepKind::Train,
                            format!("train/{cell}"),
                            vec![synth],
                            params::with_precision(serde_json::json!({ "image_model": key }), self.precision),
                            Work::Image(ImageWork::Train { model: model.clone() }),
                        );
                        let verify = self.b.add(
                            StepKind::Verify,
                            format!("verify/{cell}"),
                            vec![train, synth],
                            serde_json::json!({
                                "image_thresholds": images.verification,
                                "keep_probability": images.keep_probability,
                            }),
                            Work::Image(ImageWork::Verify {
                                thresholds: images.verification,
                                keep_probability: images.keep_probability,
                            }),
                        );
                        self.report_inputs.push(verify);
                        for &method in &images.attribution.methods {
                            let a = &images.attribution;
                            let attribute = self.b.add(
                                StepKind::Attribute,
                                format!("attribute/{cell}/{method}"),
                                vec![train, synth],
                                params::with_precision(
                                    serde_json::json!({
                                        "pixel_method": method,
                                        "settings": method.settings_json(&a.settings),
                                        "sample": a.sample,
                                    }),
                                    self.precision,
                                ),
                                Work::Image(ImageWork::Attribute { method, settings: a.settings, sample: a.sample }),
                            );
                            let score = self.b.add(
                                StepKind::Score,
                                format!("score/{cell}/{method}/attr"),
                                vec![attribute, synth],
                                serde_json::json!({ "image_metric": "attr" }),
                                Work::Image(ImageWork::Score),
                            );
                            self.report_inputs.push(score);
                            self.image_cells.push(ImageCellCoordinates {
                                score,
                                verify,
                                model: model.name.clone(),
                                dataset: dataset.name.clone(),
                                manipulation: manipulation.name().to_string(),
                                method,
                                seed,
                            });
                        }
                    }
                }
            }
        }
        Ok(())
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
                    PlanError::ImageData { dataset: dataset.name.clone(), message: crate::errors::one_line(&e) }
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

    fn image_synth(
        &mut self,
        images: &ImageGrid,
        dataset: &ImageDatasetSpec,
        manipulation: &ImageShortcut,
        corpus: usize,
    ) -> usize {
        self.b.add(
            StepKind::Synth,
            format!("synth/images/{}/{}", dataset.name, manipulation.name()),
            vec![corpus],
            serde_json::json!({
                "manipulation": manipulation,
                "keep_probability": images.keep_probability,
                "seed": images.seed,
            }),
            Work::Image(ImageWork::Synth {
                manipulation: manipulation.clone(),
                keep_probability: images.keep_probability,
                seed: images.seed,
            }),
        )
    }
}
