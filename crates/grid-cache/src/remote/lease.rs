//! Leases: the remote's step locks. A lock file serves the processes of one
//! filesystem; machines that share only a bucket take a lease instead, an
//! object `leases/<kind>/<key[0..2]>/<key>.json` created create-only, naming
//! its holder and when it expires. The holder renews it while the step
//! computes (a thread, every third of its term), and removes it when done.
//! Another machine wanting the step waits until the step's record appears
//! (then pulls it) or the lease expires: a holder that died (killed, powered
//! off) renews nothing, so its lease goes stale and is taken over, and the
//! log says whose it was.
//!
//! A lease saves duplicate work; it is not what keeps the remote sound. Two
//! writers that both compute a step (a takeover racing a slow renewal, a
//! store without conditional writes for the takeover) both succeed, and the
//! create-only record keeps one copy (`super`).

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{Created, Remote, RemoteEntry};
use crate::{CacheError, Kind, StepKey};

/// How long a lease lasts unless renewed: `GRID_LEASE_SECONDS`, else 120 s.
pub fn lease_term() -> Duration {
    std::env::var("GRID_LEASE_SECONDS")
        .ok()
        .and_then(|text| text.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map_or(Duration::from_secs(120), Duration::from_secs_f64)
}

/// What a lease object holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeaseRecord {
    /// Unique to the process and the step (an upload-style id).
    pub holder: String,
    pub host: String,
    pub pid: u32,
    /// The step's label, for messages.
    pub label: String,
    /// Milliseconds since the Unix epoch.
    pub expires_at_ms: u64,
}

impl LeaseRecord {
    /// `pid 123 on host-a`.
    pub fn who(&self) -> String {
        format!("pid {} on {}", self.pid, if self.host.is_empty() { "an unnamed host" } else { &self.host })
    }
}

/// How asking for a step's lease ended.
#[derive(Debug)]
pub enum Leased {
    /// This process holds the lease; compute the step, then drop it.
    Held(Lease),
    /// The lease of a holder that stopped renewing was taken over.
    TookOver { lease: Lease, from: LeaseRecord, expired_ms_ago: u64 },
    /// While waiting, the step was published: pull it.
    Published,
}

/// A held lease, renewed until dropped; dropping removes it.
#[derive(Debug)]
pub struct Lease {
    remote: Arc<Remote>,
    path: String,
    holder: String,
    stop: Arc<(Mutex<bool>, Condvar)>,
    renewer: Option<JoinHandle<()>>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        let (stopped, wake) = &*self.stop;
        if let Ok(mut stopped) = stopped.lock() {
            *stopped = true;
        }
        wake.notify_all();
        if let Some(renewer) = self.renewer.take() {
            let _ = renewer.join();
        }
        // Only our own: a lease taken over from us is the new holder's.
        if read(&self.remote, &self.path).is_ok_and(|found| found.is_some_and(|l| l.holder == self.holder)) {
            let _ = self.remote.store.delete(&self.path);
        }
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

fn read(remote: &Remote, path: &str) -> Result<Option<LeaseRecord>, CacheError> {
    let Some(bytes) = remote.store.get(path).map_err(|e| remote.error(e))? else { return Ok(None) };
    // A lease no one can read cannot be waited for: treat it as expired.
    Ok(Some(serde_json::from_slice(&bytes).unwrap_or(LeaseRecord {
        holder: String::new(),
        host: String::new(),
        pid: 0,
        label: String::new(),
        expires_at_ms: 0,
    })))
}

impl Remote {
    /// `leases/<kind>/<key[0..2]>/<key>.json`
    fn lease_path<K: Kind>(kind: K, key: &StepKey) -> String {
        format!("leases/{}/{}/{}.json", kind.name(), &key.as_str()[..2], key.as_str())
    }

    /// Takes the step's lease for `term`, waiting while another live
    /// holder's runs; `on_wait` hears once whom it waits for.
    pub fn lease<K: Kind>(
        self: &Arc<Self>,
        kind: K,
        key: &StepKey,
        label: &str,
        term: Duration,
        on_wait: &dyn Fn(&LeaseRecord),
    ) -> Result<Leased, CacheError> {
        let path = Self::lease_path(kind, key);
        let holder = super::upload_id();
        let mine = |expires_at_ms| LeaseRecord {
            holder: holder.clone(),
            host: super::hostname(),
            pid: std::process::id(),
            label: label.to_string(),
            expires_at_ms,
        };
        let term_ms = term.as_millis() as u64;
        let mut told = false;
        let mut took_over: Option<(LeaseRecord, u64)> = None;
        loop {
            let json = serde_json::to_vec(&mine(now_ms() + term_ms)).unwrap_or_default();
            if self.store.create(&path, json).map_err(|e| self.error(e))? == Created::Yes {
                let lease = self.hold(path.clone(), holder.clone(), term);
                return Ok(match took_over {
                    Some((from, expired_ms_ago)) => Leased::TookOver { lease, from, expired_ms_ago },
                    None => Leased::Held(lease),
                });
            }
            if matches!(self.entry(kind, key)?, RemoteEntry::Published(_)) {
                return Ok(Leased::Published);
            }
            let Some(current) = read(self, &path)? else { continue };
            let now = now_ms();
            if current.expires_at_ms <= now {
                // Stale: its holder stopped renewing. Remove it and race for it.
                self.store.delete(&path).map_err(|e| self.error(e))?;
                took_over = Some((current.clone(), now - current.expires_at_ms));
                continue;
            }
            if !told {
                on_wait(&current);
                told = true;
            }
            // Polled: the record may appear, or the lease expire, any time.
            let left = Duration::from_millis(current.expires_at_ms - now);
            std::thread::sleep(left.min(term / 4).clamp(Duration::from_millis(50), Duration::from_secs(2)));
        }
    }

