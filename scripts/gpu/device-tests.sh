#!/usr/bin/env bash
# The device-API GPU proof of niin-rs: run on the GPU machine from the repository root, with
# .gpu/ (scripts/gpu/prepare.sh, which builds every program here with
# scripts/gpu/build-device-tests.sh) and .niin-nccl/ carried:
#
#   bash scripts/gpu/prepare.sh
#   device run --carry .gpu/NIIN_HOME .gpu/bin .gpu/dev-rma.tar.xz .niin-nccl \
#       -- bash scripts/gpu/device-tests.sh conformance
#   device run --carry .gpu/NIIN_HOME .gpu/bin .gpu/dev.tar.xz .niin-nccl \
#       -- bash scripts/gpu/device-tests.sh families variants bandwidth latency context
#
# (Two commands: the carry limit is 64 MiB and the two program archives with the NCCL bundle
# exceed it; conformance needs .gpu/dev-rma.tar.xz, every other part .gpu/dev.tar.xz. A part
# whose programs were not carried is a FAIL row that says so.)
#
# PARTs (default: all five, in this order):
#   conformance  tests/gpu/device_rma.cu: every device function of the first slice, every
#                type, thread/warp/block, 1 B - 64 MiB, self and peers. niin-rs with 1 PE on
#                the image's NCCL 2.28.3 (2.28.3 headers; NCCL refuses a devComm for one
#                rank, so this runs without one: niin-ffi/src/modules.rs) and 1, 2, 4 PEs on the one GPU on
#                the NCCL 2.31.2 bundle; the -rdc build with 2 PEs; and the same source built
#                against NVSHMEM 3.4.5 with 2 PEs, which checks the test's expectations; and
#                with NIIN_GIN_LOOPBACK=1 (2 and 4 PEs): every peer through the GIN proxy.
#   families     tests/gpu/conf_*.cu, one program per device-API family (signals, waits,
#                atomics, strided RMA, teams, launch, collectives): the same runs as
#                conformance (no -rdc), one table each; conf_coll also against NVSHMEM with
#                1 PE (its split teams: NVSHMEM refuses splits with several PEs per GPU).
#                FAMILIES="conf_coll ..." runs only those programs.
#   variants     the family programs under the device settings' other values, 2 and 4 PEs
#                on NCCL 2.31.2: conf_signal_wait with NIIN_PUT_SIGNAL_MODE=split, and
#                conf_signal_wait, conf_team, conf_strided, conf_coll with NIIN_GIN_LOOPBACK=1 (every
#                peer through the GIN proxy: put, get, put-with-signal, signal ADD of the
#                team barriers); tests/gpu/coll_smoke.cu with 2 PEs, on LSA and under
#                NIIN_GIN_LOOPBACK=1. A run that fails is run again under compute-sanitizer.
#   bandwidth    tests/gpu/putmem_block_bw.cu: nvshmemx_putmem_block, 132 CTAs x 1024
#                threads, 1-256 MiB, PE 0 -> PE 1; niin-rs (also built with
#                -DNIIN_DEVICE_GIN=0) and NVSHMEM 3.4.5 all under mpirun with unique-id
#                start-up (test_init.h), and niin-rs under niinrun.
#   latency      tests/gpu/latency.cu: per-operation latency (p, g, putmem/getmem/
#                putmem_signal by a thread, warp, block at 8 B - 64 KiB, AMOs, a satisfied
#                signal_wait_until) and p/g/AMO throughput (132 x 1024), PE 0 -> PE 1 while
#                PE 1 waits in nvshmem_barrier_all; niin-rs (also -DNIIN_DEVICE_GIN=0) and
#                NVSHMEM 3.4.5 under mpirun with unique-id start-up, one table.
#   collectives  tests/gpu/coll_bw.cu (not in the default list: name it; .gpu/dev.tar.xz):
#                us per operation and GB/s of nvshmemx_float_sum_reduce_block,
#                nvshmemx_fcollectmem_block, _alltoallmem_block, _broadcastmem_block (root 0) on
#                NVSHMEM_TEAM_WORLD by one CTA of 1024 threads, 8 B - 64 MiB a PE; niin-rs (and,
#                in the same run, NCCL 2.31.2's ncclAllReduce / AllGather / AlltoAll / Broadcast
#                on the same buffers) and NVSHMEM 3.4.5, each with 1 and 2 PEs on the one GPU,
#                under mpirun with unique-id start-up; one table per PE count.
#   hostbench    tests/gpu/host_bench.cu (not in the default list: name it; .gpu/dev.tar.xz):
#                barrier/sync_all_on_stream, blocking nvshmem_putmem 4 KiB - 64 MiB, malloc + free;
#                niin-rs and NVSHMEM 3.4.5, 2 PEs under mpirun with unique-id start-up.
#   context      tests/gpu/context_*.cu: the per-module device context (one TU, three TUs,
#                -rdc, a dlopen'ed module; 1, 2, 4 PEs; NIIN_BARRIER_CTAS=64) and the
#                device-ABI refusals at init (headers vs library, naming both versions).
#
# Output in $OUT (default ./gpu-out): device-tests.log, device-summary.txt (PASS/FAIL per
# run, the conformance table, the bandwidth and latency tables). Exit status 1 if anything
# failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
LOG=$OUT/device-tests.log
SUMMARY=$OUT/device-summary.txt
: >"$SUMMARY"
exec > >(tee -a "$LOG") 2>&1
PARTS=${*:-conformance families variants bandwidth latency context}

