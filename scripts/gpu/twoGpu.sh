#!/usr/bin/env bash
# testGpu: only when named (bash scripts/testGpu.sh twoGpu): per-rank GPU visibility (issue 16 item 3,
# open-mpi/ompi#11949) and what it costs. The ranks pick their device as local_rank % visible devices.
# On a host with two or more GPUs (device kind nvidia-h200-x2): "shared" = every rank sees every GPU (rank 0 uses
# GPU 0, rank 1 GPU 1); "isolated" = each rank started with CUDA_VISIBLE_DEVICES=<local rank % GPUs> (what
# srun --gpus-per-task=1 sets): CUDA IPC between the ranks cannot work, the rule gpu-isolated-per-rank must fire.
# On a host with ONE GPU there is nothing to isolate; "isolated" then names the same GPU two ways (even local ranks
# CUDA_VISIBLE_DEVICES=0, odd ones CUDA_VISIBLE_DEVICES=<its UUID>): the rule must stay quiet (it compares the UUIDs
# CUDA lists, not the strings) and CUDA IPC must keep working.
#   facts      nvidia-smi -L / topo -m, NUMA node of each GPU
#   inspect    `gpumpi inspect` 2 ranks, "shared" (both see both GPUs) and "isolated" (each rank started with
#              CUDA_VISIBLE_DEVICES=<its local rank>, what srun --gpus-per-task=1 sets): the rank-0 documents
#   ipc        `gpumpi repro ipc --variant direct` 4 ranks (ranks 0,2 on GPU 0; 1,3 on GPU 1), pml ucx and ob1,
#              shared and isolated, TWO_TRIALS launches each (default 3)
#   bench      `gpumpi bench --modes mpi,shm` 2 ranks at 64M and 1G, pml ucx with UCX's default transports
#              (cuda_ipc between the GPUs when visible), shared and isolated, TWO_TRIALS launches each
# Writes $OUT/twoGpu.log and $OUT/twoGpu.json
#   {"schema":"gpumpi.gpu.twoGpu/1","facts":{...},"runs":[{"kind","config","vis","trial","rc","secs","doc"}]}
set -u
. "$(dirname "$0")/common.bash" twoGpu
error_doc() { printf '{"schema":"gpumpi.gpu.twoGpu/1","error":%s,"runs":[]}\n' "$(printf '%s' "$1" | json_str)"; }
gpu_require timeout
if ! gpu_build gpumpi_cli; then error_doc "build failed" >"$JSON"; exit 1; fi
TRIALS=${TWO_TRIALS:-3}
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
uuid0=$(nvidia-smi --query-gpu=uuid --format=csv,noheader 2>/dev/null | head -n1)
VIS2=isolated; [ "$ngpu" -ge 2 ] || VIS2=renamed
{
  echo "== facts"
  nvidia-smi -L
  nvidia-smi topo -m
  for b in $(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader 2>/dev/null); do
    b=$(printf '%s' "$b" | tr 'A-F' 'a-f' | sed 's/^0000\(....:\)/\1/')
    echo "gpu $b numa_node $(cat /sys/bus/pci/devices/$b/numa_node 2>/dev/null) local_cpulist $(cat /sys/bus/pci/devices/$b/local_cpulist 2>/dev/null)"
  done
  lscpu | grep -E 'Model name|Socket|NUMA'
} >>"$LOG" 2>&1
topo=$(nvidia-smi topo -m 2>/dev/null | json_str)
facts="{\"gpus\":$ngpu,\"uuid0\":$(printf '%s' "$uuid0" | json_str),\"topo\":$topo}"

