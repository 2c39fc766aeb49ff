#!/usr/bin/env bash
# reliability-tests.sh -- the GPU runs that session 22 prepared and could not make (no device
# machine came): issue 15 part 7 (a PE killed with SIGKILL, or stalled, while the others wait
# in a device barrier or in a host barrier), issue 15 part 1 on NCCL (tests/c/mismatch.c at
# the default level, host_bench per NIIN_CHECK_COLLECTIVES level beside NVSHMEM), device
# barrier latency (this tree, the last tree with NCCL's LSA barrier, NVSHMEM), the families
# the new barriers touch, and issue 16's CUDA and cudarc examples. `min` and `b` ran in
# session 24 on an H100 (PERFORMANCE.md, section 10), `a` and the first `exit` in session 25,
# `exit` with the exit guard and `hang` in session 26.
#
# Expects, carried with .niin-nccl (64 MiB limit: pack .gpu/dev as dev.tar.xz), all built by
# scripts/gpu/prepare-reliability.sh in one command:
#   .gpu/NIIN_HOME/lib, .gpu/bin/{niinrun,check_worker}   scripts/gpu/prepare.sh
#   .gpu/dev.tar.xz with dev/: peer_death_device_231, barrier_lat_niin, barrier_lat_nvshmem,
#     conf_team_231, conf_launch_231, coll_smoke_231 (build-device-tests.sh, ONLY="..."),
#     peer_death, mismatch, host_api (tests/c/*.c with nvcc -x cu -DNIIN_NO_DEVICE_API
#     -DNIIN_TEST_CUDA, rpath $ORIGIN/../NIIN_HOME/lib), host_bench_niin/_nvshmem,
#     ex_ring, ex_allreduce, ex_moe_dispatch (examples/cuda), cudarc_interop
#     (cargo build --release -p niin-api --example cudarc_interop)
#   .gpu/old/barrier_lat_old + .gpu/NH-old/lib: barrier_lat.cu built against 05ea054
# Usage: bash scripts/gpu/reliability-tests.sh {a|b|all|min|exit|hang}; REPS, SKIP_LONG, LAT_PES.
# Output: $OUT (default /tmp/out): summary-<part>.txt, the log, log archives.
set -uo pipefail
cd "$(dirname "$0")/../.."
O=${OUT:-/tmp/out}; mkdir -p "$O"
LOG=$O/reliability-${1:-a}.log; SUM=$O/summary-${1:-a}.txt; : >"$SUM"
exec > >(tee -a "$LOG") 2>&1
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 NCCL_SOCKET_IFNAME=lo NIIN_TRANSPORT=nccl
export NCCL_MULTI_RANK_GPU_ENABLE=1 NVSHMEM_SYMMETRIC_SIZE=1G
mkdir -p /tmp/nccl && tar -xJf .niin-nccl/nccl-2.31.2-sm90.tar.xz -C /tmp/nccl
export NIIN_NCCL_LIBRARY=/tmp/nccl/lib/libnccl.so.2
tar -xJf .gpu/dev.tar.xz -C .gpu 2>/dev/null || true
D=$PWD/.gpu/dev; BIN=$PWD/.gpu/bin
NR="$BIN/niinrun --timeout 100"
row() { printf '%-60s %s\n' "$1" "$2" | tee -a "$SUM"; }
# A stalled PE's survivors must get through nvshmem_finalize (it hung before b2d4bed).
finalized() { grep -q "SURVIVOR finalized" "$1" || row "  $2" "FAIL: no 'SURVIVOR finalized' (finalize hung or crashed)"; }
run() { local name=$1 log=$2; shift 2; echo "=== $name: $*"; local s=$SECONDS
  timeout ${TMO:-100} "$@" >"$log" 2>&1; local rc=$?; cat "$log" | tail -${TAIL:-25}
  row "$name" "rc=$rc ($((SECONDS - s)) s)"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
T=/tmp/t; mkdir -p $T
PART=${1:-a}
# The wrapper of the `exit` and `hang` parts: runs one PE with $SEGV_TRACE preloaded and
# prints its exit status ("EXIT PE n rc=s"); exits 0 under WRAP_ZERO (so niinrun stops
# nobody early), else with the PE's status. With DUMP_AFTER set, a PE still alive after
# that many seconds has each thread's state and wait channel, the GPU's utilization and
# compute processes printed, and gets SIGUSR1 (segv-trace.so then prints every thread's
# backtrace).
W=$T/wrap.sh
printf '%s\n' '#!/usr/bin/env bash' \
  'LD_PRELOAD=$SEGV_TRACE "$@" & p=$!' \
  '[ -n "$DUMP_AFTER" ] && ( for i in $(seq $DUMP_AFTER); do kill -0 $p 2>/dev/null || exit 0; sleep 1; done' \
  '  for t in /proc/$p/task/*; do echo "TASK PE $NIIN_PE tid $(basename $t) $(cat $t/comm) state $(cut -d" " -f3 $t/stat) wchan $(cat $t/wchan)"; done' \
  '  echo "GPU PE $NIIN_PE $(nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader) apps: $(nvidia-smi --query-compute-apps=pid --format=csv,noheader | tr "\n" " ")"' \
  '  kill -USR1 $p ) &' \
  'wait $p; rc=$?; echo "EXIT PE $NIIN_PE rc=$rc"; [ -n "$WRAP_ZERO" ] && exit 0; exit $rc' > $W
chmod +x $W
if [ "$PART" = min ]; then
  TMO=40
  run "pdd kill thread 2" $T/pd_kill_thread_2.log env PEER_DEATH_SCOPE=thread $NR -n 2 $D/peer_death_device_231
  grep -h "NIIN\|SURVIVOR\|FAIL\|niinrun" $T/pd_kill_thread_2.log | head -12 >> "$SUM"
  run "pdd kill team 4" $T/pd_kill_team_4.log env PEER_DEATH_SCOPE=team $NR -n 4 $D/peer_death_device_231
  grep -h "NIIN\|SURVIVOR\|FAIL\|niinrun" $T/pd_kill_team_4.log | head -14 >> "$SUM"
  run "pdd stall block 2 (NIIN_TIMEOUT=3)" $T/pd_stall_2.log env PEER_DEATH_MODE=stall PEER_DEATH_SCOPE=block PEER_DEATH_STALL_S=15 NIIN_TIMEOUT=3 $NR -n 2 $D/peer_death_device_231
  grep -h "NIIN\|SURVIVOR\|FAIL\|niinrun" $T/pd_stall_2.log | head -12 >> "$SUM"; finalized $T/pd_stall_2.log "stall"
  run "peer_death host 2" $T/pd_host_2.log $NR -n 2 $D/peer_death
  grep -h "NIIN\|SURVIVOR\|niinrun" $T/pd_host_2.log | head -12 >> "$SUM"
  run "mismatch default 2" $T/mm_2.log $NR -n 2 $D/mismatch
  grep -h "NIIN\|DONE" $T/mm_2.log | head -8 >> "$SUM"
  for lvl in default 0; do
    e=(); [ $lvl != default ] && e=(NIIN_CHECK_COLLECTIVES=$lvl)
    run "host_bench check=$lvl" $T/hb_$lvl.log env "${e[@]}" $NR -n 2 $D/host_bench_niin
    grep -h "HB|" $T/hb_$lvl.log | sed "s/^\[pe [0-9]*\] //; s/^/check=$lvl|/" >> "$SUM"
  done
  run "cudarc_interop 2" $T/ex_cudarc.log $NR -n 2 $D/cudarc_interop --require-gpu
  tail -3 $T/ex_cudarc.log >> "$SUM"
  run "ex_moe_dispatch 2" $T/ex_moe.log $NR -n 2 $D/ex_moe_dispatch
  tail -3 $T/ex_moe.log >> "$SUM"
  TAIL=12 run "barrier_lat new 2" $T/bl_new.log env BARRIER_LAT_REPS=1 $NR -n 2 $D/barrier_lat_niin; grep ROW $T/bl_new.log | sed "s/^/new|/" >> "$SUM"
  TAIL=12 run "barrier_lat old 2" $T/bl_old.log env BARRIER_LAT_REPS=1 $NR -n 2 .gpu/old/barrier_lat_old; grep ROW $T/bl_old.log | sed "s/^/old|/" >> "$SUM"
  tar -cJf "$O/logs.tar.xz" -C $T $(cd $T && ls *.log)
fi
if [ "$PART" = a ] || [ "$PART" = all ]; then
# ---- part 7, device barriers
for sc in thread block team; do
  run "peer_death_device kill $sc 2 PEs" $T/pd_kill_${sc}_2.log env PEER_DEATH_SCOPE=$sc $NR -n 2 $D/peer_death_device_231
  grep -h "NIIN\|SURVIVOR\|FAIL\|niinrun" $T/pd_kill_${sc}_2.log | head -12 >> "$SUM"
done
run "peer_death_device kill thread 4 PEs" $T/pd_kill_4.log $NR -n 4 $D/peer_death_device_231
grep -h "NIIN\|SURVIVOR\|FAIL\|niinrun" $T/pd_kill_4.log | head -16 >> "$SUM"
[ -z "${SKIP_LONG:-}" ] && run "peer_death_device kill block 4 PEs" $T/pd_kill_b4.log env PEER_DEATH_SCOPE=block $NR -n 4 $D/peer_death_device_231
grep -h "NIIN\|SURVIVOR\|FAIL\|niinrun" $T/pd_kill_b4.log | head -16 >> "$SUM"
run "peer_death_device stall thread 2 PEs (NIIN_TIMEOUT=3)" $T/pd_stall_2.log env PEER_DEATH_MODE=stall PEER_DEATH_STALL_S=25 NIIN_TIMEOUT=3 $NR -n 2 $D/peer_death_device_231
grep -h "NIIN\|SURVIVOR\|FAIL\|niinrun" $T/pd_stall_2.log | head -12 >> "$SUM"; finalized $T/pd_stall_2.log "stall"
[ -z "${SKIP_LONG:-}" ] && run "peer_death_device stall team 4 PEs (NIIN_TIMEOUT=3)" $T/pd_stall_t4.log env PEER_DEATH_MODE=stall PEER_DEATH_SCOPE=team PEER_DEATH_STALL_S=25 NIIN_TIMEOUT=3 $NR -n 4 $D/peer_death_device_231
grep -h "NIIN\|SURVIVOR\|FAIL\|niinrun" $T/pd_stall_t4.log | head -16 >> "$SUM"; finalized $T/pd_stall_t4.log "stall team 4"
# ---- part 7, host barrier (tests/c/peer_death.c)
for n in 2 4; do
  run "peer_death host barrier $n PEs" $T/pd_host_$n.log $NR -n $n $D/peer_death
  grep -h "NIIN\|SURVIVOR\|niinrun" $T/pd_host_$n.log | head -12 >> "$SUM"
done
cp $T/pd_*.log "$O/" 2>/dev/null; tar -cJf "$O/pd-logs.tar.xz" -C $T $(cd $T && ls pd_*.log) 2>/dev/null; rm -f "$O"/pd_*.log
# ---- issue 15 part 1 on NCCL: mismatch.c at the default level (barriers), host_bench per level
for n in 2 4; do
  TAIL=8 run "mismatch.c default level $n PEs" $T/mm_$n.log $NR -n $n $D/mismatch
  grep -h "NIIN\|DONE" $T/mm_$n.log | head -12 >> "$SUM"
done
NV=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nvshmem/lib
for rep in $(seq 1 ${REPS:-2}); do
  for lvl in default 0 1; do
    e=(); [ $lvl != default ] && e=(NIIN_CHECK_COLLECTIVES=$lvl)
    TAIL=3 run "host_bench check=$lvl" $T/hb_$lvl.log env "${e[@]}" $NR -n 2 $D/host_bench_niin
    grep -h "HB|" $T/hb_$lvl.log | sed "s/^\[pe [0-9]*\] //; s/^/r$rep|check=$lvl|/" >> "$SUM"
  done
  U=$T/uid.$RANDOM; rm -f $U
  TAIL=3 run "host_bench nvshmem" $T/hb_nv.log env TEST_UID_FILE=$U mpirun --allow-run-as-root --oversubscribe -np 2 -x NCCL_NVLS_ENABLE -x NVSHMEM_DISABLE_NVLS -x TEST_UID_FILE -x NVSHMEM_SYMMETRIC_SIZE -x LD_LIBRARY_PATH=$NV $D/host_bench_nvshmem
  grep -h "HB|" $T/hb_nv.log | sed "s/^\[pe [0-9]*\] //; s/^/r$rep|nvshmem|/" >> "$SUM"
done
# ---- barrier latency: new niin-rs, old niin-rs (05ea054, NCCL's LSA barrier), NVSHMEM
NV=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nvshmem/lib
for n in ${LAT_PES:-2 4}; do
  for rep in $(seq 1 ${REPS:-2}); do
    TAIL=12 run "barrier_lat new $n" $T/bl_new_$n.log $NR -n $n $D/barrier_lat_niin; grep ROW $T/bl_new_$n.log | sed "s/^/new$rep|/" >> "$SUM"
    TAIL=12 run "barrier_lat old $n" $T/bl_old_$n.log $NR -n $n .gpu/old/barrier_lat_old; grep ROW $T/bl_old_$n.log | sed "s/^/old$rep|/" >> "$SUM"
    U=$T/uid.$RANDOM; rm -f $U
    TAIL=12 run "barrier_lat nvshmem $n" $T/bl_nv_$n.log env TEST_UID_FILE=$U mpirun --allow-run-as-root --oversubscribe -np $n -x NCCL_NVLS_ENABLE -x NVSHMEM_DISABLE_NVLS -x TEST_UID_FILE -x NVSHMEM_SYMMETRIC_SIZE -x LD_LIBRARY_PATH=$NV $D/barrier_lat_nvshmem
    grep ROW $T/bl_nv_$n.log | sed "s/^/nvshmem$rep|/" >> "$SUM"
  done
done
fi
if [ "$PART" = b ] || [ "$PART" = all ]; then
# ---- the new barriers under the families that use them
[ -z "${SKIP_LONG:-}" ] && TAIL=4 run "device_rma 2 PEs" $T/rma2.log $NR -n 2 $D/device_rma_231
TAIL=4 run "conf_team 2 PEs" $T/team2.log $NR -n 2 $D/conf_team_231
[ -z "${SKIP_LONG:-}" ] && TAIL=4 run "conf_team 4 PEs" $T/team4.log $NR -n 4 $D/conf_team_231
[ -z "${SKIP_LONG:-}" ] && TAIL=4 run "conf_signal_wait 2 PEs" $T/sw2.log $NR -n 2 $D/conf_signal_wait_231
TAIL=4 run "conf_launch 2 PEs" $T/launch2.log $NR -n 2 $D/conf_launch_231
[ -z "${SKIP_LONG:-}" ] && TAIL=4 run "conf_cumodule 2 PEs" $T/cum2.log $NR -n 2 $D/conf_cumodule_231
[ -z "${SKIP_LONG:-}" ] && TAIL=4 run "context_one 2 PEs" $T/ctx2.log env NIIN_BARRIER_CTAS=64 $NR -n 2 $D/context_one_231
TAIL=4 run "coll_smoke 4 PEs" $T/smoke4.log env SMOKE_TIMEOUT_S=20 $NR -n 4 $D/coll_smoke_231
[ -z "${SKIP_LONG:-}" ] && TAIL=4 TMO=200 run "conf_coll 2 PEs" $T/coll2.log $NR -n 2 $D/conf_coll_231
# ---- host API at 2 PEs (library of this commit)
TAIL=4 run "host_api 2 PEs" $T/hostapi2.log $NR -n 2 $D/host_api
TAIL=6 run "check_worker 2 PEs" $T/cw2.log $NR -n 2 $BIN/check_worker rma_every_type barrier_repeated teams_split_translate_barrier team_barrier_on_stream collectives_every_type heap_symmetric bad_input
# ---- issue 16 examples: CUDA C++ (examples/cuda) and the cudarc interop example
for ex in ring allreduce moe_dispatch; do
  TAIL=6 run "example $ex.cu 2 PEs" $T/ex_$ex.log $NR -n 2 $D/ex_$ex
done
TAIL=6 run "example allreduce.cu 4 PEs" $T/ex_allreduce4.log $NR -n 4 $D/ex_allreduce
TAIL=8 run "example cudarc_interop 2 PEs" $T/ex_cudarc.log $NR -n 2 $D/cudarc_interop --require-gpu
for f in $T/ex_*.log; do tail -4 $f | sed "s|^|$(basename $f)|" >> "$SUM"; done
tar -cJf "$O/sanity-logs.tar.xz" -C $T $(cd $T && ls ex_*.log)  -C $T rma2.log team2.log team4.log sw2.log launch2.log cum2.log ctx2.log smoke4.log coll2.log hostapi2.log cw2.log 2>/dev/null
fi
if [ "$PART" = exit ]; then
# ---- how each survivor of a stalled PE exits. Session 25 ran six 4-PE team-scope stalls:
# 10 of 15 survivor exits died of SIGSEGV in NCCL's proxy thread ("NCCL Service"), which
# ncclCommAbort cannot stop on a failed CUDA context (PERFORMANCE.md, section 10), and one
# survivor never ended. The exit guard (niin-transport/src/lsa/exit_guard.rs) ends such a
# process at once with its own status. Here: EXIT_REPS team-scope stalls with the guard
# (default 4), two with NIIN_FAULT_EXIT=full (the control: the crash should still show),
# a thread-scope stall and a kill with the guard. Each PE runs under the wrapper $W (its
# exit status printed; WRAP_ZERO=1, no dump) with .gpu/bin/segv-trace.so preloaded (scripts/gpu/segv-trace.c; no gdb here): a SIGSEGV
# prints the PE, the thread's name (NCCL names its threads under NCCL_SET_THREAD_NAME=1)
# and a backtrace. Logs: $OUT/exit-logs.tar.xz (the device tool returns 8 files at most),
# packed after each run (a part cut short keeps them). Session 26: no crash in 29 guarded
# exits; the "n of 4 PEs printed" rows it still showed were the driver's lost report of a
# stopped kernel (see `hang`), not the exit: since f86bb3d the watchdog ends such a PE.
export SEGV_TRACE=$BIN/segv-trace.so NCCL_SET_THREAD_NAME=1 NCCL_DEBUG=WARN WRAP_ZERO=1 DUMP_AFTER=
E=$T/exit; mkdir -p $E
ST=(PEER_DEATH_MODE=stall PEER_DEATH_STALL_S=4 NIIN_TIMEOUT=3)
NR30="$BIN/niinrun --timeout 30"
# exit_check LOG NAME SURVIVOR_RC CHECKS: CHECKS 1 (guard on): a FAIL row for a crash, a PE
# that never ended, a survivor status other than the program's, a "failed while releasing"
# line, or no guard line; 0 (guard off): only for a PE that never ended or a release line; 2 (a kill, where niinrun may stop the survivors
# before they finalize): only for a crash.
exit_check() {
  local log=$1 name=$2 want=$3 guarded=$4 n
  tar -cJf "$O/exit-logs.tar.xz" -C $E .
  grep -h "EXIT\|niinrun\|SEGV-TRACE\|(+0x\|)\[0x\|exit(.*) ends the process" "$log" >> "$SUM"
  if [ "$guarded" != 0 ] && grep -q "SEGV-TRACE: PE" "$log"; then
    row "  $name" "FAIL: a survivor crashed with the guard on"
  fi
  [ "$guarded" = 2 ] && return 0
  # Since the release-noise change: after a stopped kernel, finalize's one error is the
  # report; releasing windows, device communicators and the heap is not reported again.
  grep -q "failed while releasing" "$log" && row "  $name" "FAIL: release errors reported after the context failed"
  n=$(grep -c "EXIT PE" "$log")
  [ "$n" = "$NPES" ] || row "  $name" "FAIL: $n of $NPES PEs printed their exit status (one never ended?)"
  if [ "$guarded" = 1 ]; then
    # A survivor the driver never told is ended by the watchdog with status 1 (see `hang`).
    local other ended
    other=$(grep "EXIT PE" "$log" | grep -v "PE $((NPES - 1)) " | grep -vc "rc=$want")
    ended=$(grep -c "the watchdog ends the process" "$log")
    [ "$other" = "$ended" ] || row "  $name" "FAIL: $other survivors' status is not $want, $ended ended by the watchdog"
    [ "$ended" = 0 ] || row "  $name" "$ended survivor(s) ended by the watchdog"
    grep -q "exit($want) ends the process here" "$log" || row "  $name" "FAIL: no guard line"
  fi
  true
}
NPES=4
for i in $(seq 1 ${EXIT_REPS:-4}); do
  TAIL=0 TMO=45 run "stall team 4, guard ($i)" $E/team4_guard_$i.log env "${ST[@]}" PEER_DEATH_SCOPE=team $NR30 -n 4 $W $D/peer_death_device_231
  exit_check $E/team4_guard_$i.log "stall team 4, guard ($i)" 3 1
done
for i in 1 2; do
  TAIL=0 TMO=45 run "stall team 4, NIIN_FAULT_EXIT=full ($i)" $E/team4_full_$i.log env NIIN_FAULT_EXIT=full "${ST[@]}" PEER_DEATH_SCOPE=team $NR30 -n 4 $W $D/peer_death_device_231
  exit_check $E/team4_full_$i.log "stall team 4, full ($i)" 3 0
done
TAIL=0 TMO=45 run "stall thread 4, guard" $E/thread4_guard.log env "${ST[@]}" $NR30 -n 4 $W $D/peer_death_device_231
exit_check $E/thread4_guard.log "stall thread 4, guard" 3 1
# A kill needs the wrapper to pass the status on (WRAP_ZERO empty): the board must show it.
TAIL=0 TMO=45 run "kill thread 2, guard" $E/kill2_guard.log env WRAP_ZERO= $NR30 -n 2 $W $D/peer_death_device_231
exit_check $E/kill2_guard.log "kill thread 2, guard" 3 2
fi
if [ "$PART" = hang ]; then
# ---- a survivor whose stopped kernel the driver never reports. Session 26: in 13 of 23
# 4-PE team-scope stalls one survivor's cudaDeviceSynchronize spun in cuCtxSynchronize for
# ever, though its kernel had printed its NIIN: line and trapped; the other two survivors
# were told, about 36 ms apart (PERFORMANCE.md, section 10). Since f86bb3d the library's
# watchdog ends such a process 10 s after the stop (status 1, one NIIN: line saying the
# driver never reported it) and must leave alone a process the driver did tell, however
# long it then runs.
# HANG_CASES: runs as PES:SCOPE:STALL_S[:LINGER_S] (the last PE stalls; NIIN_TIMEOUT=3;
# LINGER_S: survivors wait that long after their error before finalize), by default how
# many survivors stop together (1, 2, 3), in which scope, and with a 15 s linger. Each row
# counts the PEs the watchdog ended ("ended by the watchdog") and FAILs where a PE that
# lingered was ended, or a PE printed no exit status. Each PE runs under the wrapper $W with
# DUMP_AFTER (default 27 s, past linger and watchdog): a PE still alive then has its
# threads, the GPU's utilization and compute processes and every thread's backtrace
# printed. HANG_PROG: another build of the program in dev/ (an A/B of a device change).
# Logs: $OUT/hang-logs.tar.xz.
export SEGV_TRACE=$BIN/segv-trace.so NCCL_SET_THREAD_NAME=1 NCCL_DEBUG=WARN WRAP_ZERO=1 DUMP_AFTER=${DUMP_AFTER:-27}
H=$T/hang; mkdir -p $H
hang_check() {
  local log=$1 name=$2 npes=$3 linger=$4 n w t l
  n=$(grep -c "EXIT PE" "$log"); w=$(grep -c "the watchdog ends the process" "$log")
  grep -h "EXIT PE\|SURVIVOR\|TASK PE\|GPU PE\|SEGV-TRACE: PE\|niinrun\|the watchdog ends" "$log" >> "$SUM"
  [ "$n" = "$npes" ] || row "  $name" "FAIL: $n of $npes PEs printed their exit status"
  [ "$w" = 0 ] || row "  $name" "$w PE(s) ended by the watchdog (driver never reported the stop)"
  # Each survivor is either told by the driver or ended by the watchdog; with a linger,
  # every one told must finish it (the watchdog leaves a told process alone).
  t=$(grep -c "SURVIVOR kernel ended" "$log"); l=$(grep -c "SURVIVOR lingered" "$log")
  [ $((t + w)) = $((npes - 1)) ] || row "  $name" "FAIL: $t survivors told + $w ended is not $((npes - 1))"
  [ "$linger" = 0 ] || [ "$l" = "$t" ] || row "  $name" "FAIL: $t survivors told, $l finished their linger"
  grep -q "THREAD-DUMP" "$log" && row "  $name" "HUNG: threads dumped"
  true
}
CASES=${HANG_CASES:-"4:team:4 4:team:4 4:team:4 3:team:4 3:team:4 3:team:4 2:team:4 2:team:4 4:thread:4 4:block:4 2:thread:4:15 4:team:4:15"}
k=0
for c in $CASES; do
  IFS=: read -r np sc st lg <<< "$c"; k=$((k + 1)); lg=${lg:-0}
  name="stall $st s, $sc $np, linger $lg ($k)"; log=$H/${np}_${sc}_${st}_${lg}_$k.log
  TAIL=0 TMO=45 run "$name" $log env PEER_DEATH_MODE=stall PEER_DEATH_STALL_S=$st PEER_DEATH_LINGER_S=$lg NIIN_TIMEOUT=3 PEER_DEATH_SCOPE=$sc $BIN/niinrun --timeout 32 -n $np $W $D/${HANG_PROG:-peer_death_device_231}
  hang_check $log "$name" $np $lg
  tar -cJf "$O/hang-logs.tar.xz" -C $H .
done
fi
echo "=== done part $PART"