# NVLink multicast stays off (GPU.md); NCCL bootstraps over loopback.
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 NCCL_SOCKET_IFNAME=lo NIIN_TIMEOUT=60
export NIIN_TRANSPORT=nccl NVSHMEM_SYMMETRIC_SIZE=2G

D=$PWD/.gpu/dev
for a in .gpu/dev.tar.xz .gpu/dev-rma.tar.xz; do
    if [ -f "$a" ]; then tar -xJf "$a" -C .gpu; fi
done
BIN=$PWD/.gpu/bin
NV=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nvshmem
T=/tmp/niin-dev
rm -rf "$T"
mkdir -p /tmp/nccl "$T"
tar -xJf .niin-nccl/nccl-2.31.2-sm90.tar.xz -C /tmp/nccl
NCCL231=/tmp/nccl/lib/libnccl.so.2
NCCL228=/usr/lib/x86_64-linux-gnu/libnccl.so.2
NCCL2289=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
NR="$BIN/niinrun --timeout 150"
MPIRUN="mpirun --allow-run-as-root --oversubscribe"
MPIX="-x NIIN_TRANSPORT -x NIIN_NCCL_LIBRARY -x NCCL_MULTI_RANK_GPU_ENABLE -x NCCL_NVLS_ENABLE \
-x NCCL_SOCKET_IFNAME -x NVSHMEM_SYMMETRIC_SIZE -x NVSHMEM_DISABLE_NVLS -x TEST_UID_FILE -x NIIN_TIMEOUT"

row() { printf '%-66s %s\n' "$1" "$2" | tee -a "$SUMMARY"; }
run() { # name, log file, command... (the command's output goes to the log and here)
    local name=$1 log=$2; shift 2
    echo "=== $name: $*"
    local start=$SECONDS
    timeout 170 "$@" 2>&1 | tee "$log"
    local rc=${PIPESTATUS[0]}
    # Checks a program could not make here (context tests: "K not run") are said in the row.
    local nr note=""
    nr=$(grep -ohE "[0-9]+ not run" "$log" | awk '{ s += $1 } END { print s + 0 }')
    [ "$nr" -gt 0 ] && note=", $nr checks not run"
    if [ "$rc" -eq 0 ]; then row "$name" "PASS ($((SECONDS - start)) s$note)"; else row "$name" "FAIL (rc=$rc$note)"; fi
    return 0
}
uid() { echo "$T/uid.$RANDOM.$RANDOM"; }

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
echo "parts: $PARTS"

# Each part's programs come from one archive (see the top): a part whose archive was not
# carried is a FAIL row that names it, and does not run.
have_parts=""
for part in $PARTS; do
    case $part in
        conformance) probe="$D/device_rma_231" archive=.gpu/dev-rma.tar.xz ;;
        families | variants) probe=$(ls "$D"/conf_*_231 2>/dev/null | head -1) probe=${probe:-$D/conf_amo_231}
            archive=.gpu/dev.tar.xz ;;
        bandwidth) probe="$D/putmem_block_bw_niin" archive=.gpu/dev.tar.xz ;;
        latency) probe="$D/latency_niin" archive=.gpu/dev.tar.xz ;;
        collectives) probe="$D/coll_bw_niin" archive=.gpu/dev.tar.xz ;;
        hostbench) probe="$D/host_bench_niin" archive=.gpu/dev.tar.xz ;;
        context) probe="$D/context_one_231" archive=.gpu/dev.tar.xz ;;
        *) row "part $part" "FAIL (no such part)"; continue ;;
    esac
    if [ -e "$probe" ]; then
        have_parts="$have_parts $part"
    else
        row "part $part" "FAIL (its programs were not carried: $archive)"
    fi
done
PARTS=$have_parts

# The NVSHMEM programs were linked here against the nvidia-nvshmem-cu13 3.4.5 wheel; say
# whether this machine's libnvshmem_host.so.3 is the same file.
if [ -f "$NV/lib/libnvshmem_host.so.3" ]; then
    here=$(md5sum "$NV/lib/libnvshmem_host.so.3" | cut -d' ' -f1)
    if [ "$here" = "$(cat "$D/nvshmem_host.md5")" ]; then
        echo "NVSHMEM: this machine's libnvshmem_host.so.3 is the wheel's the programs were built with"
    else
        echo "NVSHMEM: this machine's libnvshmem_host.so.3 differs from the wheel's ($here)"
        ls -d "$NV"/../../nvidia_nvshmem* 2>/dev/null
    fi
