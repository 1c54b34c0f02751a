#!/usr/bin/env bash
# Before a release: what CI (.ci/run) leaves out to stay within 45 minutes on
# a new 2-core machine. About 12 minutes there, plus a 530 MB download once:
#
# - `cargo check --features cuda`: the CUDA backend builds (no GPU needed);
# - the LibTorch backend on PyTorch's CPU kernels (PyPI's torch wheel, fetched
#   by scripts/libtorch.sh into ~/.cache/grid-ci-libtorch): every method on
#   both architectures against Flex, the fused blocks, MiniLM against
#   transformers, a small grid end to end, and the GPU benchmark script at its
#   smallest size on the CPU.
#
#   scripts/release_checks.sh
#
# Needs what .ci/run needs (cargo, python3 with pip); GRID_MINILM_DIR as
# .ci/run sets it runs the MiniLM equivalence test too.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${HOME:-/tmp}/.cache/grid-ci-target}"
phase() { echo "== [${SECONDS}s] $*"; }

phase "libtorch (PyPI's torch wheel, ~530 MB), fetched once"
libtorch_dir="${GRID_CI_LIBTORCH:-${HOME:-/tmp}/.cache/grid-ci-libtorch}"
libtorch_env="$(scripts/libtorch.sh --cpu "$libtorch_dir")"

phase "cargo check --features cuda (no GPU needed to build)"
# cudarc picks its CUDA bindings from nvcc, or from this without one.
CUDARC_CUDA_VERSION="${CUDARC_CUDA_VERSION:-13000}" cargo check --locked --features cuda

phase "LibTorch backend: built, and its equivalence tests on PyTorch's CPU kernels"
(
    eval "$libtorch_env"
    cargo test --locked --workspace --features grid/libtorch --lib -- \
        backend:: kernels::libtorch train::adamw salience::equivalence
    cargo test --locked --features libtorch --test tests -- bert_equivalence backends cli::usage
    bench_out="$(mktemp -d)"
    scripts/gpu_bench.sh --grid "$CARGO_TARGET_DIR/debug/grid" --device cpu --size tiny \
        --data-root "$bench_out/no-data" --out "$bench_out"
    rm -rf "$bench_out"
)
echo "release checks passed in ${SECONDS}s"
