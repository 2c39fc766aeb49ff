#!/usr/bin/env bash
# Builds, on this (CPU) machine, everything the GPU tests need and puts it in .gpu/
# (git-ignored), to be carried to the GPU machine together with .niin-nccl/:
#
#   .gpu/NIIN_HOME/{include,lib}   our headers and libnvshmem_host.so (scripts/build-niin-home.sh)
#   .gpu/bin/                      niinrun, niin-nccl-info, check_worker (release, stripped)
#   .gpu/dev{,-rma}.tar.xz         the device-API test programs, niin-rs and NVSHMEM builds
#                                  (scripts/gpu/build-device-tests.sh; nvcc and headers from
#                                  PyPI wheels, ~3 min on 2 cores)
#
# Then, on the GPU machine:
#   device run --carry .gpu/NIIN_HOME .gpu/bin .niin-nccl -- bash scripts/gpu/host-tests.sh
#   device run --carry .gpu/NIIN_HOME .gpu/bin .gpu/dev-rma.tar.xz .niin-nccl \
#       -- bash scripts/gpu/device-tests.sh conformance
#   device run --carry .gpu/NIIN_HOME .gpu/bin .gpu/dev.tar.xz .niin-nccl \
#       -- bash scripts/gpu/device-tests.sh families variants bandwidth latency context
# (all of .gpu with .niin-nccl is over the 64 MiB a command may carry: device-tests.sh says
# which archive each part needs)
#
# The NCCL 2.31.2 bundle comes from ../shared/tools/nccl-bundle (GPU.md):
#   ../shared/tools/nccl-bundle --version 2.31.2 --arch 90 --out .niin-nccl
set -euo pipefail
cd "$(dirname "$0")/../.."
rm -rf .gpu
mkdir -p .gpu/bin
bash scripts/build-niin-home.sh .gpu/NIIN_HOME
cargo build --release -p niin-api --bin niinrun -p niin-transport --bin niin-nccl-info -p niin-tests --bin check_worker
for b in niinrun niin-nccl-info check_worker; do
    cp "target/release/$b" .gpu/bin/
    strip .gpu/bin/$b
done
strip .gpu/NIIN_HOME/lib/libnvshmem_host.so
bash scripts/gpu/build-device-tests.sh
ls -la .niin-nccl/*.tar.xz >/dev/null
du -sh .gpu .niin-nccl
