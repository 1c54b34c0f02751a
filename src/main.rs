//! The `grid` binary: glue over the library (see `grid::cli`).

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    grid::cli::main()
}
