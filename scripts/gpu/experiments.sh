#!/usr/bin/env bash
# testGpu: only when named (bash scripts/testGpu.sh experiments): ~8 minutes of device time.
# Device experiments behind issues 16 and 18, through the headless CLI (as users run it) on the CUDA-aware testbed:
#   cudainit-ipc-ucx   repro ipc --pml-ucx, variants direct,bounce, 11 trials, CUDA first touched before MPI_Init
#                      (the engine's default) and, as a second configuration, after it (GPUMPI_CUDA_INIT=after-mpi-init)
#   cudainit-ipc-ob1   the same under --mca pml ob1 (smcuda), 6 trials
#   cudainit-fallback  repro fallback, mode mpi, 256M,1G, 3 trials, pml ucx UCX_TLS=sm,cuda_copy,self and ob1 with
#                      btl_smcuda_use_cuda_ipc 0, with CUDA first touched after MPI_Init
#   rndv-*             repro fallback, mode mpi, 256M,1G, 3 trials, pml ucx UCX_TLS=sm,cuda_copy,self (host staging),
#                      one UCX rendezvous setting changed at a time (only settings `ucx_info -c` lists): what each
#                      does to the host memory the staging takes and to bandwidth
#   bench-register     gpumpi bench (libgpumpi's staged/shm/auto, 64M) under pml ucx: the stderr lines Open MPI 5
#                      prints about cuMemHostRegister, kept whole
#   rndv2              (EXP=rndv2) the memory-type-qualified FRAG_SIZE / FRAG_ALLOC_COUNT values, PIPELINE_SHM_ENABLE=n, PROTO_ENABLE=y
#   bench1g            (EXP=bench1g) the same bench at 1 GiB
#   tryucx             (EXP=tryucx) repro fallback --modes mpi,lib-shm --try-ucx staging in ONE run (the product's own
#                      comparison: each setting ranked beside MPI and libgpumpi from its trials, docs/repro-schema.md)
# EXP (default cudainit,rndv,bench) picks the groups. Component path given (observed.md B). Every experiment is skipped (and says so) when less than its expected time is
# left of BUDGET_S (default 540). Needs dist/cli.js and Node (PATH, else .gpu/node.xz), like cli.sh.
# Writes exactly two files: $OUT/experiments.log and $OUT/experiments.json
# ({"schema":"gpumpi.gpu-experiments/1","ucx_rndv_config":"…","runs":[{"name","args","exit","seconds","doc"|"skipped"}],
#   "bench_stderr":"…","compute_mode":"…"}).
set -u
. "$(dirname "$0")/common.bash" experiments
error_doc() { printf '{"schema":"gpumpi.gpu-experiments/1","error":"%s","runs":[]}\n' "$1"; }
CP=(--mca mca_base_component_path "$PREFIX/lib/openmpi")
BUDGET_S="${BUDGET_S:-540}"
START=$(date +%s)
gpu_cli_node
gpu_require timeout
if ! gpu_build gpumpi_cli; then log "experiments.sh: engine build failed"; error_doc "engine build failed" >"$JSON"; exit 1; fi
log "== experiments.sh $(date -u +%FT%TZ) host=$(hostname) build took $(( $(date +%s) - START )) s"
RNDV_CFG="$("$PREFIX/bin/ucx_info" -c 2>&1 | grep -E '^UCX_RNDV|^UCX_PROTO_ENABLE' || true)"
log "$RNDV_CFG"
entries=()
fail=0
# run NAME EXPECTED_S ARGS...: gpumpi-doctor ARGS --json, unless fewer than EXPECTED_S seconds are left.
run() {
  local name="$1" expected="$2"; shift 2
  local left=$(( BUDGET_S - ($(date +%s) - START) ))
  local args; args=$(printf '%s ' "$@" | json_str)
  if [ "$left" -lt "$expected" ]; then
    log "== $name: SKIPPED ($left s left, needs ~$expected s)"
    entries+=("{\"name\":\"$name\",\"args\":$args,\"skipped\":\"$left s left of the budget, needs ~$expected s\"}")
    return
  fi
  log "== $name: gpumpi-doctor $* ($(date -u +%H:%M:%S), $left s left)"
  local t0=$(date +%s)
  timeout -k 5 "$left" "$NODE" bin/gpumpi-doctor.js "$@" --json >"/tmp/exp-$name.json" 2>>"$LOG"
  local rc=$? secs=$(( $(date +%s) - t0 ))
  log "== $name exit=$rc in $secs s"
  [ "$rc" -eq 0 ] || fail=$((fail + 1))
  if "$NODE" -e 'JSON.parse(require("fs").readFileSync(process.argv[1],"utf8"))' "/tmp/exp-$name.json" 2>/dev/null; then
    entries+=("{\"name\":\"$name\",\"args\":$args,\"exit\":$rc,\"seconds\":$secs,\"doc\":$(cat "/tmp/exp-$name.json")}")
  else
    head -c 2000 "/tmp/exp-$name.json" >>"$LOG"
    entries+=("{\"name\":\"$name\",\"args\":$args,\"exit\":$rc,\"seconds\":$secs,\"doc\":null}")
  fi
}
L=(--mpirun "$MPIRUN" --engine "$ENGINE" "${CP[@]}")
AFTER=GPUMPI_CUDA_INIT=after-mpi-init
UCXSM=(--pml-ucx --preset UCX_TLS=sm,cuda_copy,self)
OB1NOIPC=(--mca pml ob1 --mca btl_smcuda_use_cuda_ipc 0)
FB=(repro fallback "${L[@]}" --modes mpi --sizes 256M,1G --iters 3 --trials 3 --timeout 90)

