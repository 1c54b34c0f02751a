//! Ctrl-C for `grid run` and its `grid step` workers. The first SIGINT (or
//! SIGTERM) asks the run to stop: no step starts any more, the child
//! processes computing steps are stopped, training loops stop at their next
//! step, and the run says what finished before it exits with 130. Nothing
//! half-written is ever published (a step is renamed into the cache only when
//! complete), so a rerun computes only what is missing. A second signal ends
//! the process at once, unless it came within [`ECHO`] of the first: a
//! process is often signalled twice for one stop. `grid run` under
//! `timeout` has a terminal's Ctrl-C from the terminal and again from
//! `timeout`, which passes it on (taken as two, a training in `grid run`'s
//! own process lost what it had done since its last snapshot).
//!
//! A worker ([`install_in_worker`]) too: `timeout` and a terminal's Ctrl-C
//! signal the whole process group, and `grid run` then signals its children
//! again. So there as well a second signal within [`ECHO`] of the first is
//! the same stop. And since most steps never ask
//! whether to stop, a watchdog ends the worker at once unless a loop that
//! does ask ([`Polling`]) is running or has seen the request: a training
//! loop stops at its next step and snapshots it, anything else ends as if no
//! handler were installed.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Child processes computing steps, stopped on a request.
static CHILDREN: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// The signal that asked, and when (monotonic milliseconds).
static SIGNAL: AtomicI32 = AtomicI32::new(0);
static SIGNALLED_AT_MS: AtomicU64 = AtomicU64::new(0);

/// Loops running now that ask [`requested`] as they go.
static POLLING: AtomicUsize = AtomicUsize::new(0);
/// Whether [`requested`] has answered yes: someone is stopping cleanly.
static SEEN: AtomicBool = AtomicBool::new(false);

/// How far apart two signals may be and still be one stop.
pub const ECHO: Duration = Duration::from_secs(1);

/// How long a worker's watchdog lets a request go unseen with no polling
/// loop running (a loop may be about to start) before it ends the process.
const UNSEEN: Duration = Duration::from_millis(250);

/// Ends the process as `signal` would with no handler installed.
fn die(signal: libc::c_int) {
    // SAFETY: signal and raise are async-signal-safe.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}

fn monotonic_ms() -> u64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime is async-signal-safe and writes only `now`.
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now);
    }
    u64::try_from(now.tv_sec).unwrap_or(0) * 1000 + u64::try_from(now.tv_nsec).unwrap_or(0) / 1_000_000
}

extern "C" fn on_signal(signal: libc::c_int) {
    let now = monotonic_ms();
    if !REQUESTED.swap(true, Ordering::SeqCst) {
        SIGNALLED_AT_MS.store(now, Ordering::SeqCst);
    } else if !echoes(SIGNALLED_AT_MS.load(Ordering::SeqCst), now) {
        die(signal);
    }
}

extern "C" fn on_signal_in_worker(signal: libc::c_int) {
    let now = monotonic_ms();
    if !REQUESTED.swap(true, Ordering::SeqCst) {
        SIGNAL.store(signal, Ordering::SeqCst);
        SIGNALLED_AT_MS.store(now, Ordering::SeqCst);
    } else if !echoes(SIGNALLED_AT_MS.load(Ordering::SeqCst), now) {
        die(signal);
    }
}

