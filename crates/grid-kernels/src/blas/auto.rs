//! `GRID_BLAS=auto`: the CBLAS libraries this machine has, timed against
//! `gemm` on the dense layers' own products, the fastest kept only where it
//! is clearly faster, and the choice remembered for the machine.
//!
//! Which is faster depends on the CPU (on an Intel Xeon, MKL's kernels can
//! be far ahead of `gemm`'s; on an AMD EPYC they are level), so no default
//! is right everywhere: the choice is a measurement. It takes a second or
//! so, once: the result is written to a small file (see [`MEMORY_ENV`])
//! under a fingerprint of the machine (CPU model, SIMD, threads, and each
//! candidate library's path, size and time), so a later process on the
//! same machine reads it instead, and a different machine sharing the file
//! (a cluster's home directory) measures its own.

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use super::Blas;

/// `GRID_BLAS`'s value that asks for the measurement.
pub const AUTO: &str = "auto";
/// Paths (separated by `:`) to consider instead of the usual places.
pub const CANDIDATES_ENV: &str = "GRID_BLAS_CANDIDATES";
/// The file the choices are remembered in; default
/// `$XDG_CACHE_HOME/grid/blas-choice.tsv` (or under `~/.cache`). Empty:
/// measure every time, remember nothing.
pub const MEMORY_ENV: &str = "GRID_BLAS_MEMORY";

/// How much faster than `gemm` a library must be to be chosen: beyond the
/// few percent a shared machine's timings wander by, so a tie keeps `gemm`
/// (which needs nothing installed and gives the same bits on every run).
pub const MARGIN: f64 = 1.10;

/// Where to look for a library when [`CANDIDATES_ENV`] is unset: MKL (its
/// PyPI wheel in a virtual environment or conda, oneAPI, Debian's), then
/// OpenBLAS and BLIS as distributions install them.
const LIBRARIES: [&str; 7] = [
    "libmkl_rt.so.3",
    "libmkl_rt.so.2",
    "libmkl_rt.so",
    "libopenblas.so.0",
    "libopenblas.dylib",
    "libblis.so.4",
    "libblis.so",
];

/// What `GRID_BLAS=auto` chose, and how it knows.
#[derive(Debug)]
pub struct Choice {
    /// The library the dense layers' blocks go to; `None`: `gemm`.
    pub library: Option<&'static Blas>,
    /// Every contender's rate in GFLOP/s, `gemm` first (measured now, or
    /// as measured then).
    pub rates: Vec<(String, f64)>,
    pub source: Source,
    /// Candidates that did not load, with why.
    pub skipped: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Timed in this process; written to the file, or why not.
    Measured { remembered: Result<PathBuf, String> },
    /// Read from the file, measured earlier on this machine.
    Remembered(PathBuf),
}

impl Choice {
    /// One line for a user: what runs the products, at what rate, and
    /// whether it was measured now.
    pub fn describe(&self) -> String {
        let gemm = self.rates.first().map_or(f64::NAN, |(_, rate)| *rate);
        let what = match self.library {
            Some(library) => {
                let rate = self.rate_of(&library.path().display().to_string()).unwrap_or(f64::NAN);
                format!("{} ({:.1}× gemm's {gemm:.0} GFLOP/s)", library.path().display(), rate / gemm)
            }
            None => match self.rates.iter().skip(1).max_by(|a, b| a.1.total_cmp(&b.1)) {
                Some((best, rate)) => {
                    format!(
                        "gemm kept ({best} at {:.2}× gemm, under the {MARGIN:.2}× a library must beat)",
                        rate / gemm
                    )
                }
                None if self.skipped.is_empty() => "gemm (no CBLAS library found)".to_owned(),
                None => "gemm (no CBLAS library loaded)".to_owned(),
            },
        };
        let how = match &self.source {
            Source::Measured { remembered: Ok(file) } => format!("measured now, remembered in {}", file.display()),
            Source::Measured { remembered: Err(why) } => format!("measured now, not remembered: {why}"),
            Source::Remembered(file) => format!("as measured before on this machine ({})", file.display()),
        };
        format!("GRID_BLAS=auto: {what}; {how}")
    }

    fn rate_of(&self, name: &str) -> Option<f64> {
        self.rates.iter().find(|(n, _)| n == name).map(|(_, rate)| *rate)
    }
}

