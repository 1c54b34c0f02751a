//! The `grid` binary: glue over the library (see `grid::cli`).

fn main() -> std::process::ExitCode {
    grid::cli::main()
}
