#!/usr/bin/env bash
# testGpu: only when named (bash scripts/testGpu.sh shmCeiling): what bounds libgpumpi's shm path on the one H200
# (issue 13: shm reached 49 GB/s = 89 % of min(D2H, H2D); the one-process duplex measured 43, below shm, so it is not
# the ceiling). Per point (CEIL_POINTS, chunk:nbuf, default "16M:4 8M:8 32M:4"): CEIL_LAUNCHES launches (default 3) of
# `gpumpi bench --modes shm --sizes 1G`, UCX sm,cuda_copy,self, CEIL_ITERS iterations (default 5); each document
# carries limits.pair (cli/benchLimits.cc): the same copies from two processes, alone and both at once, in
# cuMemHostAlloc slots, registered shared slots (what the segments are) and with MADV_HUGEPAGE, and whole copies.
# Then the machine facts a ceiling depends on (NUMA nodes, the GPU's node, the ranks' binding, THP), and one launch
# with `--bind-to none`. Last, why guard_stage without the guard moved 5-6.6 GB/s where bench's mpi mode moved 36 on
# the same UCX path: each once with UCX_PROTO_INFO=y (UCX's protocol selection table on stderr, kept in the log).
# Writes $OUT/shmCeiling.log and $OUT/shmCeiling.json:
#   {"schema":"gpumpi.gpu.shmCeiling/1","facts":{...},"points":[{"chunk","nbuf","launch","bind","rc","doc"}],
#    "protoInfo":{"benchMpi":{"rc","doc"},"guardStageNone":{"rc","ranks"}}}
set -u
. "$(dirname "$0")/common.bash" shmCeiling
error_doc() { printf '{"schema":"gpumpi.gpu.shmCeiling/1","error":%s,"points":[]}\n' "$(printf '%s' "$1" | json_str)"; }
gpu_require timeout
if ! gpu_build gpumpi_cli guard_stage; then error_doc "build failed" >"$JSON"; exit 1; fi
BASE=(--allow-run-as-root --oversubscribe --mca mca_base_component_path "$PREFIX/lib/openmpi" -x LD_LIBRARY_PATH -x PATH
      --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x UCX_NET_DEVICES=lo -x UCX_TLS=sm,cuda_copy,self)
POINTS=${CEIL_POINTS:-"16M:4 8M:8 32M:4"}  # the chunk x slots sweep of 2026-12-03 (shm-sweep-2026-12-03.json):
# CEIL_LAUNCHES=1 CEIL_POINTS="16M:4 4M:4 8M:4 32M:4 64M:4 128M:4 16M:2 16M:8 32M:8 64M:2 64M:8 256M:2"
LAUNCHES=${CEIL_LAUNCHES:-3}
IT=${CEIL_ITERS:-5}

bus=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader 2>/dev/null | head -n1 | tr 'A-F' 'a-f' | sed 's/^0000\(....:\)/\1/')
gnode=$(cat "/sys/bus/pci/devices/${bus,,}/numa_node" 2>/dev/null || echo unknown)
{
  echo "== facts"
  echo "gpu bus $bus numa_node $gnode"
  command -v numactl >/dev/null && numactl -H
  ls -d /sys/devices/system/node/node* 2>/dev/null
  cat /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/shmem_enabled 2>/dev/null
  nvidia-smi topo -m 2>/dev/null
  lscpu 2>/dev/null | grep -E 'Model name|Socket|NUMA|^CPU\(s\)'
} >>"$LOG" 2>&1
nodes=$(ls -d /sys/devices/system/node/node* 2>/dev/null | wc -l)
thp=$(cat /sys/kernel/mm/transparent_hugepage/shmem_enabled 2>/dev/null | json_str)
facts="{\"gpuBus\":\"$bus\",\"gpuNumaNode\":\"$gnode\",\"numaNodes\":$nodes,\"shmemThp\":$thp}"

pts=""
fail=0
# point CHUNK NBUF LAUNCH BIND...
point() {
  local ch="$1" nb="$2" k="$3" bind="$4" rc doc
  shift 4
  log "== shm chunk=$ch nbuf=$nb launch=$k bind=$bind"
  BENCH_TIMEOUT=150 bench_doc "${BASE[@]}" "$@" --report-bindings -- --sizes 1G --modes shm --chunk "$ch" --nbuf "$nb" --iters "$IT"
  rc=$BENCH_RC doc=$BENCH_DOC
  [ "$rc" -ne 0 ] && fail=$((fail + 1))
  log "   rc=$rc shm $(printf '%s' "$doc" | grep -o '"mode":"shm"[^}]*' | grep -o '"medianGBps":[0-9.]*') pair $(printf '%s' "$doc" | grep -o '"pair":{[^}]*}')"
  pts="$pts${pts:+,}{\"chunk\":\"$ch\",\"nbuf\":$nb,\"launch\":$k,\"bind\":\"$bind\",\"rc\":$rc,\"doc\":$doc}"
}
for p in $POINTS; do
  for k in $(seq 1 "$LAUNCHES"); do point "${p%%:*}" "${p#*:}" "$k" default; done
done
point 16M 4 1 none --bind-to none

log "== UCX_PROTO_INFO=y: gpumpi bench --modes mpi --sizes 1G"
BENCH_TIMEOUT=150 bench_doc "${BASE[@]}" -x UCX_PROTO_INFO=y -- --sizes 1G --modes mpi --iters 3
brc=$BENCH_RC bdoc=$BENCH_DOC
log "== UCX_PROTO_INFO=y: guard_stage --bench (no guard)"
out=$(timeout -k 5 150 "$MPIRUN" "${BASE[@]}" -x UCX_PROTO_INFO=y -np 2 "$BUILD/examples/guard_stage" --bench --size 1073741824 --iters 5 2>>"$LOG")
grc=$?
printf '%s\n' "$out" >>"$LOG"
granks=$(printf '%s\n' "$out" | grep '^{"rank":' | tr '\n' ',' | sed 's/,$//')
log "   bench mpi rc=$brc $(printf '%s' "$bdoc" | grep -o '"mode":"mpi"[^}]*' | grep -o '"medianGBps":[0-9.]*'); guard_stage rc=$grc $granks"
printf '{"schema":"gpumpi.gpu.shmCeiling/1","iters":%d,"facts":%s,"points":[%s],"protoInfo":{"benchMpi":{"rc":%d,"doc":%s},"guardStageNone":{"rc":%d,"ranks":[%s]}}}\n' \
  "$IT" "$facts" "$pts" "$brc" "$bdoc" "$grc" "$granks" >"$JSON"
exit "$fail"
