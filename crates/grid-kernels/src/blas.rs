//! A CBLAS library's `cblas_sgemm`, loaded at run time from the path in
//! [`ENV`] (`GRID_BLAS`): MKL (`libmkl_rt.so` of PyPI's `mkl` wheel),
//! OpenBLAS (Debian's `libopenblas0`), BLIS, or any library with the CBLAS
//! interface and 32-bit integers. Nothing is linked at build time, so the
//! default build needs only Rust; unset, every product runs in the `gemm`
//! crate as before.
//!
//! Which is faster depends on the CPU (`gemm`'s AVX-512 kernels against
//! MKL's on an Intel Xeon, say), so the choice is a measurement:
//! `GRID_BLAS=auto` makes it ([`auto`]: the libraries found, timed against
//! `gemm`, the choice remembered per machine), and `grid bench --gemm`
//! shows it on the grid's own shapes.
//!
//! The library runs single-threaded (MKL's sequential layer, one OpenBLAS or
//! BLIS thread) and takes the fixed blocks of rows that the dense layers
//! split their products into, several at once on rayon's threads
//! (`matmul::Threads::Block`): no second thread pool (OpenMP's
//! threads spin after each call, on the cores rayon's kernels need next),
//! nothing to configure, and, since every block has the same shape however a
//! batch is split or however many threads run, values that do not depend on
//! either (a row's scores are the same in any batch, as with `gemm`).

pub mod auto;

use std::ffi::c_int;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The variable naming the library.
pub const ENV: &str = "GRID_BLAS";

/// `cblas_sgemm(layout, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)`.
type Sgemm = unsafe extern "C" fn(
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    f32,
    *const f32,
    c_int,
    *const f32,
    c_int,
    f32,
    *mut f32,
    c_int,
);

const ROW_MAJOR: c_int = 101;
const NO_TRANS: c_int = 111;
const TRANS: c_int = 112;
/// `MKL_THREADING_SEQUENTIAL`.
const MKL_THREADING_SEQUENTIAL: c_int = 1;

/// A loaded library.
pub struct Blas {
    path: PathBuf,
    sgemm: Sgemm,
    /// Kept open: `sgemm` points into it.
    _library: libloading::Library,
}

impl std::fmt::Debug for Blas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Blas").field("path", &self.path).finish()
    }
}

