//! `report`: every score, verification and agreement of the grid, and a few
//! attributed examples → result tables, charts and the HTML page.

use std::collections::HashMap;
use std::path::Path;

use anyhow::Result;

use super::agreement::{Agreement, FILE as AGREEMENT_FILE};
use super::attribute::{AttributedExample, FILE as ATTRIBUTION_FILE};
use super::evaluate::{Evaluation, FILE as EVALUATE_FILE};
use super::images::attribute::read_maps;
use super::images::score::{ImageScore, SCORE as IMAGE_SCORE};
use super::images::synth::StoredRegion;
use super::images::verify::{CHECKPOINT_STEP as IMAGE_CHECKPOINT_STEP, VERIFICATION as IMAGE_VERIFICATION};
use super::images::{SPLITS, Split};
use super::score::{SCORE_FILE, Score};
use super::verify::{FILE as VERIFY_FILE, Verification};
use super::work::{ExampleSource, ReportWork};
use crate::context::StepContext;
use crate::io::{read_json, read_jsonl};
use crate::spec::image_checkpoints::Checkpoint;
use grid_methods::salience::Method;
use grid_methods::shortcut::image::verification::ImageVerification;
use grid_methods::shortcut::image::{ManipulationKind, Visibility};
use grid_report::html::ExampleView;
use grid_report::images::{ImageAttrRow, ImageClass};
use grid_report::map_sheets::{MapSheet, SheetExample};
use grid_report::{AgreementResult, CellResult, EvaluationRow, ReportInput, VerificationRow, write_report};

pub const CONSOLE: &str = "console.md";
/// Every cell and verification row, for `grid report --compare`.
pub const DATA: &str = "report_data.json";

/// What [`DATA`] holds.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ReportData {
    pub cells: Vec<CellResult>,
    pub verification: Vec<VerificationRow>,
    /// A natural grid's models on their test sets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evaluations: Vec<EvaluationRow>,
    /// The image protocol's rows (Zhou et al.'s Figure 3).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImageAttrRow>,
}

/// Examples per model cell shown highlighted by every method in the HTML report.
const EXAMPLES_PER_CELL: usize = 3;

/// Payload folder of the report's input at `position`.
fn input_dir<'a>(ctx: &'a StepContext, position: usize) -> Result<&'a Path> {
    ctx.inputs
        .get(position)
        .map(|p| p.as_path())
        .ok_or_else(|| anyhow::anyhow!("report layout names input {position} of {}", ctx.inputs.len()))
}

