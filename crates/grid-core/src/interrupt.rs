//! Ctrl-C for `grid run`. The first SIGINT (or SIGTERM) asks the run to stop:
//! no step starts any more, the child processes computing steps are stopped,
//! training loops stop at their next step, and the run says what finished
//! before it exits with 130. Nothing half-written is ever published (a step
//! is renamed into the cache only when complete), so a rerun computes only
//! what is missing. A second signal ends the process at once.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Child processes computing steps, stopped on a request.
static CHILDREN: Mutex<Vec<u32>> = Mutex::new(Vec::new());

extern "C" fn on_signal(signal: libc::c_int) {
    if REQUESTED.swap(true, Ordering::SeqCst) {
        // The second one: as if no handler were installed.
        // SAFETY: signal and raise are async-signal-safe.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
            libc::raise(signal);
        }
    }
}

/// Installs the handler for SIGINT and SIGTERM (once per process).
pub fn install() {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only touches an atomic, or restores the default and re-raises.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

/// Whether a stop was asked for.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

/// Asks for a stop, as a signal would (tests, and code that gives up).
pub fn request() {
    REQUESTED.store(true, Ordering::SeqCst);
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
