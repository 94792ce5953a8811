#!/usr/bin/env bash
# testGpu: only when named (bash scripts/testGpu.sh ipcMem): ~45 launches, about 3-4 minutes.
# Issue 16 item 1 on the device: can memory from stream-ordered pools and the VMM API use legacy CUDA IPC, and what
# does the testbed MPI do with such buffers?
#   inspect np2      `gpumpi inspect` with its ipc_memory probe (cuMemAlloc, default pool, pools with/without POSIX-FD
#                    export, VMM with/without): legacy-IPC capable, allowed handle types, cuIpcGetMemHandle's result
#   repro ipc        variants pool (cuMemAllocAsync) and vmm (cuMemCreate, POSIX-FD handles), and direct as the
#                    cuMemAlloc baseline, at 4K (eager) and 64M (rendezvous), under ob1 (smcuda) and pml ucx
#                    (UCX_LOG_LEVEL=info: the lanes say whether cuda_ipc or a pipeline/tcp carried it), IPCMEM_TRIALS
#                    trials each (default 5)
# Writes exactly two files: $OUT/ipcMem.log (everything) and $OUT/ipcMem.json
# ({"schema":"gpumpi.gpu-ipcmem-runs/1","inspect":<rank-0 inspect document or null>,"runs":[...]}; each run:
# config, variant, size, trial, command, exit_code, timed_out, duration_s, output (transport lines), document).
set -u
. "$(dirname "$0")/common.bash" ipcMem
error_doc() { printf '{"schema":"gpumpi.gpu-ipcmem-runs/1","error":"%s","inspect":null,"runs":[]}\n' "$1"; }
TRIALS="${IPCMEM_TRIALS:-5}"
BUDGET_S="${IPCMEM_BUDGET_S:-500}"
START=$(date +%s)
fail=0
log "== ipcMem.sh $(date -u +%FT%TZ) host=$(hostname)"
gpu_require timeout
log "== mpirun: $MPIRUN ($("$MPIRUN" --version 2>&1 | head -n1))"
log "== ucx_info -v: $("$PREFIX/bin/ucx_info" -v 2>&1 | tr '\n' ' ')"
log "== nvidia-smi -L: $(nvidia-smi -L 2>&1 | tr '\n' ' ')"
if ! gpu_build gpumpi_cli; then log "ipcMem.sh: engine build failed (see $LOG)"; error_doc "engine build failed" >"$JSON"; exit 1; fi
BASE=("$MPIRUN" --allow-run-as-root --oversubscribe --mca mca_base_component_path "$PREFIX/lib/openmpi")
OB1=(--mca pml ob1)
UCX=(--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x UCX_NET_DEVICES=lo -x UCX_LOG_LEVEL=info)

out=$(mktemp)
log "== inspect np2: ${BASE[*]} -np 2 $ENGINE inspect"
timeout -k 5 90 "${BASE[@]}" -np 2 "$ENGINE" inspect >"$out" 2>>"$LOG"
log "-- exit $?"
cat "$out" >>"$LOG"
inspect_doc=$(tr -d '\000' <"$out" | grep -m1 '^{"schema":"gpumpi.inspect/1"' || true)
[ -n "$inspect_doc" ] || { inspect_doc=null; fail=1; }
printf '%s\n' "$inspect_doc" | grep -o '"kind":"[a-z-]*"\|"kind":"cuMemAlloc"\|"legacy_ipc_capable":[a-z]*\|"allowed_handle_types":"[^"]*"\|"ipc_get_mem_handle":"[^"]*"' | tee -a "$LOG"
rm -f "$out"

entries=()
for trial in $(seq 1 "$TRIALS"); do
  for config in ob1 ucx; do
    [ "$config" = ob1 ] && opts=("${OB1[@]}") || opts=("${UCX[@]}")
    for size in 4K 64M; do
      for v in pool vmm direct; do
        left=$(( BUDGET_S - ($(date +%s) - START) ))
        if [ "$left" -lt 15 ]; then log "== [$config] $v $size trial $trial: SKIPPED (budget)"; fail=1; continue; fi
        limit=45; [ "$limit" -gt "$left" ] && limit=$left
        out=$(mktemp)
        cmd=("${BASE[@]}" "${opts[@]}" -np 4 "$ENGINE" repro ipc --variant "$v" --size "$size" --json)
        log "== [$config] $v $size trial $trial: ${cmd[*]}"
        timed_run "$out" "$limit" "${cmd[@]}"
        rc=$RUN_RC secs=$RUN_SECS timed=$RUN_TIMED_OUT
        doc=$(framed_doc "$out" | grep -m1 '^{"schema":"gpumpi\.repro\..*}$' || true)
        [ -n "$doc" ] || doc=null
        log "-- exit $rc in ${secs}s, timed_out=$timed, $(printf '%s' "$doc" | grep -o '"outcome":"[a-z_]*"' | tail -n1)"
        output=$(grep -v -e '^{"schema":"gpumpi' -e '@@GPUMPI-JSON' "$out" |
                 grep -E 'ep_cfg|\||@@GPUMPI-RANK|[Ss]ignal|[Ee]rror|ERROR|WARN|failed|cuIpc|cuda_ipc|cuMem|abort' | head -n 200 | json_str)
        entries+=("{\"config\":\"$config\",\"variant\":\"$v\",\"size\":\"$size\",\"trial\":$trial,\"command\":$(printf '%s ' "${cmd[@]}" | json_str),\"exit_code\":$rc,\"timed_out\":$timed,\"duration_s\":$secs,\"output\":$output,\"document\":$doc}")
        rm -f "$out"
        $timed && reap
      done
    done
  done
done

{
  printf '{"schema":"gpumpi.gpu-ipcmem-runs/1","host":"%s","trials":%s,"inspect":%s,"runs":[' "$(hostname)" "$TRIALS" "$inspect_doc"
  sep=""
  for e in "${entries[@]}"; do printf '%s%s' "$sep" "$e"; sep=","; done
  printf ']}\n'
} >"$JSON"
log "== wrote $JSON ($(wc -c <"$JSON") bytes) in $(( $(date +%s) - START )) s; result: $([ $fail -eq 0 ] && echo ok || echo FAILED)"
exit $fail