    /// Starts renewing a lease just created.
    fn hold(self: &Arc<Self>, path: String, holder: String, term: Duration) -> Lease {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let renewer = {
            let (remote, path, holder, stop) = (Arc::clone(self), path.clone(), holder.clone(), Arc::clone(&stop));
            std::thread::Builder::new()
                .name("grid-lease".into())
                .spawn(move || renew(&remote, &path, &holder, term, &stop))
                .ok()
        };
        Lease { remote: Arc::clone(self), path, holder, stop, renewer }
    }
}

/// Every third of the term, pushes the expiry of our lease forward, until
/// stopped. A renewal that fails is tried again at the next tick; a lease
/// found taken over is left to its new holder.
fn renew(remote: &Remote, path: &str, holder: &str, term: Duration, stop: &(Mutex<bool>, Condvar)) {
    let (stopped, wake) = stop;
    let Ok(mut guard) = stopped.lock() else { return };
    loop {
        let Ok((next, _)) = wake.wait_timeout(guard, term / 3) else { return };
        guard = next;
        if *guard {
            return;
        }
        match read(remote, path) {
            Ok(Some(mut lease)) if lease.holder == holder => {
                lease.expires_at_ms = now_ms() + term.as_millis() as u64;
                if let Ok(json) = serde_json::to_vec(&lease) {
                    let _ = remote.store.put(path, json);
                }
            }
            Ok(_) => return,
            Err(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::kind::testing::StepKind;

    fn key(n: u32) -> StepKey {
        StepKey::compute(StepKind::Train, &serde_json::json!({ "n": n }), &[])
    }

    #[test]
    fn a_held_lease_is_renewed_and_waited_for_until_it_is_released() {
        let dir = tempfile::tempdir().unwrap();
        let remote = Arc::new(Remote::folder(dir.path()).unwrap());
        let term = Duration::from_millis(600);
        let Leased::Held(first) = remote.lease(StepKind::Train, &key(1), "train/a", term, &|_| {}).unwrap() else {
            panic!("a free lease is taken")
        };
        let released = std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                let waited = Mutex::new(None);
                let started = Instant::now();
                let outcome = remote
                    .lease(StepKind::Train, &key(1), "train/a", term, &|holder| {
                        *waited.lock().unwrap() = Some(holder.clone())
                    })
                    .unwrap();
                (outcome, started.elapsed(), waited.into_inner().unwrap())
            });
            // Held for five terms: only renewal keeps it from going stale.
            std::thread::sleep(term * 5);
            drop(first);
            waiter.join().unwrap()
        });
        let (outcome, waited_for, holder) = released;
        assert!(matches!(outcome, Leased::Held(_)), "taken after release, not over: {outcome:?}");
        assert!(waited_for >= term * 4, "waited only {waited_for:?}");
        assert_eq!(holder.unwrap().pid, std::process::id());
    }

    #[test]
    fn a_stale_lease_is_taken_over_and_says_whose_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let remote = Arc::new(Remote::folder(dir.path()).unwrap());
        let stale = LeaseRecord {
            holder: "dead".into(),
            host: "node-7".into(),
            pid: 4242,
            label: "train/a".into(),
            expires_at_ms: now_ms() - 5_000,
        };
        let path = Remote::lease_path(StepKind::Train, &key(2));
        remote.store.create(&path, serde_json::to_vec(&stale).unwrap()).unwrap();
        match remote.lease(StepKind::Train, &key(2), "train/a", Duration::from_secs(60), &|_| {}).unwrap() {
            Leased::TookOver { from, expired_ms_ago, lease } => {
                assert_eq!(from.who(), "pid 4242 on node-7");
                assert!(expired_ms_ago >= 5_000);
                let now = read(&remote, &path).unwrap().unwrap();
                assert_eq!(now.pid, std::process::id());
                drop(lease);
                assert!(read(&remote, &path).unwrap().is_none(), "released on drop");
            }
            other => panic!("not taken over: {other:?}"),
        }
    }

    #[test]
    fn a_step_published_while_waiting_is_pulled_not_computed() {
        let dir = tempfile::tempdir().unwrap();
        let remote = Arc::new(Remote::folder(&dir.path().join("remote")).unwrap());
        let cache = crate::Cache::open(dir.path().join("cache")).unwrap();
        let params = serde_json::json!({ "n": 3 });
        let key = StepKey::compute(StepKind::Train, &params, &[]);
        let term = Duration::from_secs(4);
        let Leased::Held(first) = remote.lease(StepKind::Train, &key, "train/b", term, &|_| {}).unwrap() else {
            panic!("a free lease is taken")
        };
        let outcome = std::thread::scope(|s| {
            let waiter = s.spawn(|| remote.lease(StepKind::Train, &key, "train/b", term, &|_| {}).unwrap());
            std::thread::sleep(Duration::from_millis(300));
            let staging = cache.begin(StepKind::Train, &key).unwrap();
            std::fs::write(staging.dir.join("model.bin"), "w").unwrap();
            let manifest = cache.publish(staging, "train/b", &params, Vec::new(), 1.0, "cpu").unwrap();
            remote.push(&cache, &manifest).unwrap();
            let outcome = waiter.join().unwrap();
            drop(first);
            outcome
        });
        assert!(matches!(outcome, Leased::Published), "{outcome:?}");
    }
}
