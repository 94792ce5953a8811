#!/usr/bin/env bash
# testGpu: only when named (bash scripts/testGpu.sh foreign): the guard on programs it was not written for (issue 31).
# Programs in test/foreign/ written as users write them and built as users build them: gpu_send.cu with nvcc's
# defaults (static cudart: `nvcc gpu_send.cu -lmpi -lcuda`) and with `-cudart shared`; torch_send.py (mpi4py +
# PyTorch from /opt/torch/.venv). Each SCENARIO runs TRIALS launches in each MODE (none = no guard, report, fix):
#   torch-vmm     torch_send.py, PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (VMM memory), 2 ranks, 256 MiB
#   torch-default torch_send.py, torch's default caching allocator (cudaMalloc memory)
#   c-vmm / c-pool / c-malloc   gpu_send --alloc vmm|pool|malloc: cuMemCreate+cuMemMap / cudaMallocAsync / cudaMalloc,
#                 2 ranks, 256 MiB x ITERS (static cudart)
#   c-ipc         gpu_send --alloc ipc: the seed's pattern, 4 ranks, 64 MiB, static cudart
#   c-ipc-shared  the same built with -cudart shared
#   *-ob1         the same under --mca pml ob1 (smcuda) instead of pml ucx
#   *-nocache     the same with UCX_MEMTYPE_CACHE=n (the other workaround), mode none only makes sense
# Knobs: TRIALS (3), SCENARIOS (all above but ob1/nocache), MODES (none,report,fix), ITERS (3).
# Writes $OUT/foreign.log and $OUT/foreign.jsonl: one line per launch
#   {"scenario","mode","trial","rc","result","bw","dangers":["rank:kind:call:action"],"ucxCache":"state/missed/told"}.
set -u
. "$(dirname "$0")/common.bash" foreign
gpu_require timeout nvcc
TRIALS="${TRIALS:-3}"
ITERS="${ITERS:-3}"
SCENARIOS="${SCENARIOS:-torch-vmm,torch-default,c-vmm,c-pool,c-malloc,c-ipc,c-ipc-shared}"
MODES="${MODES:-none,report,fix}"
JL="$OUT/foreign.jsonl"
: >"$JL"
log "== foreign.sh $(date -u +%FT%TZ) host=$(hostname) trials=$TRIALS scenarios=$SCENARIOS modes=$MODES"
log "== $(nvidia-smi -L 2>&1 | head -n1); nvcc $(nvcc --version | tail -n1)"
if ! gpu_build gpumpi_guard; then log "foreign.sh: guard build failed"; exit 1; fi
GUARD="$BUILD/libgpumpi_guard.so"
FB=/tmp/foreign-bin
mkdir -p "$FB"
nvcc -O2 -I"$PREFIX/include" -o "$FB/gpu_send" test/foreign/gpu_send.cu -L"$PREFIX/lib" -lmpi -lcuda >>"$LOG" 2>&1 || { log "nvcc (static cudart) failed"; exit 1; }
nvcc -O2 -cudart shared -I"$PREFIX/include" -o "$FB/gpu_send_shared" test/foreign/gpu_send.cu -L"$PREFIX/lib" -lmpi -lcuda >>"$LOG" 2>&1 || { log "nvcc (-cudart shared) failed"; exit 1; }
log "== ldd gpu_send: $(ldd "$FB/gpu_send" | grep -c cudart) cudart line(s); gpu_send_shared: $(ldd "$FB/gpu_send_shared" | grep -o 'libcudart[^ ]*' | head -n1)"
PY=/opt/torch/.venv/bin/python3
log "== python: $($PY -c 'import torch, mpi4py; print("torch", torch.__version__, "mpi4py", mpi4py.__version__)' 2>&1 | tail -n1)"

scenario_argv() {  # sets NP, EXTRA (launcher options), PROG (argv)
  local s=${1%-ob1}; s=${s%-nocache}
  EXTRA=()
  case "$1" in *-ob1) EXTRA+=(--mca pml ob1);; *) EXTRA+=("${UCX_PML[@]}");; esac
  case "$1" in *-nocache) EXTRA+=(-x UCX_MEMTYPE_CACHE=n);; esac
  case "$s" in
    torch-vmm) NP=2; EXTRA+=(-x PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True -x MPI4PY_RC_THREAD_LEVEL=single -x ITERS="$ITERS"); PROG=("$PY" test/foreign/torch_send.py);;
    torch-default) NP=2; EXTRA+=(-x MPI4PY_RC_THREAD_LEVEL=single -x ITERS="$ITERS"); PROG=("$PY" test/foreign/torch_send.py);;
    c-vmm|c-pool|c-malloc) NP=2; PROG=("$FB/gpu_send" --alloc "${s#c-}" --iters "$ITERS");;
    c-ipc) NP=4; PROG=("$FB/gpu_send" --alloc ipc --bytes 67108864);;
    c-ipc-shared) NP=4; PROG=("$FB/gpu_send_shared" --alloc ipc --bytes 67108864);;
    *) return 1;;
  esac
}

