#!/usr/bin/env bash
# testGpu: only when named (bash scripts/testGpu.sh frameworks): ~15 launches, about 2-3 minutes.
# Issue 35 part A on the device: what frameworks' allocators and mpi4py's thread level do on the testbed (Open MPI
# 5.0.7 + UCX 1.13.1 built WITHOUT thread support), for the rules framework-allocator-pool-vmm and
# mpi4py-thread-multiple-ucx-no-mt. Python: /opt/torch/.venv (PY=… to change), whose mpi4py links an MPI this
# script reports (mpi4py.get_config(), MPI.Get_library_version(), ldd of its MPI module) instead of assuming one.
#   probe        the product's mpi4py probe (scripts/gpu/mpi4pyProbe.py, the same code as
#                extension/core/collect/mpi4pyProbe.ts) with $PY, and ldd of the MPI module it names
#   mpi4py-*     test/foreign/mpi4py_thread.py, 2 ranks, each rank's granted thread level and loaded pml, Open MPI's
#                own lines kept: -default (mpi4py asks MULTIPLE; pml ucx eligible with pml_ucx_tls / pml_ucx_devices
#                any, the choice left to Open MPI), -single, -serialized
#                (MPI4PY_RC_THREAD_LEVEL), -forced (--mca pml ucx with the default level: is MPI_Init refused?), without
#                the guard; -default-guard: the default under the guard in report mode (its per-rank pml; and whether
#                the guard changes the level the program sees: on Debian's Open MPI 4.1.4 it does, see frameworks.log)
#   torch-*      test/foreign/torch_send.py (mpi4py + torch, MPI4PY_RC_THREAD_LEVEL=single, 256 MiB x ITERS) under pml
#                ucx and the guard in report mode (the buffer classes each rank passed to MPI): -default,
#                -expandable (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True), -expandable-new (the same as
#                PYTORCH_ALLOC_CONF), -async (PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync)
#   cupy-*       test/foreign/cupy_send.py the same way: -default (MemoryPool), -async (MemoryAsyncPool)
#   inspect      `gpumpi inspect`, 2 ranks, with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: the ranks'
#                environment as the engine records it and the ipc_memory probe of the real driver
# Knobs: PY (/opt/torch/.venv/bin/python3), ITERS (3), FRAMEWORKS_BUDGET_S (200, for the launches after the build),
# FRAMEWORKS_ONLY (an extended regex: only the runs whose name matches; the inspect then too only if it matches
# "inspect"; the build is then the guard alone), FRAMEWORKS_REPEAT (1: each run that many times, named NAME#k).
# Writes exactly two files: $OUT/frameworks.log and $OUT/frameworks.json
# ({"schema":"gpumpi.gpu-frameworks/1","host","python","probe","probe_ldd","ucx_enable_mt","inspect","runs":[...]};
# each run: name, guard (true: under the guard), command, env, exit_code, timed_out, duration_s, output (rank / BW / RESULT lines and Open MPI's,
# UCX's and the guard's warnings), reports (the guard's per-rank JSON documents)).
# The integrator copies $OUT/frameworks.json to test-fixtures/engine/h100-testbed/frameworks.json; the test
# test/unit/rules/h200Frameworks.test.ts then checks the rules against it.
set -u
. "$(dirname "$0")/common.bash" frameworks
error_doc() { printf '{"schema":"gpumpi.gpu-frameworks/1","error":%s,"runs":[]}\n' "$(printf '%s' "$1" | json_str)"; }
PY="${PY:-/opt/torch/.venv/bin/python3}"
ITERS="${ITERS:-3}"
BUDGET_S="${FRAMEWORKS_BUDGET_S:-200}"
START=$(date +%s)
fail=0
log "== frameworks.sh $(date -u +%FT%TZ) host=$(hostname) python=$PY"
gpu_require timeout "$PY"
log "== mpirun: $MPIRUN ($("$MPIRUN" --version 2>&1 | head -n1))"
log "== ucx_info -v: $("$PREFIX/bin/ucx_info" -v 2>&1 | tr '\n' ' ')"
log "== nvidia-smi -L: $(nvidia-smi -L 2>&1 | tr '\n' ' ')"
log "== python: $("$PY" -c 'import sys, mpi4py, torch; print(sys.version.split()[0], "mpi4py", mpi4py.__version__, "torch", torch.__version__)' 2>&1 | tail -n1)"
log "== mpi4py.get_config(): $("$PY" -c 'import mpi4py; print(mpi4py.get_config())' 2>&1 | tail -n1)"
log "== MPI.Get_library_version(): $("$PY" -c 'import mpi4py; mpi4py.rc.initialize = False; from mpi4py import MPI; print(MPI.Get_library_version().splitlines()[0])' 2>&1 | tr -d '\000' | tail -n1)"
ONLY="${FRAMEWORKS_ONLY:-}"
REPEAT="${FRAMEWORKS_REPEAT:-1}"
targets=(gpumpi_cli gpumpi_guard)
[ -n "$ONLY" ] && ! [[ inspect =~ $ONLY ]] && targets=(gpumpi_guard)
if ! gpu_build "${targets[@]}"; then log "frameworks.sh: build failed (see $LOG)"; error_doc "build failed" >"$JSON"; exit 1; fi
GUARD="$BUILD/libgpumpi_guard.so"
START=$(date +%s)  # the budget is for the launches, not the build