/// What `GRID_BLAS=auto` times: the products that matter are the caller's
/// (the dense layers give theirs, `crate::linear::TIMED_LAYERS`), so that the
/// library's choice does not depend on the layers that use it.
pub trait Workload {
    /// Floating-point operations of one pass.
    fn flops(&self) -> f64;
    /// Passes per contender, interleaved; the fastest pass counts.
    fn rounds(&self) -> usize;
    /// The operands, made once, and a pass over them per call: its seconds
    /// with `library` (`None`: `gemm`).
    fn passes(&self) -> Box<dyn FnMut(Option<&'static Blas>) -> f64 + '_>;
}

/// GFLOP/s of each contender (`gemm` first), passes interleaved so a slow
/// moment of a shared machine falls on all of them.
fn rates(workload: &dyn Workload, libraries: &[&'static Blas]) -> Vec<f64> {
    let mut pass = workload.passes();
    let contenders: Vec<Option<&'static Blas>> =
        std::iter::once(None).chain(libraries.iter().copied().map(Some)).collect();
    let mut best = vec![f64::INFINITY; contenders.len()];
    // One pass each first: page faults, a library's own set-up.
    for &library in &contenders {
        pass(library);
    }
    for _ in 0..workload.rounds().max(1) {
        for (best, &library) in best.iter_mut().zip(&contenders) {
            *best = best.min(pass(library));
        }
    }
    best.iter().map(|seconds| workload.flops() / seconds / 1e9).collect()
}

/// The index of the library to use, from `gemm`'s rate and theirs: the
/// fastest, if it beats `gemm` by [`MARGIN`].
pub fn pick(gemm: f64, libraries: &[f64]) -> Option<usize> {
    let (best, rate) = libraries.iter().copied().enumerate().max_by(|a, b| a.1.total_cmp(&b.1))?;
    (rate >= MARGIN * gemm).then_some(best)
}

/// Resolves `GRID_BLAS=auto` from the environment: the candidates
/// ([`CANDIDATES_ENV`] or the usual places) and the memory file
/// ([`MEMORY_ENV`] or the user's cache), measured on `workload`.
pub fn from_env(workload: &dyn Workload) -> Choice {
    let candidates = match std::env::var_os(CANDIDATES_ENV) {
        Some(paths) => std::env::split_paths(&paths).filter(|p| !p.as_os_str().is_empty()).collect(),
        None => usual_places(),
    };
    let memory = match std::env::var_os(MEMORY_ENV) {
        Some(file) if file.is_empty() => None,
        Some(file) => Some(PathBuf::from(file)),
        None => std::env::var_os("XDG_CACHE_HOME")
            .filter(|dir| !dir.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cache")))
            .map(|dir| dir.join("grid").join("blas-choice.tsv")),
    };
    choose(&candidates, memory.as_deref(), workload)
}

/// The libraries found in the usual places, each once (symbolic links
/// resolved).
pub fn usual_places() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = ["MKLROOT", "CONDA_PREFIX", "VIRTUAL_ENV"]
        .iter()
        .filter_map(std::env::var_os)
        .filter(|prefix| !prefix.is_empty())
        .flat_map(|prefix| [Path::new(&prefix).join("lib"), Path::new(&prefix).join("lib/intel64")])
        .collect();
    if let Some(home) = std::env::var_os("HOME") {
        dirs.push(Path::new(&home).join(".local/lib"));
    }
    dirs.extend(
        [
            "/opt/intel/oneapi/mkl/latest/lib",
            "/usr/lib/x86_64-linux-gnu",
            "/usr/lib/aarch64-linux-gnu",
            "/usr/lib64",
            "/usr/lib",
            "/usr/local/lib",
            "/opt/homebrew/opt/openblas/lib",
        ]
        .map(PathBuf::from),
    );
    let mut found: Vec<PathBuf> = Vec::new();
    let mut seen = Vec::new();
    for path in dirs.iter().flat_map(|dir| LIBRARIES.iter().map(move |name| dir.join(name))) {
        if let Ok(real) = path.canonicalize()
            && !seen.contains(&real)
        {
            seen.push(real);
            found.push(path);
        }
    }
    found
}

/// The choice among `candidates`: remembered in `memory` for this machine,
/// else measured on `workload` (and remembered there).
pub fn choose(candidates: &[PathBuf], memory: Option<&Path>, workload: &dyn Workload) -> Choice {
    let machine = fingerprint(candidates);
    // Kept loaded for the process's life: the products point into it (a
    // handful of libraries at most, opened once).
    let open = |path: &Path| Blas::open(path).map(|library| &*Box::leak(Box::new(library)));
    if let Some(file) = memory
        && let Some(entry) = Memory::read(file).find(&machine)
    {
        // Only the remembered library is opened; one that no longer loads
        // is measured again.
        let library = match entry.choice.as_str() {
            "gemm" => Some(None),
            path => open(Path::new(path)).ok().map(Some),
        };
        if let Some(library) = library {
            let (rates, source) = (entry.rates.clone(), Source::Remembered(file.to_path_buf()));
            return Choice { library, rates, source, skipped: Vec::new() };
        }
    }
    let mut skipped = Vec::new();
    let mut libraries: Vec<&'static Blas> = Vec::new();
    for path in candidates {
        match open(path) {
            Ok(library) => libraries.push(library),
            Err(why) => skipped.push(why),
        }
    }
    let measured = rates(workload, &libraries);
    let chosen = pick(measured[0], &measured[1..]).map(|i| libraries[i]);
    let mut rates = vec![("gemm".to_owned(), measured[0])];
    rates.extend(libraries.iter().zip(&measured[1..]).map(|(l, &rate)| (l.path().display().to_string(), rate)));
    let remembered = match memory {
        None => Err(format!("{MEMORY_ENV} is empty")),
        Some(file) => {
            let choice = chosen.map_or("gemm".to_owned(), |l| l.path().display().to_string());
            let entry = Entry { machine, choice, rates: rates.clone() };
            Memory::read(file).with(entry).write(file).map(|()| file.to_path_buf())
        }
    };
    Choice { library: chosen, rates, source: Source::Measured { remembered }, skipped }
}

/// What identifies "this machine" for a remembered choice: the CPU, its
/// SIMD, the threads the products share, and the candidates as installed (a
/// library updated in place is measured again).
fn fingerprint(candidates: &[PathBuf]) -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|line| line.starts_with("model name"))
                .and_then(|line| line.split_once(':'))
                .map(|(_, name)| name.trim().to_owned())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_owned());
    let libraries: Vec<String> = candidates
        .iter()
        .map(|path| {
            let stamp = std::fs::metadata(path).ok().map(|m| {
                let time = m.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| d.as_secs());
                format!("{}@{time}", m.len())
            });
            format!("{}@{}", path.display(), stamp.unwrap_or_else(|| "missing".to_owned()))
        })
        .collect();
    let text = format!(
        "cpu={cpu};simd={};threads={};grid-kernels={};libraries={}",
        simd(),
        rayon::current_num_threads(),
        env!("CARGO_PKG_VERSION"),
        libraries.join(",")
    );
    clean(&text)
}