IFS=, read -r -a SCEN <<<"$SCENARIOS"
IFS=, read -r -a MODE_LIST <<<"$MODES"
for sc in "${SCEN[@]}"; do
  scenario_argv "$sc" || { log "unknown scenario $sc"; continue; }
  for t in $(seq 1 "$TRIALS"); do
    for mode in "${MODE_LIST[@]}"; do
      dir=$(mktemp -d /tmp/gpumpi-foreign-XXXXXX)
      opts=()
      [ "$mode" != none ] && opts=(-x "LD_PRELOAD=$GUARD" -x "GPUMPI_GUARD=$mode" -x "GPUMPI_GUARD_DIR=$dir" -x GPUMPI_GUARD_EVERY_RANK=1)
      timed_run "$dir/out" 120 "${MPIRUN_BASE[@]}" -x PATH -x LD_LIBRARY_PATH "${EXTRA[@]}" "${opts[@]}" -np "$NP" "${PROG[@]}"
      result=$(sed -n 's/^RESULT //p' "$dir/out" | head -n1)
      bw=$(sed -n 's/^BW \([0-9.]*\) GB.*/\1/p' "$dir/out" | head -n1)
      dangers=""; cachest=""
      for f in "$dir"/guard-*.json; do
        [ -f "$f" ] || continue
        rank=$(sed -n 's/.*"rank":\([0-9]*\),.*/\1/p' "$f" | head -n1)
        for d in $(grep -o '"kind":"[^"]*","call":"[^"]*"' "$f" | sed 's/"kind":"\([^"]*\)","call":"\([^"]*\)"/\1:\2/' | sort -u); do
          act=$(grep -o "\"kind\":\"${d%%:*}\",\"call\":\"${d##*:}\"[^}]*}[^}]*\"action\":\"[a-z-]*\"" "$f" | sed 's/.*"action":"\([a-z-]*\)"/\1/' | sort -u | tr '\n' '+' | sed 's/+$//')
          dangers="$dangers${dangers:+,}\"$rank:$d:$act\""
        done
        c=$(grep -o '"ucxMemtypeCache":{[^}]*}' "$f" | sed 's/"ucxMemtypeCache"://; s/"//g')
        cachest="$cachest${cachest:+ }r$rank=$c"
      done
      log "  $sc $mode trial $t: rc=$RUN_RC result=${result:-none} bw=${bw:-null} ${RUN_SECS}s dangers=[$dangers]"
      [ "$RUN_RC" != 0 ] && grep -aE 'process_vm_writev|Bad address|ERROR|rror:' "$dir/out" | grep -v 'bad prefix' | head -n 3 | sed 's/^/    | /' | tee -a "$LOG" >/dev/null
      printf '{"scenario":"%s","mode":"%s","trial":%d,"rc":%d,"timedOut":%s,"result":"%s","bw":%s,"secs":%s,"dangers":[%s],"ucxCache":%s}\n' \
        "$sc" "$mode" "$t" "$RUN_RC" "$RUN_TIMED_OUT" "${result:-none}" "${bw:-null}" "$RUN_SECS" "$dangers" "$(printf '%s' "$cachest" | json_str)" >>"$JL"
      rm -rf "$dir"
    done
  done
done
log "== summary (scenario mode: launches, rc=0 and PASS, bandwidths)"
awk -F'"' '{ k=$4" "$8; n[k]++; if ($0 ~ /"rc":0,/ && $0 ~ /"result":"PASS"/) ok[k]++; match($0, /"bw":[0-9.]+/); if (RSTART) bw[k]=bw[k] " " substr($0, RSTART+5, RLENGTH-5) } END { for (k in n) printf "  %-28s %d/%d ok; GB/s:%s\n", k, ok[k]+0, n[k], bw[k] }' "$JL" | sort | tee -a "$LOG"
