//! Runs a step on the calling thread of this process.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use super::attempts::Earlier;
use super::cpu_wait::CpuWait;
use super::pauses;
use super::{Executor, Finished, Job};
use crate::context::StepContext;
use crate::dag::StepStatus;
use crate::dag::estimate::RunRecord;
use crate::dag::reuse::SameWork;
use crate::step_kind::StepKind;
use crate::steps;
use grid_cache::remote::lease::{Lease, Leased, lease_term};
use grid_cache::remote::{Pulled, Pushed, set_aside_note};
use grid_cache::{Cache, Entry, InputRef, Manifest, StepKey};
use grid_core::backend::Compute;
use grid_core::train::Snapshots;

pub struct InProcess {
    pub compute: Compute,
    /// Whether steps run here one at a time (`--jobs 1`): then each computes
    /// on rayon's pool (`backend::on_worker_thread`). With several at once
    /// they stay on their own threads: a pool thread waiting inside one step
    /// could pick up another step's start and block on burn's autodiff lock,
    /// which the step below it on that thread holds (a test run hung so).
    pub one_at_a_time: bool,
}

impl Executor for InProcess {
    fn run(&self, job: &Job) -> Finished {
        let status = if self.one_at_a_time {
            grid_core::backend::on_worker_thread(self.compute.device, || compute_step(job, self.compute))
        } else {
            compute_step(job, self.compute)
        };
        Finished { status, output: Vec::new() }
    }
}

