//! Expanding a grid into steps and computing their keys.

mod images;

use std::path::{Path, PathBuf};

use crate::architectures::AssetError;
use crate::step_kind::StepKind;
use crate::steps::verify::Chance;
use grid_cache::{Cache, CacheError, StepKey};
use grid_core::backend::Precision;
use grid_methods::shortcut::{Regime, ShortcutKind, ShortcutOptions, ShortcutTokens};

use crate::spec::{DatasetSource, DatasetSpec, Grid, ModelSpec, ShortcutSpec, SplitFile};

use super::hub_inputs::Unreachable;
use super::params::{self, FileHashes};
use super::{Plan, Step};
use crate::paths::resolve;
use crate::steps::corpus::ResolvedFiles;
use crate::steps::work::{
    AgreementCoordinates, CellCoordinates, EvaluateCoordinates, ExampleSource, ImageCellCoordinates, ReportWork,
    VerifyCoordinates, Work,
};
use grid_core::model::ModelAssets;
use grid_core::model::hub::HubFile;
use grid_methods::metrics::Metric;
use grid_methods::salience::Method;

/// Where relative data paths point.
#[derive(Debug, Clone, Default)]
pub struct PlanOptions {
    /// `--data-root` / `GRID_DATA_ROOT`; without it, paths are relative to the grid file.
    pub data_root: Option<PathBuf>,
    /// `--precision`: bf16 changes what models learn and explain, so it goes into
    /// train and attribute keys (f32, the default, leaves keys as they were).
    pub precision: Precision,
}

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error(
        "dataset `{dataset}`: {path}: file not found (relative paths resolve against {base}; set --data-root or GRID_DATA_ROOT)"
    )]
    MissingFile { dataset: String, path: PathBuf, base: PathBuf },
    #[error("{0}")]
    HubUnreachable(Box<Unreachable>),
    #[error("{grid}: dataset `{dataset}`: {source}")]
    HubData { grid: PathBuf, dataset: String, source: Box<grid_core::model::hub::HubError> },
    #[error("{grid}: dataset `{dataset}`: {path} is not the file the grid pins: {mismatch}")]
    PinnedFile { grid: PathBuf, dataset: String, path: PathBuf, mismatch: Box<grid_core::model::hub::PinMismatch> },
    #[error("image dataset `{dataset}`: {message}")]
    ImageData { dataset: String, message: String },
    /// A model's GloVe file or checkpoint.
    #[error(transparent)]
    Asset(#[from] AssetError),
    #[error(transparent)]
    Cache(#[from] CacheError),
}

struct Builder {
    steps: Vec<Step>,
}

impl Builder {
    fn add(
        &mut self,
        kind: StepKind,
        label: String,
        inputs: Vec<usize>,
        params: serde_json::Value,
        work: Work,
    ) -> usize {
        let input_keys: Vec<StepKey> = inputs.iter().map(|&i| self.steps[i].key.clone()).collect();
        let key = StepKey::compute(kind, &params, &input_keys);
        self.steps.push(Step { kind, label, inputs, params, key, work });
        self.steps.len() - 1
    }
}

/// Builds the DAG. Reads (and hashes) data files, so that a key names content.
///
/// Per dataset: its corpus ([`Planner::corpus`]), the models of the original
/// data ([`Planner::original_models`]), the model cells to explain (shortcut
/// models with their synth and verify steps, [`Planner::shortcut_cells`], or
/// the original models on a natural grid, [`Planner::natural_cells`]), and
/// the attribute, erasure, score and agreement steps of each cell
/// ([`Planner::explain`]); then one report ([`Planner::report`]).
pub fn plan(grid: &Grid, cache: &Cache, options: &PlanOptions) -> Result<Plan, PlanError> {
    // Said once, before anything is downloaded or run.
    if grid_core::model::hub::offline_from_env()
        && let Some(unreachable) = Unreachable::check(grid, cache.root(), "HF_HUB_OFFLINE is set")
    {
        return Err(PlanError::HubUnreachable(Box::new(unreachable)));
    }
    let base =
        options.data_root.clone().unwrap_or_else(|| grid.path.parent().map(Path::to_path_buf).unwrap_or_default());
    // Resolved and hashed once per model, not once per (dataset, shortcut).
    let assets =
        grid.models.iter().map(|model| assets_of(model, &base, cache)).collect::<Result<Vec<_>, PlanError>>()?;
    let mut planner = Planner::new(grid, options.precision);
    for dataset in &grid.datasets {
        let corpus = planner.corpus(dataset, &base, cache)?;
        let data = DatasetPlan::new(grid, dataset, corpus, &assets);
        let originals = planner.original_models(&data);
        let cells = match (&grid.shortcuts, &data.tokens) {
            (Some(shortcuts), Some(tokens)) => planner.shortcut_cells(&data, shortcuts, tokens, &originals),
            _ => planner.natural_cells(&data, &originals),
        };
        for cell in cells {
            planner.explain(&data, cell);
        }
    }
    if let Some(images) = &grid.images {
        planner.images(images, &base)?;
    }
    Ok(planner.report())
}

/// The plan as it grows, and what its report will read.
struct Planner<'g> {
    grid: &'g Grid,
    precision: Precision,
    b: Builder,
    skipped: Vec<String>,
    wants_erasure: bool,
    wants_diagnosticity: bool,
    /// Every step the report reads, in the order it reads them.
    report_inputs: Vec<usize>,
    cells: Vec<CellCoordinates>,
    verifications: Vec<VerifyCoordinates>,
    evaluations: Vec<EvaluateCoordinates>,
    agreements: Vec<AgreementCoordinates>,
    examples: Vec<ExampleSource>,
    image_cells: Vec<ImageCellCoordinates>,
}