pub fn run(work: &ReportWork, ctx: &StepContext, out: &Path) -> Result<()> {
    let mut rows = Vec::new();
    let mut passed = HashMap::new();
    for v in &work.verifications {
        let result: Verification = read_json(&input_dir(ctx, v.verify)?.join(VERIFY_FILE))?;
        passed.insert(v.verify, result.passed);
        rows.push(VerificationRow {
            key: grid_report::CellKey {
                model: v.model.clone(),
                architecture: v.architecture,
                dataset: v.dataset.clone(),
                shortcut: grid_methods::shortcut::Regime::Shortcut(v.shortcut),
                seed: v.seed,
            },
            verification: result,
            min_synthetic_accuracy: Some(v.min_synthetic_accuracy),
            max_original_drop: v.max_original_drop,
        });
    }
    let mut evaluations = Vec::new();
    for e in &work.evaluations {
        let result: Evaluation = read_json(&input_dir(ctx, e.evaluate)?.join(EVALUATE_FILE))?;
        evaluations.push(EvaluationRow {
            model: e.model.clone(),
            architecture: e.architecture,
            dataset: e.dataset.clone(),
            seed: e.seed,
            examples: result.examples,
            accuracy: result.accuracy,
            macro_f1: result.macro_f1,
        });
    }
    let mut results = Vec::new();
    for c in &work.cells {
        let score: Score = read_json(&input_dir(ctx, c.score)?.join(SCORE_FILE))?;
        results.push(CellResult {
            key: grid_report::CellKey {
                model: c.model.clone(),
                architecture: c.architecture,
                dataset: c.dataset.clone(),
                shortcut: c.regime,
                seed: c.seed,
            },
            method: c.method,
            metric: c.metric,
            value: score.mean,
            ci_low: score.interval.map(|i| i[0]),
            ci_high: score.interval.map(|i| i[1]),
            n_examples: score.examples,
            // A natural cell plants nothing, so there is nothing its model
            // could fail to have learnt.
            verified: c.verify.is_none_or(|v| passed.get(&v).copied().unwrap_or(false)),
            values: score.values,
            by_ratio: score.by_ratio,
            region_share: score.region_share,
            rationale: c.rationale.zip(score.rationale).map(|(setting, r)| grid_report::RationaleResult {
                setting,
                pooled: r.pooled,
                rate: r.rate,
                optimal: r.optimal,
                optimal_curve: r.optimal_curve,
            }),
        });
    }
    let mut agreements = Vec::new();
    for g in &work.agreements {
        let a: Agreement = read_json(&input_dir(ctx, g.agreement)?.join(AGREEMENT_FILE))?;
        agreements.push(AgreementResult {
            key: grid_report::CellKey {
                model: g.model.clone(),
                architecture: g.architecture,
                dataset: g.dataset.clone(),
                shortcut: g.regime,
                seed: g.seed,
            },
            methods: a.methods,
            top_k: a.top_k,
            examples: a.examples,
            overlap: a.overlap,
            spearman: a.spearman,
        });
    }
    let mut examples = Vec::new();
    for source in &work.examples {
        examples.extend(example_views(source, ctx)?);
    }
    let images = image_rows(work, ctx)?;
    let image_maps = map_sheets(work, ctx)?;
    let input = ReportInput {
        title: &work.title,
        cells: &results,
        verification: &rows,
        evaluations: &evaluations,
        agreements: &agreements,
        examples: &examples,
        images: &images,
        image_maps: &image_maps,
    };
    let written = write_report(out, &input, &work.formats)?;
    std::fs::write(out.join(CONSOLE), written.console)?;
    crate::io::write_json(&out.join(DATA), &ReportData { cells: results, verification: rows, evaluations, images })?;
    Ok(())
}

/// Test images shown per trained model, of each class (with and without
/// the manipulation).
const IMAGES_PER_CLASS: usize = 2;

/// Per trained image model, its first explained test images of each class
/// with every method's map.
fn map_sheets(work: &ReportWork, ctx: &StepContext) -> Result<Vec<MapSheet>> {
    let mut sheets: Vec<GatheredSheet> = Vec::new();
    for c in &work.images {
        let Some([attribute, synth]) = c.maps else { continue };
        let (index, maps) = read_maps(input_dir(ctx, attribute)?)?;
        let planted = (c.model.as_str(), c.dataset.as_str(), c.manipulation, c.keep_probability, c.visibility);
        let same = |s: &GatheredSheet| s.planted() == planted && s.seed == c.seed;
        // One sheet per model and planted manipulation: the first seed's.
        let other_seed = |s: &GatheredSheet| s.planted() == planted && s.seed != c.seed;
        if sheets.iter().any(other_seed) {
            continue;
        }
        if let Some(sheet) = sheets.iter_mut().find(|s| same(s)) {
            for example in &mut sheet.examples {
                let at = index.examples.iter().position(|e| e.index == example.index);
                let values = at.map(|i| maps[i].values.clone()).unwrap_or_default();
                example.view.maps.push((c.method, values));
            }
            continue;
        }
        let dir = input_dir(ctx, synth)?;
        let test = Split::read(dir, SPLITS[2])?;
        let mut chosen: Vec<usize> = Vec::new();
        for manipulated in [true, false] {
            let of_class = index.examples.iter().enumerate().filter(|(_, e)| e.label.manipulated == manipulated);
            chosen.extend(of_class.take(IMAGES_PER_CLASS).map(|(i, _)| i));
        }
        let examples = chosen
            .into_iter()
            .map(|i| {
                let e = &index.examples[i];
                Indexed {
                    index: e.index,
                    view: SheetExample {
                        image: test.images[e.index].clone(),
                        manipulated: e.label.manipulated,
                        label: e.label.label,
                        target: e.target,
                        maps: vec![(c.method, maps[i].values.clone())],
                    },
                }
            })
            .collect();
        sheets.push(GatheredSheet {
            model: c.model.clone(),
            dataset: c.dataset.clone(),
            manipulation: c.manipulation,
            keep_probability: c.keep_probability,
            visibility: c.visibility,
            seed: c.seed,
            region: StoredRegion::read(dir)?,
            examples,
        });
    }
    Ok(sheets.into_iter().map(GatheredSheet::into_report).collect())
}

