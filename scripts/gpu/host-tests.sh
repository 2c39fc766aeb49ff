#!/usr/bin/env bash
# The host-side GPU proof of niin-rs, run on the GPU machine from the repository root with
# .gpu/ (scripts/gpu/prepare.sh) and .niin-nccl/ carried. One and the same build runs:
#
#   1. the NCCL loader against the image's NCCL 2.28.3 and the 2.31.2 bundle;
#   2. the C host-API conformance program (tests/c, NVSHMEM API only) with 1 PE on
#      NCCL 2.28.3 and with 2 and 4 PEs on one GPU on NCCL 2.31.2 (also a plain
#      nvshmem_init under mpirun), host_rma.c (typed RMA, atomics) and graph_capture.c
#      (stream operations in a CUDA graph) with 2 and 4 PEs;
#   3. the Rust conformance checks (tests/src/checks.rs, through check_worker) on the NCCL
#      transport, same PE counts;
#   4. putmem_on_stream bandwidth, niin-rs and NVSHMEM 3.4.5 side by side, 2 PEs.
#
# Output: a log and a summary table in $OUT (or ./gpu-out when OUT is unset).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
LOG=$OUT/host-tests.log
SUMMARY=$OUT/summary.txt
: >"$SUMMARY"
exec > >(tee -a "$LOG") 2>&1

# NVLink multicast stays off (GPU.md / KINDS.md); NCCL bootstraps over loopback.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export NCCL_SOCKET_IFNAME=lo NIIN_TIMEOUT=30
# Both libraries get the same heap, large enough for the 256 MiB bandwidth buffer.
export NVSHMEM_SYMMETRIC_SIZE=1G

NH=$PWD/.gpu/NIIN_HOME
BIN=$PWD/.gpu/bin
NV=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nvshmem
NCCL228=/usr/lib/x86_64-linux-gnu/libnccl.so.2
mkdir -p /tmp/nccl /tmp/niin-t /tmp/nvshmem-lib
tar -xJf .niin-nccl/nccl-2.31.2-sm90.tar.xz -C /tmp/nccl
NCCL231=/tmp/nccl/lib/libnccl.so.2
ln -sf "$NV/lib/libnvshmem_host.so.3" /tmp/nvshmem-lib/libnvshmem_host.so