/// One dataset's part of the plan: its corpus step, its shortcut tokens and
/// the models trained on it.
struct DatasetPlan<'g> {
    dataset: &'g DatasetSpec,
    corpus: usize,
    max_length: usize,
    /// One indicator per class of this dataset; none on a natural grid.
    tokens: Option<ShortcutTokens>,
    token_list: Vec<String>,
    /// The models as trained on this dataset (its batch size), with their
    /// assets, once per seed.
    models: Vec<PlannedModel<'g>>,
    many_seeds: bool,
}

struct PlannedModel<'g> {
    spec: ModelSpec,
    assets: &'g (ModelAssets, Option<String>),
    seed: u64,
}

impl<'g> DatasetPlan<'g> {
    fn new(
        grid: &'g Grid,
        dataset: &'g DatasetSpec,
        corpus: usize,
        assets: &'g [(ModelAssets, Option<String>)],
    ) -> Self {
        let tokens = grid.shortcuts.as_ref().map(|s| s.tokens.for_classes(dataset.classes()));
        let token_list = tokens.as_ref().map(|t| t.all()).unwrap_or_default();
        let models = grid
            .models
            .iter()
            .zip(assets)
            .flat_map(|(model, assets)| {
                let model = model.for_dataset(dataset);
                let seeds = grid.seeds.clone().unwrap_or_else(|| vec![model.training.seed]);
                seeds.into_iter().map(move |seed| {
                    let mut spec = model.clone();
                    spec.training.seed = seed;
                    PlannedModel { spec, assets, seed }
                })
            })
            .collect();
        DatasetPlan {
            dataset,
            corpus,
            max_length: dataset.max_length.get(),
            tokens,
            token_list,
            models,
            many_seeds: grid.seeds.as_ref().is_some_and(|s| s.len() > 1),
        }
    }

    /// A model's name in labels: with its seed when the grid trains several.
    fn seeded(&self, name: &str, seed: u64) -> String {
        if self.many_seeds { format!("{name}/seed-{seed}") } else { name.to_string() }
    }
}