impl Blas {
    /// Loads `path` and makes it run on the calling thread only (through
    /// whichever of MKL's, OpenBLAS's or BLIS's setters it has).
    pub fn open(path: &Path) -> Result<Blas, String> {
        // SAFETY: loading a library runs its initialisers; the path is the
        // user's choice of BLAS, as LD_PRELOAD would be.
        let library = unsafe { libloading::Library::new(path) }.map_err(|e| format!("{}: {e}", path.display()))?;
        // SAFETY: the symbol is CBLAS's, whose signature `Sgemm` is.
        let sgemm = unsafe { library.get::<Sgemm>(b"cblas_sgemm\0") }
            .map(|symbol| *symbol)
            .map_err(|e| format!("{}: no cblas_sgemm ({e})", path.display()))?;
        // SAFETY: MKL's threading-layer setter takes an int (1: sequential)
        // and must come before any other MKL call; each thread setter takes
        // the count as an int (BLIS: dim_t, a 64-bit int on LP64). A library
        // lacking one simply has no such symbol.
        unsafe {
            if let Ok(set) = library.get::<unsafe extern "C" fn(c_int) -> c_int>(b"MKL_Set_Threading_Layer\0") {
                set(MKL_THREADING_SEQUENTIAL);
            }
            for name in [&b"MKL_Set_Num_Threads\0"[..], b"openblas_set_num_threads\0"] {
                if let Ok(set) = library.get::<unsafe extern "C" fn(c_int)>(name) {
                    set(1);
                }
            }
            if let Ok(set) = library.get::<unsafe extern "C" fn(i64)>(b"bli_thread_set_num_threads\0") {
                set(1);
            }
        }
        Ok(Blas { path: path.to_path_buf(), sgemm, _library: library })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `dst[m × n] = (accumulate ? dst : 0) + lhs[m × k] · rhs[k × n]`, the
    /// operands given by row and column strides; `false` (nothing done) where
    /// CBLAS cannot take them: an operand with neither stride 1, or a size
    /// past `int`.
    ///
    /// # Safety
    /// Every element the strides reach lies inside its operand; `dst` does
    /// not overlap `lhs` or `rhs`. Without `accumulate`, `dst` is only
    /// written (BLAS reads no `C` when `beta` is 0), so it may be uninitialised.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn sgemm(
        &self,
        accumulate: bool,
        (m, n, k): (usize, usize, usize),
        (dst, dst_rs): (*mut f32, usize),
        (lhs, lhs_rs, lhs_cs): (*const f32, usize, usize),
        (rhs, rhs_rs, rhs_cs): (*const f32, usize, usize),
    ) -> bool {
        let Some((trans_a, lda)) = layout(lhs_rs, lhs_cs, m, k) else { return false };
        let Some((trans_b, ldb)) = layout(rhs_rs, rhs_cs, k, n) else { return false };
        let int = |v: usize| c_int::try_from(v).ok();
        let (Some(m), Some(n), Some(k), Some(ldc)) = (int(m), int(n), int(k), int(dst_rs.max(n))) else {
            return false;
        };
        let beta = if accumulate { 1.0 } else { 0.0 };
        // SAFETY: the caller's contract; CBLAS reads and writes within the
        // given leading dimensions only.
        unsafe { (self.sgemm)(ROW_MAJOR, trans_a, trans_b, m, n, k, 1.0, lhs, lda, rhs, ldb, beta, dst, ldc) };
        true
    }
}

/// How CBLAS reads a `rows × cols` row-major operand with these strides:
/// as stored (unit column stride), or as the transpose of a stored one (unit
/// row stride), with its leading dimension. A leading dimension is at least
/// the stored row's length, as CBLAS requires even of a single row.
fn layout(rs: usize, cs: usize, rows: usize, cols: usize) -> Option<(c_int, c_int)> {
    if cs == 1 || cols == 1 {
        Some((NO_TRANS, c_int::try_from(rs.max(cols)).ok()?))
    } else if rs == 1 || rows == 1 {
        Some((TRANS, c_int::try_from(cs.max(rows)).ok()?))
    } else {
        None
    }
}

/// What [`ENV`] asks for, resolved once per process.
enum Resolved {
    Unset,
    Path(Blas),
    Auto(auto::Choice),
}

/// `GRID_BLAS=auto` is measured on `workload` by the first call; later
/// calls read that choice.
fn resolved(workload: &dyn auto::Workload) -> &'static Result<Resolved, String> {
    static RESOLVED: OnceLock<Result<Resolved, String>> = OnceLock::new();
    RESOLVED.get_or_init(|| match std::env::var_os(ENV) {
        Some(value) if value == auto::AUTO => Ok(Resolved::Auto(auto::from_env(workload))),
        Some(path) if !path.is_empty() => {
            Blas::open(Path::new(&path)).map(Resolved::Path).map_err(|e| format!("{ENV}={e}"))
        }
        _ => Ok(Resolved::Unset),
    })
}

/// The library [`ENV`] names (a path, or `auto`: see [`auto`]), loaded
/// once; `None` when unset or empty, or when `auto` kept `gemm`; `auto`
/// measures on `workload` (the dense layers': `crate::linear::blas_in_use`).
pub fn active(workload: &dyn auto::Workload) -> Result<Option<&'static Blas>, String> {
    match resolved(workload) {
        Ok(Resolved::Unset) => Ok(None),
        Ok(Resolved::Path(library)) => Ok(Some(library)),
        Ok(Resolved::Auto(choice)) => Ok(choice.library),
        Err(e) => Err(e.clone()),
    }
}

