#!/usr/bin/env bash
# testGpu: only when named (bash scripts/testGpu.sh silentData): SILENT_BUDGET_S (default 200) bounds it, ~3 minutes.
# Issue 35 part B on the device: what the new rules read, captured where a GPU is (test-fixtures/tools/gpu-silentdata/
# README.md says how the integrator turns the result into fixtures; test/unit/rules/silentDataRules.test.ts and
# libfabricRules.test.ts read it):
#   mpi4py         which MPI /opt/torch/.venv's mpi4py links: mpi4py.get_config(), MPI.Get_library_version(), ldd
#   fi_info        `fi_info --version`, `FI_LOG_LEVEL=info fi_info -c FI_HMEM` (stdout, stderr), `fi_info`, each under
#                  timeout 30 (skipped when fi_info is not installed: said so in the document)
#   readelf        test/foreign/gpu_send.cu built with nvcc's default static cudart against the testbed's Open MPI:
#                  `readelf -d` and the cudaFree lines of `readelf -sW` (ucx-memtype-cache-static-cudart's input)
#   hooks          that program, 2 ranks, 64 MiB x ITERS under pml ucx, SILENT_TRIALS trials (default 3) per setting:
#                  UCX's default CUDA hooks (bistro); UCX_MEM_CUDA_HOOK_MODE=reloc; reloc + UCX_MEMTYPE_CACHE=n; and
#                  --alloc pool under reloc (the rule's claim: reloc misses a static runtime's allocations, the memtype
#                  cache then takes them for host memory; n avoids it). rc, RESULT, BW and error lines per launch.
#   ucx_info       `ucx_info -c` with UCX_MEM_CUDA_HOOK_MODE=reloc; `ucx_info -v` with UCX_CUDA_COPY_DMABUF=no (1.13.1
#                  does not know it: UCX's "unused environment variable" warning, if it prints one)
#   ucx120         when /opt/ucx120 exists (or .gpu/ucx-1.20.0-bin.tar.xz, see scripts/gpu/ucxVersions.sh): its
#                  `ucx_info -v`, `-d`, `-c` (ucx-cuda-ipc-vmm-multi-chunk's firing input)
# Writes exactly $OUT/silentData.log and $OUT/silentData.json ({"schema":"gpumpi.gpu-silentdata/1", "mpi4py", "fi_info",
# "readelf", "ucx_info", "ucx120", "runs":[{"setting","alloc","trial","rc","timed_out","result","bw","errors"}]}).
set -u
. "$(dirname "$0")/common.bash" silentData
error_doc() { printf '{"schema":"gpumpi.gpu-silentdata/1","error":%s,"runs":[]}\n' "$(printf '%s' "$1" | json_str)"; }
BUDGET_S="${SILENT_BUDGET_S:-200}"
TRIALS="${SILENT_TRIALS:-3}"
ITERS="${SILENT_ITERS:-3}"
START=$(date +%s)
left() { echo $(( BUDGET_S - ($(date +%s) - START) )); }
gpu_require timeout nvcc readelf
log "== silentData.sh $(date -u +%FT%TZ) host=$(hostname) trials=$TRIALS budget=${BUDGET_S}s"
log "== $(nvidia-smi -L 2>&1 | head -n1); $("$MPIRUN" --version 2>&1 | head -n1); ucx_info: $("$PREFIX/bin/ucx_info" -v 2>&1 | head -n1)"

# --- mpi4py: which MPI the venv's mpi4py really links
PY=/opt/torch/.venv/bin/python3
cfg=null; libv=null; lddo=null
if [ -x "$PY" ]; then
  cfg=$(timeout 60 "$PY" -c 'import mpi4py; print(mpi4py.get_config())' 2>&1 | json_str)
  libv=$(timeout 60 "$PY" -c 'from mpi4py import MPI; print(MPI.Get_library_version())' 2>&1 | json_str)
  mod=$(timeout 60 "$PY" -c 'import mpi4py.MPI as M; print(M.__file__)' 2>/dev/null | tail -n1)
  [ -n "$mod" ] && lddo=$(ldd "$mod" 2>&1 | json_str)
  log "== mpi4py: $(printf '%s' "$cfg" | head -c 300)"
  log "== mpi4py MPI library: $(printf '%s' "$libv" | head -c 200)"
