#!/usr/bin/env bash
# testGpu: only when named (bash scripts/testGpu.sh trials): one run takes ~88 launches.
# Issue 12's device check: the IPC reproducer with repeated trials, as a new user runs it, on the CUDA-aware testbed:
#   gpumpi-doctor repro ipc --pml-ucx --also UCX_TLS=^cuda_ipc (component path given), default trials (11),
#   4 variants × 2 configurations, 64 MiB, device memory.
# Needs dist/cli.js (carry "dist") and Node (PATH, else .gpu/node.xz), like cli.sh. RUN=N (default 1) names the run.
# Writes exactly two files: $OUT/trials.log (commands, progress, stderr) and $OUT/trials.json (the CLI's --json
# report, schema gpumpi.repro.ipc-report/2, or {"error": …}).
set -u
. "$(dirname "$0")/common.bash" trials
CP=(--mca mca_base_component_path "$PREFIX/lib/openmpi")
gpu_cli_node
gpu_require
if ! gpu_build gpumpi_cli; then log "trials.sh: engine build failed"; echo '{"error":"engine build failed"}' >"$JSON"; exit 1; fi
log "== trials.sh run ${RUN:-1} $(date -u +%FT%TZ) host=$(hostname)"
t0=$(date +%s)
"$NODE" bin/gpumpi-doctor.js repro ipc --mpirun "$MPIRUN" --engine "$ENGINE" "${CP[@]}" --pml-ucx --also 'UCX_TLS=^cuda_ipc' \
  --size 64M --timeout 60 --json >"$JSON" 2>>"$LOG"
rc=$?
log "== trials.sh exit=$rc in $(( $(date +%s) - t0 )) s"
"$NODE" -e 'const r=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8"));for(const v of r.variants)console.log(`${v.config} / ${v.variant}: ${v.class} ${JSON.stringify(v.counts)}`);console.log(r.verdict.answer)' "$JSON" >>"$LOG" 2>&1
exit $rc