# The isolation wrapper: each rank sees only the GPU of its local rank (as srun --gpus-per-task=1 sets it).
WRAP=/tmp/gpumpi-cvd-wrap.sh
cat >"$WRAP" <<'SH'
#!/bin/sh
lr=${OMPI_COMM_WORLD_LOCAL_RANK:-${SLURM_LOCALID:-0}}
if [ "${TWO_NGPU:-2}" -ge 2 ]; then CUDA_VISIBLE_DEVICES=$((lr % TWO_NGPU))
elif [ $((lr % 2)) -eq 1 ] && [ -n "${TWO_UUID0:-}" ]; then CUDA_VISIBLE_DEVICES=$TWO_UUID0
else CUDA_VISIBLE_DEVICES=0; fi
export CUDA_VISIBLE_DEVICES
exec "$@"
SH
chmod +x "$WRAP"
BASE=("${MPIRUN_BASE[@]}" -x LD_LIBRARY_PATH -x PATH -x TWO_NGPU="$ngpu" -x TWO_UUID0="$uuid0")
# off the GPU machine only (a check of this script): the fake driver
if [ -n "${GPUMPI_LIBCUDA:-}" ]; then BASE+=(-x "GPUMPI_LIBCUDA=$GPUMPI_LIBCUDA"); fi
UCX=("${UCX_PML[@]}")
OB1=(--mca pml ob1)

runs=""
fail=0
# one KIND CONFIG VIS TRIAL LIMIT ARGV...
one() {
  local kind=$1 config=$2 vis=$3 trial=$4 limit=$5 out rc secs doc
  shift 5
  out=$(mktemp)
  log "== $kind [$config] $vis trial $trial: $*"
  timed_run "$out" "$limit" "$@"
  rc=$RUN_RC secs=$RUN_SECS
  case $kind in
    inspect) doc=$(tr -d '\000' <"$out" | grep -m1 '^{"schema":"gpumpi.inspect/1"' || true) ;;
    bench) doc=$(grep -m1 '^{"schema":"gpumpi.bench/1"' "$out" || true) ;;
    *) doc=$(framed_doc "$out" | grep -m1 '^{"schema":"gpumpi\.repro\..*}$' || true) ;;
  esac
  [ -n "$doc" ] || { doc=null; fail=$((fail + 1)); }
  log "-- exit $rc in ${secs}s $(printf '%s' "$doc" | grep -o '"outcome":"[a-z_]*"' | sort | uniq -c | tr '\n' ' ')$(printf '%s' "$doc" | grep -o '"mode":"[a-z-]*","size":[0-9]*,[^}]*"medianGBps":[0-9.]*' | sed 's/"iters.*medianGBps"/ GBps/' | tr '\n' ' ')"
  runs="$runs${runs:+,}{\"kind\":\"$kind\",\"config\":\"$config\",\"vis\":\"$vis\",\"trial\":$trial,\"rc\":$rc,\"secs\":$secs,\"doc\":$doc}"
  rm -f "$out"
  $RUN_TIMED_OUT && reap
  return 0
}

for vis in shared "$VIS2"; do
  w=(); [ "$vis" != shared ] && w=("$WRAP")
  one inspect default "$vis" 1 90 "${BASE[@]}" -np 2 "${w[@]}" "$ENGINE" inspect
done
for t in $(seq 1 "$TRIALS"); do
  for vis in shared "$VIS2"; do
    w=(); [ "$vis" != shared ] && w=("$WRAP")
    one ipc ucx "$vis" "$t" 60 "${BASE[@]}" "${UCX[@]}" -np 4 "${w[@]}" "$ENGINE" repro ipc --variant direct --size "${TWO_IPC_SIZE:-64M}" --json
    one ipc ob1 "$vis" "$t" 60 "${BASE[@]}" "${OB1[@]}" -np 4 "${w[@]}" "$ENGINE" repro ipc --variant direct --size "${TWO_IPC_SIZE:-64M}" --json
    one bench ucx "$vis" "$t" 150 "${BASE[@]}" "${UCX[@]}" -np 2 "${w[@]}" "$ENGINE" bench --json --sizes "${TWO_SIZES:-64M,1G}" --modes mpi,shm --iters "${TWO_ITERS:-5}"
  done
done
printf '{"schema":"gpumpi.gpu.twoGpu/1","trials":%d,"facts":%s,"runs":[%s]}\n' "$TRIALS" "$facts" "$runs" >"$JSON"
exit "$fail"
