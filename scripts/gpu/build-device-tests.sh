#!/usr/bin/env bash
# Builds, on this (CPU) machine, the device-API GPU test programs of tests/gpu into two
# archives (git-ignored), for scripts/gpu/device-tests.sh, which unpacks whichever are there
# into .gpu/dev/:
#   .gpu/dev-rma.tar.xz   device_rma_* (device-tests.sh's conformance part), ~6 MB
#   .gpu/dev.tar.xz       every other program (families, variants, bandwidth, latency,
#                         context), ~19 MB
# Two, because what is carried to the GPU machine may not exceed 64 MiB and the NCCL bundle
# takes 33 of it: since session 9 (~31 MB in one archive) the two no longer fit together
# with it; device-tests.sh says which parts need which. Called by scripts/gpu/prepare.sh after
# .gpu/NIIN_HOME exists.
#
# Toolchain: nvcc 13.0 and NCCL headers 2.28.3 (the GPU machine's own NCCL), 2.28.9 (its
# torch venv's) and 2.31.2 (the bundle) from scripts/install-cuda-toolchain.sh (.cuda/);
# NVSHMEM 3.4.5 (headers, libnvshmem_host.so.3, libnvshmem_device.a) from the
# nvidia-nvshmem-cu13 wheel into .cuda/nvshmem-3.4.5 (downloaded once), the same release
# as the GPU machine's (GPU.md).
#
# niin-rs programs (rpath $ORIGIN/../NIIN_HOME/lib, i.e. .gpu/NIIN_HOME/lib):
#   context_{one,one_rdc,two,two_rdc}_{228,231}, context_one_2289, libcontext_b.so and
#   context_dlopen_231            the per-module device context (whole-program and -rdc)
#   device_rma_{228,231}          the conformance test, whole-program
#   device_rma_rdc_231            the same, -rdc=true
#   putmem_block_bw_niin[_nogin]  device put bandwidth (_nogin: -DNIIN_DEVICE_GIN=0)
#   latency_niin[_nogin]          device latency and small-operation throughput
#   coll_bw_niin                  device collectives' time and bandwidth, and NCCL's (-ldl)
#   host_bench_niin               host API speed: barrier/sync_all_on_stream, blocking putmem
#                                 bandwidth, malloc + free (issue 14)
#   coll_smoke_231[_dbg]          one collective of each kind, a host watchdog naming a hung
#                                 step (_dbg: -DNIIN_DEBUG_LL=1, stuck LL waits printed)
#   peer_death_device_{231,228}   a PE killed (or stalled) while the others wait in a device
#                                 barrier: their kernels stop naming it (issue 15 part 7)
#   barrier_lat_niin              device barrier latency (nvshmem_barrier_all, sync_all,
#                                 their _block forms); barrier_lat_nvshmem the same source
# NVSHMEM 3.4.5 programs (-rdc=true, rpath: the GPU machine's NVSHMEM in the torch venv):
#   device_rma_nvshmem, putmem_block_bw_nvshmem, latency_nvshmem
#   coll_bw_nvshmem, host_bench_nvshmem
# Per family (tests/gpu/conf_<family>.cu): conf_<family>_{231,228} and conf_<family>_nvshmem.
# cubin/conf_cumodule_{231,228,nvshmem}{,.rdc}.cubin: the driver-API modules of conf_cumodule.
# Every niin-rs build has warnings as errors. Jobs run two at a time (CI-sized machine).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
NIIN_NCCL_HEADERS="2.28.3 2.28.9 2.31.2" scripts/install-cuda-toolchain.sh .cuda >/dev/null
NVCC=$root/.cuda/cuda/bin/nvcc
NH=$root/.gpu/NIIN_HOME
OUTD=$root/.gpu/dev
[ -f "$NH/lib/libnvshmem_host.so" ] || { echo "build-device-tests.sh: no $NH (run prepare.sh)" >&2; exit 1; }