fi

# ---- conformance ----------------------------------------------------------------------
# Table: one row per test group, one column per run; a cell is "ok <checks>" when every PE
# reported the group with no failure, "FAIL <n>" with the failures summed over the PEs,
# "-" when a PE did not report it (the run stopped before).
conformance_table() { # "label=log:npes" ...
    awk -v runs="$*" '
    BEGIN {
        n = split(runs, r, " ")
        for (i = 1; i <= n; i++) {
            split(r[i], kv, "=")
            label[i] = kv[1]
            split(kv[2], fp, ":")
            file[i] = fp[1]; npes[i] = fp[2]
            while ((getline line < file[i]) > 0) {
                sub(/^\[pe [0-9]+\] /, "", line)   # niinrun prefixes each line
                if (line !~ /^RESULT\|/) continue
                split(line, f, "|")
                g = f[2]
                if (!(g in seen)) { seen[g] = 1; order[++ng] = g }
                reports[i, g]++; pass[i, g] += f[3]; fail[i, g] += f[4]
            }
            close(file[i])
        }
        printf "%-72s", "test group"
        for (i = 1; i <= n; i++) printf " | %-14s", label[i]
        printf "\n"
        for (k = 1; k <= ng; k++) {
            g = order[k]
            printf "%-72s", g
            for (i = 1; i <= n; i++) {
                if (fail[i, g] > 0) cell = "FAIL " fail[i, g]
                else if (reports[i, g] < npes[i]) cell = "-"
                else cell = "ok " pass[i, g]
                printf " | %-14s", cell
            }
            printf "\n"
        }
    }'
}

if [[ " $PARTS " == *" conformance "* ]]; then
    echo "=== conformance"
    run "device_rma, 1 PE, NCCL 2.28.3 (image; 2.28.3 headers)" "$T/rma_228_1.log" \
        env NIIN_NCCL_LIBRARY=$NCCL228 $NR -n 1 "$D/device_rma_228"
    for n in 1 2 4; do
        run "device_rma, $n PE(s) on one GPU, NCCL 2.31.2" "$T/rma_231_$n.log" \
            env NIIN_NCCL_LIBRARY=$NCCL231 NCCL_MULTI_RANK_GPU_ENABLE=1 $NR -n $n "$D/device_rma_231"
    done
    for n in 2 4; do
        run "device_rma, $n PEs, NIIN_GIN_LOOPBACK=1 (peers through the GIN proxy)" "$T/rma_loop_$n.log" \
            env NIIN_GIN_LOOPBACK=1 NIIN_NCCL_LIBRARY=$NCCL231 NCCL_MULTI_RANK_GPU_ENABLE=1 $NR -n $n \
            "$D/device_rma_231"
    done
    # (device nvshmem_ptr to a peer is NULL under the loopback by design: those checks fail)
    if grep -qE "illegal memory access|misaligned address|unspecified launch failure" "$T/rma_loop_2.log" &&
        command -v compute-sanitizer >/dev/null; then
        echo "=== device_rma, 2 PEs, NIIN_GIN_LOOPBACK=1 under compute-sanitizer (first errors)"
        env NIIN_GIN_LOOPBACK=1 NIIN_NCCL_LIBRARY=$NCCL231 NCCL_MULTI_RANK_GPU_ENABLE=1 timeout 150 \
            $NR -n 2 compute-sanitizer --tool memcheck --print-limit 3 --show-backtrace device \
            "$D/device_rma_231" 2>&1 | grep -v "PASS|" | head -60
    fi
    run "device_rma -rdc, 2 PEs on one GPU, NCCL 2.31.2" "$T/rma_rdc_2.log" \
        env NIIN_NCCL_LIBRARY=$NCCL231 NCCL_MULTI_RANK_GPU_ENABLE=1 $NR -n 2 "$D/device_rma_rdc_231"
    run "device_rma against NVSHMEM 3.4.5, 2 PEs (mpirun, unique id)" "$T/rma_nvshmem_2.log" \
        env TEST_UID_FILE="$(uid)" LD_LIBRARY_PATH="$NV/lib" $MPIRUN -np 2 $MPIX -x LD_LIBRARY_PATH \
        "$D/device_rma_nvshmem"
    echo "=== failures reported (first 8 per group and PE)"
    grep -h "FAIL|" "$T"/rma_*.log | head -60
    grep -h "SKIP|" "$T"/rma_nvshmem_2.log | sort -u
    {
        echo
        echo "conformance (device_rma.cu): checks passed per group, summed over the PEs"
        conformance_table "niin-2.28.3/1=$T/rma_228_1.log:1" "niin-2.31.2/1=$T/rma_231_1.log:1" \
            "niin-2.31.2/2=$T/rma_231_2.log:2" "niin-2.31.2/4=$T/rma_231_4.log:4" \
            "niin-rdc/2=$T/rma_rdc_2.log:2" "loopback/2=$T/rma_loop_2.log:2" \
            "loopback/4=$T/rma_loop_4.log:4" "NVSHMEM/2=$T/rma_nvshmem_2.log:2"
        echo
    } | tee -a "$SUMMARY"
