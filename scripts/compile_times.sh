#!/bin/bash
# Compile times of grid's own crates in the debug profile (BENCHMARKS.md,
# "The workspace of crates"): cold for the workspace's crates but the
# kernels' (dependencies already built), then three rebuilds after touching
# FILE, of the binary (`cargo build`) and of every test target (`cargo test
# --no-run`). Usage: scripts/compile_times.sh FILE (e.g. a report file).
set -euo pipefail
cd "$(dirname "$0")/.."
file="${1:?usage: scripts/compile_times.sh FILE}"
own=$(cargo metadata --no-deps --format-version 1 | python3 -c \
    'import json,sys; print(" ".join("-p " + p["name"] for p in json.load(sys.stdin)["packages"] if p["name"] != "grid-kernels"))')
seconds() { local s=$(date +%s.%N); "$@" >/dev/null 2>&1; echo "$(date +%s.%N) - $s" | bc; }
cargo build -q
# shellcheck disable=SC2086
cargo clean $own -q
echo "cold, own crates, cargo build: $(seconds cargo build -q) s"
for i in 1 2 3; do touch "$file"; echo "touch $file, cargo build ($i): $(seconds cargo build -q) s"; done
cargo test --no-run -q >/dev/null 2>&1
for i in 1 2 3; do touch "$file"; echo "touch $file, cargo test --no-run ($i): $(seconds cargo test --no-run -q) s"; done
