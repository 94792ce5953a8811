#!/usr/bin/env bash
# `gpumpi repro ipc|fallback` on the GPU device, run by scripts/testGpu.sh (or by hand) from the repository root with
# the CUDA-aware testbed MPI on PATH (/opt/testbed2, see ../shared/testbed/README.md). No Node needed (there is none
# on the device): this script drives the engine directly, one mpirun per run, each under `timeout`.
#   ipc:      variants direct, bounce, host, send-from-import (64 MiB, 4 ranks, one GPU) under three configs:
#             ob1 (smcuda), pml ucx, pml ucx with UCX_TLS=^cuda_ipc (also with UCX_MEMTYPE_CACHE=n), pml ucx over
#             tcp,cuda_copy,self and tcp,cuda_copy,cuda_ipc,self; plus one crash-test run (a real SIGSEGV in
#             rank 1, to see the device's crash output).
#   fallback: 2 ranks, sizes 1M..1G, iters 3, modes mpi,staged,host and libgpumpi's lib-auto,lib-staged,lib-shm
#             (the ranking of the fallback verdict, issue 19), REPRO_FB_TRIALS (default 1) trials each, under five configs: ob1 default,
#             ob1 --mca btl_smcuda_use_cuda_ipc 0, ob1 --mca btl tcp,self, ucx UCX_TLS=sm,cuda_copy,self,
#             ucx UCX_TLS=tcp,cuda_copy,self; plus one small ucx run with UCX_PROTO_INFO=y UCX_PROTO_ENABLE=y for the
#             protocol tables (that switch changes UCX 1.13's protocol selection, so it is kept out of the numbers).
# UCX runs log with UCX_LOG_LEVEL=info (lanes go to stdout), ob1 runs with --mca btl_base_verbose 100 (bml lines).
# Writes exactly two files: $OUT/repro.log (everything, raw outputs included) and $OUT/repro.json (a JSON array, one
# entry per run: kind, config, variant|modes, command, exit_code, timed_out, duration_s, output (the transport,
# crash and error lines plus the last 40 lines of the run), document (the engine's JSON or null)). Render it with
#   node bin/gpumpi-doctor.js repro ipc --from-json gpu-out/repro.json   (and: repro fallback --from-json …)
# REPRO_ONLY=fallback (or ipc) runs only that part. For the ranked fallback verdict (needs >= 2 trials):
#   REPRO_ONLY=fallback REPRO_FB_TRIALS=3 REPRO_BUDGET_S=560 bash scripts/gpu/repro.sh
# Total runtime about 3-5 minutes. Exit status: 0 when the engine built and every ipc/fallback run printed a document
# (crash-test excepted).
set -u
. "$(dirname "$0")/common.bash" repro
error_doc() { printf '[]\n'; }
IPC_SIZE="${REPRO_IPC_SIZE:-64M}"
SIZES="${REPRO_SIZES:-1M..1G}"
ITERS="${REPRO_ITERS:-3}"
BUDGET_S="${REPRO_BUDGET_S:-345}"
ONLY="${REPRO_ONLY:-all}"
FB_TRIALS="${REPRO_FB_TRIALS:-1}"
FB_MODES=mpi,staged,host,lib-auto,lib-staged,lib-shm  # every run ends (timeout) before this many seconds after the start
START=$(date +%s)


fail=0
log "== repro.sh $(date -u +%FT%TZ) host=$(hostname)"
gpu_require timeout
log "== mpirun: $MPIRUN ($("$MPIRUN" --version 2>&1 | head -n1))"
log "== ucx_info -v: $("$PREFIX/bin/ucx_info" -v 2>&1 | tr '\n' ' ')"
log "== nvidia-smi -L: $(nvidia-smi -L 2>&1 | tr '\n' ' ')"
if ! gpu_build gpumpi_cli; then
  log "repro.sh: engine build failed (see $LOG)"
  error_doc >"$JSON"
  exit 1
fi
log "== engine: $ENGINE (build took $(( $(date +%s) - START )) s)"

COMPONENTS="${REPRO_COMPONENT_PATH:-$PREFIX/lib/openmpi}"  # the site may override it for the ranks (observed.md B)
BASE=("$MPIRUN" --allow-run-as-root --oversubscribe --mca mca_base_component_path "$COMPONENTS")
OB1=(--mca pml ob1 --mca btl_base_verbose 100)
UCX=(--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x UCX_NET_DEVICES=lo -x UCX_LOG_LEVEL=info)
entries=()