fi

# ---- families: tests/gpu/conf_*.cu ----------------------------------------------------------
# Each program with 1 PE on the image's NCCL 2.28.3, 1, 2 and 4 PEs on NCCL 2.31.2, and the
# NVSHMEM 3.4.5 build with 2 PEs; one table per program.
if [[ " $PARTS " == *" families "* ]]; then
    for prog in "$D"/conf_*_231; do
        [ -e "$prog" ] || continue
        fam=$(basename "$prog" _231)
        # FAMILIES="conf_coll conf_team": only those (a shorter run after a change to them)
        if [ -n "${FAMILIES:-}" ] && [[ " $FAMILIES " != *" $fam "* ]]; then continue; fi
        echo "=== family $fam"
        run "$fam, 1 PE, NCCL 2.28.3" "$T/${fam}_228_1.log" \
            env NIIN_NCCL_LIBRARY=$NCCL228 $NR -n 1 "$D/${fam}_228"
        for n in 1 2 4; do
            if [ "$fam" = conf_coll ] && [ "$n" = 4 ]; then
                # every collective of every scope takes longer than one run may with 4 PEs
                # time-sharing the GPU: one run per scope, their logs one table column
                for k in 0 1 2; do
                    run "$fam, $n PE(s) on one GPU, NCCL 2.31.2, scope $k" "$T/${fam}_231_${n}_s$k.log" \
                        env CONF_COLL_SCOPES=$k NIIN_NCCL_LIBRARY=$NCCL231 NCCL_MULTI_RANK_GPU_ENABLE=1 \
                        $NR -n $n "$D/${fam}_231"
                done
                cat "$T/${fam}_231_${n}"_s*.log >"$T/${fam}_231_$n.log"
                continue
            fi
            run "$fam, $n PE(s) on one GPU, NCCL 2.31.2" "$T/${fam}_231_$n.log" \
                env NIIN_NCCL_LIBRARY=$NCCL231 NCCL_MULTI_RANK_GPU_ENABLE=1 $NR -n $n "$D/${fam}_231"
        done
        run "$fam against NVSHMEM 3.4.5, 2 PEs (mpirun, unique id)" "$T/${fam}_nvshmem_2.log" \
            env TEST_UID_FILE="$(uid)" LD_LIBRARY_PATH="$NV/lib" $MPIRUN -np 2 $MPIX -x LD_LIBRARY_PATH \
            "$D/${fam}_nvshmem"
        # NVSHMEM 3.4.5 refuses team splits with several PEs on one GPU: the collectives'
        # split-team shapes run against it with 1 PE
        extra=()
        if [ "$fam" = conf_coll ]; then
            run "$fam against NVSHMEM 3.4.5, 1 PE (mpirun, unique id)" "$T/${fam}_nvshmem_1.log" \
                env TEST_UID_FILE="$(uid)" LD_LIBRARY_PATH="$NV/lib" $MPIRUN -np 1 $MPIX -x LD_LIBRARY_PATH \
                "$D/${fam}_nvshmem"
            extra=("NVSHMEM/1=$T/${fam}_nvshmem_1.log:1")
        fi
        grep -h "FAIL|" "$T/${fam}"_*.log | head -40
        grep -h "SKIP|" "$T/${fam}"_*.log | sort -u
        {
            echo
            echo "$fam: checks passed per group, summed over the PEs"
            conformance_table "niin-2.28.3/1=$T/${fam}_228_1.log:1" "niin-2.31.2/1=$T/${fam}_231_1.log:1" \
                "niin-2.31.2/2=$T/${fam}_231_2.log:2" "niin-2.31.2/4=$T/${fam}_231_4.log:4" \
                "NVSHMEM/2=$T/${fam}_nvshmem_2.log:2" "${extra[@]}"
            echo
        } | tee -a "$SUMMARY"
    done
fi

