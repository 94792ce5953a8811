#!/usr/bin/env bash
# `gpumpi map` on the GPU device (run by scripts/testGpu.sh, or by hand from the repository root) with the CUDA-aware
# testbed MPI (/opt/testbed2, see ../shared/testbed/README.md). No Node needed. 4 ranks on the one GPU, DEVICE memory:
#   ob1-smcuda  --mca pml ob1 --mca btl smcuda,self     (CUDA IPC within the GPU: class same_gpu, btl smcuda expected)
#   ob1-tcp     --mca pml ob1 --mca btl tcp,self        (the engine says same_gpu; the tcp btl evidence makes the
#                                                        runner's class host_staging, as between two hosts)
#   ucx         --mca pml ucx, UCX_LOG_LEVEL=info       (UCX lanes as evidence; not required to pass)
# Every run adds --mca btl_base_verbose 100 and -x UCX_LOG_LEVEL=info for the evidence.
# Writes exactly two files: $OUT/map.log (everything) and $OUT/map.json
#   {"schema":"gpumpi.map-gpu/1","runs":[{"name","argv","exit_code","document":<gpumpi.map/1 or null>,"evidence_text"}]}
# where evidence_text holds the rank lines, bml selection lines and UCX ep_cfg lines of the run's stderr, so that
# `gpumpi-doctor map --from-json map.json` (on a machine with Node) joins the evidence exactly as a local run does.
# Exit status: 0 when the build and both ob1 runs produced a document. Budget: well under 2 minutes.
set -u
. "$(dirname "$0")/common.bash" map
error_doc() { printf '{"schema":"gpumpi.map-gpu/1","error":"%s","runs":[]}\n' "$1"; }
jstr() { sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/\t/ /g' | tr -d '\000-\010\013-\037' | awk 'BEGIN{ORS="\\n"} {print}'; }

fail=0
log "== map.sh $(date -u +%FT%TZ) host=$(hostname)"
gpu_require
log "== nvidia-smi -L: $(nvidia-smi -L 2>&1 | tr '\n' ' ')"
if ! gpu_build gpumpi_cli; then
  log "map.sh: engine build failed (see $LOG)"
  error_doc "engine build failed" >"$JSON"
  exit 1
fi

BASE=("$MPIRUN" --allow-run-as-root --oversubscribe --mca mca_base_component_path "$PREFIX/lib/openmpi"
      --mca btl_base_verbose 100 -x UCX_LOG_LEVEL=info -x UCX_NET_DEVICES=lo --mca btl_tcp_if_include lo)
PROG=("$ENGINE" map --memory device --large "${MAP_SH_LARGE:-64M}" --small 8 --iters "${MAP_SH_ITERS:-5}" --json)
entries=()

# run NAME REQUIRED ARGV... : one launch with a timeout; logs everything; records the document and evidence lines.
run() {
  local name=$1 required=$2
  shift 2
  local doc ev
  launch_logged "$name" 60 "$@"
  doc=$(framed_doc "$LAUNCH_OUT" | grep '^{"schema":"gpumpi.map/1"' | tail -n1 || true)
  [ -n "$doc" ] || doc=null
  ev=$(grep -a -E '@@GPUMPI-RANK@@|mca: bml: Using|ep_cfg\[' "$LAUNCH_ERR" | head -n 400 | jstr)
  entries+=("{\"name\":\"$name\",\"argv\":[$LAUNCH_ARGV],\"exit_code\":$LAUNCH_RC,\"document\":$doc,\"evidence_text\":\"$ev\"}")
  if [ "$doc" != null ]; then
    printf '%s\n' "$doc" | grep -o '"a":[0-9]*,"b":[0-9]*,"same_host":[a-z]*,"class":"[a-z_]*"\|"status":"[a-z_]*","bandwidth_gbps":[0-9.e+-]*,"latency_us":[0-9.e+-]*' | tee -a "$LOG"
    printf '%s\n' "$doc" | grep -o '"memory":"[a-z]*","gpu_unavailable_reason":[^,]*' | head -n1 | tee -a "$LOG"
  fi
  grep -a -m8 'mca: bml: Using' "$LAUNCH_ERR" | tee -a "$LOG" >/dev/null
  launch_done "$required" "$doc"
}

run ob1-smcuda yes "${BASE[@]}" --mca pml ob1 --mca btl smcuda,self -np 4 "${PROG[@]}"
run ob1-tcp yes "${BASE[@]}" --mca pml ob1 --mca btl tcp,self -np 4 "${PROG[@]}"
run ucx no "${BASE[@]}" --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -np 4 "${PROG[@]}"

{
  printf '{"schema":"gpumpi.map-gpu/1","host":"%s","runs":[' "$(hostname)"
  (IFS=,; printf '%s' "${entries[*]}")
  printf ']}\n'
} >"$JSON"
log "== map.sh done: fail=$fail; wrote $JSON"
exit $fail
