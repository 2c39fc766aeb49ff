#!/usr/bin/env bash
# GPU tests of the per-module device context (device/include/niin/context.h) and of the
# device-ABI check at init (niin-ffi/src/modules.rs). Run on the GPU machine from the
# repository root, with .gpu/ (scripts/gpu/prepare.sh) and .niin-nccl/ carried:
#
#   bash scripts/gpu/prepare.sh                      # here: .gpu/NIIN_HOME, .gpu/bin/niinrun
#   device run --carry .gpu .niin-nccl -- bash scripts/gpu/device-context-tests.sh
#
# Programs (tests/gpu), each built whole-program and with -rdc=true:
#   context_one_tu          one TU
#   context_two_tus         three TUs (context_two_tus_{a,b,main}.cu)
#   context_dlopen          a TU dlopen'ed after nvshmem_init (libcontext_b.so), whole-program
# Runs:
#   NCCL 2.28.3 (the image's; headers /usr/include), 1 PE
#   NCCL 2.28.9 (the torch venv's, if it has headers), 1 PE
#   NCCL 2.31.2 (the bundle), 1, 2 and 4 PEs on the one GPU; and NIIN_BARRIER_CTAS=64
#   refusals: 2.28.3 headers with NCCL 2.31.2, 2.31.2 headers with NCCL 2.28.3, 2.28.3
#   headers with NCCL 2.28.9 -- init must exit 1 with one NIIN: line naming both versions
#
# Until the device query API (niin/query.h) exists the programs are built with
# -DCONTEXT_TEST_NO_DEVICE_API (no device-side nvshmem_my_pe()/nvshmem_n_pes() check).
#
# Output: a log and a PASS/FAIL table in $OUT (or ./gpu-out when OUT is unset).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
LOG=$OUT/device-context.log
SUMMARY=$OUT/device-context-summary.txt
: >"$SUMMARY"
exec > >(tee -a "$LOG") 2>&1

export NCCL_NVLS_ENABLE=0 NCCL_SOCKET_IFNAME=lo NIIN_TIMEOUT=30 NIIN_TRANSPORT=nccl

NH=$PWD/.gpu/NIIN_HOME
BIN=$PWD/.gpu/bin
T=/tmp/niin-ctx
mkdir -p /tmp/nccl "$T"
tar -xJf .niin-nccl/nccl-2.31.2-sm90.tar.xz -C /tmp/nccl
NCCL231_LIB=/tmp/nccl/lib/libnccl.so.2
NCCL231_INC=/tmp/nccl/include
NCCL228_LIB=/usr/lib/x86_64-linux-gnu/libnccl.so.2
NCCL228_INC=/usr/include
TORCH_NCCL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl
NCCL2289_LIB=$TORCH_NCCL/lib/libnccl.so.2
NCCL2289_INC=$TORCH_NCCL/include

row() { printf '%-72s %s\n' "$1" "$2" | tee -a "$SUMMARY"; }
run() { # name, command...
    local name=$1; shift
    echo "=== $name: $*"
    if timeout 180 "$@"; then row "$name" PASS; else row "$name" "FAIL (rc=$?)"; fi
}
# Runs a program whose init must be refused: exit status 1 and every pattern on its output.
expect_refusal() { # name, "pattern|pattern|...", command...
    local name=$1 patterns=$2; shift 2
    echo "=== $name (expect a refusal): $*"
    local out rc ok=1
    out=$(timeout 180 "$@" 2>&1); rc=$?
    echo "$out"
    [ "$rc" -eq 1 ] || ok=0
    IFS='|' read -ra pats <<<"$patterns"
    for p in "${pats[@]}"; do grep -qF -- "$p" <<<"$out" || { echo "missing: $p"; ok=0; }; done
    grep -q 'NIIN: nvshmem_init: CUDA module' <<<"$out" || ok=0
    if [ $ok -eq 1 ]; then row "$name" PASS; else row "$name" "FAIL (rc=$rc)"; fi
}

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nvcc --version | tail -1