fn handle(handler: extern "C" fn(libc::c_int)) {
    let handler = handler as libc::sighandler_t;
    // SAFETY: the handlers only touch atomics and the clock, or restore the
    // default and re-raise.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

/// Installs `grid run`'s handler for SIGINT and SIGTERM (once per process).
pub fn install() {
    handle(on_signal);
}

/// Installs a `grid step` worker's handler and its watchdog (once per process).
pub fn install_in_worker() {
    handle(on_signal_in_worker);
    let watchdog = std::thread::Builder::new().name("grid-interrupt".into()).spawn(|| {
        loop {
            std::thread::sleep(Duration::from_millis(25));
            if let Some(signal) = unheeded(monotonic_ms()) {
                die(signal);
            }
        }
    });
    if let Err(e) = watchdog {
        // Without it a signal still stops the loops that ask; others run on.
        eprintln!("warning: no watchdog for signals: {e}");
    }
}

/// A request as the watchdog sees it.
#[derive(Clone, Copy, Debug)]
struct Request {
    signal: libc::c_int,
    at_ms: u64,
    /// Polling loops running.
    polling: usize,
    /// Whether [`requested`] has answered yes.
    seen: bool,
}

/// The signal of a request nothing will act on by `now_ms`: no polling loop
/// runs, none has seen it, and [`UNSEEN`] has passed since it came.
fn unheeded(now_ms: u64) -> Option<libc::c_int> {
    if !requested_quietly() {
        return None;
    }
    let request = Request {
        signal: SIGNAL.load(Ordering::SeqCst),
        at_ms: SIGNALLED_AT_MS.load(Ordering::SeqCst),
        polling: POLLING.load(Ordering::SeqCst),
        seen: SEEN.load(Ordering::SeqCst),
    };
    unheeded_at(request, now_ms)
}

fn unheeded_at(request: Request, now_ms: u64) -> Option<libc::c_int> {
    let heeded = request.polling > 0 || request.seen;
    let waited = now_ms.saturating_sub(request.at_ms);
    (request.signal != 0 && !heeded && waited >= UNSEEN.as_millis() as u64).then_some(request.signal)
}

/// Whether a signal at `now_ms` repeats the one at `first_ms` (the same stop).
fn echoes(first_ms: u64, now_ms: u64) -> bool {
    now_ms.saturating_sub(first_ms) <= ECHO.as_millis() as u64
}

fn requested_quietly() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

/// Whether a stop was asked for.
pub fn requested() -> bool {
    let asked = requested_quietly();
    if asked {
        SEEN.store(true, Ordering::SeqCst);
    }
    asked
}

/// Asks for a stop, as a signal would (tests, and code that gives up).
pub fn request() {
    REQUESTED.store(true, Ordering::SeqCst);
}

/// Held while a loop runs that asks [`requested`] between its units of work
/// (a training step, an attribution chunk), so a worker's watchdog leaves the
/// stop to it.
#[must_use = "the loop counts as polling only while this is held"]
pub struct Polling(());

impl Polling {
    pub fn start() -> Self {
        POLLING.fetch_add(1, Ordering::SeqCst);
        Polling(())
    }
}

impl Drop for Polling {
    fn drop(&mut self) {
        POLLING.fetch_sub(1, Ordering::SeqCst);
    }
}
/// Remembers a child process to stop on a request; a child started after the
/// request is stopped at once.
pub fn register_child(pid: u32) {
    if let Ok(mut children) = CHILDREN.lock() {
        children.push(pid);
    }
    if requested() {
        stop_children();
    }
}

pub fn forget_child(pid: u32) {
    if let Ok(mut children) = CHILDREN.lock() {
        children.retain(|&c| c != pid);
    }
}

/// Sends SIGTERM to every registered child (a child started from a terminal
/// may already have had the terminal's SIGINT).
pub fn stop_children() {
    if let Ok(children) = CHILDREN.lock() {
        for &pid in children.iter() {
            if let Ok(pid) = libc::pid_t::try_from(pid) {
                // SAFETY: kill has no memory effects; a pid that has exited is ignored.
                unsafe {
                    libc::kill(pid, libc::SIGTERM);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Request, echoes, unheeded_at};

    #[test]
    fn a_second_signal_within_a_second_is_the_same_stop() {
        assert!(echoes(10_000, 10_000));
        assert!(echoes(10_000, 10_900));
        assert!(!echoes(10_000, 11_200), "a deliberate second Ctrl-C ends the worker");
    }

    #[test]
    fn the_watchdog_ends_a_worker_only_when_nothing_will_stop_it() {
        let request = Request { signal: libc::SIGTERM, at_ms: 5_000, polling: 0, seen: false };
        assert_eq!(unheeded_at(request, 5_100), None, "a loop may be about to start");
        assert_eq!(unheeded_at(request, 5_300), Some(libc::SIGTERM), "no loop asks: end as the signal would");
        let training = Request { polling: 1, ..request };
        assert_eq!(unheeded_at(training, 60_000), None, "a training loop stops at its next step");
        let stopping = Request { seen: true, ..request };
        assert_eq!(unheeded_at(stopping, 60_000), None, "a loop saw it and is writing its snapshot");
        let asked_in_code = Request { signal: 0, ..request };
        assert_eq!(unheeded_at(asked_in_code, 60_000), None, "`request` from code is no signal");
    }
}
