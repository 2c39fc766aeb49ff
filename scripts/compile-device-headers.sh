#!/usr/bin/env bash
# compile-device-headers.sh -- compile (only: no linking, no GPU) the device API headers
# against one or more NCCL header trees, with every warning an error.
#
# Usage: scripts/compile-device-headers.sh NCCL_INCLUDE_DIR [NCCL_INCLUDE_DIR ...]
#
#   NCCL_INCLUDE_DIR  a folder holding nccl.h and nccl_device.h, e.g. .cuda/nccl-2.31.2/include
#                     from scripts/install-cuda-toolchain.sh
#
# tests/device/compile_all.cu and the tests/device/compile_<family>.cu TUs (kernels that call
# every device function of the headers, for every RMA type and every scope) are compiled:
#   - against the last folder given (the newest NCCL): every TU as a whole program, and
#     compile_all.cu also with -rdc=true and as a whole program without the GIN path
#     (-DNIIN_DEVICE_GIN=0);
#   - against every other folder: compile_all.cu as a whole program (the older GIN API and
#     device ABI; the families' code does not depend on the NCCL version beyond it).
# Why not every TU in every mode: each TU that includes nvshmem.h costs ~45 s of nvcc with
# GIN (~22 s without: the per-module GIN worker and every family's out-of-line bodies), and
# the full matrix made CI take over 20 minutes on 2 cores. The GPU build
# (scripts/gpu/build-device-tests.sh) compiles the family conformance programs against
# NCCL 2.28.3 and 2.31.2 headers, and -rdc programs, on every device run.
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
# Honours NVCC (default: .cuda/cuda/bin/nvcc when present, else nvcc on PATH),
# CUDA_HOST_CXX (the host compiler given to -ccbin; default g++) and JOBS (nvcc runs at
# once; default: the CPUs).
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
    nvshmem_sync_all nvshmem_barrier nvshmem_team_my_pe nvshmem_signal_fetch nvshmem_int_p
    nvshmem_int_put nvshmem_int_get_nbi nvshmem_int_iput nvshmem_half_iget nvshmem_put64_nbi
    nvshmem_iget128 nvshmem_uint64_atomic_fetch_xor nvshmem_double_atomic_set nvshmem_int_g
    nvshmem_int_atomic_compare_swap nvshmemx_mc_ptr)

status=0
last="${!#}"
for inc in "$@"; do
    if [ ! -f "$inc/nccl_device.h" ]; then
        echo "compile-device-headers.sh: $inc has no nccl_device.h" >&2
        exit 1
    fi
done

# Every (headers, TU, mode) is one nvcc job; up to JOBS (default: the CPUs) run at once, and
# the results are checked afterwards in order.
jobs_max="${JOBS:-$(nproc)}"
start=$SECONDS
jobs=()
for inc in "$@"; do
    version="$(sed -n 's/^#define NCCL_VERSION_CODE \([0-9]*\).*/\1/p' "$inc/nccl.h")"
    for source_file in "${sources[@]}"; do
        tu=$(basename "$source_file" .cu)
        modes=()
        if [ "$inc" = "$last" ]; then
            modes=(whole)
            [ "$tu" = compile_all ] && modes=(whole rdc nogin)
        elif [ "$tu" = compile_all ]; then
            modes=(whole)
        fi
        for mode in "${modes[@]}"; do
            extra=()
            [ "$mode" = rdc ] && extra=(-rdc=true)
            [ "$mode" = nogin ] && extra=(-DNIIN_DEVICE_GIN=0)
            [ "$mode" = whole ] && extra=(-Xptxas -v)
            job="$version.$tu.$mode"
            while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
            (
                t0=$SECONDS
                rc=0
                "$nvcc" "${flags[@]}" "${extra[@]}" -isystem "$inc" -c "$source_file" \
                    -o "$out/$job.o" >"$out/$job.log" 2>&1 || rc=$?
                echo "$rc $((SECONDS - t0))" >"$out/$job.rc"
            ) &
            jobs+=("$job|$inc")
        done
    done
done
wait

for entry in "${jobs[@]}"; do
    job="${entry%%|*}"
    inc="${entry#*|}"
    IFS=. read -r version tu mode <<<"$job"
    read -r rc secs <"$out/$job.rc"
    if [ "$rc" = 0 ]; then
        undefined="$(nm -u "$out/$job.o" | awk '{print $2}')"
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
                    if (r > 64 && k !~ /niin_gin_worker/) print k " " r; k = "" }' "$out/$job.log")"
            if [ -n "$over" ]; then
                echo "FAIL NCCL $version ($inc), $tu: kernels over 64 registers (a 1024-thread block cannot launch):"
                echo "$over"
                ok=0
                status=1
            fi
        fi
        [ $ok = 1 ] && echo "ok   NCCL $version ($inc), $tu, $mode (${secs} s)"
    else
        echo "FAIL NCCL $version ($inc), $tu, $mode:"
        cat "$out/$job.log"
        status=1
    fi
done
"$root/scripts/compile-examples.sh" "$last" || status=1 # examples/cuda/*.cu, newest NCCL
echo "     $((SECONDS - start)) s, $jobs_max jobs at a time"
exit $status
