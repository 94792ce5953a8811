#!/usr/bin/env bash
# testGpu: only when named (bash scripts/testGpu.sh guard): 3 × TRIALS launches of guard_demo --ipc.
# Issue 13's device check: the seed's IPC scenario as a real application (native/examples/guard_demo --ipc: 4 ranks,
# ranks 0 and 2 export device memory, ranks 1 and 3 import it and MPI_Irecv into the import, the owners verify word
# by word), pml ucx as repro.sh runs it, TRIALS (default 12) independent launches each of: no guard, the guard in
# GPUMPI_GUARD=report, the guard in GPUMPI_GUARD=fix. Expected: report flags ipc-import-ucx-cuda-ipc on MPI_Irecv in
# ranks 1 and 3 (firstSite in guard_demo) and changes nothing; fix is correct in every trial.
# Knobs: TRIALS=N, SIZE=bytes (64 MiB), VIA=irecv|recv|persistent, EXTRA="--send-from-import" (the second variant),
# GUARD_UCX_TLS=... (passed as UCX_TLS to the ranks, e.g. ^cuda_ipc).
# Writes exactly two files: $OUT/guard.log (commands, per-trial lines, stderr tails) and $OUT/guard.json
# ({"configs":[{"name","ok","trials":[{"rc","result","wrong","dangers":["rank:kind:call:action", ...]}]}]}).
set -u
. "$(dirname "$0")/common.bash" guard
gpu_require timeout
TRIALS="${TRIALS:-12}"
SIZE="${SIZE:-67108864}"
VIA="${VIA:-irecv}"
EXTRA="${EXTRA:-}"
log "== guard.sh $(date -u +%FT%TZ) host=$(hostname) trials=$TRIALS size=$SIZE via=$VIA extra=$EXTRA"
log "== nvidia-smi -L: $(nvidia-smi -L 2>&1 | tr '\n' ' ')"
if ! gpu_build gpumpi_guard guard_demo; then
  log "guard.sh: build failed (see $LOG)"
  error_doc "build failed" >"$JSON"
  exit 1
fi
GUARD="$BUILD/libgpumpi_guard.so"
DEMO="$BUILD/examples/guard_demo"
BASE=("${MPIRUN_BASE[@]}" "${UCX_PML[@]}")
if [ -n "${GUARD_UCX_TLS:-}" ]; then BASE+=(-x "UCX_TLS=$GUARD_UCX_TLS"); fi
# off the GPU machine only (a check of this script): GPUMPI_LIBCUDA=native/fakes' fake driver, passed to the ranks
if [ -n "${GPUMPI_LIBCUDA:-}" ]; then BASE+=(-x "GPUMPI_LIBCUDA=$GPUMPI_LIBCUDA"); fi
# shellcheck disable=SC2206
ARGS=(--ipc --size "$SIZE" --via "$VIA" $EXTRA)

fail=0
configs=""
for config in none report fix; do
  trials=""
  good=0
  for t in $(seq 1 "$TRIALS"); do
    dir=$(mktemp -d /tmp/gpumpi-guard-XXXXXX)
    opts=()
    if [ "$config" != none ]; then opts=(-x "LD_PRELOAD=$GUARD" -x "GPUMPI_GUARD=$config" -x "GPUMPI_GUARD_DIR=$dir"); fi
    out=$(cd "$dir" && timeout -k 5 90 "${BASE[@]}" "${opts[@]}" -np 4 "$DEMO" "${ARGS[@]}" 2>"$dir/stderr")
    rc=$?
    result=$(printf '%s\n' "$out" | sed -n 's/^RESULT //p' | head -n1)
    wrong=$(printf '%s\n' "$out" | sed -n 's/^IPC rank \([0-9]*\): [0-9]* words, \([0-9]*\) wrong$/\1:\2/p' | tr '\n' ' ' | sed 's/ $//')
    dangers=""
    for f in "$dir"/guard-*.json; do
      [ -f "$f" ] || continue
      rank=$(sed -n 's/.*"rank":\([0-9]*\),.*/\1/p' "$f" | head -n1)
      for d in $(grep -o '"kind":"[^"]*","call":"[^"]*"' "$f" | sed 's/"kind":"\([^"]*\)","call":"\([^"]*\)"/\1:\2/'); do
        act=$(grep -o "\"kind\":\"${d%%:*}\",\"call\":\"${d##*:}\"[^}]*}[^}]*\"action\":\"[a-z]*\"" "$f" | sed 's/.*"action":"\([a-z]*\)"/\1/' | head -n1)
        dangers="$dangers${dangers:+,}\"$rank:$d:$act\""
      done
    done
    [ "$rc" = 0 ] && [ "$result" = PASS ] && good=$((good + 1))
    log "  $config trial $t: rc=$rc result=${result:-none} wrong=[${wrong}] dangers=[${dangers}]"
    if [ "$rc" != 0 ]; then tail -n 5 "$dir/stderr" | sed 's/^/    | /' | tee -a "$LOG" >/dev/null; fi
    trials="$trials${trials:+,}{\"rc\":$rc,\"result\":\"${result:-none}\",\"wrong\":\"$wrong\",\"dangers\":[$dangers]}"
    rm -rf "$dir"
  done
  log "== $config: $good of $TRIALS trials correct"
  if [ "$config" = fix ] && [ "$good" != "$TRIALS" ]; then fail=1; fi
  configs="$configs${configs:+,}{\"name\":\"$config\",\"correct\":$good,\"trials\":[$trials]}"
done
printf '{"schema":"gpumpi.gpu.guard/1","size":%s,"via":"%s","extra":"%s","trialsPerConfig":%s,"configs":[%s]}\n' \
  "$SIZE" "$VIA" "$EXTRA" "$TRIALS" "$configs" >"$JSON"
if [ "$fail" = 0 ]; then log "== guard.sh done: fix correct in every trial"; else log "== guard.sh done: fix NOT correct in every trial"; fi
exit $fail
