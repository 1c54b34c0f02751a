//! Where each planned step stands in the cache — what `grid plan`, `grid
//! status` and `grid show` print, as text or as JSON for scripts.

use serde::Serialize;
use serde_json::Value;

use std::collections::HashMap;

use super::Plan;
use super::slurm::OnSlurm;
use super::stale;
use crate::step_kind::StepKind;
use grid_cache::{Cache, CacheError, Entry, Failure, InputRef, Manifest, PayloadFile};

/// One step's state, most telling first: a result that can be served, one that
/// is being computed, one that failed, one that cannot be trusted, or none.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "lowercase")]
pub enum StepState {
    /// A complete result whose payload checks out against its manifest.
    Cached {
        seconds: f64,
        finished_at: u64,
        device: String,
        /// The step whose result it took, the same work under another key
        /// (`dag::reuse`): [`InputRef::short_name`].
        #[serde(skip_serializing_if = "Option::is_none")]
        reused_from: Option<String>,
    },
    /// Not in the local cache, but on the remote cache behind it (`--remote`),
    /// which serves it when a step that runs reads it.
    Remote { seconds: f64, finished_at: u64, device: String, location: String },
    /// Another process holds the step's lock and is computing it; `progress`:
    /// what it has kept so far (a training snapshot, explained examples).
    Running {
        #[serde(skip_serializing_if = "Option::is_none")]
        progress: Option<String>,
    },
    /// A Slurm task submitted by `grid run --executor slurm` is to compute it.
    Slurm { task: String, slurm_state: String, log: String },
    /// The last attempt failed (and nothing has been published since).
    Failed { error: String, at: u64, log: Option<String> },
    /// A cached folder that does not check out: it will be set aside and recomputed.
    Damaged { problem: String },
    /// Not computed; `reason` says why it would run.
    Missing { reason: String },
}

impl StepState {
    pub fn name(&self) -> &'static str {
        match self {
            StepState::Cached { .. } => "cached",
            StepState::Remote { .. } => "remote",
            StepState::Running { .. } => "running",
            StepState::Slurm { slurm_state, .. } if slurm_state == "RUNNING" => "running",
            StepState::Slurm { .. } => "queued",
            StepState::Failed { .. } => "failed",
            StepState::Damaged { .. } => "damaged",
            StepState::Missing { .. } => "missing",
        }
    }

    /// Whether `grid run` would compute the step.
    pub fn would_run(&self) -> bool {
        !matches!(
            self,
            StepState::Cached { .. } | StepState::Remote { .. } | StepState::Running { .. } | StepState::Slurm { .. }
        )
    }

    /// What the state says beyond its name, for one line of text.
    pub fn detail(&self) -> String {
        match self {
            StepState::Cached { seconds, reused_from: None, .. } => format!("{seconds:.1}s"),
            StepState::Cached { reused_from: Some(from), .. } => format!("taken from {from}"),
            StepState::Remote { seconds, location, .. } => format!("on {location}; {seconds:.1}s to compute"),
            StepState::Running { progress: None } => "another process holds its lock".into(),
            StepState::Running { progress: Some(progress) } => {
                format!("another process holds its lock; so far {progress}")
            }
            StepState::Slurm { task, slurm_state, log } => {
                format!("Slurm task {task}, {}; log: {log}", slurm_state.to_lowercase())
            }
            StepState::Failed { error, log: Some(log), .. } => format!("{error}; log: {log}"),
            StepState::Failed { error, log: None, .. } => error.clone(),
            StepState::Damaged { problem } => format!("cached result damaged: {problem}"),
            StepState::Missing { reason } => reason.clone(),
        }
    }
}

/// The steps Slurm tasks are to compute; none, with a warning, when Slurm
/// cannot be asked (`grid status` only informs).
pub fn on_slurm(plan: &Plan, cache: &Cache) -> HashMap<usize, OnSlurm> {
    super::slurm::queued_steps(plan, cache).unwrap_or_else(|e| {
        eprintln!("warning: steps were submitted to Slurm, but it cannot be asked about them: {e:#}");
        HashMap::new()
    })
}