# ---- variants: the family programs under other device settings -----------------------------
if [[ " $PARTS " == *" variants "* ]]; then
    variant() { # label, program, env assignments...
        local label=$1 prog=$2; shift 2
        for n in 2 4; do
            local log="$T/var_${prog}_${label}_$n.log"
            run "$prog, $n PEs, $*" "$log" env "$@" NIIN_NCCL_LIBRARY=$NCCL231 \
                NCCL_MULTI_RANK_GPU_ENABLE=1 $NR -n $n "$D/${prog}_231"
            grep -h "FAIL|" "$log" | head -12
            if grep -qE "illegal memory access|misaligned address|unspecified launch failure" "$log" &&
                command -v compute-sanitizer >/dev/null; then
                echo "=== $prog, $n PEs, $* under compute-sanitizer (first errors)"
                env "$@" NIIN_NCCL_LIBRARY=$NCCL231 NCCL_MULTI_RANK_GPU_ENABLE=1 timeout 150 \
                    $NR -n $n compute-sanitizer --tool memcheck --print-limit 3 \
                    --show-backtrace device "$D/${prog}_231" 2>&1 | grep -v "PASS|" | head -60
            fi
        done
    }
    variant split conf_signal_wait NIIN_PUT_SIGNAL_MODE=split
    for prog in conf_signal_wait conf_team conf_strided; do
        variant loopback "$prog" NIIN_GIN_LOOPBACK=1
    done
    # One collective of each kind, 2 PEs, on LSA and then composed over GIN (every peer
    # through the GIN proxy; the LL debug build prints where a wait is stuck): a hang names
    # its step (HANG|) within SMOKE_TIMEOUT_S instead of using up the run's time
    for mode in lsa loopback; do
        prog=coll_smoke_231 env_mode=()
        [ $mode = loopback ] && prog=coll_smoke_dbg_231 env_mode=(NIIN_GIN_LOOPBACK=1)
        log="$T/var_coll_smoke_${mode}_2.log"
        run "coll_smoke, 2 PEs, $mode" "$log" env SMOKE_TIMEOUT_S=20 "${env_mode[@]}" \
            NIIN_NCCL_LIBRARY=$NCCL231 NCCL_MULTI_RANK_GPU_ENABLE=1 $NR -n 2 "$D/$prog"
        grep -h "FAIL|\|HANG|\|NIIN_DEBUG_LL" "$log" | head -12
    done
    # The collectives composed over GIN (every peer through the GIN proxy): 2 PEs, one scope
    # per run (a run of all three takes longer than one run may)
    for k in 0 1 2; do
        log="$T/var_conf_coll_loopback_2_s$k.log"
        run "conf_coll, 2 PEs, NIIN_GIN_LOOPBACK=1, scope $k" "$log" env CONF_COLL_SCOPES=$k \
            NIIN_GIN_LOOPBACK=1 NIIN_NCCL_LIBRARY=$NCCL231 NCCL_MULTI_RANK_GPU_ENABLE=1 \
            $NR -n 2 "$D/conf_coll_231"
        grep -h "FAIL|" "$log" | head -12
    done
fi

# ---- bandwidth --------------------------------------------------------------------------
if [[ " $PARTS " == *" bandwidth "* ]]; then
    echo "=== bandwidth: nvshmemx_putmem_block, 132 x 1024, 2 PEs on one GPU (time-sliced)"
    run "putmem_block bandwidth, niin-rs (mpirun, unique id)" "$T/bw_niin.log" \
        env NIIN_NCCL_LIBRARY=$NCCL231 NCCL_MULTI_RANK_GPU_ENABLE=1 TEST_UID_FILE="$(uid)" \
        $MPIRUN -np 2 $MPIX "$D/putmem_block_bw_niin"
    run "putmem_block bandwidth, niin-rs NIIN_DEVICE_GIN=0 (mpirun, unique id)" "$T/bw_niin_nogin.log" \
        env NIIN_NCCL_LIBRARY=$NCCL231 NCCL_MULTI_RANK_GPU_ENABLE=1 TEST_UID_FILE="$(uid)" \
        $MPIRUN -np 2 $MPIX "$D/putmem_block_bw_niin_nogin"
    run "putmem_block bandwidth, NVSHMEM 3.4.5 (mpirun, unique id)" "$T/bw_nvshmem.log" \
        env TEST_UID_FILE="$(uid)" LD_LIBRARY_PATH="$NV/lib" $MPIRUN -np 2 $MPIX -x LD_LIBRARY_PATH \
        "$D/putmem_block_bw_nvshmem"
    run "putmem_block bandwidth, niin-rs (niinrun, nvshmem_init)" "$T/bw_niinrun.log" \
        env NIIN_NCCL_LIBRARY=$NCCL231 NCCL_MULTI_RANK_GPU_ENABLE=1 $NR -n 2 "$D/putmem_block_bw_niin"
    {
        echo
        echo "nvshmemx_putmem_block bandwidth, GB/s (132 CTAs x 1024 threads, PE 0 -> PE 1, one GPU)"
        echo "(raw: the same rounds as plain loads/stores through nvshmem_ptr, no API: the mapping's own speed)"
        printf '%-10s %-16s %-16s %-16s %-16s %-12s %-12s %s\n' size "niin-rs (mpirun)" "niin-rs GIN=0" \
            "NVSHMEM 3.4.5" "niin-rs (niinrun)" "raw, niin" "raw, NVSHMEM" "niin/NVSHMEM"
        awk '
            { for (k = 1; k < ARGC; k++) if (FILENAME == ARGV[k]) f = k }
            { sub(/^\[pe [0-9]+\] /, "") }
            /^putmem_block [0-9]+ B:/ { b = $2; v[f, b] = $4; if (!(b in seen)) { seen[b] = 1; o[++n] = b } }
            /^raw_copy [0-9]+ B:/ { r[f, $2] = $4 }
            END {
                for (i = 1; i <= n; i++) {
                    b = o[i]
                    ratio = (v[3, b] > 0) ? sprintf("%.2f", v[1, b] / v[3, b]) : "-"
                    printf "%-10s %-16s %-16s %-16s %-16s %-12s %-12s %s\n", (b / 1048576) " MiB", v[1, b], v[2, b],
                        v[3, b], v[4, b], r[1, b], r[3, b], ratio
                }
            }' "$T/bw_niin.log" "$T/bw_niin_nogin.log" "$T/bw_nvshmem.log" "$T/bw_niinrun.log"
        grep -h "data check" "$T"/bw_*.log
        echo
    } | tee -a "$SUMMARY"