EXP="${EXP:-cudainit,rndv,bench}"   # groups to run, comma-separated: cudainit rndv rndv2 tryucx bench bench1g
want() { [[ ",$EXP," == *",$1,"* ]]; }
rndv_run() {  # rndv_run SETTING: one fallback run with SETTING (skipped when this UCX has no such variable)
  local s="$1" var="${1%%=*}"
  if ! grep -q "^$var=" <<<"$RNDV_CFG"; then log "== rndv $s: $var is not a setting of this UCX (ucx_info -c)"; return; fi
  run "rndv-$s" 40 "${FB[@]}" "${UCXSM[@]}" --preset "$s"
}
if want cudainit; then
  run cudainit-ipc-ucx 170 repro ipc "${L[@]}" --pml-ucx --variants direct,bounce --also "$AFTER" --size 64M --trials 11 --timeout 60
  run cudainit-ipc-ob1 100 repro ipc "${L[@]}" --mca pml ob1 --variants direct,bounce --also "$AFTER" --size 64M --trials 6 --timeout 60
  run cudainit-fallback-ucx 40 "${FB[@]}" "${UCXSM[@]}" --preset "$AFTER"
  run cudainit-fallback-ob1 40 "${FB[@]}" "${OB1NOIPC[@]}" --preset "$AFTER"
fi
if want rndv; then
  run rndv-default 40 "${FB[@]}" "${UCXSM[@]}"
  for s in UCX_RNDV_FRAG_SIZE=128K UCX_RNDV_FRAG_SIZE=4M UCX_RNDV_FRAG_ALLOC_COUNT=8 UCX_RNDV_SCHEME=put_zcopy \
           UCX_RNDV_SCHEME=get_zcopy UCX_RNDV_FRAG_MEM_TYPE=cuda UCX_RNDV_PIPELINE_SEND_THRESH=inf; do rndv_run "$s"; done
fi
if want rndv2; then  # the memory-type-qualified forms UCX 1.13 accepts (its defaults: host:512K,cuda:4M and host:128,cuda:128)
  run rndv-default 40 "${FB[@]}" "${UCXSM[@]}"
  for s in UCX_RNDV_FRAG_SIZE=host:128K,cuda:4M UCX_RNDV_FRAG_SIZE=host:4M,cuda:4M UCX_RNDV_FRAG_ALLOC_COUNT=host:8,cuda:8 \
           UCX_RNDV_PIPELINE_SHM_ENABLE=n UCX_PROTO_ENABLE=y; do rndv_run "$s"; done
fi
if want tryucx; then
  run tryucx-staging 200 repro fallback "${L[@]}" --modes mpi,lib-shm --sizes 256M,1G --iters 3 --trials 3 --timeout 90 \
    "${UCXSM[@]}" --try-ucx staging
fi

bench_err=""
bench() {  # bench SIZES: gpumpi bench staged,shm,auto under pml ucx; its stderr (whole) and exit status
  log "== bench-register: gpumpi bench --sizes $1 --modes staged,shm,auto under pml ucx"
  local e
  e=$(timeout -k 5 90 "$MPIRUN" --allow-run-as-root --oversubscribe -np 2 "${CP[@]}" --mca pml ucx \
    --mca pml_ucx_tls any --mca pml_ucx_devices any -x UCX_NET_DEVICES=lo "$ENGINE" bench --sizes "$1" \
    --modes staged,shm,auto --iters 3 2>&1 >/tmp/exp-bench.out; echo "exit=$?")
  log "$e"; cat /tmp/exp-bench.out >>"$LOG"
  bench_err="$bench_err== bench --sizes $1
$e
"
}
if want bench && [ $(( BUDGET_S - ($(date +%s) - START) )) -gt 30 ]; then bench 64M; fi
if want bench1g && [ $(( BUDGET_S - ($(date +%s) - START) )) -gt 60 ]; then bench 1G; fi
cm=$(nvidia-smi --query-gpu=compute_mode,name --format=csv 2>&1 | tr '\n' ';')
{ printf '{"schema":"gpumpi.gpu-experiments/1","ucx_rndv_config":%s,"bench_stderr":%s,"compute_mode":%s,"runs":[' \
    "$(printf '%s' "$RNDV_CFG" | json_str)" "$(printf '%s' "$bench_err" | json_str)" "$(printf '%s' "$cm" | json_str)"
  (IFS=,; printf '%s' "${entries[*]}"); printf ']}\n'; } >"$JSON"
log "experiments.sh: $fail run(s) exited non-zero in $(( $(date +%s) - START )) s"
exit 0
