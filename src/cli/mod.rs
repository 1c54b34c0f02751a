//! The `grid` command line: as thin as ripgrep's core crate. Arguments are
//! parsed and results printed here; everything else is a library call. One
//! file per family of subcommands: `run` (run, plan, report, step), `crowd`,
//! `gc`, `bench`; `args` holds their words, `compute` the device options.
//!
//! Exit codes: 0 success, 1 a step failed, 2 bad usage or configuration, 130
//! stopped by Ctrl-C.

mod args;
mod bench;
mod compute;
mod crowd;
mod gc;
mod ledger;
mod location;
mod run;

use std::process::ExitCode;

use clap::Parser;

pub use args::Cli;
use args::{Command, Common, ExecutorChoice};
use compute::compute_of;
use run::Action;

use grid_cache::Cache;
use grid_pipeline::dag::{self, Plan, PlanOptions, Verbosity};
use grid_pipeline::spec::Grid;

/// Parses arguments, runs, and maps the outcome to an exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { ExitCode::from(2) } else { ExitCode::SUCCESS };
        }
    };
    match dispatch(cli.command) {
        Ok(code) => code,
        Err(Failure::Usage(e)) => {
            eprintln!("error: {}", grid_core::errors::one_line(&e));
            ExitCode::from(2)
        }
        Err(Failure::Runtime(e)) => {
            eprintln!("error: {}", grid_core::errors::one_line(&e));
            ExitCode::from(1)
        }
    }
}

enum Failure {
    /// Bad arguments or configuration: exit 2.
    Usage(anyhow::Error),
    /// Something broke while running: exit 1.
    Runtime(anyhow::Error),
}

fn usage<E: Into<anyhow::Error>>(e: E) -> Failure {
    Failure::Usage(e.into())
}
fn runtime<E: Into<anyhow::Error>>(e: E) -> Failure {
    Failure::Runtime(e.into())
}

