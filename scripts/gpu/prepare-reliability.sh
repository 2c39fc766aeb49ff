#!/usr/bin/env bash
# prepare-reliability.sh -- builds, on this (CPU) machine, everything that
# scripts/gpu/reliability-tests.sh runs, into .gpu/ (git-ignored), in one command (about
# 12 minutes on 2 cores from a fresh clone; session 23 did these steps by hand):
#
#   .gpu/NIIN_HOME, .gpu/bin/{niinrun,niin-nccl-info,check_worker}   release, stripped
#   .gpu/bin/segv-trace.so   scripts/gpu/segv-trace.c, for reliability-tests.sh exit
#   .gpu/dev.tar.xz     dev/: the device-API programs (build-device-tests.sh, ONLY=...), the
#                       C programs of tests/c (nvcc -x cu), examples/cuda, cudarc_interop
#   .gpu/old/barrier_lat_old + .gpu/NH-old/lib   tests/gpu/barrier_lat.cu built against
#                       OLD_COMMIT (default 05ea054, the last tree with NCCL's LSA barrier),
#                       from a git worktree that is removed afterwards
#
# and checks that .gpu with .niin-nccl fits the 64 MiB a device command may carry. Needs
# .niin-nccl (../shared/tools/nccl-bundle --version 2.31.2 --arch 90 --out .niin-nccl);
# installs the nvcc toolchain into .cuda itself. Then, on the GPU machine (carry .gpu and
# .niin-nccl): bash scripts/gpu/reliability-tests.sh {min|a|b|all}.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
OLD_COMMIT=${OLD_COMMIT:-05ea054}
ls .niin-nccl/nccl-2.31.2-sm90.tar.xz >/dev/null ||
    { echo "prepare-reliability.sh: no .niin-nccl bundle (see the header)" >&2; exit 1; }
scripts/install-cuda-toolchain.sh .cuda >/dev/null
NVCC=$root/.cuda/cuda/bin/nvcc

rm -rf .gpu
mkdir -p .gpu/bin .gpu/old
cargo build --release -p niin-api --bin niinrun -p niin-transport --bin niin-nccl-info \
    -p niin-tests --bin check_worker
bash scripts/build-niin-home.sh .gpu/NIIN_HOME
for b in niinrun niin-nccl-info check_worker; do
    cp "target/release/$b" .gpu/bin/
done
strip .gpu/bin/* .gpu/NIIN_HOME/bin/niinrun .gpu/NIIN_HOME/lib/libnvshmem_host.so
# The `exit` part's fault reporter (LD_PRELOAD; the GPU machine has no gdb).
gcc -O1 -g -Wall -Wextra -Werror -shared -fPIC scripts/gpu/segv-trace.c -o .gpu/bin/segv-trace.so

ONLY="peer_death_device_231 barrier_lat_niin barrier_lat_nvshmem conf_team_231 conf_launch_231 \
coll_smoke_231 host_bench_niin host_bench_nvshmem device_rma_231 conf_signal_wait_231 \
conf_cumodule_231 cubin_231 context_one_231 conf_coll_231" bash scripts/gpu/build-device-tests.sh
# build-device-tests.sh packs two archives; reliability-tests.sh takes one, dev.tar.xz.
tar -xJf .gpu/dev.tar.xz -C .gpu
tar -xJf .gpu/dev-rma.tar.xz -C .gpu
rm .gpu/dev.tar.xz .gpu/dev-rma.tar.xz

NH=.gpu/NIIN_HOME
RPATH=(-Xlinker -rpath='$ORIGIN/../NIIN_HOME/lib')
for t in peer_death mismatch host_api; do
    "$NVCC" -O2 -arch=sm_90 -std=c++17 -DNIIN_NO_DEVICE_API -DNIIN_TEST_CUDA -I$NH/include \
        -x cu tests/c/$t.c -L$NH/lib -lnvshmem_host "${RPATH[@]}" -o .gpu/dev/$t
done
for e in ring allreduce moe_dispatch; do
    "$NVCC" -std=c++17 -O2 -arch=sm_90 -isystem .cuda/nccl-2.31.2/include -I$NH/include \
        examples/cuda/$e.cu -L$NH/lib -lnvshmem_host "${RPATH[@]}" -o .gpu/dev/ex_$e
done
cargo build --release -p niin-api --example cudarc_interop
cp target/release/examples/cudarc_interop .gpu/dev/
strip .gpu/dev/cudarc_interop

# The old tree: its library, and barrier_lat.cu (this tree's) against its headers.
old=$(mktemp -d)/old
git worktree add --detach "$old" "$OLD_COMMIT" >/dev/null
trap 'git worktree remove --force "$old"' EXIT
CARGO_TARGET_DIR=$root/target/old-$OLD_COMMIT bash "$old/scripts/build-niin-home.sh" "$root/.gpu/NH-old"
rm -rf .gpu/NH-old/bin .gpu/NH-old/include .gpu/NH-old/lib/cmake .gpu/NH-old/lib/pkgconfig
strip .gpu/NH-old/lib/libnvshmem_host.so
"$NVCC" -std=c++17 -O2 -arch=sm_90 -I"$old/device/include" -isystem .cuda/nccl-2.31.2/include \
    tests/gpu/barrier_lat.cu -L.gpu/NH-old/lib -lnvshmem_host \
    -Xlinker -rpath='$ORIGIN/../NH-old/lib' -o .gpu/old/barrier_lat_old

(cd .gpu && tar -cJf dev.tar.xz dev && rm -rf dev)
bytes=$(du -sb .gpu .niin-nccl | awk '{s += $1} END {print s}')
echo "prepare-reliability.sh: .gpu + .niin-nccl = $((bytes / 1048576)) MiB (limit 64)"
[ "$bytes" -lt $((64 * 1048576)) ] || { echo "prepare-reliability.sh: over 64 MiB" >&2; exit 1; }