/// What `GRID_BLAS=auto` chose in this process (measuring it on
/// `workload` on first use; `crate::linear::blas_choice`).
pub fn auto_choice(workload: &dyn auto::Workload) -> Option<&'static auto::Choice> {
    match resolved(workload) {
        Ok(Resolved::Auto(choice)) => Some(choice),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operands_map_to_cblas_transposes() {
        // Row-major 3 × 4 stored with rows of 6.
        assert_eq!(layout(6, 1, 3, 4), Some((NO_TRANS, 6)));
        // The transpose of a stored 4 × 3 (rows of 3): strides (1, 3).
        assert_eq!(layout(1, 3, 3, 4), Some((TRANS, 3)));
        // Neither stride is 1: not CBLAS's.
        assert_eq!(layout(8, 2, 3, 4), None);
    }

    /// A CBLAS library to test against: `GRID_TEST_BLAS`, else Debian's
    /// OpenBLAS where installed. CI installs it on x86-64, and fails there
    /// without one.
    fn test_library() -> Option<Blas> {
        let path = std::env::var_os("GRID_TEST_BLAS")
            .map(PathBuf::from)
            .or_else(|| Some(PathBuf::from("/usr/lib/x86_64-linux-gnu/libopenblas.so.0")).filter(|p| p.exists()));
        match path {
            Some(path) => Some(Blas::open(&path).expect("the test BLAS opens")),
            None if std::env::var_os("CI").is_some() && cfg!(target_arch = "x86_64") => {
                panic!("CI needs a CBLAS library (libopenblas0) or GRID_TEST_BLAS")
            }
            None => {
                eprintln!("no CBLAS library here (set GRID_TEST_BLAS): the library's products are not checked");
                None
            }
        }
    }

    /// Every layout the kernels pass (plain, transposed either side, a wider
    /// destination row, accumulation) gives the `gemm` crate's values to
    /// float rounding.
    #[test]
    fn the_librarys_products_are_gemms() {
        let Some(library) = test_library() else { return };
        let (m, n, k) = (37, 29, 53);
        let lhs = crate::testing::wave(m * k, 0.37, 0.1);
        let rhs = crate::testing::wave(k * n, 0.53, 0.7);
        // (lhs strides, rhs strides): row-major, lhs transposed, rhs transposed.
        for (lhs_s, rhs_s) in [((k, 1), (n, 1)), ((1, m), (n, 1)), ((k, 1), (1, k)), ((1, m), (1, k))] {
            for (accumulate, dst_rs) in [(false, n), (true, n + 3)] {
                let start = crate::testing::wave(m * dst_rs, 0.29, 0.3);
                let (mut ours, mut theirs) = (start.clone(), start.clone());
                crate::matmul::product(
                    crate::matmul::Threads::One,
                    accumulate,
                    (m, n, k),
                    (&mut ours, dst_rs),
                    &lhs,
                    lhs_s,
                    &rhs,
                    rhs_s,
                );
                // SAFETY: the strides stay inside the operands, as `product` checked.
                let taken = unsafe {
                    library.sgemm(
                        accumulate,
                        (m, n, k),
                        (theirs.as_mut_ptr(), dst_rs),
                        (lhs.as_ptr(), lhs_s.0, lhs_s.1),
                        (rhs.as_ptr(), rhs_s.0, rhs_s.1),
                    )
                };
                assert!(taken, "{lhs_s:?} {rhs_s:?}");
                for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
                    let padding = dst_rs > n && i % dst_rs >= n;
                    assert!((a - b).abs() <= 1e-5 * (1.0 + a.abs()), "{lhs_s:?} {rhs_s:?} [{i}]: {a} vs {b}");
                    if padding {
                        assert_eq!(*b, start[i], "a destination's padding is left alone");
                    }
                }
            }
        }
    }

    #[test]
    fn a_missing_library_is_an_error_naming_it() {
        let err = Blas::open(Path::new("/nonexistent/libblas.so")).unwrap_err();
        assert!(err.contains("/nonexistent/libblas.so"), "{err}");
    }
}