/// A sheet as it is gathered: each example with its place in the test split.
struct GatheredSheet {
    model: String,
    dataset: String,
    manipulation: ManipulationKind,
    keep_probability: f64,
    visibility: Option<Visibility>,
    seed: u64,
    region: grid_core::image::Mask,
    examples: Vec<Indexed>,
}

struct Indexed {
    index: usize,
    view: SheetExample,
}

impl GatheredSheet {
    /// The model and the manipulation as planted, all but the seed.
    fn planted(&self) -> (&str, &str, ManipulationKind, f64, Option<Visibility>) {
        (&self.model, &self.dataset, self.manipulation, self.keep_probability, self.visibility)
    }

    fn into_report(self) -> MapSheet {
        MapSheet {
            model: self.model,
            dataset: self.dataset,
            manipulation: self.manipulation,
            keep_probability: self.keep_probability,
            visibility: self.visibility,
            seed: self.seed,
            region: self.region,
            examples: self.examples.into_iter().map(|e| e.view).collect(),
        }
    }
}

/// Per image cell, a row per class of test image: its `Attr%`, `%ER`, and
/// its model's accuracy and verdict.
fn image_rows(work: &ReportWork, ctx: &StepContext) -> Result<Vec<ImageAttrRow>> {
    let mut rows = Vec::new();
    for c in &work.images {
        let score: ImageScore = read_json(&input_dir(ctx, c.score)?.join(IMAGE_SCORE))?;
        let verified = input_dir(ctx, c.verify)?;
        let verification: ImageVerification = read_json(&verified.join(IMAGE_VERIFICATION))?;
        // A checkpoint's step: in the plan for a run of fixed length, in its
        // verification once a run that stopped early resolved it.
        let checkpoint = match c.checkpoint {
            None => None,
            Some(Checkpoint::Step(step)) => Some(step),
            Some(Checkpoint::Spaced { .. }) => Some(read_json::<usize>(&verified.join(IMAGE_CHECKPOINT_STEP))?),
        };
        for (class, of_class) in
            [(ImageClass::Manipulated, score.manipulated), (ImageClass::Untouched, score.untouched)]
        {
            // A class with no test image (or only empty maps) has no mean.
            let Some(attr) = of_class.attr else { continue };
            rows.push(ImageAttrRow {
                model: c.model.clone(),
                dataset: c.dataset.clone(),
                manipulation: c.manipulation,
                method: c.method,
                class,
                seed: c.seed,
                attr,
                region_share: score.region_share,
                accuracy: verification.accuracy,
                verified: verification.passed,
                images: of_class.images,
                checkpoint,
                keep_probability: c.keep_probability,
                visibility: c.visibility,
            });
        }
    }
    Ok(rows)
}

/// The first examples every method of a model cell explained, with each
/// method's scores.
fn example_views(source: &ExampleSource, ctx: &StepContext) -> Result<Vec<ExampleView>> {
    let mut by_method: Vec<(Method, HashMap<usize, AttributedExample>)> = Vec::new();
    for (method, step) in &source.attributions {
        let examples: Vec<AttributedExample> = read_jsonl(&input_dir(ctx, *step)?.join(ATTRIBUTION_FILE))?;
        by_method.push((*method, examples.into_iter().map(|e| (e.index, e)).collect()));
    }
    let Some((_, first)) = by_method.first() else { return Ok(Vec::new()) };
    let mut indices: Vec<usize> =
        first.keys().copied().filter(|i| by_method.iter().all(|(_, m)| m.contains_key(i))).collect();
    indices.sort_unstable();
    Ok(indices
        .into_iter()
        .take(EXAMPLES_PER_CELL)
        .map(|index| {
            let e = &first[&index];
            ExampleView {
                model: source.model.clone(),
                dataset: source.dataset.clone(),
                shortcut: source.regime,
                index,
                label: e.label,
                predicted: e.predicted,
                tokens: e.tokens.clone(),
                special: e.word_of_token.iter().map(Option::is_none).collect(),
                ground_truth: e.ground_truth.clone(),
                distractors: e.distractors.clone(),
                methods: by_method.iter().map(|(m, examples)| (*m, examples[&index].scores.clone())).collect(),
            }
        })
        .collect())
}
