#!/usr/bin/env bash
# testGpu: only when named (bash scripts/testGpu.sh guardCli): `gpumpi-doctor guard` itself on the GPU device.
# The seed's IPC scenario (native/examples/guard_demo --ipc, 4 ranks, pml ucx, as scripts/gpu/guard.sh runs it) through
# the CLI users run: `gpumpi-doctor guard --json --mode report|fix --guard-lib $BUILD/libgpumpi_guard.so -- mpirun … -np 4
# guard_demo --ipc`, TRIALS (default 3) launches per mode. Expected: report gives the finding
# guard-ipc-import-ucx-cuda-ipc (error, ranks 1 and 3, first call site in guard_demo, fix command "--mode fix"); fix
# gives it as info (action bounced) and the owners verify every word ("IPC rank 0|2: N words, 0 wrong") in every trial.
# Needs dist/cli.js (carry "dist") and Node (`node` on PATH, else .gpu/node.xz; as scripts/gpu/cli.sh).
# Knobs: TRIALS=N, SIZE=bytes (64 MiB). Checked off the GPU machine with Debian's Open MPI and the fake driver:
#   TESTBED_PREFIX=/usr REPRO_COMPONENT_PATH=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3 \
#   GPUMPI_LIBCUDA=$PWD/native/build/engine-openmpi/libgpumpi_fakecuda.so OUT=/tmp/gc TRIALS=1 SIZE=1048576 bash scripts/gpu/guardCli.sh
# Writes exactly two files: $OUT/guardCli.log (commands, the CLI's stderr: the program output) and $OUT/guardCli.json
# ({"schema":"gpumpi.gpu-guard-cli/1","runs":[{"name","exit","doc"}]}: doc is the CLI's gpumpi-guard-result/1, or null).
set -u
ERROR_DOC_FIELDS=',"runs":[]'
. "$(dirname "$0")/common.bash" guardCli
TRIALS="${TRIALS:-3}"
SIZE="${SIZE:-67108864}"
gpu_cli_node --run
gpu_require
log "== guardCli.sh $(date -u +%FT%TZ) host=$(hostname) node=$("$NODE" --version) trials=$TRIALS size=$SIZE"
if ! gpu_build gpumpi_guard guard_demo guard_stage; then
  log "guardCli.sh: build failed (see $LOG)"; error_doc "build failed" >"$JSON"; exit 1
fi
LAUNCH=("${MPIRUN_BASE[@]}" "${UCX_PML[@]}" -np 4 "$BUILD/examples/guard_demo" --ipc --size "$SIZE")
# off the GPU machine only (a check of this script): GPUMPI_LIBCUDA=native/fakes' fake driver, passed to the ranks
PRESETS=()
if [ -n "${GPUMPI_LIBCUDA:-}" ]; then PRESETS=(--preset "GPUMPI_LIBCUDA=$GPUMPI_LIBCUDA"); fi
fail=0
entries=()
for mode in report fix; do
  for t in $(seq 1 "$TRIALS"); do
    name="$mode-$t"
    log "== $name: gpumpi-doctor guard --json --mode $mode --guard-lib $BUILD/libgpumpi_guard.so -- ${LAUNCH[*]}"
    t0=$(date +%s)
    timeout -k 5 180 "$NODE" bin/gpumpi-doctor.js guard --json --mode "$mode" --guard-lib "$BUILD/libgpumpi_guard.so" --timeout 150 "${PRESETS[@]}" -- "${LAUNCH[@]}" \
      >"/tmp/guardcli-$name.json" 2>>"$LOG"
    rc=$?
    log "== $name exit=$rc in $(( $(date +%s) - t0 )) s"
    if "$NODE" -e 'const d=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8"));const f=d.findings.find(x=>x.id==="guard-ipc-import-ucx-cuda-ipc");console.log(d.verdict);console.log(f?`${f.severity}: ${f.message}`:"no ipc-import finding")' "/tmp/guardcli-$name.json" >>"$LOG" 2>&1; then
      entries+=("{\"name\":\"$name\",\"exit\":$rc,\"doc\":$(cat "/tmp/guardcli-$name.json")}")
    else
      head -c 2000 "/tmp/guardcli-$name.json" >>"$LOG"
      entries+=("{\"name\":\"$name\",\"exit\":$rc,\"doc\":null}")
    fi
    if [ "$mode" = fix ] && [ "$rc" != 0 ]; then fail=$((fail + 1)); fi
  done
done
# STAGE through the CLI (issue 13): the QuEST pattern, native/examples/guard_stage --bench (rank 0 sends STAGE_ITERS
# device messages of STAGE_SIZE bytes to rank 1, default 1 GiB x 5) under UCX sm,cuda_copy,self (host-staged), 
# STAGE_TRIALS (default 3) launches each of `guard --json` (report: the huge-device-to-host-staged-peer danger with
# its `--stage` fix) and `guard --json --stage` (guard-stage: staged messages, bytes, staging held; the danger as info).
STAGE_TRIALS="${STAGE_TRIALS:-3}"
STAGE_SIZE="${STAGE_SIZE:-1073741824}"
STAGE_ITERS="${STAGE_ITERS:-5}"
SLAUNCH=("${MPIRUN_BASE[@]}" "${UCX_PML[@]}" -x UCX_TLS=sm,cuda_copy,self -np 2 "$BUILD/examples/guard_stage" --bench --size "$STAGE_SIZE" --iters "$STAGE_ITERS")
for t in $(seq 1 "$STAGE_TRIALS"); do
  for v in none stage; do
    name="stage-$v-$t"
    opt=(); [ "$v" = stage ] && opt=(--stage)
    log "== $name: gpumpi-doctor guard --json ${opt[*]} -- ${SLAUNCH[*]}"
    t0=$(date +%s)
    timeout -k 5 200 "$NODE" bin/gpumpi-doctor.js guard --json "${opt[@]}" --guard-lib "$BUILD/libgpumpi_guard.so" --timeout 180 "${PRESETS[@]}" -- "${SLAUNCH[@]}" \
      >"/tmp/guardcli-$name.json" 2>"/tmp/guardcli-$name.err"
    rc=$?
    cat "/tmp/guardcli-$name.err" >>"$LOG"
    log "== $name exit=$rc in $(( $(date +%s) - t0 )) s"
    ranks=$(grep '^{"rank":' "/tmp/guardcli-$name.err" | tr '\n' ',' | sed 's/,$//')
    if "$NODE" -e 'const d=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8"));console.log(d.verdict);for(const f of d.findings)console.log(`${f.id} ${f.severity}: ${f.title}`)' "/tmp/guardcli-$name.json" >>"$LOG" 2>&1; then
      entries+=("{\"name\":\"$name\",\"exit\":$rc,\"ranks\":[$ranks],\"doc\":$(cat "/tmp/guardcli-$name.json")}")
    else
      head -c 2000 "/tmp/guardcli-$name.json" >>"$LOG"
      entries+=("{\"name\":\"$name\",\"exit\":$rc,\"ranks\":[$ranks],\"doc\":null}")
    fi
    [ "$rc" != 0 ] && fail=$((fail + 1))
  done
done
{ printf '{"schema":"gpumpi.gpu-guard-cli/1","node":"%s","trialsPerMode":%s,"size":%s,"runs":[' "$("$NODE" --version)" "$TRIALS" "$SIZE"; (IFS=,; printf '%s' "${entries[*]}"); printf ']}\n'; } >"$JSON"
log "guardCli.sh: $fail fix-mode run(s) failed"
exit $fail