# run KIND CONFIG WHAT LIMIT ARGV... : one mpirun; WHAT is the ipc variant or the fallback modes.
run() {
  local kind=$1 config=$2 what=$3 limit=$4
  shift 4
  local out rc secs doc timed key
  local left=$(( BUDGET_S - ($(date +%s) - START) ))  # keep the whole script under 6 minutes
  if [ "$left" -lt 15 ]; then
    log "== $kind [$config] $what: SKIPPED (time budget of $BUDGET_S s used up)"
    LAST_DOC=skipped
    fail=1
    return
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  out=$(mktemp)
  log "== $kind [$config] $what: $*"
  timed_run "$out" "$limit" "$@"
  rc=$RUN_RC secs=$RUN_SECS timed=$RUN_TIMED_OUT
  # Only a document with every chunk is complete (a killed run may have printed part of it).
  doc=$(framed_doc "$out" | grep -m1 '^{"schema":"gpumpi\.repro\..*}$' || true)
  [ -n "$doc" ] || doc=null
  local outcome
  outcome=$(printf '%s' "$doc" | grep -o '"outcome":"[a-z_]*"' | tail -n1)
  log "-- exit $rc in ${secs}s, timed_out=$timed, ${outcome:-no document}"
  [ "$kind" = ipc ] && key=variant || key=modes
  local output
  output=$( { grep -v -e '^{"schema":"gpumpi' -e '^@@GPUMPI-JSON' "$out" |
              grep -E 'ep_cfg|\||bml: Using|@@GPUMPI-RANK|[Ss]ignal|BAD TERMINATION|PID|EXIT|[Ee]rror|ERROR|WARN|failed|cuIpc|cuda_ipc|cuMem|noticed|abort' | head -n 600
              printf '%s\n' '-- last lines --'
              grep -v -e '^{"schema":"gpumpi' -e '@@GPUMPI-JSON' "$out" | tail -n 40; } | json_str)
  entries+=("{\"kind\":\"$kind\",\"config\":\"$config\",\"$key\":\"$what\",\"command\":$(printf '%s ' "$@" | json_str),\"exit_code\":$rc,\"timed_out\":$timed,\"duration_s\":$secs,\"output\":$output,\"document\":$doc}")
  rm -f "$out"
  $timed && reap
  LAST_DOC=$doc
}

# ---- ipc: each variant its own mpirun ----
# "ucx NAME=VALUE ..." configs pass each NAME=VALUE with -x. tcp,cuda_copy(,cuda_ipc),self imitate the report's
# inter-node transport on one machine; UCX_MEMTYPE_CACHE=n tests whether the ^cuda_ipc crash (UCX taking imported
# device memory for host memory, seen 2026-12-02) comes from the memory-type cache.
IPC_CONFIGS=("ob1" "ucx" "ucx UCX_TLS=^cuda_ipc" "ucx UCX_TLS=^cuda_ipc UCX_MEMTYPE_CACHE=n"
             "ucx UCX_TLS=tcp,cuda_copy,self" "ucx UCX_TLS=tcp,cuda_copy,cuda_ipc,self")
[ "$ONLY" = fallback ] && IPC_CONFIGS=()
for config in "${IPC_CONFIGS[@]}"; do
  case "$config" in
    ob1) opts=("${OB1[@]}") ;;
    ucx) opts=("${UCX[@]}") ;;
    ucx\ *)
      opts=("${UCX[@]}")
      for kv in ${config#ucx }; do opts+=(-x "$kv"); done ;;
  esac
  for v in direct bounce host send-from-import; do
    run ipc "$config" "$v" 45 "${BASE[@]}" "${opts[@]}" -np 4 "$ENGINE" repro ipc --variant "$v" --size "$IPC_SIZE" --json
    [ "$LAST_DOC" = null ] && [ "$config" = ob1 ] && fail=1
  done
done
[ "$ONLY" = fallback ] || run ipc ob1 crash-test 60 "${BASE[@]}" "${OB1[@]}" -np 4 "$ENGINE" repro ipc --variant crash-test --size 1M --json

# ---- fallback: one run per config with all modes; if it dies without a document, the host paths again alone ----
FB_CONFIGS=("ob1" "ob1 btl_smcuda_use_cuda_ipc=0" "ob1 btl=tcp,self" "ucx UCX_TLS=sm,cuda_copy,self" "ucx UCX_TLS=tcp,cuda_copy,self")
[ "$ONLY" = ipc ] && FB_CONFIGS=()
for trial in $(seq 1 "$FB_TRIALS"); do
for config in "${FB_CONFIGS[@]}"; do
  case "$config" in
    "ob1") opts=("${OB1[@]}") ;;
    "ob1 btl_smcuda_use_cuda_ipc=0") opts=("${OB1[@]}" --mca btl_smcuda_use_cuda_ipc 0) ;;
    "ob1 btl=tcp,self") opts=("${OB1[@]}" --mca btl tcp,self --mca btl_tcp_if_include lo) ;;
    "ucx UCX_TLS=sm,cuda_copy,self") opts=("${UCX[@]}" -x UCX_TLS=sm,cuda_copy,self) ;;
    *) opts=("${UCX[@]}" -x UCX_TLS=tcp,cuda_copy,self) ;;
  esac
  run fallback "$config" "$FB_MODES" 130 "${BASE[@]}" "${opts[@]}" -np 2 "$ENGINE" repro fallback --sizes "$SIZES" --iters "$ITERS" --modes "$FB_MODES" --json
  if [ "$LAST_DOC" = null ]; then
    fail=1
    run fallback "$config" staged,host,lib-auto,lib-staged,lib-shm 100 "${BASE[@]}" "${opts[@]}" -np 2 "$ENGINE" repro fallback --sizes "$SIZES" --iters "$ITERS" --modes staged,host,lib-auto,lib-staged,lib-shm --json
  fi
done
done
[ "$ONLY" = ipc ] || run fallback "ucx UCX_TLS=sm,cuda_copy,self +PROTO_INFO" mpi 60 "${BASE[@]}" "${UCX[@]}" -x UCX_TLS=sm,cuda_copy,self -x UCX_PROTO_INFO=y -x UCX_PROTO_ENABLE=y \
  -np 2 "$ENGINE" repro fallback --sizes 1M,64M --iters 1 --modes mpi --json

{
  printf '['
  sep=""
  for e in "${entries[@]}"; do printf '%s%s\n' "$sep" "$e"; sep=","; done
  printf ']\n'
} >"$JSON"
log "== wrote $JSON ($(wc -c <"$JSON") bytes, ${#entries[@]} runs) in $(( $(date +%s) - START )) s; result: $([ $fail -eq 0 ] && echo ok || echo FAILED)"
exit $fail
