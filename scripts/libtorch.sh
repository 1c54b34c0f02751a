#!/usr/bin/env bash
# A libtorch to build `grid --features libtorch` against, made from PyPI's torch
# wheel (the libtorch download host of torch-sys is often unreachable; PyPI is
# not). Prints the environment to build and run with.
#
#   scripts/libtorch.sh [--cpu] DEST
#
#   (default)  DEST/torch is the whole wheel's libtorch (CPU and CUDA 13). Build
#              here, run on a GPU machine with its own PyTorch 2.11 on
#              LD_LIBRARY_PATH (python3 -c "import torch,os; print(os.path.dirname(torch.__file__))"/lib).
#   --cpu      DEST/torch-cpu holds only the CPU libraries (plus the two small
#              CUDA runtime libraries libtorch_cpu is linked against, which it
#              loads but never calls without a GPU): build and run on a machine
#              without CUDA, as CI does.
#
# A machine with PyTorch installed needs none of this: build with
# LIBTORCH_USE_PYTORCH=1 (torch-sys asks python3 where torch is).
#
# The wheel is ~530 MB, downloaded and unpacked (1.1 GB) once into DEST.
set -euo pipefail

cpu=false
if [ "${1:-}" = "--cpu" ]; then cpu=true; shift; fi
dest="${1:?usage: scripts/libtorch.sh [--cpu] DEST}"
# The version the GPU machine's PyTorch has (NOTES-gpu.md): a binary built against
# one libtorch runs against the same version only.
version="${GRID_TORCH_VERSION:-2.11.0}"
mkdir -p "$dest"
dest="$(cd "$dest" && pwd)"

full="$dest/torch"
if [ ! -s "$full/lib/libtorch_cpu.so" ] || ! grep -q "__version__ = '$version" "$full/version.py" 2>/dev/null; then
    rm -rf "$dest/torch-cpu"
    echo "downloading torch $version from PyPI (~530 MB) into $dest" >&2
    python3 -m pip download --quiet --no-deps --only-binary=:all: "torch==$version" -d "$dest"
    wheel=$(ls "$dest"/torch-"$version"-*.whl | head -1)
    echo "unpacking $(basename "$wheel")" >&2
    rm -rf "$dest/unpacked" "$full"
    python3 - "$wheel" "$dest/unpacked" <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    wheel.extractall(sys.argv[2], [n for n in wheel.namelist() if n.startswith("torch/")])
EOF
    mv "$dest/unpacked/torch" "$full"
    # The unpacked folder is what is kept between runs, not the wheel.
    rm -rf "$dest/unpacked" "$wheel"
fi

if ! $cpu; then
    echo "export LIBTORCH=$full LIBTORCH_CXX11_ABI=1 LIBTORCH_BYPASS_VERSION_CHECK=1"
    exit 0
fi

cpu_dir="$dest/torch-cpu"
if [ ! -s "$cpu_dir/lib/libcudart.so.13" ]; then
    rm -rf "$cpu_dir"
    mkdir -p "$cpu_dir/lib"
    ln -s "$full/include" "$cpu_dir/include"
    ln -s "$full/share" "$cpu_dir/share"
    # Without libtorch_cuda.so torch-sys links no CUDA library.
    for lib in libc10.so libtorch.so libtorch_cpu.so libtorch_global_deps.so libshm.so libgomp.so.1; do
        [ -e "$full/lib/$lib" ] && ln -s "$full/lib/$lib" "$cpu_dir/lib/$lib"
    done
    # libtorch_cpu.so names these two CUDA 13 libraries as needed; they come as
    # small wheels (3 and 11 MB) of the CUDA runtime.
    cuda="$dest/cuda-runtime"
    mkdir -p "$cuda"
    python3 -m pip download --quiet --no-deps --only-binary=:all: \
        "nvidia-cuda-runtime==13.0.96" "nvidia-cuda-cupti==13.0.85" -d "$cuda"
    python3 - "$cuda" "$cpu_dir/lib" <<'EOF'
import pathlib, sys, zipfile
source, target = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
for wheel in source.glob("*.whl"):
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if name.endswith(("/libcudart.so.13", "/libcupti.so.13")):
                (target / pathlib.Path(name).name).write_bytes(archive.read(name))
EOF
fi
echo "export LIBTORCH=$cpu_dir LIBTORCH_CXX11_ABI=1 LIBTORCH_BYPASS_VERSION_CHECK=1 LD_LIBRARY_PATH=$cpu_dir/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
