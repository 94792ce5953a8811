#!/usr/bin/env bash
# The headless CLI (node bin/gpumpi-doctor.js, the TypeScript code users run) on the GPU device, run by
# scripts/testGpu.sh from the repository root with the CUDA-aware testbed MPI (/opt/testbed2). Needs dist/cli.js
# (carry "dist") and Node: `node` on PATH, else .gpu/node.xz (this machine's node, xz-compressed; carry ".gpu").
# Builds the engine with the testbed's mpicc (the build folder every device script shares: scripts/gpu/common.bash), then runs, each through
# the CLI's own launcher code (extension/core/launch/runLaunch.ts on a LocalHost):
#   inspect        --ranks 2 (no component-path fix: the report must show the site override finding)
#   repro-ipc      direct,bounce,send-from-import on device memory, pml ucx, component path given
#   repro-fallback mpi,staged,host 1M..64M, ob1 with btl_smcuda_use_cuda_ipc 0 (host staging), component path given
#   map            2 ranks on device memory, ob1, component path given
#   explain-latency  map --explain-latency: 2 ranks, device memory, as-is ob1+smcuda, every factor of
#                  extension/core/map/latencyExperiment.ts changed one at a time (MPS with a private daemon when
#                  nvidia-cuda-mps-control exists), 3 trials each, component path given
# Writes exactly two files: $OUT/cli.log (every command and its stderr) and $OUT/cli.json
# ({"node": version, "runs": [{"name", "exit", "doc"}]}: doc is the CLI's --json output, or null).
set -u
ERROR_DOC_FIELDS=',"runs":[]'
. "$(dirname "$0")/common.bash" cli

gpu_cli_node --run
gpu_require
log "== cli.sh $(date -u +%FT%TZ) host=$(hostname) node=$("$NODE" --version)"
if ! gpu_build gpumpi_cli; then
  log "cli.sh: engine build failed"; error_doc "engine build failed" >"$JSON"; exit 1
fi

fail=0
entries=()
run() {
  local name="$1"; shift
  log "== $name: gpumpi-doctor $*"
  local t0=$(date +%s)
  "$NODE" bin/gpumpi-doctor.js "$@" >"/tmp/cli-$name.json" 2>>"$LOG"
  local rc=$?
  log "== $name exit=$rc in $(( $(date +%s) - t0 )) s"
  [ "$rc" -eq 0 ] || fail=$((fail + 1))
  if "$NODE" -e 'JSON.parse(require("fs").readFileSync(process.argv[1],"utf8"))' "/tmp/cli-$name.json" 2>/dev/null; then
    entries+=("{\"name\":\"$name\",\"exit\":$rc,\"doc\":$(cat "/tmp/cli-$name.json")}")
  else
    head -c 2000 "/tmp/cli-$name.json" >>"$LOG"
    entries+=("{\"name\":\"$name\",\"exit\":$rc,\"doc\":null}")
  fi
}

run inspect inspect --mpirun "$MPIRUN" --engine "$ENGINE" --ranks 2 --timeout 120 --json
run repro-ipc repro ipc --mpirun "$MPIRUN" --engine "$ENGINE" "${COMPONENT_PATH[@]}" --pml-ucx --variants direct,bounce,send-from-import --size 64M --trials 3 --timeout 120 --json
run repro-fallback repro fallback --mpirun "$MPIRUN" --engine "$ENGINE" "${COMPONENT_PATH[@]}" --mca pml ob1 --mca btl_smcuda_use_cuda_ipc 0 --sizes 1M..64M --iters 3 --trials 3 --timeout 180 --json
run map map --mpirun "$MPIRUN" --engine "$ENGINE" "${COMPONENT_PATH[@]}" --mca pml ob1 --np 2 --large 64M --iters 5 --timeout 180 --json
run explain-latency map --explain-latency --mpirun "$MPIRUN" --engine "$ENGINE" "${COMPONENT_PATH[@]}" --memory device --mca pml ob1 --mca btl smcuda,self --trials 3 --timeout 120 --json

{ printf '{"schema":"gpumpi.gpu-cli-runs/1","node":"%s","runs":[' "$("$NODE" --version)"; (IFS=,; printf '%s' "${entries[*]}"); printf ']}\n'; } >"$JSON"
log "cli.sh: $fail run(s) failed"
exit $fail