/// The state of step `index`, and its manifest when cached. `slurm`: from
/// [`on_slurm`].
pub fn state_of(
    plan: &Plan,
    cache: &Cache,
    index: usize,
    slurm: &HashMap<usize, OnSlurm>,
) -> Result<(StepState, Option<Manifest<StepKind>>), CacheError> {
    let step = &plan.steps[index];
    let entry = cache.entry(step.kind, &step.key)?;
    if let Entry::Valid(manifest) = entry {
        let state = StepState::Cached {
            seconds: manifest.seconds,
            finished_at: manifest.finished_at,
            device: manifest.device.clone(),
            reused_from: manifest.reused_from.as_ref().map(InputRef::short_name),
        };
        return Ok((state, Some(manifest)));
    }
    if let Some(remote) = cache.remote()
        && let grid_cache::remote::RemoteEntry::Published(published) = remote.entry(step.kind, &step.key)?
    {
        let manifest = published.manifest;
        let state = StepState::Remote {
            seconds: manifest.seconds,
            finished_at: manifest.finished_at,
            device: manifest.device.clone(),
            location: remote.location().to_string(),
        };
        return Ok((state, Some(manifest)));
    }
    if let Some(OnSlurm { queued, state }) = slurm.get(&index) {
        let log = queued.log.display().to_string();
        return Ok((StepState::Slurm { task: queued.task.clone(), slurm_state: state.clone(), log }, None));
    }
    if cache.is_computing(step.kind, &step.key)? {
        let progress = stale::kept_progress(cache, step.kind, &step.key).map(|kept| kept.to_string());
        return Ok((StepState::Running { progress }, None));
    }
    if let Some(Failure { error, at, log, .. }) = cache.failure::<StepKind>(&step.key) {
        let log = log.map(|p| p.display().to_string());
        return Ok((StepState::Failed { error, at, log }, None));
    }
    let state = match entry {
        Entry::Damaged(damage) => StepState::Damaged { problem: damage.to_string() },
        Entry::Missing | Entry::Valid(_) => {
            let inputs: Vec<_> =
                step.inputs.iter().map(|&i| (plan.steps[i].label.clone(), plan.steps[i].key.clone())).collect();
            let reason = stale::explain(cache, step.kind, &step.key, &step.label, &step.params, &inputs);
            // A changed input may have left what the step reads as it was.
            let outlook = match reason {
                stale::StaleReason::InputChanged { .. } => super::reuse::outlook(plan, cache, step)?,
                stale::StaleReason::NeverRun
                | stale::StaleReason::VersionBumped { .. }
                | stale::StaleReason::ParamChanged { .. }
                | stale::StaleReason::Incomplete
                | stale::StaleReason::Resumes(_)
                | stale::StaleReason::Removed => None,
            };
            let reason = match outlook {
                Some(outlook) => format!("{reason}; {outlook}"),
                None => reason.to_string(),
            };
            StepState::Missing { reason }
        }
    };
    Ok((state, None))
}

/// A step as `grid plan --json` and `grid status --json` list it.
#[derive(Debug, Clone, Serialize)]
pub struct StepLine {
    pub label: String,
    pub kind: StepKind,
    pub key: String,
    #[serde(flatten)]
    pub state: StepState,
}

/// Step `index` as one line.
fn line(plan: &Plan, cache: &Cache, index: usize, slurm: &HashMap<usize, OnSlurm>) -> Result<StepLine, CacheError> {
    let step = &plan.steps[index];
    let (state, _) = state_of(plan, cache, index, slurm)?;
    Ok(StepLine { label: step.label.clone(), kind: step.kind, key: step.key.as_str().to_string(), state })
}

/// Every step of the plan, in plan order.
pub fn lines(plan: &Plan, cache: &Cache) -> Result<Vec<StepLine>, CacheError> {
    let slurm = on_slurm(plan, cache);
    cache.prefetch_remote(plan.steps.iter().map(|s| (s.kind, &s.key)));
    (0..plan.steps.len()).map(|i| line(plan, cache, i, &slurm)).collect()
}