else
  log "== mpi4py: $PY not found"
fi

# --- fi_info (libfabric), if installed
fi_doc='{"installed":false}'
if command -v fi_info >/dev/null 2>&1; then
  t=$(mktemp -d)
  v_rc=$(timeout -k 5 30 fi_info --version >"$t/v.o" 2>"$t/v.e"; echo $?)
  h_rc=$(FI_LOG_LEVEL=info timeout -k 5 30 fi_info -c FI_HMEM >"$t/h.o" 2>"$t/h.e"; echo $?)
  p_rc=$(timeout -k 5 30 fi_info >"$t/p.o" 2>"$t/p.e"; echo $?)
  log "== fi_info: --version rc=$v_rc, -c FI_HMEM rc=$h_rc ($(grep -c '^provider:' "$t/h.o") pairs; $(grep -o 'Hmem iface FI_HMEM_CUDA[^\"]*' "$t/h.e" | head -n1)), plain rc=$p_rc"
  fi_doc="{\"installed\":true,\"path\":$(command -v fi_info | json_str),\"version\":{\"rc\":$v_rc,\"stdout\":$(json_str <"$t/v.o")},\"hmem\":{\"rc\":$h_rc,\"stdout\":$(json_str <"$t/h.o"),\"stderr\":$(json_str <"$t/h.e")},\"plain\":{\"rc\":$p_rc,\"stdout\":$(json_str <"$t/p.o"),\"stderr\":$(head -c 65536 "$t/p.e" | json_str)}}"
  rm -rf "$t"
else
  log "== fi_info: not installed (libfabric-bin absent): nothing to capture"
fi

# --- the static-cudart program and its link facts
FB=/tmp/silentdata-bin
mkdir -p "$FB"
built=1
rd=null; rs=null
if nvcc -O2 -I"$PREFIX/include" -o "$FB/gpu_send" test/foreign/gpu_send.cu -L"$PREFIX/lib" -lmpi -lcuda >>"$LOG" 2>&1; then
  rd=$(readelf -d "$FB/gpu_send" 2>&1 | json_str)
  rs=$(readelf -sW "$FB/gpu_send" 2>&1 | grep -w cudaFree | json_str)
  log "== gpu_send: $(readelf -d "$FB/gpu_send" | grep -c NEEDED) DT_NEEDED; cudaFree lines: $(readelf -sW "$FB/gpu_send" | grep -cw cudaFree)"
else
  built=0; log "silentData.sh: nvcc (static cudart) failed: no readelf capture, no runs (the other captures are kept)"
fi

# --- ucx_info under the settings the rules read
uc_reloc=$(UCX_MEM_CUDA_HOOK_MODE=reloc "$PREFIX/bin/ucx_info" -c 2>&1 | json_str)
uc_dmabuf=$(UCX_CUDA_COPY_DMABUF=no "$PREFIX/bin/ucx_info" -v 2>&1 | json_str)
log "== ucx_info -c under reloc: $(UCX_MEM_CUDA_HOOK_MODE=reloc "$PREFIX/bin/ucx_info" -c 2>&1 | grep HOOK_MODE | tr '\n' ' ')"

# --- UCX 1.20, when this machine has it (ucxVersions.sh builds or unpacks it)
u120=null
if [ ! -f /opt/ucx120/lib/libucp.so.0 ] && [ -f .gpu/ucx-1.20.0-bin.tar.xz ]; then tar xJf .gpu/ucx-1.20.0-bin.tar.xz -C /opt 2>>"$LOG"; fi
if [ -x /opt/ucx120/bin/ucx_info ]; then
  U=/opt/ucx120
  u120="{\"v\":$(LD_LIBRARY_PATH=$U/lib "$U/bin/ucx_info" -v 2>&1 | json_str),\"d\":$(LD_LIBRARY_PATH=$U/lib timeout 60 "$U/bin/ucx_info" -d 2>&1 | json_str),\"c\":$(LD_LIBRARY_PATH=$U/lib "$U/bin/ucx_info" -c 2>&1 | json_str)}"
  log "== UCX 1.20 at $U: $(LD_LIBRARY_PATH=$U/lib "$U/bin/ucx_info" -v 2>&1 | head -n1)"