fn simd() -> String {
    #[cfg(target_arch = "x86_64")]
    {
        let mut found = Vec::new();
        if std::is_x86_feature_detected!("avx512f") {
            found.push("avx512f");
        }
        if std::is_x86_feature_detected!("avx2") {
            found.push("avx2");
        }
        if std::is_x86_feature_detected!("fma") {
            found.push("fma");
        }
        found.join("+")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        std::env::consts::ARCH.to_owned()
    }
}

/// One remembered choice, a line of tab-separated fields: the machine, the
/// choice, then each contender's name and GFLOP/s (`gemm` first).
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    machine: String,
    /// `gemm` or a library's path.
    choice: String,
    rates: Vec<(String, f64)>,
}

/// The memory file's entries, one line each; lines that do not parse are
/// dropped (a damaged file costs a measurement, never a wrong library).
#[derive(Debug, Default)]
struct Memory {
    entries: Vec<Entry>,
}

impl Memory {
    fn read(file: &Path) -> Memory {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let entries =
            text.lines()
                .filter_map(|line| {
                    let fields: Vec<&str> = line.split('\t').collect();
                    let [machine, choice, contenders @ ..] = &fields[..] else { return None };
                    let rates = contenders
                        .chunks(2)
                        .map(|pair| match pair {
                            [name, rate] => Some(((*name).to_owned(), rate.parse::<f64>().ok()?)),
                            _ => None,
                        })
                        .collect::<Option<Vec<_>>>()?;
                    let known = *choice == "gemm" || rates.iter().any(|(name, _)| name == choice);
                    (!machine.is_empty() && rates.first().is_some_and(|(name, _)| name == "gemm") && known)
                        .then(|| Entry { machine: (*machine).to_owned(), choice: (*choice).to_owned(), rates })
                })
                .collect();
        Memory { entries }
    }

    fn find(&self, machine: &str) -> Option<&Entry> {
        self.entries.iter().find(|entry| entry.machine == machine)
    }

    /// With `entry` in place of this machine's earlier one.
    fn with(mut self, entry: Entry) -> Memory {
        self.entries.retain(|e| e.machine != entry.machine);
        self.entries.push(entry);
        self
    }

    /// Written whole to a temporary file beside `file`, then renamed over it,
    /// so a reader never sees half a file.
    fn write(&self, file: &Path) -> Result<(), String> {
        let text: String = self
            .entries
            .iter()
            .map(|e| {
                let rates: String = e.rates.iter().map(|(name, rate)| format!("\t{}\t{rate}", clean(name))).collect();
                format!("{}\t{}{rates}\n", clean(&e.machine), clean(&e.choice))
            })
            .collect();
        let fail = |e: std::io::Error| format!("{}: {e}", file.display());
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir).map_err(fail)?;
        }
        let temporary = file.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&temporary, text).map_err(fail)?;
        std::fs::rename(&temporary, file).map_err(fail)
    }
}

