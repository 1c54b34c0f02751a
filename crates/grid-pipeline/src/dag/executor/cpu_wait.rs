//! How long a step's threads waited for a CPU while it ran: time the run
//! took because other processes had the cores, not because of its work. A
//! step run beside another grid (`nice`, as docs/commands.md shows) takes
//! several times its own time, and the estimates that learn from its
//! manifest (`dag::estimate`) would price every later step as slowly.
//!
//! Linux keeps, per thread, the time it has run and the time it has waited
//! on a run queue (`/proc/self/task/*/schedstat`). A step's wait is the
//! growth of the second over the threads that ran during the step, each
//! weighed by how long it ran: when every thread is held back together, as
//! a starved parallel loop is, that is the time lost; when one thread waits
//! alone, it is less (the estimate errs towards the time measured); and the
//! threads that only hand work on (the main thread waiting for the step,
//! the progress display) barely count, where a plain mean had them pull a
//! starved computing thread's wait down to a quarter (an image model's maps
//! run at one thread beside another grid: 316 s of about 1,250). The
//! thread that watches for pauses ([`super::pauses`]) runs on every tick and
//! waits for nothing; it is left out. Other systems: unknown.

use std::collections::HashMap;

/// The process's threads' run and wait times (nanoseconds) at one moment.
#[derive(Debug, Clone, Default)]
pub struct CpuWait {
    threads: HashMap<u32, (u64, u64)>,
}

impl CpuWait {
    /// Now, or `None` where the system does not say.
    pub fn now() -> Option<CpuWait> {
        let tasks = std::fs::read_dir("/proc/self/task").ok()?;
        let ticker = super::pauses::ticker_thread();
        let threads = tasks
            .filter_map(Result::ok)
            .filter_map(|task| {
                let tid = task.file_name().to_str()?.parse().ok()?;
                if Some(tid) == ticker {
                    return None;
                }
                let line = std::fs::read_to_string(task.path().join("schedstat")).ok()?;
                Some((tid, parse(&line)?))
            })
            .collect::<HashMap<u32, (u64, u64)>>();
        (!threads.is_empty()).then_some(CpuWait { threads })
    }

    /// Seconds waited for a CPU since `earlier`: the threads' waits, each
    /// weighed by the time it ran since.
    pub fn waited_since(&self, earlier: &CpuWait) -> f64 {
        let (mut ran, mut weighed) = (0.0f64, 0.0f64);
        for (tid, &(run, wait)) in &self.threads {
            let (run0, wait0) = earlier.threads.get(tid).copied().unwrap_or_default();
            let run = run.saturating_sub(run0) as f64;
            ran += run;
            weighed += run * wait.saturating_sub(wait0) as f64;
        }
        if ran == 0.0 { 0.0 } else { weighed / ran * 1e-9 }
    }
}

/// `schedstat`'s first two fields: time run and time waited, nanoseconds.
fn parse(line: &str) -> Option<(u64, u64)> {
    let mut fields = line.split_whitespace().map(str::parse::<u64>);
    Some((fields.next()?.ok()?, fields.next()?.ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(threads: &[(u32, u64, u64)]) -> CpuWait {
        CpuWait { threads: threads.iter().map(|&(t, run, wait)| (t, (run, wait))).collect() }
    }

    #[test]
    fn the_wait_is_averaged_over_the_threads_by_the_time_they_ran() {
        let before = at(&[(1, 0, 0), (2, 0, 0), (3, 5, 7)]);
        // Threads 1 and 2 ran 10 each and each waited 2 s; thread 3 slept
        // (its wait does not grow while it sleeps, and it is not counted).
        let after = at(&[(1, 10, 2_000_000_000), (2, 10, 2_000_000_000), (3, 5, 7), (4, 3, 1_000_000_000)]);
        // Thread 4 started during the step, ran 3 and waited 1 s.
        assert!((after.waited_since(&before) - 43.0 / 23.0).abs() < 1e-9);
        assert_eq!(before.waited_since(&before), 0.0);
    }

    #[test]
    fn a_starved_computing_thread_is_not_averaged_away_by_idle_ones() {
        let s = 1_000_000_000u64;
        let before = at(&[(1, 0, 0), (2, 0, 0), (3, 0, 0)]);
        // Thread 1 computed for 460 s and waited 1,250 s; the main thread and
        // the progress display ran a second between them and waited nothing.
        let after = at(&[(1, 460 * s, 1250 * s), (2, s / 2, 0), (3, s / 2, 0)]);
        let waited = after.waited_since(&before);
        assert!((waited - 1250.0 * 460.0 / 461.0).abs() < 1e-6, "{waited}");
    }

    #[test]
    fn schedstat_lines_read_as_run_and_wait() {
        assert_eq!(parse("175469671360 495605721611 71234\n"), Some((175_469_671_360, 495_605_721_611)));
        assert_eq!(parse("garbage"), None);
    }

    #[test]
    fn this_process_reports_its_threads_here() {
        // Where the kernel keeps scheduler statistics (most Linux builds).
        if std::path::Path::new("/proc/self/schedstat").exists() {
            let now = CpuWait::now().expect("schedstat on Linux");
            assert!(!now.threads.is_empty());
        }
    }
}
