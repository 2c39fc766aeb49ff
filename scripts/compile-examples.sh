#!/usr/bin/env bash
# compile-examples.sh -- compile (only: no linking, no GPU) the CUDA C++ examples of
# examples/cuda/*.cu against one NCCL header tree, with every warning an error, as an
# NVSHMEM user builds them (examples/cuda/README.md) plus -Werror:
#
#   nvcc -std=c++17 -arch=sm_90 -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror
#        -I device/include -isystem NCCL_INCLUDE_DIR -c EXAMPLE.cu
#
# Usage: scripts/compile-examples.sh [NCCL_INCLUDE_DIR]
#   NCCL_INCLUDE_DIR  a folder holding nccl.h and nccl_device.h (default: .cuda/nccl-2.31.2/include
#                     from scripts/install-cuda-toolchain.sh)
#
# Honours NVCC (default: .cuda/cuda/bin/nvcc when present, else nvcc on PATH) and
# CUDA_HOST_CXX (the host compiler given to -ccbin; default g++). Called by
# scripts/compile-device-headers.sh. Exits non-zero, with nvcc's output, when any example
# fails to compile.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
inc="${1:-$root/.cuda/nccl-2.31.2/include}"
if [ -n "${NVCC:-}" ]; then
    nvcc="$NVCC"
elif [ -x "$root/.cuda/cuda/bin/nvcc" ]; then
    nvcc="$root/.cuda/cuda/bin/nvcc"
else
    nvcc="$(command -v nvcc || true)"
fi
if [ -z "$nvcc" ] || [ ! -x "$nvcc" ]; then
    echo "compile-examples.sh: no nvcc (run scripts/install-cuda-toolchain.sh, set NVCC)" >&2
    exit 1
fi
if [ ! -f "$inc/nccl_device.h" ]; then
    echo "compile-examples.sh: $inc has no nccl_device.h" >&2
    exit 1
fi
shopt -s nullglob
examples=("$root"/examples/cuda/*.cu)
if [ ${#examples[@]} -eq 0 ]; then
    echo "compile-examples.sh: no examples in $root/examples/cuda" >&2
    exit 1
fi
version="$(sed -n 's/^#define NCCL_VERSION_CODE \([0-9]*\).*/\1/p' "$inc/nccl.h")"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

flags=(-std=c++17 -arch=sm_90 -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror
    -ccbin "${CUDA_HOST_CXX:-g++}" -I "$root/device/include" -isystem "$inc")

# One nvcc per example, all at once (a few files), checked in order afterwards.
for f in "${examples[@]}"; do
    name=$(basename "$f" .cu)
    (
        t0=$SECONDS
        rc=0
        "$nvcc" "${flags[@]}" -c "$f" -o "$out/$name.o" >"$out/$name.log" 2>&1 || rc=$?
        echo "$rc $((SECONDS - t0))" >"$out/$name.rc"
    ) &
done
wait

status=0
for f in "${examples[@]}"; do
    name=$(basename "$f" .cu)
    read -r rc secs <"$out/$name.rc"
    if [ "$rc" = 0 ]; then
        echo "ok   NCCL $version, examples/cuda/$name.cu (${secs} s)"
    else
        echo "FAIL NCCL $version, examples/cuda/$name.cu (nvcc exit $rc):"
        cat "$out/$name.log"
        status=1
    fi
done
if [ $status != 0 ]; then
    echo "compile-examples.sh: FAILED: an example of examples/cuda does not compile" >&2
fi
exit $status
