//! How long this process was stopped while a step ran: `SIGSTOP` (a script
//! that pauses a background grid while something is timed), Ctrl-Z, a
//! debugger. A stopped process neither runs nor waits on a run queue, so
//! [`super::cpu_wait`] does not see it, yet its steps' wall clocks go on: an
//! image model stopped for hours between chunks recorded 24 s a step instead
//! of 3.3, and every estimate that learned from it priced the grid at four
//! days instead of a few hours.
//!
//! A ticker thread sleeps [`TICK`] at a time; a sleep that comes back much
//! later than asked, less what the ticker itself waited for a CPU (that is
//! starvation, counted by `cpu_wait`), is a pause. Its thread is left out of
//! `cpu_wait`'s average ([`ticker_thread`]). A machine's suspend is not
//! counted either way: `Instant` does not advance through it on Linux.
//! Other systems than Linux: pauses are not measured (zero).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How often the ticker looks at the clock.
const TICK: Duration = Duration::from_millis(200);
/// A late wake-up below this is timer slack or a busy machine, not a pause.
const SLACK: Duration = Duration::from_millis(100);

/// Nanoseconds this process has been stopped since the ticker started.
static PAUSED_NANOS: AtomicU64 = AtomicU64::new(0);
/// The ticker's thread id, once it runs.
static TICKER: OnceLock<Option<u32>> = OnceLock::new();

/// Seconds this process has been stopped so far, starting the ticker on the
/// first call (so a step reads it before it begins and after it ends);
/// `None` where pauses cannot be measured.
pub fn paused_seconds() -> Option<f64> {
    start_ticker()?;
    Some(PAUSED_NANOS.load(Ordering::Relaxed) as f64 * 1e-9)
}

/// The ticker's thread id, so that CPU waits are averaged without it.
pub fn ticker_thread() -> Option<u32> {
    TICKER.get().copied().flatten()
}

fn start_ticker() -> Option<u32> {
    *TICKER.get_or_init(|| {
        // Where Linux keeps no scheduler statistics, a late wake-up cannot be
        // told from a starved one: no ticker.
        own_wait()?;
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("grid-pauses".into())
            .spawn(move || {
                let _ = sender.send(thread_id());
                loop {
                    let (before, waited_before) = (Instant::now(), own_wait().unwrap_or(0));
                    std::thread::sleep(TICK);
                    let waited = own_wait().unwrap_or(0).saturating_sub(waited_before);
                    let paused = pause_in(before.elapsed(), Duration::from_nanos(waited));
                    PAUSED_NANOS.fetch_add(paused.as_nanos() as u64, Ordering::Relaxed);
                }
            })
            .ok()?;
        receiver.recv().ok().flatten()
    })
}

/// The pause in a sleep of [`TICK`] that took `slept`, of which the thread
/// waited `waited` for a CPU after waking.
fn pause_in(slept: Duration, waited: Duration) -> Duration {
    let late = slept.saturating_sub(TICK).saturating_sub(waited);
    if late > SLACK { late } else { Duration::ZERO }
}

/// This thread's time waited on a run queue, nanoseconds (`schedstat`'s
/// second field).
fn own_wait() -> Option<u64> {
    let line = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// This thread's id, from `/proc/thread-self` (a link to `PID/task/TID`).
fn thread_id() -> Option<u32> {
    let link = std::fs::read_link("/proc/thread-self").ok()?;
    link.file_name()?.to_str()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_late_wake_up_is_a_pause_unless_the_thread_waited_for_a_cpu() {
        // On time, or late by timer slack: nothing.
        assert_eq!(pause_in(TICK, Duration::ZERO), Duration::ZERO);
        assert_eq!(pause_in(TICK + Duration::from_millis(30), Duration::ZERO), Duration::ZERO);
        // Stopped for 5 s: the whole lateness.
        let stopped = Duration::from_secs(5);
        assert_eq!(pause_in(TICK + stopped, Duration::ZERO), stopped);
        // Late because other processes held the cores: a wait, not a pause.
        assert_eq!(pause_in(TICK + stopped, stopped), Duration::ZERO);
        assert_eq!(pause_in(TICK + Duration::from_secs(3), Duration::from_secs(1)), Duration::from_secs(2));
    }

    /// Run by [`a_stopped_process_counts_its_pause`] in a child process:
    /// prints the seconds it was stopped during three seconds of sleep.
    #[test]
    #[ignore = "a child of a_stopped_process_counts_its_pause"]
    fn pause_probe() {
        let before = paused_seconds().expect("pauses measured here");
        println!("ready");
        std::thread::sleep(Duration::from_secs(3));
        println!("paused {}", paused_seconds().expect("pauses measured here") - before);
    }

    #[test]
    fn a_stopped_process_counts_its_pause() {
        use std::io::{BufRead, BufReader};
        use std::process::{Command, Stdio};
        // Where Linux keeps scheduler statistics and `kill` is at hand.
        if own_wait().is_none() || Command::new("kill").arg("-l").output().is_err() {
            return;
        }
        let exe = std::env::current_exe().unwrap();
        let mut child = Command::new(exe)
            .args(["--exact", "dag::executor::pauses::tests::pause_probe", "--ignored", "--nocapture"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines().map_while(Result::ok);
        assert!(lines.any(|line| line == "ready"), "the probe started");
        let pid = child.id().to_string();
        let signal = |name: &str| assert!(Command::new("kill").args([name, &pid]).status().unwrap().success());
        signal("-STOP");
        std::thread::sleep(Duration::from_millis(1500));
        signal("-CONT");
        let paused: f64 = lines
            .find_map(|line| line.strip_prefix("paused ").map(|s| s.parse().unwrap()))
            .expect("the probe reported its pause");
        assert!(child.wait().unwrap().success());
        // 1.5 s stopped; the first and last ticks' slack may cost up to 0.3 s.
        assert!((1.1..2.0).contains(&paused), "measured {paused} s of a 1.5 s stop");
    }
}
