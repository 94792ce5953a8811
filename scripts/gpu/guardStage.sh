#!/usr/bin/env bash
# testGpu: only when named (bash scripts/testGpu.sh guardStage): the guard's STAGE transfer (issue 13, docs/guard.md).
# 2 ranks on one GPU, pml ucx, UCX_TLS=sm,cuda_copy,self (no cuda_ipc: UCX pipelines GPU data through host memory),
# native/examples/guard_stage --bench: rank 0 sends ITERS device messages of SIZE bytes (default 1 GiB x 5) to rank 1.
# TRIALS (default 5) launches each of: no guard ("none"), and GPUMPI_GUARD_STAGE=1 ("stage"); then the knob sweep:
# one STAGE launch per GPUMPI_GUARD_STAGE_CHUNK in $CHUNKS x GPUMPI_GUARD_STAGE_BUFFERS in $BUFFERS.
# Per launch: both ranks' JSON line (bandwidth, correct, VmHWM before / after the timed loop, kB) and, under the
# guard, each rank's report "stage" + "stageDetail" (staged messages / bytes per peer, staging bytes held).
# Expected: stage bandwidth >= none's (UCX's own, ~36 GB/s measured), correct in every trial, VmHWM growth <= the
# staging bytes. Knobs: TRIALS, SIZE, ITERS, CHUNKS="4194304 16777216 67108864", BUFFERS="2 4 8", SWEEP=0 (skip it).
# Writes exactly two files: $OUT/guardStage.log and $OUT/guardStage.json
# ({"schema":"gpumpi.gpu.guardStage/1","configs":[{"name","env","trials":[{"rc","ranks":[..],"reports":[..]}]}]}).
set -u
. "$(dirname "$0")/common.bash" guardStage
gpu_require timeout
TRIALS="${TRIALS:-5}"
SIZE="${SIZE:-1073741824}"
ITERS="${ITERS:-5}"
CHUNKS="${CHUNKS:-4194304 16777216 67108864}"
BUFFERS="${BUFFERS:-2 4 8}"
SWEEP="${SWEEP:-1}"
log "== guardStage.sh $(date -u +%FT%TZ) host=$(hostname) trials=$TRIALS size=$SIZE iters=$ITERS"
log "== nvidia-smi -L: $(nvidia-smi -L 2>&1 | tr '\n' ' ')"
if ! gpu_build gpumpi_guard guard_stage; then
  log "guardStage.sh: build failed (see $LOG)"
  error_doc "build failed" >"$JSON"
  exit 1
fi
GUARD="$BUILD/libgpumpi_guard.so"
PROG="$BUILD/examples/guard_stage"
BASE=("${MPIRUN_BASE[@]}" "${UCX_PML[@]}" -x UCX_TLS=sm,cuda_copy,self)
# off the GPU machine only (a check of this script): the fake driver
if [ -n "${GPUMPI_LIBCUDA:-}" ]; then BASE+=(-x "GPUMPI_LIBCUDA=$GPUMPI_LIBCUDA"); fi

fail=0
configs=""
# run_config NAME ENVSTRING N  (ENVSTRING: space-separated NAME=VALUE for the ranks, "" = no guard)
run_config() {
  local name="$1" envs="$2" n="$3" trials="" t good=0
  for t in $(seq 1 "$n"); do
    local dir opts=() kv out rc ranks reports f
    dir=$(mktemp -d /tmp/gpumpi-gstage-XXXXXX)
    if [ -n "$envs" ]; then
      opts=(-x "LD_PRELOAD=$GUARD" -x "GPUMPI_GUARD_DIR=$dir")
      for kv in $envs; do opts+=(-x "$kv"); done
    fi
    out=$(cd "$dir" && timeout -k 5 300 "${BASE[@]}" "${opts[@]}" -np 2 "$PROG" --bench --size "$SIZE" --iters "$ITERS" 2>"$dir/stderr")
    rc=$?
    ranks=$(printf '%s\n' "$out" | grep '^{"rank":' | tr '\n' ',' | sed 's/,$//')
    reports=""
    for f in "$dir"/guard-*.json; do
      [ -f "$f" ] || continue
      local r
      r=$(grep -o '"rank":[0-9]*' "$f" | head -n1)
      r="{$r,$(grep -o '"stage":[a-z]*' "$f" | head -n1),$(grep -o '"stageDetail":{.*}}' "$f" | sed 's/}},"finalized".*/}}/' | head -n1)}"
      reports="$reports${reports:+,}$r"
    done
    if [ "$rc" = 0 ] && printf '%s' "$ranks" | grep -q '"correct":true' && ! printf '%s' "$ranks" | grep -q '"correct":false'; then good=$((good + 1)); fi
    log "  $name trial $t: rc=$rc $(printf '%s\n' "$out" | grep '^{"rank":1' | sed 's/.*"gbps":\([0-9.]*\).*"vmHwmKbBefore":\([0-9-]*\),"vmHwmKbAfter":\([0-9-]*\).*/rank1 \1 GB\/s, VmHWM \2 -> \3 kB/')"
    if [ "$rc" != 0 ]; then tail -n 8 "$dir/stderr" | sed 's/^/    | /' | tee -a "$LOG" >/dev/null; fi
    trials="$trials${trials:+,}{\"rc\":$rc,\"ranks\":[$ranks],\"reports\":[$reports]}"
    rm -rf "$dir"
  done
  log "== $name: $good of $n trials correct"
  [ "$good" = "$n" ] || fail=1
  configs="$configs${configs:+,}{\"name\":\"$name\",\"env\":\"$envs\",\"correct\":$good,\"trials\":[$trials]}"
}

run_config none "" "$TRIALS"
run_config stage "GPUMPI_GUARD_STAGE=1" "$TRIALS"
if [ "$SWEEP" = 1 ]; then
  for c in $CHUNKS; do
    for b in $BUFFERS; do
      run_config "stage-c$c-b$b" "GPUMPI_GUARD_STAGE=1 GPUMPI_GUARD_STAGE_CHUNK=$c GPUMPI_GUARD_STAGE_BUFFERS=$b" 1
    done
  done
fi
printf '{"schema":"gpumpi.gpu.guardStage/1","size":%s,"iters":%s,"trialsPerConfig":%s,"configs":[%s]}\n' \
  "$SIZE" "$ITERS" "$TRIALS" "$configs" >"$JSON"
if [ "$fail" = 0 ]; then log "== guardStage.sh done: correct in every trial"; else log "== guardStage.sh done: NOT correct in every trial"; fi
exit $fail
