#!/usr/bin/env bash
# compile-device-headers.sh -- compile (only: no linking, no GPU) the device API headers
# against one or more NCCL header trees, with every warning an error.
#
# Usage: scripts/compile-device-headers.sh NCCL_INCLUDE_DIR [NCCL_INCLUDE_DIR ...]
#
#   NCCL_INCLUDE_DIR  a folder holding nccl.h and nccl_device.h, e.g. .cuda/nccl-2.31.2/include
#                     from scripts/install-cuda-toolchain.sh
#
# For each folder, tests/device/compile_all.cu and every tests/device/compile_<family>.cu
# (TUs whose kernels call every device
# function of the headers, for every RMA type and every scope) is compiled as a whole
# program; for the last folder given (the newest NCCL) also, side by side, with -rdc=true
# and as a whole program without the GIN path (-DNIIN_DEVICE_GIN=0). (The -rdc and no-GIN
# builds differ in niin-rs's own code paths, which the newest headers exercise; all three
# for every folder made CI take ~20 minutes on 2 cores.)
#
#   nvcc -std=c++17 -arch=sm_90 -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror
#        --expt-relaxed-constexpr [-rdc=true] -I device/include -isystem NCCL_INCLUDE_DIR -c
#
# NCCL's headers are a system include: their own unused parameters are not ours to fix.
# In the whole-program build every kernel must use at most 64 registers (-Xptxas -v), the
# most a 1024-thread block allows: the kernels have no __launch_bounds__, as NVSHMEM
# programs have none. Then the host side of the object must leave the functions that libnvshmem_host also
# has (nvshmem_my_pe, nvshmem_putmem, nvshmem_barrier_all, ...) undefined, i.e. call the
# library from host code, not a device body.
#
# Honours NVCC (default: .cuda/cuda/bin/nvcc when present, else nvcc on PATH) and
# CUDA_HOST_CXX (the host compiler given to -ccbin; default g++).
set -euo pipefail

if [ $# -lt 1 ]; then
    echo "usage: $0 NCCL_INCLUDE_DIR [NCCL_INCLUDE_DIR ...]" >&2
    exit 2
fi

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ -n "${NVCC:-}" ]; then
    nvcc="$NVCC"
elif [ -x "$root/.cuda/cuda/bin/nvcc" ]; then
    nvcc="$root/.cuda/cuda/bin/nvcc"
else
    nvcc="$(command -v nvcc || true)"
fi
if [ -z "$nvcc" ] || [ ! -x "$nvcc" ]; then
    echo "compile-device-headers.sh: no nvcc (run scripts/install-cuda-toolchain.sh, set NVCC)" >&2
    exit 1
fi
host_cxx="${CUDA_HOST_CXX:-g++}"
# compile_all.cu first, then the per-family TUs (tests/device/compile_<family>.cu).
sources=("$root/tests/device/compile_all.cu")
for f in "$root"/tests/device/compile_*.cu; do
    [ "$f" = "$root/tests/device/compile_all.cu" ] || sources+=("$f")
done
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

flags=(-std=c++17 -arch=sm_90 -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror
    --expt-relaxed-constexpr -ccbin "$host_cxx" -I "$root/device/include")

# Functions declared for host and device: in host code they must stay calls to
# libnvshmem_host (undefined in the object).
host_functions=(nvshmem_my_pe nvshmem_n_pes nvshmem_ptr nvshmem_putmem nvshmem_getmem
    nvshmem_putmem_nbi nvshmem_getmem_nbi nvshmem_fence nvshmem_quiet nvshmem_barrier_all
    nvshmem_sync_all nvshmem_barrier nvshmem_team_my_pe nvshmem_signal_fetch)

status=0
last="${!#}"
for inc in "$@"; do
    modes=(whole)
    [ "$inc" = "$last" ] && modes=(whole rdc nogin)
    if [ ! -f "$inc/nccl_device.h" ]; then
        echo "compile-device-headers.sh: $inc has no nccl_device.h" >&2
        exit 1
    fi
    version="$(sed -n 's/^#define NCCL_VERSION_CODE \([0-9]*\).*/\1/p' "$inc/nccl.h")"
    start=$SECONDS
    for source_file in "${sources[@]}"; do
    tu=$(basename "$source_file" .cu)
    pids=()
    for mode in "${modes[@]}"; do
        extra=()
        [ "$mode" = rdc ] && extra=(-rdc=true)
        [ "$mode" = nogin ] && extra=(-DNIIN_DEVICE_GIN=0)
        [ "$mode" = whole ] && extra=(-Xptxas -v)
        (
            "$nvcc" "${flags[@]}" "${extra[@]}" -isystem "$inc" -c "$source_file" \
                -o "$out/$tu.$mode.o" >"$out/$tu.$mode.log" 2>&1
        ) &
        pids+=($!)
    done
    for i in "${!modes[@]}"; do
        mode=${modes[$i]}
        if wait "${pids[$i]}"; then
            undefined="$(nm -u "$out/$tu.$mode.o" | awk '{print $2}')"
            ok=1
            checked=("${host_functions[@]}")
            [ "$tu" = compile_all ] || checked=()
            for f in "${checked[@]}"; do
                if ! grep -qx "$f" <<<"$undefined"; then
                    echo "FAIL NCCL $version ($inc), $tu, $mode: host code must call" \
                        "libnvshmem_host's $f"
                    ok=0
                    status=1
                fi
            done
            if [ "$mode" = whole ]; then
                # The register budget (issue 12, part 0): every kernel of these TUs (none has
                # __launch_bounds__) must fit a 1024-thread block, 64 registers a thread.
                # niin-rs's own GIN worker kernel is exempt: it runs <<<1, 32>>>.
                over="$(awk '/Compiling entry function/ { match($0, /\x27[^\x27]*\x27/); k = substr($0, RSTART + 1, RLENGTH - 2) }
                    /Used [0-9]+ registers/ && k != "" { for (i = 1; i <= NF; i++) if ($i == "Used") r = $(i + 1);
                        if (r > 64 && k !~ /niin_gin_worker/) print k " " r; k = "" }' "$out/$tu.$mode.log")"
                if [ -n "$over" ]; then
                    echo "FAIL NCCL $version ($inc), $tu: kernels over 64 registers (a 1024-thread block cannot launch):"
                    echo "$over"
                    ok=0
                    status=1
                fi
            fi
            [ $ok = 1 ] && echo "ok   NCCL $version ($inc), $tu, $mode"
        else
            echo "FAIL NCCL $version ($inc), $tu, $mode:"
            cat "$out/$tu.$mode.log"
            status=1
        fi
    done
    done
    echo "     $((SECONDS - start)) s for NCCL $version"
done
exit $status