row() { printf '%-58s %s\n' "$1" "$2" | tee -a "$SUMMARY"; }
run() { # name, command...
    local name=$1; shift
    echo "=== $name: $*"
    if timeout 150 "$@"; then row "$name" PASS; else row "$name" "FAIL (rc=$?)"; fi
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
nvcc --version | tail -1

echo "=== build test programs"
# Host-only programs: no device API (NIIN_NO_DEVICE_API: no NCCL headers, no device
# context; the device API has its own tests, scripts/gpu/device-tests.sh).
CUFLAGS="-O2 -arch=sm_90 -std=c++17 -DNIIN_NO_DEVICE_API"
build() { # out, source, extra...
    local out=$1 src=$2; shift 2
    nvcc $CUFLAGS -x cu "$src" -o "/tmp/niin-t/$out" "$@" || row "build $out" FAIL
}
build host_api tests/c/host_api.c -DNIIN_TEST_CUDA -I"$NH/include" -Itests/c -L"$NH/lib" -lnvshmem_host -Xlinker -rpath="$NH/lib"
build host_rma tests/c/host_rma.c -DNIIN_TEST_CUDA -DNIIN_TEST_FP16 -I"$NH/include" -Itests/c -L"$NH/lib" -lnvshmem_host -Xlinker -rpath="$NH/lib"
build graph_capture tests/c/graph_capture.c -DNIIN_TEST_CUDA -I"$NH/include" -Itests/c -L"$NH/lib" -lnvshmem_host -Xlinker -rpath="$NH/lib"
build host_api_mpi tests/c/host_api.c -DNIIN_TEST_CUDA -DNIIN_HAS_MPI $(mpicc --showme:compile) -DOMPI_SKIP_MPICXX=1 \
    -I"$NH/include" -Itests/c -L"$NH/lib" -lnvshmem_host $(mpicc --showme:link) -Xlinker -rpath="$NH/lib"
build bw_niin tests/gpu/putmem_bw.cu -I"$NH/include" -L"$NH/lib" -lnvshmem_host -Xlinker -rpath="$NH/lib"
MPIC="$(mpicc --showme:compile) -DOMPI_SKIP_MPICXX=1"
MPIL="$(mpicc --showme:link)"
build bw_nvshmem tests/gpu/putmem_bw.cu -rdc=true -DUSE_MPI_UID $MPIC -I"$NV/include" \
    -L/tmp/nvshmem-lib -L"$NV/lib" -lnvshmem_host -lnvshmem_device -lcuda $MPIL -Xlinker -rpath="$NV/lib"
build bw_niin_mpi tests/gpu/putmem_bw.cu -DUSE_MPI_UID $MPIC -I"$NH/include" -L"$NH/lib" -lnvshmem_host \
    $MPIL -Xlinker -rpath="$NH/lib"

echo "=== 1. loader"
run "loader: image NCCL 2.28.3" env NIIN_NCCL_LIBRARY=$NCCL228 "$BIN/niin-nccl-info"
run "loader: bundle NCCL 2.31.2" env NIIN_NCCL_LIBRARY=$NCCL231 "$BIN/niin-nccl-info"

echo "=== 2. C host-API program"
run "C host API, 1 PE, NCCL 2.28.3" env NIIN_TRANSPORT=nccl NIIN_NCCL_LIBRARY=$NCCL228 \
    "$BIN/niinrun" -n 1 --timeout 120 /tmp/niin-t/host_api
for n in 2 4; do
    run "C host API, $n PEs on one GPU, NCCL 2.31.2" env NIIN_TRANSPORT=nccl NIIN_NCCL_LIBRARY=$NCCL231 \
        NCCL_MULTI_RANK_GPU_ENABLE=1 "$BIN/niinrun" -n $n --timeout 120 /tmp/niin-t/host_api
done
run "C host API, unique-id init, 2 PEs, NCCL 2.31.2" env NIIN_TRANSPORT=nccl NIIN_NCCL_LIBRARY=$NCCL231 \
    NCCL_MULTI_RANK_GPU_ENABLE=1 "$BIN/niinrun" -n 2 --timeout 120 /tmp/niin-t/host_api uid
run "C host API, MPI init (NIIN_HAS_MPI), 2 PEs, NCCL 2.31.2" env NIIN_TRANSPORT=nccl NIIN_NCCL_LIBRARY=$NCCL231 \
    NCCL_MULTI_RANK_GPU_ENABLE=1 mpirun --allow-run-as-root --oversubscribe -np 2 \
    -x NIIN_TRANSPORT -x NIIN_NCCL_LIBRARY -x NCCL_MULTI_RANK_GPU_ENABLE -x NCCL_NVLS_ENABLE -x NCCL_SOCKET_IFNAME \
    /tmp/niin-t/host_api_mpi mpi

# A plain nvshmem_init under Open MPI: no NIIN_RENDEZVOUS, no unique-id file (the one-node
# default rendezvous, keyed by Open MPI's job id).
for n in 2 4; do
    run "C host API, plain init under mpirun, $n PEs, NCCL 2.31.2" env NIIN_TRANSPORT=nccl \
        NIIN_NCCL_LIBRARY=$NCCL231 NCCL_MULTI_RANK_GPU_ENABLE=1 mpirun --allow-run-as-root --oversubscribe \
        -np $n -x NIIN_TRANSPORT -x NIIN_NCCL_LIBRARY -x NCCL_MULTI_RANK_GPU_ENABLE -x NCCL_NVLS_ENABLE \
        -x NCCL_SOCKET_IFNAME /tmp/niin-t/host_api env
done
# Host-initiated typed RMA and atomics; stream operations inside CUDA graph capture.
for prog in host_rma graph_capture; do
    for n in 2 4; do
        run "C $prog, $n PEs on one GPU, NCCL 2.31.2" env NIIN_TRANSPORT=nccl NIIN_NCCL_LIBRARY=$NCCL231 \
            NCCL_MULTI_RANK_GPU_ENABLE=1 "$BIN/niinrun" -n $n --timeout 120 /tmp/niin-t/$prog
    done
done

echo "=== 3. Rust conformance checks on the NCCL transport"
CHECKS="rma_every_type strided_every_type scalar_every_type ring_put all_to_all_put put_signal_set_and_add signal_ping_pong wait_until_every_type_and_cmp wait_until_all_and_vector atomics_every_op atomic_contention barrier_repeated stream_orders_put_after_wait stream_operations teams_split_translate_barrier team_barrier_on_stream collectives_every_type collectives_on_stream collectives_team_shapes collectives_bad_input heap_symmetric bad_input"
run "Rust checks, 1 PE, NCCL 2.28.3" env NIIN_TRANSPORT=nccl NIIN_NCCL_LIBRARY=$NCCL228 \
    "$BIN/niinrun" -n 1 --timeout 120 "$BIN/check_worker" bad_input heap_symmetric collectives_every_type \
    collectives_on_stream
for n in 2 4; do
    run "Rust checks, $n PEs on one GPU, NCCL 2.31.2" env NIIN_TRANSPORT=nccl NIIN_NCCL_LIBRARY=$NCCL231 \
        NCCL_MULTI_RANK_GPU_ENABLE=1 "$BIN/niinrun" -n $n --timeout 120 "$BIN/check_worker" $CHECKS
done
# The world's host collectives go through NCCL's own where NCCL has the type and operator (the
# default); NIIN_HOST_COLL=lsa keeps every one on niin-rs's copy engines and reduction kernels.
for n in 1 2 4; do
    run "Rust collective checks, $n PE(s), NIIN_HOST_COLL=lsa" env NIIN_TRANSPORT=nccl \
        NIIN_NCCL_LIBRARY=$NCCL231 NCCL_MULTI_RANK_GPU_ENABLE=1 NIIN_HOST_COLL=lsa "$BIN/niinrun" -n $n \
        --timeout 120 "$BIN/check_worker" collectives_every_type collectives_on_stream collectives_team_shapes
done

echo "=== 4. putmem_on_stream bandwidth, 2 PEs on one GPU (time-sliced; bandwidth is meaningful)"
run "bandwidth niin-rs (niinrun, nvshmem_init)" env NIIN_TRANSPORT=nccl NIIN_NCCL_LIBRARY=$NCCL231 \
    NCCL_MULTI_RANK_GPU_ENABLE=1 "$BIN/niinrun" -n 2 --timeout 120 /tmp/niin-t/bw_niin
run "bandwidth niin-rs (mpirun, unique-id init)" env NIIN_TRANSPORT=nccl NIIN_NCCL_LIBRARY=$NCCL231 \
    NCCL_MULTI_RANK_GPU_ENABLE=1 mpirun --allow-run-as-root --oversubscribe -np 2 \
    -x NIIN_TRANSPORT -x NIIN_NCCL_LIBRARY -x NCCL_MULTI_RANK_GPU_ENABLE -x NCCL_NVLS_ENABLE -x NCCL_SOCKET_IFNAME \
    -x NVSHMEM_SYMMETRIC_SIZE /tmp/niin-t/bw_niin_mpi
run "bandwidth NVSHMEM 3.4.5 (mpirun, unique-id init)" mpirun --allow-run-as-root --oversubscribe -np 2 \
    -x NVSHMEM_DISABLE_NVLS -x NVSHMEM_SYMMETRIC_SIZE -x LD_LIBRARY_PATH=$NV/lib /tmp/niin-t/bw_nvshmem
# (no tee here: the log is being written by this very script's output)
sed -n '/^=== 4\./,$p' "$LOG" | grep -h "^=== bandwidth\|putmem_on_stream [0-9]\|data check" >"$OUT/bandwidth.txt"
cat "$OUT/bandwidth.txt" >>"$SUMMARY"
echo "=== summary"
cat "$SUMMARY"
