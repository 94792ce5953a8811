#!/usr/bin/env bash
# Differential diagnosis of the small-message device latency between two ranks on ONE GPU (issue: the map reported
# ~150 µs for 8 bytes of device memory where host buffers take < 4 µs). One factor changed at a time, each a setting a
# user can apply, every configuration run 3 times (separate launches) so a verdict never rests on one run:
#   memory       host vs device buffers
#   transport    ob1+smcuda (CUDA IPC) | ob1+smcuda with btl_smcuda_use_cuda_ipc 0 | pml ucx | pml ucx UCX_TLS=^cuda_ipc
#   MPS          off vs on (nvidia-cuda-mps-control -d: the two ranks' CUDA contexts share the GPU without time-slicing)
# Run by scripts/testGpu.sh on the device (testbed MPI); writes $OUT/latency.log and $OUT/latency.json
# ({"runs":[{"name","mps","repeat","exit","latency_us":[…],"bandwidth_gbps":[…]}], "mps_available": bool}).
set -u
. "$(dirname "$0")/common.bash" latency
error_doc() { printf '{"schema":"gpumpi.latency-gpu/1","error":"%s","runs":[]}\n' "$1"; }
gpu_require
log "== latency.sh $(date -u +%FT%TZ) host=$(hostname)"
if ! gpu_build gpumpi_cli; then log "latency.sh: engine build failed"; error_doc "engine build failed" >"$JSON"; exit 1; fi

BASE=("$MPIRUN" --allow-run-as-root --oversubscribe --mca mca_base_component_path "$PREFIX/lib/openmpi"
      -x UCX_NET_DEVICES=lo --mca btl_tcp_if_include lo)
UCX=(--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any)
entries=()
REPEATS="${LATENCY_REPEATS:-3}"

# one NAME MPS MEMORY ARGS...: REPEATS launches of a 2-rank map; latency and bandwidth of the pair from each.
one() {
  local name=$1 mps=$2 memory=$3 r out err rc doc lat bw
  shift 3
  for r in $(seq 1 "$REPEATS"); do
    out=$(mktemp) err=$(mktemp)
    timeout -k 5 90 "${BASE[@]}" "$@" -np 2 "$ENGINE" map --memory "$memory" --large 1M --small 8 --iters 20 --json >"$out" 2>"$err"
    rc=$?
    doc=$(framed_doc "$out")
    lat=$(printf '%s' "$doc" | grep -o '"latency_us":[0-9.e+-]*' | cut -d: -f2 | paste -sd, -)
    bw=$(printf '%s' "$doc" | grep -o '"bandwidth_gbps":[0-9.e+-]*' | cut -d: -f2 | paste -sd, -)
    log "$name mps=$mps run $r: exit $rc latency_us [$lat] bandwidth_gbps [$bw]"
    [ $rc -eq 0 ] || { log "-- stderr tail:"; tail -n 15 "$err" | tee -a "$LOG" >/dev/null; }
    entries+=("{\"name\":\"$name\",\"mps\":$mps,\"repeat\":$r,\"exit\":$rc,\"latency_us\":[${lat}],\"bandwidth_gbps\":[${bw}]}")
    rm -f "$out" "$err"
  done
}

configs() {
  local mps=$1
  one host-ob1 "$mps" host --mca pml ob1 --mca btl smcuda,self
  one device-ob1-smcuda "$mps" device --mca pml ob1 --mca btl smcuda,self
  one device-ob1-smcuda-noipc "$mps" device --mca pml ob1 --mca btl smcuda,self --mca btl_smcuda_use_cuda_ipc 0
  one device-ucx "$mps" device "${UCX[@]}"
  one device-ucx-no-cuda_ipc "$mps" device "${UCX[@]}" -x UCX_TLS=^cuda_ipc
}

log "== nvidia-smi: $(nvidia-smi --query-gpu=name,compute_mode --format=csv,noheader 2>&1 | tr '\n' ' ')"
configs false
mps=false
if command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/gpumpi-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/gpumpi-mps-log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  if nvidia-cuda-mps-control -d >>"$LOG" 2>&1; then
    mps=true
    log "== MPS daemon started"
    configs true
    echo quit | nvidia-cuda-mps-control >>"$LOG" 2>&1
    log "== MPS daemon stopped; its log: $(tail -n 3 "$CUDA_MPS_LOG_DIRECTORY/control.log" 2>/dev/null | tr '\n' ' ')"
  else
    log "== MPS daemon did not start"
  fi
else
  log "== nvidia-cuda-mps-control not found: MPS not measured"
fi
{
  printf '{"schema":"gpumpi.latency-gpu/1","host":"%s","mps_available":%s,"runs":[' "$(hostname)" "$mps"
  (IFS=,; printf '%s' "${entries[*]}")
  printf ']}\n'
} >"$JSON"
log "== latency.sh done; wrote $JSON"
