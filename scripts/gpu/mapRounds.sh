#!/usr/bin/env bash
# testGpu: only when named
# Issue 36's device check: the rounds code path of `gpumpi map` on DEVICE memory gives the numbers of the classic
# one-pair-at-a-time mode. 2 ranks on the one GPU (one pair: `--schedule rounds` is 1 round of 1 pair, through the
# round machinery — deadlines, checksums, the collector — and `--schedule sequential` the classic path), alternated
# so drift hits both, MAP_ROUNDS_TRIALS (default 5) trials each, under two transports of the testbed MPI:
#   ob1-smcuda  --mca pml ob1 --mca btl smcuda,self   (CUDA IPC)
#   ucx         --mca pml ucx                          (UCX cuda_ipc / cuda_copy)
# Writes $OUT/mapRounds.log (everything) and $OUT/mapRounds.json:
#   {"schema":"gpumpi.map-rounds-gpu/1","host","trials","large","runs":[{"transport","schedule","trial","exit_code","document"}]}
# (document: the engine's gpumpi.map/1, or null). Compared by test/unit/mapRoundsDevice.test.ts on the captured file.
# Exit status: 0 when every run produced a document. Budget: about 2 minutes.
set -u
. "$(dirname "$0")/common.bash" mapRounds
ERROR_DOC_FIELDS=',"runs":[]'
fail=0
log "== mapRounds.sh $(date -u +%FT%TZ) host=$(hostname)"
gpu_require
log "== nvidia-smi -L: $(nvidia-smi -L 2>&1 | tr '\n' ' ')"
if ! gpu_build gpumpi_cli; then
  log "mapRounds.sh: engine build failed (see $LOG)"
  error_doc "engine build failed" >"$JSON"
  exit 1
fi
TRIALS="${MAP_ROUNDS_TRIALS:-5}"
LARGE="${MAP_ROUNDS_LARGE:-64M}"
entries=()
for trial in $(seq 1 "$TRIALS"); do
  for transport in ob1-smcuda ucx; do
    if [ "$transport" = ucx ]; then net=("${UCX_PML[@]}"); else net=(--mca pml ob1 --mca btl smcuda,self); fi
    # Alternate which schedule goes first from trial to trial.
    if [ $((trial % 2)) -eq 1 ]; then order=(sequential rounds); else order=(rounds sequential); fi
    for schedule in "${order[@]}"; do
      launch_logged "$transport-$schedule-$trial" 90 "${MPIRUN_BASE[@]}" "${net[@]}" -np 2 \
        "$ENGINE" map --memory device --large "$LARGE" --small 8 --iters 5 --schedule "$schedule" --json
      doc=$(framed_doc "$LAUNCH_OUT" | grep '^{"schema":"gpumpi.map/1"' | tail -n1 || true)
      [ -n "$doc" ] || doc=null
      [ "$doc" != null ] && log "$transport $schedule $trial: $(printf '%s\n' "$doc" | grep -o '"class":"[a-z_]*"\|"bandwidth_gbps":[0-9.e+-]*,"latency_us":[0-9.e+-]*\|"mode":"[a-z]*","rounds":[0-9]*' | tr '\n' ' ')"
      entries+=("{\"transport\":\"$transport\",\"schedule\":\"$schedule\",\"trial\":$trial,\"exit_code\":$LAUNCH_RC,\"document\":$doc}")
      launch_done yes "$doc"
    done
  done
done
{
  printf '{"schema":"gpumpi.map-rounds-gpu/1","host":"%s","trials":%s,"large":"%s","runs":[' "$(hostname)" "$TRIALS" "$LARGE"
  (IFS=,; printf '%s' "${entries[*]}")
  printf ']}\n'
} >"$JSON"
exit "$fail"
