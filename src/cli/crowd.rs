//! `grid crowd export | simulate | import`: the crowd study (`grid_pipeline::crowd`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::args::{Common, CrowdCommand};
use super::compute::compute_of;
use super::{Failure, compare_aliases, grid_and_plan_of, load_grid, runtime, usage};
use grid_cache::Cache;

/// Where a grid's study is written and read unless one is named:
/// `<reports>/<grid>/crowd/study`.
pub(super) fn default_study(reports: &Path, grid_name: &str) -> PathBuf {
    reports.join(grid_name).join("crowd").join("study")
}

pub(super) fn crowd(command: CrowdCommand) -> Result<ExitCode, Failure> {
    use grid_pipeline::crowd::{export, import, run, tables};
    let default_dir = |common: &Common, grid_name: &str| default_study(&common.reports, grid_name);
    match command {
        CrowdCommand::Export {
            common,
            out,
            models,
            methods,
            k,
            examples,
            answers,
            checks,
            batch_size,
            seed,
            labels,
        } => {
            let (grid, cache, plan) = grid_and_plan_of(&common, compute_of(&common)?.precision)?;
            let out = out.unwrap_or_else(|| default_dir(&common, &grid.name));
            let selection = export::Selection { models, methods };
            let asked = export::CliExport { ks: k, examples, answers, checks, batch_size, seed };
            let (study, files) =
                run::export_study(&grid, &plan, &cache, &selection, &asked, &labels, &out).map_err(usage)?;
            let salience = study.salience_tasks().count();
            let per_example = (study.methods.len() * study.ks.len()).max(1);
            let largest = study.batches.iter().map(Vec::len).max().unwrap_or(0);
            println!(
                "{salience} tasks ({} examples × {} methods × {} k), {answers} answers each, dealt into {} batches of at most {largest} tasks (with {checks} attention checks each):",
                salience / per_example,
                study.methods.len(),
                study.ks.len(),
                study.batches.len(),
            );
            for file in files {
                println!("  {}", file.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        CrowdCommand::Simulate { common, study, out, seed, unsure_margin } => {
            let compute = compute_of(&common)?;
            let (grid, cache, plan) = grid_and_plan_of(&common, compute.precision)?;
            let study_path = study.unwrap_or_else(|| default_dir(&common, &grid.name));
            let study = export::read_study(&study_path).map_err(usage)?;
            let models = grid_pipeline::crowd::simulate::model_dirs(&plan, &cache, &study).map_err(usage)?;
            let options = grid_pipeline::crowd::simulate::SimulateOptions { seed, unsure_margin };
            let csv = grid_pipeline::crowd::simulate::simulate(&study, &models, compute, options).map_err(runtime)?;
            let out =
                out.unwrap_or_else(|| common.reports.join(&grid.name).join("crowd").join("simulated-answers.csv"));
            grid_pipeline::crowd::simulate::write_answers(&csv, &out).map_err(runtime)?;
            println!("simulated answers: {}", out.display());
            println!("score them with: grid crowd import {} {}", common.grid.display(), out.display());
            Ok(ExitCode::SUCCESS)
        }
        CrowdCommand::Import { common, answers, study, exclude_failed_checks, compare, compare_as } => {
            let aliases = compare_aliases(&compare_as)?;
            let grid = load_grid(&common)?;
            let cache = Cache::open(&common.cache).map_err(runtime)?;
            let study = study.unwrap_or_else(|| default_dir(&common, &grid.name));
            let options = import::ImportOptions { exclude_failed_checks };
            let outcome = run::import_answers(&cache, &study, &answers, options, &common.reports).map_err(usage)?;
            let imported = &outcome.imported;
            for warning in &imported.warnings {
                eprintln!("warning: {warning}");
            }
            for cell in &imported.cells {
                println!("{}", tables::accuracy_markdown(imported, cell));
            }
            // A long list of workers goes to its file only.
            if imported.workers.len() <= 20 {
                println!("{}", tables::workers_markdown(imported));
            } else {
                let failed = imported.workers.iter().filter(|w| w.checks_failed > 0).count();
                println!(
                    "{} workers, {failed} of them failed an attention check (per worker: crowd_workers.md)\n",
                    imported.workers.len()
                );
            }
            if let Some(path) = compare {
                let published = grid_pipeline::crowd::compare::read_published(&path).map_err(usage)?;
                let comparisons = grid_pipeline::crowd::compare::compare(imported, &published, &aliases);
                let text = grid_pipeline::crowd::compare::render_markdown(imported, &comparisons, &path);
                println!("{text}");
                grid_pipeline::crowd::compare::write_markdown(
                    &text,
                    &common.reports.join(&imported.grid).join("crowd"),
                )
                .map_err(runtime)?;
            }
            eprintln!(
                "{} answers from {} workers{}; tables in {}",
                imported.answers,
                imported.workers.len(),
                if outcome.cached {
                    " (cached: the same study and answers were imported before)".to_string()
                } else if outcome.cells_cached > 0 {
                    format!(
                        " ({} model cells scored, {} unchanged since an earlier import and taken from the cache)",
                        outcome.cells_scored, outcome.cells_cached
                    )
                } else {
                    String::new()
                },
                outcome.files.first().and_then(|f| f.parent()).map(|p| p.display().to_string()).unwrap_or_default()
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}