fn dispatch(mut command: Command) -> Result<ExitCode, Failure> {
    location::resolve(&mut command).map_err(usage)?;
    match command {
        Command::Bench { common, gemm: true, only, json, internal_batch_size, tokens, python, .. } => {
            let options = grid_pipeline::bench::gemm::GemmOptions {
                tokens: tokens.max(1),
                attribution_batch: internal_batch_size.unwrap_or(bench::GEMM_ATTRIBUTION_BATCH).max(1),
                filter: only,
                python: (python != "none").then_some(python),
            };
            bench::bench_gemm(common, options, json)
        }
        Command::Bench { common, resnet: true, only, json, python, sittings, .. } => {
            bench::bench_resnet(common, only, (python != "none").then_some(python), sittings as usize, json)
        }
        Command::Bench {
            common,
            methods,
            examples,
            only,
            json,
            dump,
            internal_batch_size,
            perturbations_per_eval,
            ..
        } => {
            let knobs = (internal_batch_size, perturbations_per_eval);
            bench::bench(common, methods, examples, only, json, dump, knobs)
        }
        Command::Gc { grids, older_than, cache, remote, data_root, set, dry_run, kernels } => {
            let older_than = older_than
                .map(|text| gc::cutoff(&text).map_err(|e| usage(anyhow::anyhow!("--older-than {text}: {e}"))))
                .transpose()?;
            let cache = open_cache(&cache, remote.as_deref())?;
            gc::gc(&grids, &cache, data_root, set, grid_cache::gc::GcOptions { dry_run, kernels, older_than })
        }
        Command::Ledger { grids, compare, compare_as, crowd, study, cache, remote, reports, data_root, with, set } => {
            let aliases = compare_aliases(&compare_as)?;
            let cache = open_cache(&cache, remote.as_deref())?;
            let crowd = crowd.map(|answers| ledger::CrowdAnswers { answers, study });
            ledger::ledger(&grids, compare, &aliases, crowd, &cache, &reports, data_root, &with, &set)
        }
        Command::Run { executor: ExecutorChoice::Local, wait: true, .. } => {
            Err(usage(anyhow::anyhow!("--wait goes with --executor slurm")))
        }
        Command::Run { common, executor, wait, yes } => run::run(Action::Run { executor, wait, yes }, common),
        Command::Plan { common, estimate: true, json } => {
            let (cache, plan) = plan_of(&common, compute_of(&common)?)?;
            let estimate = dag::estimate::estimate(&plan, &cache, cpu_threads());
            if json {
                println!("{}", serde_json::to_string_pretty(&estimate).map_err(runtime)?);
            } else {
                print!("{}", dag::estimate::render(&estimate));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Plan { common, json: false, .. } => run::run(Action::Plan, common),
        Command::Plan { common, json: true, .. } => {
            let (cache, plan) = plan_of(&common, compute_of(&common)?)?;
            let lines = dag::status::lines(&plan, &cache).map_err(runtime)?;
            println!("{}", serde_json::to_string_pretty(&lines).map_err(runtime)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Status { common, json } => {
            let (cache, plan) = plan_of(&common, compute_of(&common)?)?;
            let lines = dag::status::lines(&plan, &cache).map_err(runtime)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&lines).map_err(runtime)?);
            } else {
                print!("{}", dag::status::render_lines(&lines));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Show { common, step, json } => {
            let (cache, plan) = plan_of(&common, compute_of(&common)?)?;
            let index = dag::status::find(&plan, &step).map_err(|e| usage(anyhow::anyhow!(e)))?;
            let detail = dag::status::detail(&plan, &cache, index).map_err(runtime)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&detail).map_err(runtime)?);
            } else {
                print!("{}", dag::status::render_detail(&detail));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Pull { common } => {
            let (cache, plan) = plan_of(&common, compute_of(&common)?)?;
            if cache.remote().is_none() {
                return Err(usage(anyhow::anyhow!("grid pull needs --remote URL (or GRID_REMOTE)")));
            }
            let pulled = dag::pull::pull_all(&plan, &cache).map_err(runtime)?;
            for (label, why) in &pulled.damaged {
                eprintln!("warning: {label}: the remote copy is damaged ({why}); not pulled: a run computes it");
            }
            let location = cache.remote().map(|r| r.location().to_string()).unwrap_or_default();
            eprintln!(
                "pulled {} steps ({}) from {location} in {:.1}s ({:.1} MB/s); {} were here, {} are on neither",
                pulled.pulled,
                dag::estimate::human_bytes(pulled.bytes),
                pulled.seconds,
                pulled.bytes as f64 / 1e6 / pulled.seconds.max(1e-9),
                pulled.present,
                pulled.missing.len()
            );
            Ok(if pulled.damaged.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        Command::Report { common, compare, compare_as } => {
            let aliases = compare_aliases(&compare_as)?;
            run::run(Action::Report { compare, aliases }, common)
        }
        Command::Step { common, key } => run::run(Action::Step { keys: key }, common),
        Command::Lock { common } => {
            let grid = Grid::load_with(&common.grid, &grid_settings(&common.with, &common.set)?).map_err(usage)?;
            let client = grid_core::model::hub::HubClient::from_env();
            let locked = dag::lock::apply(&grid, &common.cache, &client, dag::lock::LockMode::Update).map_err(usage)?;
            if !locked.unresolved.is_empty() {
                let lines: Vec<String> =
                    locked.unresolved.iter().map(|(reference, why)| format!("  {reference}: {why}")).collect();
                return Err(usage(anyhow::anyhow!(
                    "{}: {} reference(s) could not be locked:\n{}",
                    grid.path.display(),
                    lines.len(),
                    lines.join("\n")
                )));
            }
            let path = dag::lock::lock_path(&grid.path);
            match std::fs::read_to_string(&path) {
                Ok(text) => print!("{text}"),
                Err(_) => {
                    eprintln!("{}: every Hub reference is pinned to a commit; no lock needed", grid.path.display())
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Crowd { command } => crowd::crowd(command),
    }
}

/// `--compare-as OURS=PUBLISHED`, each parsed.
fn compare_aliases(compare_as: &[String]) -> Result<Vec<(String, String)>, Failure> {
    compare_as
        .iter()
        .map(|a| grid_report::compare::parse_alias(a).map_err(|e| usage(anyhow::anyhow!("--compare-as {e}"))))
        .collect()
}

/// The threads a CPU run computes with (`RAYON_NUM_THREADS`, else every core).
fn cpu_threads() -> usize {
    rayon::current_num_threads()
}

fn verbosity_of(common: &Common) -> Verbosity {
    if common.quiet {
        Verbosity::Quiet
    } else if common.verbose {
        Verbosity::Verbose
    } else {
        Verbosity::Normal
    }
}

fn load_grid(common: &Common) -> Result<Grid, Failure> {
    match &common.frozen {
        Some(_) if !common.set.is_empty() || !common.with.is_empty() => {
            Err(usage(anyhow::anyhow!("--frozen takes no --set or --with: the frozen text holds the run's overrides")))
        }
        Some(frozen) => Grid::load_frozen(frozen, &common.grid).map_err(usage),
        None => {
            let mode = if common.update_lock { dag::lock::LockMode::Update } else { dag::lock::LockMode::Read };
            load_grid_at(&common.grid, &common.with, &common.set, &common.cache, mode, common.quiet)
        }
    }
}

/// A grid file with `--with` fragments and `--set` overrides written over
/// it, then its lock file's pins for the Hub references that name no commit.
fn load_grid_at(
    path: &std::path::Path,
    with: &[std::path::PathBuf],
    set: &[String],
    cache_root: &std::path::Path,
    mode: dag::lock::LockMode,
    quiet: bool,
) -> Result<Grid, Failure> {
    let mut settings = grid_settings(with, set)?;
    let grid = Grid::load_with(path, &settings).map_err(usage)?;
    let client = grid_core::model::hub::HubClient::from_env();
    let locked = dag::lock::apply(&grid, cache_root, &client, mode).map_err(usage)?;
    if !locked.resolved.is_empty() && !quiet {
        eprintln!("locked in {}: {}", locked.path.display(), locked.resolved.join(", "));
    }
    if locked.overrides.is_empty() {
        return Ok(grid);
    }
    settings.extend(locked.overrides);
    Grid::load_with(path, &settings).map_err(usage)
}

/// `--with` fragments, then `--set` overrides, as overrides in that order.
fn grid_settings(
    with: &[std::path::PathBuf],
    set: &[String],
) -> Result<Vec<grid_pipeline::spec::overrides::Override>, Failure> {
    let mut settings = Vec::new();
    for fragment in with {
        settings
            .extend(grid_pipeline::spec::overrides::from_fragment(fragment).map_err(|e| usage(anyhow::anyhow!(e)))?);
    }
    settings.extend(overrides(set)?);
    Ok(settings)
}

/// The `--set KEY=VALUE` arguments, parsed.
fn overrides(set: &[String]) -> Result<Vec<grid_pipeline::spec::overrides::Override>, Failure> {
    set.iter()
        .map(|s| s.parse::<grid_pipeline::spec::overrides::Override>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| usage(anyhow::anyhow!(e)))
}

/// The cache folder, with the remote cache behind it when one is given.
fn open_cache(folder: &std::path::Path, remote: Option<&str>) -> Result<Cache, Failure> {
    let cache = Cache::open(folder).map_err(runtime)?;
    match remote {
        None => Ok(cache),
        Some(location) => Ok(cache.with_remote(grid_cache::Remote::open(location).map_err(usage)?)),
    }
}

/// The grid file, planned against its cache.
fn plan_of(common: &Common, compute: grid_core::backend::Compute) -> Result<(Cache, Plan), Failure> {
    grid_and_plan_of(common, compute.precision).map(|(_, cache, plan)| (cache, plan))
}

/// The grid as loaded (with `--set`), its cache and its plan.
fn grid_and_plan_of(common: &Common, precision: grid_core::backend::Precision) -> Result<(Grid, Cache, Plan), Failure> {
    let grid = load_grid(common)?;
    let cache = open_cache(&common.cache, common.remote.as_deref())?;
    let options = PlanOptions { data_root: common.data_root.clone(), precision };
    let plan = dag::plan(&grid, &cache, &options).map_err(usage)?;
    Ok((grid, cache, plan))
}