/// Locks step `job.index`, re-checks the cache (another process may have
/// computed it meanwhile; a damaged entry is set aside), pulls it from the
/// remote cache when that holds it, else computes it into a staging folder
/// and publishes it (to the remote too). An input the remote held but
/// cannot serve (its copy damaged) is computed first, the same way. What
/// `grid step --key` runs.
pub fn compute_step(job: &Job, compute: Compute) -> StepStatus {
    let Job { plan, cache, index, progress, log, .. } = *job;
    let step = &plan.steps[index];
    let attempt = || -> anyhow::Result<StepStatus> {
        let _lock = cache.lock(step.kind, &step.key)?;
        match cache.entry(step.kind, &step.key)? {
            Entry::Valid(_) => return Ok(StepStatus::Cached),
            Entry::Missing => {}
            Entry::Damaged(damage) => {
                let aside = cache.set_aside(step.kind, &step.key)?;
                let moved = aside.map(|p| format!("; moved to {}", p.display())).unwrap_or_default();
                eprintln!("warning: {}: cached result damaged ({damage}){moved}; computing it again", step.label);
            }
        }
        // The remote's lease, held until the result is published there.
        let mut _lease = None;
        if let Some(remote) = cache.remote_shared() {
            let mut pulled = remote.pull(cache, step.kind, &step.key)?;
            if pulled == Pulled::Missing {
                _lease = take_lease(&remote, step.kind, &step.key, &step.label, log)?;
                if _lease.is_none() {
                    // Published by the lease's holder while this one waited.
                    pulled = remote.pull(cache, step.kind, &step.key)?;
                }
            }
            match pulled {
                Pulled::Installed { bytes, .. } => return Ok(StepStatus::Pulled { bytes }),
                Pulled::Missing => {}
                Pulled::Damaged { why, set_aside } => {
                    let aside = set_aside_note(set_aside.as_deref());
                    let line = format!("the remote copy is damaged ({why}){aside}; computing it here");
                    eprintln!("warning: {}: {line}", step.label);
                }
            }
        }
        // Inputs the remote holds come down now, and only these. One whose
        // remote copy turns out damaged is computed here first.
        for &j in &step.inputs {
            let input = &plan.steps[j];
            if cache.lookup(input.kind, &input.key)?.is_some() {
                continue;
            }
            if let InputPull::Damaged(why) = pull_input(cache, input.kind, &input.key, &input.label)? {
                let line = format!("input `{}`: {why}; computing it here first", input.label);
                eprintln!("warning: {}: {line}", step.label);
                if let StepStatus::Failed { error } = compute_step(&Job { index: j, ..*job }, compute) {
                    anyhow::bail!("input `{}`: {error}", input.label);
                }
            }
        }
        let started = Instant::now();
        // The same work may be cached under another key (`dag::reuse`).
        let same_work = crate::dag::reuse::find(plan, cache, step)?;
        let mut staging = cache.begin(step.kind, &step.key)?;
        let input_refs = || {
            step.inputs
                .iter()
                .map(|&j| InputRef {
                    kind: plan.steps[j].kind,
                    key: plan.steps[j].key.clone(),
                    label: plan.steps[j].label.clone(),
                })
                .collect()
        };
        if let Some(SameWork { content_key, published }) = same_work {
            staging.content_key = Some(content_key);
            if let Some(from) = published {
                cache.take_payload(&mut staging, &from)?;
                let seconds = started.elapsed().as_secs_f64();
                let manifest =
                    cache.publish(staging, &step.label, &step.params, input_refs(), seconds, &from.device)?;
                cache.remove_resume(step.kind, &step.key)?;
                push(cache, &manifest, &step.label, log);
                return Ok(StepStatus::of_published(&manifest));
            }
        }
        let inputs = step.inputs.iter().map(|&j| cache.step_dir(plan.steps[j].kind, &plan.steps[j].key)).collect();
        // Long steps keep their progress: training its snapshots, attribution its explained chunks.
        let snapshots = matches!(step.kind, StepKind::Train | StepKind::Attribute)
            .then(|| Snapshots { dir: cache.resume_dir(step.kind, &step.key), every: snapshot_interval() });
        let ctx = StepContext { inputs, compute, progress, log, snapshots };
        // Pauses first: its ticker thread exists before the CPU waits are read.
        let paused_before = pauses::paused_seconds();
        let cpu_before = CpuWait::now();
        let result =
            catch_unwind(AssertUnwindSafe(|| steps::execute(&step.work, &ctx, &staging.dir))).unwrap_or_else(|panic| {
                let message = panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| panic.downcast_ref::<&str>().copied())
                    .unwrap_or("unknown panic");
                Err(anyhow::anyhow!("panicked: {message}"))
            });
        let waited = || cpu_before.as_ref().zip(CpuWait::now()).map(|(before, after)| after.waited_since(before));
        let paused = || paused_before.zip(pauses::paused_seconds()).map(|(before, after)| after - before);
        let resume = cache.resume_dir(step.kind, &step.key);
        if let Err(e) = result {
            let _ = std::fs::remove_dir_all(&staging.dir);
            // Its time so far, for the attempt that finishes it.
            let attempt = Earlier {
                seconds: started.elapsed().as_secs_f64(),
                waited_seconds: waited().unwrap_or(0.0),
                paused_seconds: paused().unwrap_or(0.0),
            };
            Earlier::add(&resume, attempt);
            return Err(e);
        }
        let seconds = started.elapsed().as_secs_f64();
        // What it computed, and on what share of the CPU, so that estimates
        // of later runs learn from it.
        let run = RunRecord {
            threads: rayon::current_num_threads(),
            waited_seconds: waited(),
            paused_seconds: paused(),
            earlier: Earlier::read(&resume),
        };
        staging.work = crate::dag::estimate::work_record(plan, index, cache, run);
        let manifest =
            cache.publish(staging, &step.label, &step.params, input_refs(), seconds, &compute.to_string())?;
        // The result is in place: what it was resumed from has served.
        cache.remove_resume(step.kind, &step.key)?;
        push(cache, &manifest, &step.label, log);
        Ok(StepStatus::Ran { seconds })
    };
    attempt().unwrap_or_else(|e| StepStatus::Failed { error: grid_core::errors::one_line(&e) })
}