/// A name as one field of a tab-separated line.
fn clean(text: &str) -> String {
    text.replace(['\t', '\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workload of a fixed time: what is chosen and remembered, without
    /// the products (the dense layers' own is tested in `linear`).
    struct Fixed;

    impl Workload for Fixed {
        fn flops(&self) -> f64 {
            1e9
        }

        fn rounds(&self) -> usize {
            1
        }

        fn passes(&self) -> Box<dyn FnMut(Option<&'static Blas>) -> f64 + '_> {
            Box::new(|library| if library.is_some() { 0.5 } else { 1.0 })
        }
    }

    const SMALL: &Fixed = &Fixed;

    #[test]
    fn a_library_must_beat_gemm_by_the_margin() {
        assert_eq!(pick(100.0, &[]), None);
        assert_eq!(pick(100.0, &[105.0, 109.0]), None, "within the margin: gemm");
        assert_eq!(pick(100.0, &[105.0, 130.0, 120.0]), Some(1), "the fastest");
        assert_eq!(pick(100.0, &[f64::NAN]), None);
    }

    #[test]
    fn the_memory_keeps_other_machines_and_drops_damaged_lines() {
        let dir = std::env::temp_dir().join(format!("grid-blas-memory-{}", std::process::id()));
        let file = dir.join("choice.tsv");
        let entry = |machine: &str, choice: &str| Entry {
            machine: machine.to_owned(),
            choice: choice.to_owned(),
            rates: vec![("gemm".to_owned(), 100.5), ("/lib/x.so".to_owned(), 150.25), ("/lib/y.so".to_owned(), 90.0)],
        };
        Memory::default().with(entry("a", "gemm")).with(entry("b", "/lib/x.so")).write(&file).unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        let damaged = ["damaged line", "c\tgemm\tgemm\tnot a number", "d\t/lib/z.so\tgemm\t1", "e\tgemm\tgemm"];
        std::fs::write(&file, format!("{text}{}\n", damaged.join("\n"))).unwrap();
        let memory = Memory::read(&file).with(entry("a", "/lib/y.so"));
        assert_eq!(memory.entries, vec![entry("b", "/lib/x.so"), entry("a", "/lib/y.so")]);
        memory.write(&file).unwrap();
        assert_eq!(Memory::read(&file).find("a"), Some(&entry("a", "/lib/y.so")));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Measured once, with a library that is not there reported; then read
    /// back for the same machine and candidates; a damaged file measured
    /// again. Against Debian's OpenBLAS where installed (as CI does).
    #[test]
    fn a_choice_is_measured_once_and_then_remembered() {
        let dir = std::env::temp_dir().join(format!("grid-blas-auto-{}", std::process::id()));
        let file = dir.join("choice.tsv");
        let mut candidates = vec![dir.join("missing/libopenblas.so.0")];
        let openblas = PathBuf::from("/usr/lib/x86_64-linux-gnu/libopenblas.so.0");
        if openblas.exists() {
            candidates.push(openblas);
        }
        let first = choose(&candidates, Some(&file), SMALL);
        assert_eq!(first.source, Source::Measured { remembered: Ok(file.clone()) });
        assert_eq!(first.skipped.len(), 1, "{:?}", first.skipped);
        assert!(first.skipped[0].contains("missing/libopenblas.so.0"), "{:?}", first.skipped);
        assert_eq!(first.rates.len(), candidates.len(), "gemm and each library that loaded");
        assert!(first.rates.iter().all(|(_, rate)| *rate > 0.0 && rate.is_finite()), "{:?}", first.rates);
        assert!(first.describe().starts_with("GRID_BLAS=auto: "), "{}", first.describe());

        let second = choose(&candidates, Some(&file), SMALL);
        assert_eq!(second.source, Source::Remembered(file.clone()));
        assert_eq!(second.library.map(Blas::path), first.library.map(Blas::path));
        assert_eq!(second.rates[0], first.rates[0], "gemm's rate as measured");

        std::fs::write(&file, "garbage\n").unwrap();
        let third = choose(&candidates, Some(&file), SMALL);
        assert!(matches!(third.source, Source::Measured { .. }));
        // Another set of candidates is another machine's entry.
        // (Not a subset of these: without OpenBLAS installed, the first one
        // alone is the same set.)
        let elsewhere = [dir.join("elsewhere/libblas.so.3")];
        let fourth = choose(&elsewhere, Some(&file), SMALL);
        assert!(matches!(fourth.source, Source::Measured { .. }));
        assert_eq!(Memory::read(&file).entries.len(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