# NVSHMEM 3.4.5 from its wheel (the GPU machine's release; GPU.md).
NVS=$root/.cuda/nvshmem-3.4.5
if [ ! -f "$NVS/lib/libnvshmem_device.a" ]; then
    tmp=$(mktemp -d)
    python3 -m pip download --no-deps --disable-pip-version-check --quiet -d "$tmp" nvidia-nvshmem-cu13==3.4.5
    python3 - "$tmp"/*.whl "$NVS" <<'EOF'
import os, sys, zipfile
wheel, dest = sys.argv[1:3]
prefix = "nvidia/nvshmem/"
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        name = info.filename
        if not name.startswith(prefix) or info.is_dir():
            continue
        rel = name[len(prefix):]
        if not (rel.startswith("include/") or rel in ("lib/libnvshmem_host.so.3", "lib/libnvshmem_device.a")):
            continue
        out = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with z.open(info) as src, open(out, "wb") as dst:
            dst.write(src.read())
EOF
    rm -rf "$tmp"
    ln -sf libnvshmem_host.so.3 "$NVS/lib/libnvshmem_host.so"
fi
# Where NVSHMEM lives on the GPU machine (GPU.md).
NVS_REMOTE=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nvshmem/lib

# ONLY="name ..." builds just those programs, keeping what an earlier build left in .gpu/dev
# (unpacked from .gpu/dev.tar.xz): a quicker rebuild of the programs a change touched.
if [ -n "${ONLY:-}" ]; then
    if [ ! -d "$OUTD" ]; then
        for a in "$root/.gpu/dev.tar.xz" "$root/.gpu/dev-rma.tar.xz"; do
            if [ -f "$a" ]; then tar -xJf "$a" -C "$root/.gpu"; fi
        done
    fi
else
    rm -rf "$OUTD"
fi
mkdir -p "$OUTD" "$OUTD/logs"
STRICT=(-std=c++17 -O2 -arch=sm_90 -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror)
NIIN_LINK=(-L"$NH/lib" -lnvshmem_host -Xlinker -rpath='$ORIGIN/../NIIN_HOME/lib')

names=()
# Each job writes its exit status to logs/<name>.rc: `wait PID` cannot be trusted for it, as
# the throttle's `jobs` may have reaped the job already ("pid ... is not a child of this
# shell": a long build reported finished jobs as failed).
job() { # name, command... (two at a time)
    local name=$1; shift
    if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then return 0; fi
    while [ "$(jobs -rp | wc -l)" -ge 2 ]; do sleep 0.2; done
    ("$@" >"$OUTD/logs/$name.log" 2>&1; echo $? >"$OUTD/logs/$name.rc") &
    names+=("$name")
}
niin() { # out, NCCL version, extra flags and sources...
    local out=$1 v=$2; shift 2
    job "$out" "$NVCC" "${STRICT[@]}" -I"$root/device/include" -isystem "$root/.cuda/nccl-$v/include" \
        "$@" "${NIIN_LINK[@]}" -o "$OUTD/$out"
}

ONE=tests/gpu/context_one_tu.cu
TWO="tests/gpu/context_two_tus_a.cu tests/gpu/context_two_tus_b.cu tests/gpu/context_two_tus_main.cu"
niin device_rma_231 2.31.2 tests/gpu/device_rma.cu
job device_rma_nvshmem "$NVCC" -std=c++17 -O2 -arch=sm_90 -rdc=true -DTEST_NVSHMEM -I"$NVS/include" \
    tests/gpu/device_rma.cu -L"$NVS/lib" -lnvshmem_host -lnvshmem_device -Xlinker -rpath="$NVS_REMOTE" \
    -o "$OUTD/device_rma_nvshmem"
niin device_rma_rdc_231 2.31.2 -rdc=true tests/gpu/device_rma.cu
niin device_rma_228 2.28.3 tests/gpu/device_rma.cu
niin putmem_block_bw_niin 2.31.2 tests/gpu/putmem_block_bw.cu
niin putmem_block_bw_niin_nogin 2.31.2 -DNIIN_DEVICE_GIN=0 tests/gpu/putmem_block_bw.cu
job putmem_block_bw_nvshmem "$NVCC" -std=c++17 -O2 -arch=sm_90 -rdc=true -I"$NVS/include" \
    tests/gpu/putmem_block_bw.cu -L"$NVS/lib" -lnvshmem_host -lnvshmem_device -Xlinker -rpath="$NVS_REMOTE" \
    -o "$OUTD/putmem_block_bw_nvshmem"
niin latency_niin 2.31.2 tests/gpu/latency.cu
niin latency_niin_nogin 2.31.2 -DNIIN_DEVICE_GIN=0 tests/gpu/latency.cu
job latency_nvshmem "$NVCC" -std=c++17 -O2 -arch=sm_90 -rdc=true -DTEST_NVSHMEM -I"$NVS/include" \
    tests/gpu/latency.cu -L"$NVS/lib" -lnvshmem_host -lnvshmem_device -Xlinker -rpath="$NVS_REMOTE" \
    -o "$OUTD/latency_nvshmem"
niin coll_bw_niin 2.31.2 tests/gpu/coll_bw.cu -ldl
niin host_bench_niin 2.31.2 tests/gpu/host_bench.cu
job host_bench_nvshmem "$NVCC" -std=c++17 -O2 -arch=sm_90 -rdc=true -I"$NVS/include" \
    tests/gpu/host_bench.cu -L"$NVS/lib" -lnvshmem_host -lnvshmem_device -Xlinker -rpath="$NVS_REMOTE" \
    -o "$OUTD/host_bench_nvshmem"
niin coll_smoke_231 2.31.2 tests/gpu/coll_smoke.cu
niin coll_smoke_dbg_231 2.31.2 -DNIIN_DEBUG_LL=1 tests/gpu/coll_smoke.cu
niin peer_death_device_231 2.31.2 tests/gpu/peer_death_device.cu
niin peer_death_device_228 2.28.3 tests/gpu/peer_death_device.cu
niin barrier_lat_niin 2.31.2 tests/gpu/barrier_lat.cu
job barrier_lat_nvshmem "$NVCC" -std=c++17 -O2 -arch=sm_90 -rdc=true -I"$NVS/include" \
    tests/gpu/barrier_lat.cu -L"$NVS/lib" -lnvshmem_host -lnvshmem_device -Xlinker -rpath="$NVS_REMOTE" \
    -o "$OUTD/barrier_lat_nvshmem"
job coll_bw_nvshmem "$NVCC" -std=c++17 -O2 -arch=sm_90 -rdc=true -DTEST_NVSHMEM -I"$NVS/include" \
    tests/gpu/coll_bw.cu -L"$NVS/lib" -lnvshmem_host -lnvshmem_device -Xlinker -rpath="$NVS_REMOTE" \
    -o "$OUTD/coll_bw_nvshmem"
for vt in 2.31.2:231 2.28.3:228; do
    v=${vt%%:*} tag=${vt#*:}
    niin context_one_$tag "$v" $ONE
    niin context_one_rdc_$tag "$v" -rdc=true $ONE
    # shellcheck disable=SC2086
    niin context_two_$tag "$v" $TWO
    # shellcheck disable=SC2086
    niin context_two_rdc_$tag "$v" -rdc=true $TWO
done
niin context_one_2289 2.28.9 $ONE
# The per-family conformance programs (tests/gpu/conf_*.cu, conf_harness.h): each against
# NCCL 2.31.2 and 2.28.3 headers and against NVSHMEM 3.4.5.
for src in tests/gpu/conf_*.cu; do
    [ -e "$src" ] || continue
    name=$(basename "$src" .cu)
    niin ${name}_231 2.31.2 "$src"
    niin ${name}_228 2.28.3 "$src"
    job ${name}_nvshmem "$NVCC" -std=c++17 -O2 -arch=sm_90 -rdc=true -DTEST_NVSHMEM -I"$NVS/include" \
        "$src" -L"$NVS/lib" -lnvshmem_host -lnvshmem_device -Xlinker -rpath="$NVS_REMOTE" \
        -o "$OUTD/${name}_nvshmem"
done
# Driver-API modules for tests/gpu/conf_cumodule.cu: tests/gpu/cumodule_kernels.cu without host
# code, in dev/cubin/ (the strip below skips folders; it does not know cubins), per program
# conf_cumodule_<tag>: <program>.cubin (one TU, -cubin; NVSHMEM: -rdc=true and nvlink'ed with
# libnvshmem_device.a) and <program>.rdc.cubin (two TUs, -rdc=true -cubin, nvlink'ed).
CUBIN=$OUTD/cubin
NVLINK=$root/.cuda/cuda/bin/nvlink
KSRC=tests/gpu/cumodule_kernels.cu
mkdir -p "$CUBIN"
cubin_niin() { # tag, NCCL version
    local out=$CUBIN/conf_cumodule_$1 inc=(-I"$root/device/include" -isystem "$root/.cuda/nccl-$2/include")
    "$NVCC" "${STRICT[@]}" "${inc[@]}" -cubin "$KSRC" -o "$out.cubin" &&
        "$NVCC" "${STRICT[@]}" "${inc[@]}" -rdc=true -cubin "$KSRC" -o "$out.a.cubin" &&
        "$NVCC" "${STRICT[@]}" "${inc[@]}" -rdc=true -cubin -DCUMODULE_TU=1 "$KSRC" -o "$out.b.cubin" &&
        "$NVLINK" -arch=sm_90 "$out.a.cubin" "$out.b.cubin" -o "$out.rdc.cubin" && rm "$out.a.cubin" "$out.b.cubin"
}
cubin_nvshmem() {
    local out=$CUBIN/conf_cumodule_nvshmem nv=(-std=c++17 -O2 -arch=sm_90 -rdc=true -I"$NVS/include")
    "$NVCC" "${nv[@]}" -cubin "$KSRC" -o "$out.a.cubin" &&
        "$NVCC" "${nv[@]}" -cubin -DCUMODULE_TU=1 "$KSRC" -o "$out.b.cubin" &&
        "$NVLINK" -arch=sm_90 "$out.a.cubin" "$NVS/lib/libnvshmem_device.a" -o "$out.cubin" &&
        "$NVLINK" -arch=sm_90 "$out.a.cubin" "$out.b.cubin" "$NVS/lib/libnvshmem_device.a" -o "$out.rdc.cubin" &&
        rm "$out.a.cubin" "$out.b.cubin"
}
job cubin_231 cubin_niin 231 2.31.2
job cubin_228 cubin_niin 228 2.28.3
job cubin_nvshmem cubin_nvshmem
niin libcontext_b.so 2.31.2 -shared -Xcompiler -fPIC tests/gpu/context_two_tus_b.cu
niin context_dlopen_231 2.31.2 tests/gpu/context_dlopen_main.cu -ldl

failed=0
wait
for i in "${!names[@]}"; do
    if [ "$(cat "$OUTD/logs/${names[$i]}.rc" 2>/dev/null)" != 0 ]; then
        echo "build-device-tests.sh: ${names[$i]} failed:" >&2
        cat "$OUTD/logs/${names[$i]}.log" >&2
        failed=1
    fi
done
[ $failed -eq 0 ] || exit 1
# The NVSHMEM programs may warn in NVSHMEM's own headers; ours must not.
for f in "$OUTD"/logs/*.log; do
    case $f in *nvshmem*) continue ;; esac
    if [ -s "$f" ]; then
        echo "build-device-tests.sh: $(basename "$f" .log) printed:" >&2
        cat "$f" >&2
        exit 1
    fi
done
rm -rf "$OUTD/logs"
# (Not every file is an executable: with ONLY the unpacked folder holds nvshmem_host.md5,
# and a failed strip must not end the script under set -e before the tar is rewritten.)
for f in "$OUTD"/*; do if [ -f "$f" ]; then strip "$f" 2>/dev/null || true; fi; done
md5sum "$NVS/lib/libnvshmem_host.so.3" | cut -d' ' -f1 >"$OUTD/nvshmem_host.md5"
du -sh "$OUTD"
(
    cd "$root/.gpu"
    rma=(dev/device_rma_*)
    # (ONLY without an earlier dev-rma.tar.xz may have built none of them)
    if [ -e "${rma[0]}" ]; then tar -cJf dev-rma.tar.xz dev/nvshmem_host.md5 "${rma[@]}"; fi
    tar -cJf dev.tar.xz --exclude='dev/device_rma_*' dev
)
rm -rf "$OUTD"
ls -la "$root"/.gpu/dev*.tar.xz