/// How [`pull_input`] went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputPull {
    /// The input is in the local cache.
    Present,
    /// The remote's copy failed its check (and was set aside): the input
    /// must be computed. Why, for messages.
    Damaged(String),
}

/// Brings an input the local cache lacks down from the remote, under the
/// input's lock; an error when the remote does not hold it.
pub fn pull_input(cache: &Cache, kind: StepKind, key: &StepKey, label: &str) -> anyhow::Result<InputPull> {
    let _lock = cache.lock(kind, key)?;
    if cache.lookup(kind, key)?.is_some() {
        return Ok(InputPull::Present);
    }
    let Some(remote) = cache.remote() else {
        anyhow::bail!("input `{label}` is not in the cache");
    };
    match remote.pull(cache, kind, key)? {
        Pulled::Installed { .. } => Ok(InputPull::Present),
        Pulled::Missing => anyhow::bail!("input `{label}` is neither in the cache nor on {}", remote.location()),
        Pulled::Damaged { why, set_aside } => {
            let aside = set_aside_note(set_aside.as_deref());
            Ok(InputPull::Damaged(format!("the copy on {} is damaged ({why}){aside}", remote.location())))
        }
    }
}

/// The remote's lease on a step, waiting while another machine's is live;
/// `None` when that machine published the step meanwhile.
fn take_lease(
    remote: &std::sync::Arc<grid_cache::Remote>,
    kind: StepKind,
    key: &StepKey,
    label: &str,
    log: &(dyn Fn(String) + Sync),
) -> anyhow::Result<Option<Lease>> {
    let on_wait = |holder: &grid_cache::remote::lease::LeaseRecord| {
        log(format!("waiting: {} computes it for {} (its lease on {})", holder.who(), holder.label, remote.location()))
    };
    Ok(match remote.lease(kind, key, label, lease_term(), &on_wait)? {
        Leased::Held(lease) => Some(lease),
        Leased::TookOver { lease, from, expired_ms_ago } => {
            let line = format!(
                "took over the lease of {} on {}: it expired {:.0}s ago without renewal (its holder stopped)",
                from.who(),
                remote.location(),
                expired_ms_ago as f64 / 1000.0
            );
            eprintln!("note: {label}: {line}");
            Some(lease)
        }
        Leased::Published => None,
    })
}

/// Publishes a step just computed here to the remote cache, if there is
/// one. A failure there is a warning: the result is safe in the local
/// cache, and the next run publishes it.
fn push(cache: &Cache, manifest: &Manifest<StepKind>, label: &str, log: &(dyn Fn(String) + Sync)) {
    let Some(remote) = cache.remote() else { return };
    match remote.push(cache, manifest) {
        Ok(Pushed::Uploaded { bytes }) => {
            log(format!("published to {} ({})", remote.location(), crate::dag::estimate::human_bytes(bytes)))
        }
        Ok(Pushed::SharedPayload) => log(format!("published to {} (its payload was there)", remote.location())),
        Ok(Pushed::AlreadyThere) => log(format!("{} had it already", remote.location())),
        Err(e) => {
            log(format!("not published to the remote cache: {e}"));
            eprintln!("warning: {label}: not published to the remote cache: {e}");
        }
    }
}

/// The least time between two snapshots (training) or progress writes
/// (attribution): `GRID_SNAPSHOT_SECONDS`
/// (0: at every evaluation), 120 s when unset or not a number.
fn snapshot_interval() -> Duration {
    const DEFAULT: Duration = Duration::from_secs(120);
    match std::env::var("GRID_SNAPSHOT_SECONDS") {
        Err(_) => DEFAULT,
        Ok(text) => text.trim().parse::<f64>().ok().filter(|s| s.is_finite() && *s >= 0.0).map_or_else(
            || {
                eprintln!("warning: GRID_SNAPSHOT_SECONDS={text:?} is not a number of seconds; using 120");
                DEFAULT
            },
            Duration::from_secs_f64,
        ),
    }
}
