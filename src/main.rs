//! The `grid` binary: glue over the library (see `grid::cli`).

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay` (the same index in its v2 and v3).
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

fn main() -> std::process::ExitCode {
    // mimalloc hands freed memory back to the OS after 10 ms by default; a
    // model step frees and reallocates the same large tensors every pass, and
    // each came back as fresh pages the kernel zeroed (19% of MiniLM's IG
    // profile, `clear_page_erms`). Keep it: a step's memory stays at its
    // peak. `MIMALLOC_PURGE_DELAY` in the environment still decides.
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets one option of the allocator; valid at any time.
        unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, -1) };
    }
    grid::cli::main()
}
