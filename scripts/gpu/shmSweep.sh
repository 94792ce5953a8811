#!/usr/bin/env bash
# testGpu: only when named
# libgpumpi's shared-segment (shm) path: chunk size x slot count sweep on the one H200 (issue #13: raise shm to
# >= 95 % of min(D2H, H2D)). 2 ranks, one GPU, UCX sm,cuda_copy,self (the QuEST user's path), 1 GiB device messages,
# SWEEP_ITERS iterations per point (default 5). Writes $OUT/shmSweep.log and $OUT/shmSweep.json:
#   {"schema":"gpumpi.shm-sweep/1","points":[{"chunk","nbuf","rc","doc":<gpumpi.bench/1 or null>}]}
# SWEEP_POINTS="4M:4 16M:4 …" overrides the grid.
set -u
. "$(dirname "$0")/common.bash" shmSweep
jstr() { printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' | tr -d '\n\r\t'; }
error_doc() { printf '{"schema":"gpumpi.shm-sweep/1","error":"%s","points":[]}\n' "$(jstr "$1")"; }
gpu_require
if ! gpu_build gpumpi_cli; then error_doc "build failed" >"$JSON"; exit 1; fi
BASE=(--allow-run-as-root --oversubscribe --mca mca_base_component_path "$PREFIX/lib/openmpi" -x LD_LIBRARY_PATH -x PATH
      --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x UCX_NET_DEVICES=lo -x UCX_TLS=sm,cuda_copy,self)
POINTS=${SWEEP_POINTS:-"16M:4 4M:4 8M:4 32M:4 64M:4 128M:4 16M:2 16M:8 32M:8 64M:2 64M:8 256M:2"}
IT=${SWEEP_ITERS:-5}
pts=""
fail=0
for p in $POINTS; do
  ch=${p%%:*} nb=${p#*:}
  log "== shm chunk=$ch nbuf=$nb"
  out=$(timeout -k 5 120 "$MPIRUN" "${BASE[@]}" -np 2 "$BUILD/gpumpi" bench --json --sizes 1G --modes shm --chunk "$ch" --nbuf "$nb" --iters "$IT" 2>>"$LOG")
  rc=$?
  printf '%s\n' "$out" >>"$LOG"
  doc=$(printf '%s\n' "$out" | grep -m1 '^{"schema":"gpumpi.bench/1"' || true)
  [ -z "$doc" ] && doc=null
  [ "$rc" -ne 0 ] && fail=$((fail + 1))
  log "   rc=$rc $(printf '%s' "$doc" | grep -o '"mode":"shm"[^}]*' | grep -o '"medianGBps":[0-9.]*')"
  pts="$pts${pts:+,}{\"chunk\":\"$ch\",\"nbuf\":$nb,\"rc\":$rc,\"doc\":$doc}"
done
printf '{"schema":"gpumpi.shm-sweep/1","iters":%d,"points":[%s]}\n' "$IT" "$pts" >"$JSON"
exit "$fail"