probe=$("$PY" -c "$(cat scripts/gpu/mpi4pyProbe.py)" 2>>"$LOG")
log "== probe:"; log "$probe"
module=$(printf '%s\n' "$probe" | sed -n 's/^mpi_module=\(\/.*\)$/\1/p' | head -n1)
probe_ldd=""
[ -n "$module" ] && probe_ldd=$(ldd "$module" 2>&1)
log "== ldd $module:"; log "$probe_ldd"
mt=$("$PREFIX/bin/ucx_info" -b 2>&1 | grep -m1 'ENABLE_MT' || true)
log "== ucx_info -b: $mt"

entries=()
# run guard|plain NAME TIMEOUT ENV-OPTIONS… -- PROGRAM…: one launch of 2 ranks, under the guard in report mode or not.
run() {
  local k
  [ -n "$ONLY" ] && ! [[ $2 =~ $ONLY ]] && return
  if [ "$REPEAT" -le 1 ]; then run_once "$@"; return; fi
  for k in $(seq 1 "$REPEAT"); do run_once "$1" "$2#$k" "${@:3}"; done
}
run_once() {
  local how=$1 name=$2 limit=$3 pre=() dir out rc secs timed output reports f sep guard=()
  shift 3
  while [ $# -gt 0 ] && [ "$1" != -- ]; do pre+=("$1"); shift; done
  shift
  local left=$(( BUDGET_S - ($(date +%s) - START) ))
  if [ "$left" -lt 20 ]; then log "== $name: SKIPPED (budget)"; fail=1; return; fi
  [ "$limit" -gt "$left" ] && limit=$left
  dir=$(mktemp -d /tmp/gpumpi-frameworks-XXXXXX)
  out="$dir/out"
  [ "$how" = guard ] && guard=(-x "LD_PRELOAD=$GUARD" -x GPUMPI_GUARD=report -x "GPUMPI_GUARD_DIR=$dir" -x GPUMPI_GUARD_EVERY_RANK=1)
  local cmd=("${MPIRUN_BASE[@]}" -x PATH -x LD_LIBRARY_PATH "${pre[@]}" "${guard[@]}" -np 2 "$@")
  log "== $name: ${cmd[*]}"
  timed_run "$out" "$limit" "${cmd[@]}"
  rc=$RUN_RC secs=$RUN_SECS timed=$RUN_TIMED_OUT
  output=$(grep -aE '^rank [0-9]|^BW |^RESULT|^CHECK|MPI_THREAD_MULTIPLE|PML UCX|pml framework|No components|[Ww]arning|WARN|ERROR|[Ee]rror|Abort|abort|not support' "$out" | grep -v 'bad prefix' | head -n 60 | json_str)
  reports="" sep=""
  for f in "$dir"/guard-*.json; do
    [ -f "$f" ] || continue
    reports="$reports$sep$(tr -d '\n' <"$f")"; sep=","
  done
  log "-- exit $rc in ${secs}s; $(grep -aE '^rank [0-9]|^BW |^RESULT' "$out" | tr '\n' ';')"
  entries+=("{\"name\":\"$name\",\"guard\":$([ "$how" = guard ] && echo true || echo false),\"command\":$(printf '%s ' "${cmd[@]}" | json_str),\"env\":$(printf '%s ' "${pre[@]}" | json_str),\"exit_code\":$rc,\"timed_out\":$timed,\"duration_s\":$secs,\"output\":$output,\"reports\":[$reports]}")
  rm -rf "$dir"
}

THREAD=(test/foreign/mpi4py_thread.py)
# pml ucx eligible but not forced: the testbed has no mlx* device, so with its default pml_ucx_tls / pml_ucx_devices
# pml ucx would refuse every transport whatever the thread level (rule ompi-pml-ucx-transport-defaults).
ELIGIBLE=(--mca pml_ucx_tls any --mca pml_ucx_devices any -x UCX_NET_DEVICES=lo)
run plain mpi4py-default 60 "${ELIGIBLE[@]}" -- "$PY" "${THREAD[@]}"
run plain mpi4py-single 60 "${ELIGIBLE[@]}" -x MPI4PY_RC_THREAD_LEVEL=single -- "$PY" "${THREAD[@]}"
run plain mpi4py-serialized 60 "${ELIGIBLE[@]}" -x MPI4PY_RC_THREAD_LEVEL=serialized -- "$PY" "${THREAD[@]}"
run plain mpi4py-forced 60 "${UCX_PML[@]}" -- "$PY" "${THREAD[@]}"
run guard mpi4py-default-guard 60 "${ELIGIBLE[@]}" -- "$PY" "${THREAD[@]}"
TORCH=(-x MPI4PY_RC_THREAD_LEVEL=single -x ITERS="$ITERS" "${UCX_PML[@]}")
run guard torch-default 90 "${TORCH[@]}" -- "$PY" test/foreign/torch_send.py
run guard torch-expandable 90 "${TORCH[@]}" -x PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True -- "$PY" test/foreign/torch_send.py
run guard torch-expandable-new 90 "${TORCH[@]}" -x PYTORCH_ALLOC_CONF=expandable_segments:True -- "$PY" test/foreign/torch_send.py
run guard torch-async 90 "${TORCH[@]}" -x PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync -- "$PY" test/foreign/torch_send.py
run guard cupy-default 90 "${TORCH[@]}" -- "$PY" test/foreign/cupy_send.py
run guard cupy-async 90 "${TORCH[@]}" -x CUPY_SEND_ALLOC=async -- "$PY" test/foreign/cupy_send.py

inspect_doc=null
left=$(( BUDGET_S - ($(date +%s) - START) ))
if [ -n "$ONLY" ] && ! [[ inspect =~ $ONLY ]]; then
  log "== inspect: not asked (FRAMEWORKS_ONLY=$ONLY)"
elif [ "$left" -ge 20 ]; then
  out=$(mktemp)
  log "== inspect np2: ${MPIRUN_BASE[*]} -x PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True -np 2 $ENGINE inspect"
  timeout -k 5 60 "${MPIRUN_BASE[@]}" -x PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True -np 2 "$ENGINE" inspect >"$out" 2>>"$LOG"
  log "-- exit $?"
  inspect_doc=$(tr -d '\000' <"$out" | grep -m1 '^{"schema":"gpumpi.inspect/1"' || true)
  [ -n "$inspect_doc" ] || { inspect_doc=null; fail=1; }
  rm -f "$out"
else
  log "== inspect: SKIPPED (budget)"; fail=1
fi

{
  printf '{"schema":"gpumpi.gpu-frameworks/1","host":%s,"python":%s,"probe":%s,"probe_ldd":%s,"ucx_enable_mt":%s,"inspect":%s,"runs":[' \
    "$(hostname | json_str)" "$(printf '%s' "$PY" | json_str)" "$(printf '%s' "$probe" | json_str)" "$(printf '%s' "$probe_ldd" | json_str)" "$(printf '%s' "$mt" | json_str)" "$inspect_doc"
  sep=""
  for e in "${entries[@]}"; do printf '%s%s' "$sep" "$e"; sep=","; done
  printf ']}\n'
} >"$JSON"
log "== wrote $JSON ($(wc -c <"$JSON") bytes) in $(( $(date +%s) - START )) s; result: $([ $fail -eq 0 ] && echo ok || echo FAILED)"
exit $fail