impl<'g> Planner<'g> {
    fn new(grid: &'g Grid, precision: Precision) -> Self {
        Planner {
            grid,
            precision,
            b: Builder { steps: Vec::new() },
            skipped: Vec::new(),
            wants_erasure: grid.metrics.iter().any(|m| m.needs_erasure()),
            wants_diagnosticity: grid.metrics.iter().any(|m| matches!(m, Metric::Diagnosticity(_))),
            report_inputs: Vec::new(),
            cells: Vec::new(),
            verifications: Vec::new(),
            evaluations: Vec::new(),
            agreements: Vec::new(),
            examples: Vec::new(),
            image_cells: Vec::new(),
        }
    }

    /// The `corpus` step: the dataset's files, checked and hashed by content.
    fn corpus(&mut self, dataset: &DatasetSpec, base: &Path, cache: &Cache) -> Result<usize, PlanError> {
        let (files, hashes) = match &dataset.source {
            DatasetSource::Generated(_) => (None, None),
            DatasetSource::Files { train, validation, test, .. } => {
                let grid = &self.grid.path;
                let check = |file: &SplitFile| {
                    if let Some(address) = file.hub_address() {
                        return hub_data_file(address, file.pin.as_ref(), cache).map_err(|source| {
                            // Without the Hub, every file it lacks is named at once.
                            let unreachable = source
                                .is_unreachable()
                                .then(|| Unreachable::check(self.grid, cache.root(), &source.to_string()))
                                .flatten();
                            match unreachable {
                                Some(unreachable) => PlanError::HubUnreachable(Box::new(unreachable)),
                                None => PlanError::HubData {
                                    grid: grid.clone(),
                                    dataset: dataset.name.clone(),
                                    source: Box::new(source),
                                },
                            }
                        });
                    }
                    let full = resolve(base, &file.path);
                    if !full.is_file() {
                        return Err(PlanError::MissingFile {
                            dataset: dataset.name.clone(),
                            path: full,
                            base: base.to_path_buf(),
                        });
                    }
                    if let Some(pin) = &file.pin {
                        let bytes = std::fs::metadata(&full)
                            .map_err(|source| CacheError::Io { path: full.clone(), source })?
                            .len();
                        pin.check(&cache.file_hash(&full)?, bytes).map_err(|mismatch| PlanError::PinnedFile {
                            grid: grid.clone(),
                            dataset: dataset.name.clone(),
                            path: full.clone(),
                            mismatch: Box::new(mismatch),
                        })?;
                    }
                    Ok(full)
                };
                let files = ResolvedFiles {
                    train: check(train)?,
                    validation: validation.as_ref().map(check).transpose()?,
                    test: check(test)?,
                };
                let hashes = FileHashes {
                    train: cache.file_hash(&files.train)?,
                    validation: files.validation.as_deref().map(|p| cache.file_hash(p)).transpose()?,
                    test: cache.file_hash(&files.test)?,
                };
                (Some(files), Some(hashes))
            }
        };
        Ok(self.b.add(
            StepKind::Corpus,
            format!("corpus/{}", dataset.name),
            vec![],
            params::corpus(dataset, hashes.as_ref()),
            Work::Corpus { dataset: dataset.clone(), files },
        ))
    }

    /// A `train` step of `model` on the data of step `input`; `planted`: the
    /// rule in the training data of a shortcut model, none for a model of the
    /// original data.
    fn train(
        &mut self,
        data: &DatasetPlan,
        label: String,
        input: usize,
        model: &PlannedModel,
        planted: Option<ShortcutKind>,
    ) -> usize {
        let (assets, asset_hash) = model.assets;
        let trained_on = if planted.is_some() { "shortcut" } else { "original" };
        let params = params::train(&model.spec, data.max_length, &data.token_list, trained_on, asset_hash.as_deref());
        self.b.add(
            StepKind::Train,
            label,
            vec![input],
            params::with_precision(params, self.precision),
            Work::Train {
                model: model.spec.clone(),
                max_length: data.max_length,
                shortcut_tokens: data.token_list.clone(),
                assets: assets.clone(),
                planted: planted.zip(data.tokens.clone()),
            },
        )
    }