fi

# ---- latency ------------------------------------------------------------------------------
# Table: one row per LAT (us) or TPUT (ops/s) line of tests/gpu/latency.cu.
if [[ " $PARTS " == *" latency "* ]]; then
    echo "=== latency: device operations PE 0 -> PE 1, 2 PEs on one GPU (PE 1 waits in nvshmem_barrier_all)"
    run "latency, niin-rs (mpirun, unique id)" "$T/lat_niin.log" \
        env NIIN_NCCL_LIBRARY=$NCCL231 NCCL_MULTI_RANK_GPU_ENABLE=1 TEST_UID_FILE="$(uid)" \
        $MPIRUN -np 2 $MPIX "$D/latency_niin"
    run "latency, niin-rs NIIN_DEVICE_GIN=0 (mpirun, unique id)" "$T/lat_niin_nogin.log" \
        env NIIN_NCCL_LIBRARY=$NCCL231 NCCL_MULTI_RANK_GPU_ENABLE=1 TEST_UID_FILE="$(uid)" \
        $MPIRUN -np 2 $MPIX "$D/latency_niin_nogin"
    run "latency, NVSHMEM 3.4.5 (mpirun, unique id)" "$T/lat_nvshmem.log" \
        env TEST_UID_FILE="$(uid)" LD_LIBRARY_PATH="$NV/lib" $MPIRUN -np 2 $MPIX -x LD_LIBRARY_PATH \
        "$D/latency_nvshmem"
    {
        echo
        echo "device latency (LAT, us: median of 15 rounds' means, one CTA; scalar rows: mean over the SMs) and throughput (TPUT, ops/s:"
        echo "132 x 1024 threads, best of 5), PE 0 -> PE 1 on one GPU; niin/NVSHMEM: LAT below 1, TPUT above 1 favour niin-rs"
        printf '%-4s %-28s %-6s %-12s %-14s %-14s %s\n' "" measurement bytes "niin-rs" "niin-rs GIN=0" \
            "NVSHMEM 3.4.5" "niin/NVSHMEM"
        awk '
            { for (k = 1; k < ARGC; k++) if (FILENAME == ARGV[k]) f = k }
            { sub(/^\[pe [0-9]+\] /, "") }
            /^(LAT|TPUT)\|/ {
                split($0, x, "|")
                key = x[1] == "LAT" ? x[2] "|" x[3] : x[2] "|-"
                v[f, key] = x[1] == "LAT" ? x[4] : x[3]
                kind[key] = x[1]
                if (!(key in seen)) { seen[key] = 1; o[++n] = key }
            }
            END {
                for (i = 1; i <= n; i++) {
                    key = o[i]
                    split(key, kb, "|")
                    for (c = 1; c <= 3; c++) cell[c] = ((c, key) in v) ? v[c, key] : "-"
                    ratio = (cell[1] != "-" && cell[3] != "-" && cell[3] > 0) ? sprintf("%.2f", cell[1] / cell[3]) : "-"
                    printf "%-4s %-28s %-6s %-12s %-14s %-14s %s\n", kind[key], kb[1], kb[2], cell[1], cell[2],
                        cell[3], ratio
                }
            }' "$T/lat_niin.log" "$T/lat_niin_nogin.log" "$T/lat_nvshmem.log"
        echo "scalar operations from every SM in turn (LAT above: the mean over the SMs), us: fastest|mean|slowest"
        for l in lat_niin lat_niin_nogin lat_nvshmem; do
            grep -h '^\(\[pe 0\] \)\?LATSM|' "$T/$l.log" | sed "s/^\[pe 0\] //; s/^/$l /" || true
        done
        for l in lat_niin lat_niin_nogin lat_nvshmem; do
            echo "$l data checks: $(grep -c 'CHECK|.*|ok$' "$T/$l.log") ok, $(grep -c 'CHECK|.*|FAILED' "$T/$l.log") failed"
            grep -h 'CHECK|.*|FAILED' "$T/$l.log"
        done
        echo
    } | tee -a "$SUMMARY"
fi

