//! `report`: every score and verification of the grid → result tables.

use std::path::Path;

use anyhow::Result;

use super::StepContext;
use super::io::read_json;
use super::score::{SCORE_FILE, Score};
use super::verify::{FILE as VERIFY_FILE, Verification};
use crate::dag::{CellCoordinates, VerifyCoordinates};
use crate::report::{CellResult, ReportFormat, VerificationRow, write_reports};

pub const CONSOLE: &str = "console.md";

/// Payload folder of input step `step` of report step `report`.
fn input_dir<'a>(ctx: &'a StepContext, report: usize, step: usize) -> &'a Path {
    let position = ctx.plan.steps[report].inputs.iter().position(|&s| s == step).expect("report reads every cell");
    &ctx.inputs[position]
}

pub fn run(
    formats: &[ReportFormat],
    cells: &[CellCoordinates],
    verifications: &[VerifyCoordinates],
    report: usize,
    ctx: &StepContext,
    out: &Path,
) -> Result<()> {
    let mut rows = Vec::new();
    let mut passed = std::collections::HashMap::new();
    for v in verifications {
        let result: Verification = read_json(&input_dir(ctx, report, v.verify_step).join(VERIFY_FILE))?;
        passed.insert(v.verify_step, result.passed);
        rows.push(VerificationRow {
            model: v.model.clone(),
            architecture: v.architecture.clone(),
            dataset: v.dataset.clone(),
            shortcut: v.shortcut.name().into(),
            shortcut_model_on_synthetic: result.shortcut_model_on_synthetic,
            original_model_on_synthetic: result.original_model_on_synthetic,
            shortcut_model_on_flip: result.shortcut_model_on_flip,
            shortcut_model_on_original: result.shortcut_model_on_original,
            original_model_on_original: result.original_model_on_original,
            passed: result.passed,
            failures: result.failures,
        });
    }
    let mut results = Vec::new();
    for c in cells {
        let score: Score = read_json(&input_dir(ctx, report, c.score_step).join(SCORE_FILE))?;
        results.push(CellResult {
            model: c.model.clone(),
            architecture: c.architecture.clone(),
            dataset: c.dataset.clone(),
            shortcut: c.shortcut.name().into(),
            method: c.method.clone(),
            metric: c.metric.clone(),
            value: score.mean,
            ci_low: score.interval.map(|i| i[0]),
            ci_high: score.interval.map(|i| i[1]),
            n_examples: score.examples,
            verified: passed.get(&c.verify_step).copied().unwrap_or(false),
        });
    }
    let written = write_reports(out, &results, &rows, formats)?;
    std::fs::write(out.join(CONSOLE), written.console)?;
    Ok(())
}