    /// Original-data models: one per (dataset, model, seed), shared by all shortcuts.
    fn original_models(&mut self, data: &DatasetPlan) -> Vec<usize> {
        data.models
            .iter()
            .map(|model| {
                let label =
                    format!("train/{}/original/{}", data.dataset.name, data.seeded(&model.spec.name, model.seed));
                self.train(data, label, data.corpus, model, None)
            })
            .collect()
    }

    /// Each shortcut kind's `synth` step, and per model its shortcut `train`
    /// step and the `verify` step against the original model: the cells to
    /// explain on the synthetic test set.
    fn shortcut_cells<'d>(
        &mut self,
        data: &'d DatasetPlan,
        shortcuts: &ShortcutSpec,
        tokens: &ShortcutTokens,
        originals: &[usize],
    ) -> Vec<ModelCell<'d>> {
        let grid = self.grid;
        let dataset = data.dataset;
        let mut model_cells = Vec::new();
        for &kind in &shortcuts.kinds {
            let options = ShortcutOptions {
                kind,
                tokens: tokens.clone(),
                mix_share: shortcuts.mix_share.get(),
                lone_share: shortcuts.lone_share.unwrap_or(shortcuts.mix_share).get(),
                max_distance: shortcuts.max_distance.get(),
                insert_within: dataset.insert_within(),
                keep_probability: shortcuts.keep_probability.get(),
                seed: shortcuts.seed,
            };
            let synth = self.b.add(
                StepKind::Synth,
                format!("synth/{}/{kind}", dataset.name),
                vec![data.corpus],
                params::synth(&options),
                Work::Synth { options: options.clone() },
            );
            // What the test labels allow without the shortcut comes from
            // the synth options, which are in the synth key.
            let chance = Chance::of(&options);
            for (planned, &original) in data.models.iter().zip(originals) {
                let (model, seed) = (&planned.spec, planned.seed);
                let cell = format!("{}/{kind}/{}", dataset.name, data.seeded(&model.name, seed));
                let trained = self.train(data, format!("train/{cell}"), synth, planned, Some(kind));
                let verify = self.b.add(
                    StepKind::Verify,
                    format!("verify/{cell}"),
                    vec![trained, original, synth, data.corpus],
                    params::verify(&grid.verification),
                    Work::Verify { thresholds: grid.verification.clone(), chance },
                );
                self.report_inputs.push(verify);
                self.verifications.push(VerifyCoordinates {
                    verify,
                    model: model.name.clone(),
                    architecture: model.kind(),
                    dataset: dataset.name.clone(),
                    shortcut: kind,
                    seed,
                    min_synthetic_accuracy: grid.verification.min_synthetic_accuracy.get(),
                    // A label reassignment removes the original task on purpose.
                    max_original_drop: matches!(chance, Chance::Balanced { .. })
                        .then(|| grid.verification.max_original_drop.get()),
                });
                model_cells.push(ModelCell {
                    cell,
                    regime: Regime::Shortcut(kind),
                    model,
                    seed,
                    trained,
                    examples: synth,
                    verify: Some(verify),
                });
            }
        }
        model_cells
    }

    /// On a natural grid, the original models on the original test set, each
    /// with an `evaluate` step.
    fn natural_cells<'d>(&mut self, data: &'d DatasetPlan, originals: &[usize]) -> Vec<ModelCell<'d>> {
        let dataset = data.dataset;
        let mut model_cells = Vec::new();
        for (planned, &original) in data.models.iter().zip(originals) {
            let (model, seed) = (&planned.spec, planned.seed);
            let cell = format!("{}/natural/{}", dataset.name, data.seeded(&model.name, seed));
            let evaluate = self.b.add(
                StepKind::Evaluate,
                format!("evaluate/{cell}"),
                vec![original, data.corpus],
                serde_json::json!({}),
                Work::Evaluate,
            );
            self.report_inputs.push(evaluate);
            self.evaluations.push(EvaluateCoordinates {
                evaluate,
                model: model.name.clone(),
                architecture: model.kind(),
                dataset: dataset.name.clone(),
                seed,
            });
            model_cells.push(ModelCell {
                cell,
                regime: Regime::Natural,
                model,
                seed,
                trained: original,
                examples: data.corpus,
                verify: None,
            });
        }
        model_cells
    }

    /// A model cell's `attribute` step for `method`.
    fn attribute(&mut self, data: &DatasetPlan, cell: &ModelCell, method: Method) -> usize {
        let a = &self.grid.attribution;
        let params = params::attribute(method, a.sample.get(), a.test_set, a.subset, a.seed, data.max_length);
        self.b.add(
            StepKind::Attribute,
            format!("attribute/{}/{method}", cell.cell),
            vec![cell.trained, cell.examples],
            params::with_precision(params, self.precision),
            Work::Attribute(attribute_options(self.grid, method, data.max_length)),
        )
    }

    /// The `erasure` step of the attribution `attribution` of `method`.
    fn erasure(&mut self, data: &DatasetPlan, cell: &ModelCell, method: Method, attribution: usize) -> usize {
        let options = crate::steps::erasure::Options {
            attribution: attribute_options(self.grid, method, data.max_length),
            settings: erasure_settings(self.grid),
            batch_size: self.grid.erasure.batch_size.get(),
        };
        self.b.add(
            StepKind::Erasure,
            format!("erasure/{}/{method}", cell.cell),
            vec![cell.trained, cell.examples, attribution],
            params::with_precision(params::erasure(&options.settings), self.precision),
            Work::Erasure(options),
        )
    }

    /// What explains and scores one model cell: per method its attribution
    /// (and erasure), per metric a `score` step; the cell's `agreement`; and
    /// the attributions the report shows as examples.
    fn explain(&mut self, data: &DatasetPlan, cell: ModelCell) {
        let grid = self.grid;
        let dataset = data.dataset;
        let (model, regime, seed, verify) = (cell.model, cell.regime, cell.seed, cell.verify);
        let architecture = model.kind();
        let word_aggregation = grid.attribution.word_aggregation;
        // Diagnosticity compares with random attributions of the same
        // examples, planned once per model cell whether listed or not.
        let random = self.wants_diagnosticity.then(|| {
            let attributed = self.attribute(data, &cell, Method::Random);
            (attributed, self.erasure(data, &cell, Method::Random, attributed))
        });
        let mut attributed: Vec<(Method, usize)> = Vec::new();
        for &method in &grid.attribution.methods {
            if let Some(reason) = method.unsupported_reason(architecture.traits()) {
                let note = format!("{method} on model `{}` ({}): {reason}", model.name, architecture.name());
                if !self.skipped.contains(&note) {
                    self.skipped.push(note);
                }
                continue;
            }
            let (attribution, erased) = match random {
                Some(pair) if method == Method::Random => (pair.0, Some(pair.1)),
                _ => {
                    let attribution = self.attribute(data, &cell, method);
                    (attribution, self.wants_erasure.then(|| self.erasure(data, &cell, method, attribution)))
                }
            };
            attributed.push((method, attribution));
            for &metric in &grid.metrics {
                if metric.needs_distractors() && !regime.has_distractors() {
                    continue;
                }
                let inputs = match metric {
                    Metric::Precision | Metric::Rank | Metric::AttrShare | Metric::AttrNonCorrelating => {
                        vec![attribution]
                    }
                    Metric::Erasure(_) => vec![erased.expect("planned when a metric needs erasure")],
                    // A random attribution against itself says nothing.
                    Metric::Diagnosticity(_) if method == Method::Random => continue,
                    Metric::Diagnosticity(_) => vec![
                        erased.expect("planned when a metric needs erasure"),
                        random.expect("planned for diagnosticity").1,
                    ],
                    // Only a rationale is a set of selected words.
                    Metric::Rationale(_) if method != Method::Rationale => continue,
                    Metric::Rationale(_) => vec![attribution],
                };
                let score = self.b.add(
                    StepKind::Score,
                    format!("score/{}/{method}/{metric}", cell.cell),
                    inputs,
                    params::score(metric, word_aggregation),
                    Work::Score { metric, word_aggregation },
                );
                self.report_inputs.push(score);
                self.cells.push(CellCoordinates {
                    score,
                    verify,
                    model: model.name.clone(),
                    architecture,
                    dataset: dataset.name.clone(),
                    regime,
                    method,
                    metric,
                    seed,
                    rationale: metric.needs_rationale().then(|| model.architecture.rationale_setting()).flatten(),
                });
            }
        }
        if let Some(spec) = grid.agreement.as_ref().filter(|_| attributed.len() >= 2) {
            let options = crate::steps::agreement::Options {
                methods: attributed.iter().map(|(m, _)| *m).collect(),
                top_k: spec.top_k.get(),
                word_aggregation,
            };
            let step = self.b.add(
                StepKind::Agreement,
                format!("agreement/{}", cell.cell),
                attributed.iter().map(|(_, s)| *s).collect(),
                params::agreement(&options),
                Work::Agreement(options),
            );
            self.report_inputs.push(step);
            self.agreements.push(AgreementCoordinates {
                agreement: step,
                model: model.name.clone(),
                architecture,
                dataset: dataset.name.clone(),
                regime,
                seed,
            });
        }
        // Example views come from the first seed's models.
        if self.examples.iter().all(|e: &ExampleSource| {
            (e.model.as_str(), e.dataset.as_str(), e.regime) != (&model.name, &dataset.name, regime)
        }) && !attributed.is_empty()
        {
            self.report_inputs.extend(attributed.iter().map(|(_, s)| *s));
            self.examples.push(ExampleSource {
                model: model.name.clone(),
                dataset: dataset.name.clone(),
                regime,
                attributions: attributed,
            });
        }
    }

    /// The `report` step, and the plan.
    fn report(self) -> Plan {
        let Planner {
            grid,
            mut b,
            skipped,
            report_inputs,
            mut cells,
            mut verifications,
            mut evaluations,
            mut agreements,
            mut examples,
            mut image_cells,
            ..
        } = self;
        // The report's parameters are its layout: which input is which cell. Step
        // indices become positions in `report_inputs`, so the key names only what
        // the tables show and the report step needs nothing of the plan.
        let position = |step: usize| {
            report_inputs.iter().position(|&s| s == step).expect("every step the report reads is among its inputs")
        };
        for c in &mut cells {
            (c.score, c.verify) = (position(c.score), c.verify.map(position));
        }
        for v in &mut verifications {
            v.verify = position(v.verify);
        }
        for e in &mut evaluations {
            e.evaluate = position(e.evaluate);
        }
        for g in &mut agreements {
            g.agreement = position(g.agreement);
        }
        for e in &mut examples {
            for (_, step) in &mut e.attributions {
                *step = position(*step);
            }
        }
        for c in &mut image_cells {
            (c.score, c.verify) = (position(c.score), position(c.verify));
            c.maps = c.maps.map(|steps| steps.map(position));
        }
        let mut layout = serde_json::json!({
            "formats": grid.report.formats.iter().map(|f| format!("{f:?}").to_lowercase()).collect::<Vec<_>>(),
            "cells": cells.iter().map(|c| serde_json::json!({
                "score": c.score, "verify": c.verify, "model": c.model,
                "architecture": c.architecture, "dataset": c.dataset, "shortcut": c.regime.name(),
                "method": c.method, "metric": c.metric, "seed": c.seed,
            })).collect::<Vec<_>>(),
            "verifications": verifications.iter().map(|v| serde_json::json!({
                "verify": v.verify, "model": v.model, "architecture": v.architecture,
                "dataset": v.dataset, "shortcut": v.shortcut.name(), "seed": v.seed,
                "min_synthetic_accuracy": v.min_synthetic_accuracy,
            })).collect::<Vec<_>>(),
            "agreements": agreements.iter().map(|g| serde_json::json!({
                "agreement": g.agreement, "model": g.model, "architecture": g.architecture,
                "dataset": g.dataset, "shortcut": g.regime.name(), "seed": g.seed,
            })).collect::<Vec<_>>(),
            "examples": examples.iter().map(|e| serde_json::json!({
                "model": e.model, "dataset": e.dataset, "shortcut": e.regime.name(),
                "attributions": e.attributions,
            })).collect::<Vec<_>>(),
        });
        // Only natural grids evaluate: a shortcut grid's report key stays as it was.
        if !evaluations.is_empty() {
            layout["evaluations"] = evaluations
                .iter()
                .map(|e| {
                    serde_json::json!({
                        "evaluate": e.evaluate, "model": e.model, "architecture": e.architecture,
                        "dataset": e.dataset, "seed": e.seed,
                    })
                })
                .collect();
        }
        // Only image grids have image cells: a text grid's report key stays.
        if !image_cells.is_empty() {
            layout["images"] = serde_json::to_value(&image_cells).expect("plain data");
        }
        b.add(
            StepKind::Report,
            format!("report/{}", grid.name),
            report_inputs,
            layout,
            Work::Report(ReportWork {
                title: grid.name.clone(),
                formats: grid.report.formats.clone(),
                cells,
                verifications,
                evaluations,
                agreements,
                examples,
                images: image_cells,
            }),
        );
        Plan { grid_name: grid.name.clone(), steps: b.steps, skipped }
    }
}

