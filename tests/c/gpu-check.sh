#!/usr/bin/env bash
# gpu-check.sh -- the C tests of tests/c on the GPU machine (see ../shared/GPU.md).
#
#   1-3  nvcc builds of the headers and the programs against niin-rs (-DNIIN_TEST_CUDA)
#   4    the NIIN_HAS_MPI path with real Open MPI: nvcc and mpicc (C11) builds, and a
#        2-PE run of the C11 build on the CPU mock under mpirun (the inline MPI_Bcast of
#        the unique ID)
#   5-6  host_api.c built against NVSHMEM 3.4.5 itself and run with 2 PEs (unique-ID
#        init over a file rendezvous; NVSHMEM's own MPI init), so that the test's
#        expectations are checked against the real library
#   7    host_api.c against niin-rs on the NCCL transport, 2 PEs (information: as far as
#        the NCCL transport of this build goes)
#
# Usage, from the repository root:
#   NIIN_HOME=<dir made by scripts/build-niin-home.sh> tests/c/gpu-check.sh
# Prints "RESULT <step> OK|FAIL|rc=<n>" lines among the build and run output.
set -o pipefail
export PATH=/usr/local/cuda/bin:$PATH
NV=${NVSHMEM_HOME:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nvshmem}
HOME_DIR=${NIIN_HOME:-$PWD/NIIN_HOME}
INC=$HOME_DIR/include
LIB=$HOME_DIR/lib
B=${BUILD_DIR:-/tmp/niin-c-gpu}
mkdir -p "$B"
step() { echo "=== $*"; }
ok() { if [ "$1" -eq 0 ]; then echo "RESULT $2 OK"; else echo "RESULT $2 FAIL"; fi; }
CUDA_FLAGS=(-x cu -std=c++17 -arch=sm_90 -Xcompiler -Wall,-Wextra)

step "versions"
nvcc --version | tail -2
mpicc --version | head -1

step "1 host_api.c with nvcc against niin-rs (CUDA branch)"
nvcc "${CUDA_FLAGS[@]}" -DNIIN_TEST_CUDA -I "$INC" -I tests/c tests/c/host_api.c \
    -o "$B/ha_niin" -L "$LIB" -lnvshmem_host
ok $? nvcc_host_api_niin

step "2 wrong_use.c with nvcc against niin-rs"
nvcc "${CUDA_FLAGS[@]}" -I "$INC" -I tests/c tests/c/wrong_use.c -o "$B/wu_niin" \
    -L "$LIB" -lnvshmem_host
ok $? nvcc_wrong_use_niin