# ---- collectives --------------------------------------------------------------------------
# One table per PE count: a row per (collective, size) of tests/gpu/coll_bw.cu's COLL lines.
if [[ " $PARTS " == *" collectives "* ]]; then
    echo "=== collectives: device collectives on NVSHMEM_TEAM_WORLD, one CTA, and the host forms on a stream; PEs on one GPU (time-sliced)"
    for n in 1 2; do
        run "collectives, niin-rs and NCCL 2.31.2, $n PE(s) (mpirun, unique id)" "$T/coll_niin_$n.log" \
            env NIIN_NCCL_LIBRARY=$NCCL231 NCCL_MULTI_RANK_GPU_ENABLE=1 TEST_UID_FILE="$(uid)" \
            $MPIRUN -np $n $MPIX "$D/coll_bw_niin"
    done
    for n in 1 2; do
        run "collectives, NVSHMEM 3.4.5, $n PE(s) (mpirun, unique id)" "$T/coll_nvshmem_$n.log" \
            env TEST_UID_FILE="$(uid)" LD_LIBRARY_PATH="$NV/lib" $MPIRUN -np $n $MPIX -x LD_LIBRARY_PATH \
            "$D/coll_bw_nvshmem"
    done
    {
        python3 - "$T" <<'PY'
import re, sys

T = sys.argv[1]
COLLS = ["reduce", "fcollect", "alltoall", "broadcast"]


def size_name(b):
    for unit, name in ((1 << 20, "MiB"), (1 << 10, "KiB")):
        if b >= unit and b % unit == 0:
            return "%d %s" % (b // unit, name)
    return "%d B" % b


def read(path, label):
    vals, threads, notes = {}, {}, []
    try:
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return vals, threads, ["%s: no log %s" % (label, path)]
    for line in lines:
        line = re.sub(r"^\[pe \d+\] ", "", line)
        f = line.split("|")
        try:
            if f[0] == "COLL" and len(f) == 7:
                vals[(f[1], f[2], int(f[3]))] = (float(f[4]), float(f[5]))
            elif f[0] == "COLLTHREADS" and len(f) == 5:
                threads[(f[1], f[2])] = "%s threads a block (%s registers a thread)" % (f[3], f[4])
        except ValueError:
            continue
        if line.startswith(("SKIP", "data check", "nccl:")):
            notes.append("%s: %s" % (label, line))
    return vals, threads, notes


for n in (1, 2):
    vals, threads, notes = {}, {}, []
    for lib in ("niin", "nvshmem"):
        v, t, o = read("%s/coll_%s_%d.log" % (T, lib, n), "%s, %d PE(s)" % (lib, n))
        vals.update(v)
        threads.update(t)
        notes += o
    print()
    print("device collectives, %d PE(s) on one GPU, us per operation and GB/s (algorithm bytes: the size for"
          " reduce and broadcast, size x PEs for fcollect and alltoall);" % n)
    print("nccl: NCCL 2.31.2's ncclAllReduce / AllGather / AlltoAll / Broadcast; niin/NVSHMEM below 1 favours niin-rs")
    fmt = "%-10s %-8s | %-10s %-10s %-10s %-12s | %-10s %-10s %-10s"
    print(fmt % ("collective", "size", "us niin", "us NVSHMEM", "us nccl", "niin/NVSHMEM", "GB/s niin",
                 "GB/s nccl", "GB/s NVSHMEM"))
    sizes = sorted({k[2] for k in vals})
    for c in COLLS:
        for s in sizes:
            cells = []
            for i in (0, 1):
                for impl in ("niin", "nvshmem", "nccl") if i == 0 else ("niin", "nccl", "nvshmem"):
                    v = vals.get((impl, c, s))
                    cells.append("-" if v is None else "%.2f" % v[0] if i == 0 else "%.3g" % v[1])
            if all(x == "-" for x in cells):
                continue
            a, b = vals.get(("niin", c, s)), vals.get(("nvshmem", c, s))
            ratio = "%.2f" % (a[0] / b[0]) if a and b and b[0] > 0 else "-"
            print(fmt % ((c, size_name(s)) + tuple(cells[:3]) + (ratio,) + tuple(cells[3:])))
    print()
    print("host forms on a stream (nvshmemx_*_on_stream, calls enqueued back to back), %d PE(s): us per"
          " operation; niin/NVSHMEM below 1 favours niin-rs" % n)
    fmt2 = "%-10s %-8s | %-12s %-12s %-10s %-12s | %-12s %-12s"
    print(fmt2 % ("collective", "size", "us niin", "us NVSHMEM", "us nccl", "niin/NVSHMEM", "GB/s niin",
                  "GB/s NVSHMEM"))
    for c in COLLS:
        for s in sizes:
            a, b, g = (vals.get((i, c, s)) for i in ("niin-stream", "nvshmem-stream", "nccl"))
            if a is None and b is None:
                continue
            us = lambda v: "-" if v is None else "%.2f" % v[0]
            bw = lambda v: "-" if v is None else "%.3g" % v[1]
            ratio = "%.2f" % (a[0] / b[0]) if a and b and b[0] > 0 else "-"
            print(fmt2 % (c, size_name(s), us(a), us(b), us(g), ratio, bw(a), bw(b)))
    for (impl, c), t in sorted(threads.items()):
        print("%s %s kernel: %s" % (impl, c, t))
    for line in notes:
        print(line)
PY
        echo
    } | tee -a "$SUMMARY"
fi

# ---- hostbench: the host API's speed beside NVSHMEM ----------------------------------------
if [[ " $PARTS " == *" hostbench "* ]]; then
    for v in host_bench_niin host_bench_nvshmem; do
        extra=(env NIIN_NCCL_LIBRARY=$NCCL231 NCCL_MULTI_RANK_GPU_ENABLE=1)
        [ $v = host_bench_nvshmem ] && extra=(env LD_LIBRARY_PATH="$NV/lib")
        run "$v, 2 PEs (mpirun, unique id)" "$T/hb_$v.log" "${extra[@]}" TEST_UID_FILE="$(uid)" \
            $MPIRUN -np 2 $MPIX -x LD_LIBRARY_PATH "$D/$v"
    done
    {
        echo "host API speed, 2 PEs on one GPU: op, bytes, us per op, GB/s (niin-rs | NVSHMEM 3.4.5)"
        paste -d'|' <(grep -h "HB|" "$T/hb_host_bench_niin.log" | sed 's/^\[pe [0-9]*\] //') \
            <(grep -h "HB|" "$T/hb_host_bench_nvshmem.log" | sed 's/^\[pe [0-9]*\] //' | cut -d'|' -f4-)
        echo
    } | tee -a "$SUMMARY"
fi

# ---- context ------------------------------------------------------------------------------
# Runs a program whose init must be refused: exit status 1 and every pattern in its output.
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

if [[ " $PARTS " == *" context "* ]]; then
    echo "=== context: NCCL 2.28.3 (image), 1 PE"
    for p in one one_rdc two two_rdc; do
        run "context_${p}_228, 1 PE, NCCL 2.28.3" "$T/ctx.log" env NIIN_NCCL_LIBRARY=$NCCL228 \
            $NR -n 1 "$D/context_${p}_228"
    done
    if [ -f "$NCCL2289" ]; then
        run "context_one_2289, 1 PE, NCCL 2.28.9 (torch venv)" "$T/ctx.log" env NIIN_NCCL_LIBRARY=$NCCL2289 \
            $NR -n 1 "$D/context_one_2289"
    fi
    echo "=== context: NCCL 2.31.2 (bundle), 1/2/4 PEs on one GPU"
    for n in 1 2 4; do
        for p in one one_rdc two two_rdc; do
            run "context_${p}_231, $n PE(s), NCCL 2.31.2" "$T/ctx.log" env NIIN_NCCL_LIBRARY=$NCCL231 \
                NCCL_MULTI_RANK_GPU_ENABLE=1 $NR -n $n "$D/context_${p}_231"
        done
        run "context_dlopen_231, $n PE(s), NCCL 2.31.2" "$T/ctx.log" env NIIN_NCCL_LIBRARY=$NCCL231 \
            NCCL_MULTI_RANK_GPU_ENABLE=1 CONTEXT_DLOPEN_LIB="$D/libcontext_b.so" $NR -n $n "$D/context_dlopen_231"
    done
    run "context_one_231, 2 PEs, NIIN_BARRIER_CTAS=64" "$T/ctx.log" env NIIN_NCCL_LIBRARY=$NCCL231 \
        NCCL_MULTI_RANK_GPU_ENABLE=1 NIIN_BARRIER_CTAS=64 $NR -n 2 "$D/context_one_231"
    echo "=== context: refusals at init"
    expect_refusal "2.28.3 headers with NCCL 2.31.2: refused" \
        "NCCL 2.28.3 headers|loaded NCCL is 2.31.2|not backwards compatible" \
        env NIIN_NCCL_LIBRARY=$NCCL231 $NR -n 1 "$D/context_one_228"
    expect_refusal "2.31.2 headers with NCCL 2.28.3: refused" \
        "NCCL 2.31.2 headers|loaded NCCL is 2.28.3|newer than the library" \
        env NIIN_NCCL_LIBRARY=$NCCL228 $NR -n 1 "$D/context_one_231"
    if [ -f "$NCCL2289" ]; then
        expect_refusal "2.28.3 headers with NCCL 2.28.9: refused (88 vs 200 B)" \
            "NCCL 2.28.3 headers|loaded NCCL is 2.28.9|corrupt memory" \
            env NIIN_NCCL_LIBRARY=$NCCL2289 $NR -n 1 "$D/context_one_228"
    fi
fi

echo "=== summary"
cat "$SUMMARY"
! grep -q "FAIL" "$SUMMARY"