DEVAPI=""
[ -f "$NH/include/niin/query.h" ] || DEVAPI="-DCONTEXT_TEST_NO_DEVICE_API"
CUFLAGS="-std=c++17 -O2 -arch=sm_90 $DEVAPI -I$NH/include"
LINK="-L$NH/lib -lnvshmem_host -Xlinker -rpath=$NH/lib"
build() { # out, nccl include dir, extra flags and sources...
    local out=$1 inc=$2; shift 2
    echo "--- build $out"
    nvcc $CUFLAGS -isystem "$inc" "$@" $LINK -o "$T/$out" || row "build $out" FAIL
}
ONE=tests/gpu/context_one_tu.cu
TWO="tests/gpu/context_two_tus_a.cu tests/gpu/context_two_tus_b.cu tests/gpu/context_two_tus_main.cu"

echo "=== build"
for v in 231:$NCCL231_INC 228:$NCCL228_INC; do
    tag=${v%%:*} inc=${v#*:}
    build one_$tag "$inc" $ONE
    build one_rdc_$tag "$inc" -rdc=true $ONE
    build two_$tag "$inc" $TWO
    build two_rdc_$tag "$inc" -rdc=true $TWO
done
build libcontext_b.so "$NCCL231_INC" -shared -Xcompiler -fPIC tests/gpu/context_two_tus_b.cu
build dlopen_231 "$NCCL231_INC" tests/gpu/context_dlopen_main.cu -ldl
HAVE2289=0
if [ -f "$NCCL2289_INC/nccl_device.h" ] && [ -f "$NCCL2289_LIB" ]; then
    HAVE2289=1
    build one_2289 "$NCCL2289_INC" $ONE
fi

NR="$BIN/niinrun --timeout 150"

echo "=== NCCL 2.28.3 (image), 1 PE"
for p in one_228 one_rdc_228 two_228 two_rdc_228; do
    run "$p, 1 PE, NCCL 2.28.3" env NIIN_NCCL_LIBRARY=$NCCL228_LIB $NR -n 1 "$T/$p"
done
if [ $HAVE2289 -eq 1 ]; then
    echo "=== NCCL 2.28.9 (torch venv), 1 PE"
    run "one_2289, 1 PE, NCCL 2.28.9" env NIIN_NCCL_LIBRARY=$NCCL2289_LIB $NR -n 1 "$T/one_2289"
fi

echo "=== NCCL 2.31.2 (bundle), 1/2/4 PEs on one GPU"
for n in 1 2 4; do
    for p in one_231 one_rdc_231 two_231 two_rdc_231; do
        run "$p, $n PE(s), NCCL 2.31.2" env NIIN_NCCL_LIBRARY=$NCCL231_LIB NCCL_MULTI_RANK_GPU_ENABLE=1 \
            $NR -n $n "$T/$p"
    done
    run "dlopen_231, $n PE(s), NCCL 2.31.2" env NIIN_NCCL_LIBRARY=$NCCL231_LIB NCCL_MULTI_RANK_GPU_ENABLE=1 \
        CONTEXT_DLOPEN_LIB=$T/libcontext_b.so $NR -n $n "$T/dlopen_231"
done
run "one_231, 2 PEs, NIIN_BARRIER_CTAS=64" env NIIN_NCCL_LIBRARY=$NCCL231_LIB NCCL_MULTI_RANK_GPU_ENABLE=1 \
    NIIN_BARRIER_CTAS=64 $NR -n 2 "$T/one_231"

echo "=== refusals at init"
expect_refusal "2.28.3 headers with NCCL 2.31.2: refused" \
    "NCCL 2.28.3 headers|loaded NCCL is 2.31.2|not backwards compatible" \
    env NIIN_NCCL_LIBRARY=$NCCL231_LIB $NR -n 1 "$T/one_228"
expect_refusal "2.31.2 headers with NCCL 2.28.3: refused" \
    "NCCL 2.31.2 headers|loaded NCCL is 2.28.3|newer than the library" \
    env NIIN_NCCL_LIBRARY=$NCCL228_LIB $NR -n 1 "$T/one_231"
if [ $HAVE2289 -eq 1 ]; then
    expect_refusal "2.28.3 headers with NCCL 2.28.9: refused (88 vs 200 B)" \
        "NCCL 2.28.3 headers|loaded NCCL is 2.28.9|corrupt memory" \
        env NIIN_NCCL_LIBRARY=$NCCL2289_LIB $NR -n 1 "$T/one_228"
fi

echo "=== summary"
cat "$SUMMARY"
! grep -q FAIL "$SUMMARY"