step "3 a -rdc=true CUDA program with a kernel, including the headers"
cat > "$B/k.cu" <<'CU'
#include <nvshmem.h>
#include <nvshmemx.h>
__global__ void k(int *p) { if (p) *p = NVSHMEM_TEAM_WORLD; }
int main() {
    nvshmemx_init_attr_t a = NVSHMEMX_INIT_ATTR_INITIALIZER;
    (void)a;
    k<<<1, 1>>>(nullptr);
    return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
CU
nvcc -rdc=true -arch=sm_90 -std=c++17 -I "$INC" "$B/k.cu" -o "$B/k" -L "$LIB" -lnvshmem_host &&
    LD_LIBRARY_PATH=$LIB "$B/k"
ok $? nvcc_rdc_kernel

step "4 the NIIN_HAS_MPI path with Open MPI: nvcc, mpicc -std=c11, and a mock run"
# shellcheck disable=SC2046 # the MPI flags are word lists
nvcc "${CUDA_FLAGS[@]}" -DNIIN_TEST_CUDA -DNIIN_HAS_MPI -DOMPI_SKIP_MPICXX=1 \
    $(mpicc --showme:compile) -I "$INC" -I tests/c tests/c/host_api.c -o "$B/ha_niin_mpi" \
    -L "$LIB" -lnvshmem_host $(mpicc --showme:link)
ok $? nvcc_mpi_path
mpicc -std=c11 -Wall -Wextra -Werror -pedantic -DNIIN_HAS_MPI -I "$INC" -I tests/c \
    tests/c/host_api.c -o "$B/ha_c_mpi" -L "$LIB" -lnvshmem_host
ok $? mpicc_c11_mpi_path
LD_LIBRARY_PATH=$LIB NIIN_TRANSPORT=mock NVSHMEM_SYMMETRIC_SIZE=16M NIIN_TIMEOUT=30 \
    timeout 90 mpirun --allow-run-as-root --oversubscribe -np 2 -x LD_LIBRARY_PATH \
    -x NIIN_TRANSPORT -x NVSHMEM_SYMMETRIC_SIZE -x NIIN_TIMEOUT "$B/ha_c_mpi" mpi |
    grep -v '^PASS'
echo "RESULT run_niin_mock_mpi rc=$?"

step "5 host_api.c against NVSHMEM 3.4.5 (CUDA branch), unique-ID init, 2 PEs"
mkdir -p "$B/nvl" && ln -sf "$NV/lib/libnvshmem_host.so.3" "$B/nvl/libnvshmem_host.so"
nvcc -rdc=true "${CUDA_FLAGS[@]}" -DNIIN_TEST_CUDA -I "$NV/include" -I tests/c \
    tests/c/host_api.c -o "$B/ha_nv" -L "$B/nvl" -lnvshmem_host -L "$NV/lib" \
    -lnvshmem_device -lcuda
ok $? nvcc_host_api_nvshmem
rm -rf "$B/rv" && mkdir -p "$B/rv"
NIIN_RENDEZVOUS_DIR=$B/rv LD_LIBRARY_PATH=$NV/lib timeout 120 mpirun --allow-run-as-root \
    --oversubscribe -np 2 -x NIIN_RENDEZVOUS_DIR -x LD_LIBRARY_PATH "$B/ha_nv" uid |
    grep -v '^PASS'
echo "RESULT run_nvshmem_uid rc=$?"

step "6 host_api.c against NVSHMEM 3.4.5, its own MPI init, 2 PEs"
# shellcheck disable=SC2046
nvcc -rdc=true "${CUDA_FLAGS[@]}" -DNIIN_TEST_CUDA -DNIIN_HAS_MPI -DOMPI_SKIP_MPICXX=1 \
    $(mpicc --showme:compile) -I "$NV/include" -I tests/c tests/c/host_api.c -o "$B/ha_nv_mpi" \
    -L "$B/nvl" -lnvshmem_host -L "$NV/lib" -lnvshmem_device -lcuda $(mpicc --showme:link)
ok $? nvcc_nvshmem_mpi
LD_LIBRARY_PATH=$NV/lib timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 \
    -x LD_LIBRARY_PATH "$B/ha_nv_mpi" mpi | grep -v '^PASS'
echo "RESULT run_nvshmem_mpi rc=$?"

step "7 host_api.c (CUDA branch) against niin-rs on the NCCL transport, 2 PEs, MPI init"
LD_LIBRARY_PATH=$LIB${NCCL_LIB:+:$NCCL_LIB} NIIN_TRANSPORT=nccl NIIN_TIMEOUT=30 \
    NCCL_SOCKET_IFNAME=lo NCCL_NVLS_ENABLE=0 NCCL_MULTI_RANK_GPU_ENABLE=1 \
    timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 -x LD_LIBRARY_PATH \
    -x NIIN_TRANSPORT -x NIIN_TIMEOUT -x NCCL_SOCKET_IFNAME -x NCCL_NVLS_ENABLE \
    -x NCCL_MULTI_RANK_GPU_ENABLE "$B/ha_niin_mpi" mpi | grep -v '^PASS'
echo "RESULT run_niin_nccl_mpi rc=$?"
