#!/usr/bin/env bash
# check-ptx.sh -- assembles, with ptxas and no GPU, the PTX modules that libnvshmem_host
# JIT-compiles at run time (niin-ptx prints them): host_ops.ptx for sm_75 (the oldest target of ptxas 13) and sm_90, the
# generated reduction kernels of host collectives (niin-transport/src/cuda/coll_kernels.rs)
# for sm_80 and sm_90. A PTX error otherwise shows only on a GPU, at the first use.
#
# Honours PTXAS (default: .cuda/cuda/bin/ptxas from scripts/install-cuda-toolchain.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
ptxas=${PTXAS:-.cuda/cuda/bin/ptxas}
[ -x "$ptxas" ] || { echo "check-ptx.sh: no ptxas at $ptxas (run scripts/install-cuda-toolchain.sh)" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cargo build -q -p niin-transport --bin niin-ptx
bin=target/debug/niin-ptx
"$bin" host >"$out/host.ptx"
"$bin" coll >"$out/coll.ptx"
for arch in sm_75 sm_90; do "$ptxas" -arch=$arch "$out/host.ptx" -o "$out/host_$arch.cubin"; done
for arch in sm_80 sm_90; do "$ptxas" -arch=$arch "$out/coll.ptx" -o "$out/coll_$arch.cubin"; done
echo "check-ptx.sh: host_ops.ptx (sm_75, sm_90) and $(grep -c '^.visible .entry' "$out/coll.ptx") reduction kernels (sm_80, sm_90) assemble"