else
  log "== UCX 1.20: not on this machine (no /opt/ucx120, no .gpu/ucx-1.20.0-bin.tar.xz): ucx120 is null"
fi

# --- the hook-mode runs: does reloc miss the static runtime's buffers, and does UCX_MEMTYPE_CACHE=n avoid it?
entries=()
run_one() {  # run_one SETTING ALLOC TRIAL ENV...
  local setting=$1 alloc=$2 trial=$3; shift 3
  local l; l=$(left)
  if [ "$l" -lt 20 ]; then log "== $setting $alloc trial $trial: SKIPPED (budget)"; return; fi
  local limit=45; [ "$limit" -gt "$l" ] && limit=$l
  local out; out=$(mktemp)
  timed_run "$out" "$limit" "${MPIRUN_BASE[@]}" "${UCX_PML[@]}" -x PATH -x LD_LIBRARY_PATH "$@" -np 2 "$FB/gpu_send" --alloc "$alloc" --bytes 67108864 --iters "$ITERS"
  local result bw errs
  result=$(sed -n 's/^RESULT //p' "$out" | head -n1)
  bw=$(sed -n 's/^BW \([0-9.]*\) GB.*/\1/p' "$out" | head -n1)
  errs=$(grep -aE 'memtype|Bad address|process_vm|SIGSEGV|Segmentation|signal|ERROR|rror:|WARN' "$out" | grep -v 'bad prefix' | head -n 8 | json_str)
  log "  $setting $alloc trial $trial: rc=$RUN_RC result=${result:-none} bw=${bw:-null} ${RUN_SECS}s"
  entries+=("{\"setting\":\"$setting\",\"alloc\":\"$alloc\",\"trial\":$trial,\"rc\":$RUN_RC,\"timed_out\":$RUN_TIMED_OUT,\"result\":\"${result:-none}\",\"bw\":${bw:-null},\"secs\":$RUN_SECS,\"errors\":$errs}")
  rm -f "$out"
}
[ "$built" = 1 ] && for t in $(seq 1 "$TRIALS"); do
  run_one bistro malloc "$t"
  run_one reloc malloc "$t" -x UCX_MEM_CUDA_HOOK_MODE=reloc
  run_one reloc-cache-n malloc "$t" -x UCX_MEM_CUDA_HOOK_MODE=reloc -x UCX_MEMTYPE_CACHE=n
  run_one reloc pool "$t" -x UCX_MEM_CUDA_HOOK_MODE=reloc
done
reap

log "== summary (setting alloc: launches with rc=0 and PASS / launches)"
[ "${#entries[@]}" -gt 0 ] && printf '%s\n' "${entries[@]}" | awk -F'"' '{ k=$4" "$8; n[k]++; if ($0 ~ /"rc":0,/ && $0 ~ /"result":"PASS"/) ok[k]++ } END { for (k in n) printf "  %-22s %d/%d\n", k, ok[k]+0, n[k] }' | sort | tee -a "$LOG"

runs=$(IFS=,; echo "${entries[*]:-}")
printf '{"schema":"gpumpi.gpu-silentdata/1","host":%s,"mpi4py":{"config":%s,"library_version":%s,"ldd":%s},"fi_info":%s,"readelf":{"d":%s,"s_cudaFree":%s},"ucx_info":{"c_hook_reloc":%s,"v_dmabuf_no":%s},"ucx120":%s,"runs":[%s]}\n' \
  "$(hostname | json_str)" "$cfg" "$libv" "$lddo" "$fi_doc" "$rd" "$rs" "$uc_reloc" "$uc_dmabuf" "$u120" "$runs" >"$JSON"
log "== wrote $JSON in $(( $(date +%s) - START )) s"