/// One line per step (`state  key  label  (detail)`), then counts per kind.
pub fn render_lines(lines: &[StepLine]) -> String {
    use std::collections::BTreeMap;
    use std::fmt::Write;
    let mut out = String::new();
    let mut counts = BTreeMap::<StepKind, BTreeMap<&'static str, usize>>::new();
    for line in lines {
        let _ =
            writeln!(out, "{:<8} {}  {}  ({})", line.state.name(), &line.key[..12], line.label, line.state.detail());
        *counts.entry(line.kind).or_default().entry(line.state.name()).or_default() += 1;
    }
    let _ = writeln!(out);
    for (kind, states) in counts {
        let states: Vec<String> = states.iter().map(|(state, n)| format!("{n} {state}")).collect();
        let _ = writeln!(out, "{kind:>9}: {}", states.join(", "));
    }
    out
}

/// `grid plan`: one line per step, `cached` or `run` with why (the detail of
/// its state), then per kind how many are cached, the seconds they took to
/// compute, and how many would run.
pub fn render_plan(lines: &[StepLine]) -> String {
    use std::collections::BTreeMap;
    use std::fmt::Write;
    let mut out = String::new();
    let mut counts = BTreeMap::<StepKind, (usize, usize, f64, usize)>::new();
    for line in lines {
        let count = counts.entry(line.kind).or_default();
        let verb = match &line.state {
            StepState::Cached { seconds, .. } => {
                count.0 += 1;
                count.2 += seconds;
                "cached"
            }
            StepState::Remote { seconds, .. } => {
                count.3 += 1;
                count.2 += seconds;
                "remote"
            }
            StepState::Running { .. }
            | StepState::Slurm { .. }
            | StepState::Failed { .. }
            | StepState::Damaged { .. }
            | StepState::Missing { .. } => {
                count.1 += 1;
                "run"
            }
        };
        let _ = writeln!(out, "{verb:<7} {}  {}  ({})", &line.key[..12], line.label, line.state.detail());
    }
    let _ = writeln!(out);
    for (kind, (cached, run, seconds, remote)) in counts {
        let remote = if remote > 0 { format!(", {remote} on the remote") } else { String::new() };
        let _ = writeln!(out, "{kind:>9}: {cached} cached{remote} ({seconds:.1}s to compute), {run} to run");
    }
    out
}

/// Everything known of one step: `grid show`.
#[derive(Debug, Clone, Serialize)]
pub struct StepDetail {
    pub label: String,
    pub kind: StepKind,
    pub version: u32,
    pub key: String,
    #[serde(flatten)]
    pub state: StepState,
    /// The parameters that went into the key.
    pub params: Value,
    pub inputs: Vec<StepLine>,
    /// The payload, as published (cached steps only).
    pub files: Vec<PayloadFile>,
    pub folder: String,
}

/// The step whose label is `target`, or whose key starts with it (at least 6
/// hex digits, and only one step may match).
pub fn find(plan: &Plan, target: &str) -> Result<usize, String> {
    if let Some(i) = plan.steps.iter().position(|s| s.label == target) {
        return Ok(i);
    }
    let is_hex = target.len() >= 6 && target.bytes().all(|b| b.is_ascii_hexdigit());
    let matches: Vec<usize> = if is_hex {
        (0..plan.steps.len()).filter(|&i| plan.steps[i].key.as_str().starts_with(&target.to_lowercase())).collect()
    } else {
        Vec::new()
    };
    match matches.as_slice() {
        [i] => Ok(*i),
        [] => {
            let near: Vec<&str> = plan
                .steps
                .iter()
                .map(|s| s.label.as_str())
                .filter(|l| l.contains(target) || target.contains(l.split('/').next().unwrap_or("")))
                .take(5)
                .collect();
            let hint = if near.is_empty() {
                "`grid plan` lists every label and key".to_string()
            } else {
                format!("labels like it: {}", near.join(", "))
            };
            Err(format!("no step of {} is labelled `{target}` or has a key starting with it ({hint})", plan.grid_name))
        }
        several => Err(format!("{} steps have keys starting with `{target}`: give more digits", several.len())),
    }
}

