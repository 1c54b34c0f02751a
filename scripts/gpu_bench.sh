#!/usr/bin/env bash
# grid on a GPU beside PyTorch and Captum, in one go (under 10 minutes on an
# H100 with the default time limits), printing one table. Needs no network and
# no Rust: bring a release binary built with the GPU feature(s), e.g.
#
#   CUDARC_CUDA_VERSION=13000 cargo build --release --features cuda,libtorch   # LIBTORCH: see README
#   xz -9 -k target/release/grid
#
# and run, on the GPU machine:
#
#   scripts/gpu_bench.sh --grid grid.xz --data-root data [--device cuda] [--size base|tiny] [--out DIR]
#
# `--grid` may be the binary or its .xz (unpacked next to the output). Library
# paths are set here: CUDA's lib64 (cubecl compiles with NVRTC) and the torch/lib
# of the Python that runs the peers (`--python`, default python3; the LibTorch
# backend links it). `--device cpu --size tiny` is what CI runs to check that
# it works. Every option: scripts/gpu_bench.py --help.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

python="python3"
args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --python) python="$2"; args+=("$1" "$2"); shift 2 ;;
        --grid)
            binary="$2"
            if [[ "$binary" == *.xz ]]; then
                unpacked="$(mktemp -d)/grid"
                "$python" -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
                    "$binary" "$unpacked"
                chmod +x "$unpacked"
                binary="$unpacked"
            fi
            args+=(--grid "$binary"); shift 2 ;;
        *) args+=("$1"); shift ;;
    esac
done

paths=()
[ -d /usr/local/cuda/lib64 ] && paths+=(/usr/local/cuda/lib64)
if torch_dir="$("$python" -c 'import os, torch; print(os.path.dirname(torch.__file__))' 2>/dev/null)"; then
    paths+=("$torch_dir/lib")
fi
if [ ${#paths[@]} -gt 0 ]; then
    joined="$(IFS=:; echo "${paths[*]}")"
    export LD_LIBRARY_PATH="$joined${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
exec "$python" "$here/gpu_bench.py" "${args[@]}"