/// A model to explain, and where its test examples come from.
struct ModelCell<'a> {
    /// `dataset/regime/model[/seed-N]`, the tail of its steps' labels.
    cell: String,
    regime: Regime,
    model: &'a ModelSpec,
    seed: u64,
    trained: usize,
    /// The step whose `test.jsonl` it explains: synth, or corpus on a natural grid.
    examples: usize,
    verify: Option<usize>,
}

/// The attribute step's options for `method` (the same for its erasure step,
/// which re-encodes the same examples).
fn attribute_options(grid: &Grid, method: Method, max_length: usize) -> crate::steps::attribute::Options {
    let a = &grid.attribution;
    crate::steps::attribute::Options {
        method,
        sample: a.sample.get(),
        test_set: a.test_set,
        subset: a.subset,
        seed: a.seed,
        batch_size: a.batch_size.get(),
        max_length,
        internal_batch_size: a.internal_batch_size.get(),
        perturbations_per_eval: a.perturbations_per_eval.get(),
    }
}

fn erasure_settings(grid: &Grid) -> grid_methods::metrics::erasure::Settings {
    let e = &grid.erasure;
    grid_methods::metrics::erasure::Settings {
        ratios: e.ratios.iter().map(|r| r.get()).collect(),
        soft_samples: e.soft_samples.get(),
        seed: e.seed,
        convention: e.convention,
    }
}

/// A dataset file on the Hub, downloaded into the cache when the grid is
/// planned (its content hash goes into the keys), with a progress bar then.
fn hub_data_file(
    address: &str,
    pin: Option<&grid_core::model::hub::Pin>,
    cache: &Cache,
) -> Result<PathBuf, grid_core::model::hub::HubError> {
    let file: HubFile = address.parse()?;
    grid_core::model::hub::HubClient::from_env().dataset_file_shown(&file, pin, cache.root())
}

/// A model's external inputs and the hash that stands for their content in
/// its train keys: each architecture knows its own.
fn assets_of(model: &ModelSpec, base: &Path, cache: &Cache) -> Result<(ModelAssets, Option<String>), PlanError> {
    Ok(model.architecture.assets(&model.name, base, cache)?)
}