pub fn detail(plan: &Plan, cache: &Cache, index: usize) -> Result<StepDetail, CacheError> {
    let step = &plan.steps[index];
    let slurm = on_slurm(plan, cache);
    let (state, manifest) = state_of(plan, cache, index, &slurm)?;
    let inputs = step.inputs.iter().map(|&i| line(plan, cache, i, &slurm)).collect::<Result<Vec<_>, _>>()?;
    Ok(StepDetail {
        label: step.label.clone(),
        kind: step.kind,
        version: step.kind.version(),
        key: step.key.as_str().to_string(),
        state,
        params: step.params.clone(),
        inputs,
        files: manifest.map(|m| m.files).unwrap_or_default(),
        folder: cache.step_dir(step.kind, &step.key).display().to_string(),
    })
}

/// `grid show` as text.
pub fn render_detail(d: &StepDetail) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "step     {}", d.label);
    let _ = writeln!(out, "kind     {} (version {})", d.kind, d.version);
    let _ = writeln!(out, "key      {}", d.key);
    let state = match &d.state {
        StepState::Cached { seconds, finished_at, device, reused_from: None } => {
            format!("cached: computed in {seconds:.1}s on {device}, finished {}", utc(*finished_at))
        }
        StepState::Cached { finished_at, reused_from: Some(from), .. } => {
            format!("cached: the result of {from}, the same work, taken {}", utc(*finished_at))
        }
        StepState::Remote { seconds, finished_at, device, location } => format!(
            "on the remote cache {location}: computed in {seconds:.1}s on {device}, finished {}; pulled when read",
            utc(*finished_at)
        ),
        StepState::Failed { at, .. } => format!("failed {}: {}", utc(*at), d.state.detail()),
        state if state.would_run() => format!("{}: would run: {}", state.name(), state.detail()),
        state => format!("{}: {}", state.name(), state.detail()),
    };
    let _ = writeln!(out, "state    {state}");
    let _ = writeln!(out, "folder   {}", d.folder);
    if d.inputs.is_empty() {
        let _ = writeln!(out, "inputs   (none)");
    }
    for (i, input) in d.inputs.iter().enumerate() {
        let head = if i == 0 { "inputs" } else { "" };
        let _ = writeln!(out, "{head:<8} {}  {}  {}", &input.key[..12], input.label, input.state.name());
    }
    for (i, file) in d.files.iter().enumerate() {
        let head = if i == 0 { "files" } else { "" };
        let _ = writeln!(out, "{head:<8} {:<28} {:>12} bytes  sha256 {}", file.name, file.bytes, &file.sha256[..16]);
    }
    let params = serde_json::to_string_pretty(&d.params).unwrap_or_default();
    let _ = writeln!(out, "params   {}", params.replace('\n', "\n         "));
    out
}

/// `2026-11-25 19:04 UTC` from seconds since the Unix epoch.
fn utc(seconds: u64) -> String {
    chrono::DateTime::from_timestamp(seconds as i64, 0)
        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_else(|| format!("{seconds} s after the epoch"))
}

/// The verification results a plan's verify steps have in the cache, with
/// their labels, in plan order. Shortcut models that failed are marked in
/// every table; the CLI says so too, once per model, so that nobody reads a
/// marked column by accident (and a close call is a note).
pub fn verifications(plan: &Plan, cache: &Cache) -> Vec<(String, crate::steps::verify::Verification)> {
    plan.steps
        .iter()
        .filter(|s| s.kind == StepKind::Verify)
        .filter_map(|step| {
            let path = cache.step_dir(step.kind, &step.key).join(crate::steps::verify::FILE);
            let result = crate::io::read_json::<crate::steps::verify::Verification>(&path).ok()?;
            Some((step.label.clone(), result))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_step_says_what_it_has_kept() {
        let bare = StepState::Running { progress: None };
        assert_eq!((bare.name(), bare.detail().as_str()), ("running", "another process holds its lock"));
        let kept = StepState::Running { progress: Some("340 examples explained".into()) };
        assert_eq!(kept.detail(), "another process holds its lock; so far 340 examples explained");
        assert!(!kept.would_run());
        let json = serde_json::to_value(&kept).unwrap();
        assert_eq!(json, serde_json::json!({ "state": "running", "progress": "340 examples explained" }));
        assert_eq!(serde_json::to_value(&bare).unwrap(), serde_json::json!({ "state": "running" }));
    }
}
