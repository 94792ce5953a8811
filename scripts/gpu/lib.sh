#!/usr/bin/env bash
# libgpumpi on the GPU device, run by scripts/testGpu.sh (or by hand) from the repository root with the
# CUDA-aware testbed MPI (/opt/testbed2, see ../shared/testbed/README.md). No Node needed.
#  1. builds libgpumpi, its test programs and the `gpumpi` CLI with the testbed's mpicc into /tmp/build-engine (shared, scripts/gpu/common.bash);
#  2. runs the test programs with DEVICE memory (--device: direct, staged, shm and IPC-imported receive / send)
#     under several MPI paths (ob1 + CUDA IPC, ob1 without CUDA IPC, ob1 over TCP, UCX sm / tcp without cuda_ipc);
#  3. runs `gpumpi bench` (2 ranks, one GPU) on each host-staged path at 1 GiB and 8 GiB (8 GiB only on the two
#     shared-memory paths, to stay within ~5 minutes), plus the direct path at 1 GiB for the overhead check.
# Writes exactly two files: $OUT/lib.log (everything) and $OUT/lib.json
#   {"schema":"gpumpi.lib-gpu/1","tests":[{"name","path","rc","pass","fail"}],"bench":[{"name","rc","doc":<gpumpi.bench/1 or null>}]}
# Exit status: number of failed steps (build, test programs, bench runs).
# LIB_SH_SMOKE=1: small sizes (1M,8M), 1 iteration — to check the script itself off the device.
set -u
. "$(dirname "$0")/common.bash" lib
jstr() { printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' | tr -d '\n\r\t'; }
error_doc() { printf '{"schema":"gpumpi.lib-gpu/1","error":"%s","tests":[],"bench":[]}\n' "$(jstr "$1")"; }

fail=0
tests_json=""
bench_json=""
log "== lib.sh $(date -u +%FT%TZ) host=$(hostname)"
gpu_require
log "== nvidia-smi -L: $(nvidia-smi -L 2>&1 | tr '\n' ' ')"
if ! gpu_build gpumpi lib_basic lib_transfer staged_exchange; then
  log "lib.sh: build failed (see above)"
  error_doc "build failed" >"$JSON"
  exit 1
fi
# the CLI (for the bench) also compiles the other subcommands; its failure must not stop the library tests
cli_ok=1
if ! gpu_build gpumpi_cli; then
  cli_ok=0
  log "lib.sh: gpumpi CLI build failed (see log): bench runs are skipped"
  fail=$((fail + 1))
fi

BASE=(--allow-run-as-root --oversubscribe --mca mca_base_component_path "$PREFIX/lib/openmpi" -x LD_LIBRARY_PATH -x PATH)
UCX=(--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x UCX_NET_DEVICES=lo)
# name | mpirun options (word-split on purpose: fixed strings from this file only)
PATHS=(
  "ob1-ipc|--mca pml ob1"
  "ob1-noipc|--mca pml ob1 --mca btl_smcuda_use_cuda_ipc 0"
  "ob1-tcp|--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo"
  "ucx-any|${UCX[*]}"
  "ucx-sm|${UCX[*]} -x UCX_TLS=sm,cuda_copy,self"
  "ucx-tcp|${UCX[*]} -x UCX_TLS=tcp,cuda_copy,self"
)
opts_of() { local p; for p in "${PATHS[@]}"; do [ "${p%%|*}" = "$1" ] && { printf '%s' "${p#*|}"; return; }; done; }

run_test() {  # name path program args...
  local name=$1 path=$2; shift 2
  local out rc pass nfail
  log "== test $name on $path: $*"
  # shellcheck disable=SC2046
  out=$(timeout -k 5 150 "$MPIRUN" "${BASE[@]}" $(opts_of "$path") -np 2 "$@" 2>>"$LOG")
  rc=$?
  printf '%s\n' "$out" >>"$LOG"
  pass=$(printf '%s\n' "$out" | grep -c '^CHECK .* PASS' || true)
  nfail=$(printf '%s\n' "$out" | grep -c '^CHECK .* FAIL' || true)
  printf '%s\n' "$out" | grep -E '^(CHECK .* FAIL|PATH|RESULT|rank|staged_exchange)' || true
  log "== test $name on $path: rc=$rc pass=$pass fail=$nfail"
  [ "$rc" -ne 0 ] && fail=$((fail + 1))
  tests_json="$tests_json${tests_json:+,}{\"name\":\"$(jstr "$name")\",\"path\":\"$path\",\"rc\":$rc,\"pass\":$pass,\"fail\":$nfail}"
}

run_bench() {  # name path bench-args...
  local name=$1 path=$2; shift 2
  local rc doc
  if [ "$cli_ok" != 1 ]; then
    bench_json="$bench_json${bench_json:+,}{\"name\":\"$(jstr "$name")\",\"path\":\"$path\",\"rc\":-1,\"doc\":null,\"error\":\"gpumpi CLI not built\"}"
    return
  fi
  log "== bench $name on $path: gpumpi bench $*"
  # shellcheck disable=SC2046
  bench_doc "${BASE[@]}" $(opts_of "$path") -- "$@"
  rc=$BENCH_RC doc=$BENCH_DOC
  log "== bench $name on $path: rc=$rc"
  [ "$rc" -ne 0 ] && fail=$((fail + 1))
  bench_json="$bench_json${bench_json:+,}{\"name\":\"$(jstr "$name")\",\"path\":\"$path\",\"rc\":$rc,\"doc\":$doc}"
}

T="$BUILD/tests"
for p in ob1-ipc ob1-noipc ucx-tcp; do
  run_test basic "$p" "$T/lib_basic" --device
  run_test transfer "$p" "$T/lib_transfer" --device
done
# shared segments forced on a direct (CUDA IPC) pair: the shm-protocol checks (mismatch on both sides, nothing left
# in flight) on the path where the protocol is otherwise direct
run_test basic-shm ob1-ipc "$T/lib_basic" --device --shm
run_test example ob1-noipc "$BUILD/examples/staged_exchange" $((256 << 20))

S1=1G S8=1G,8G IT=3
[ "${LIB_SH_SMOKE:-0}" = 1 ] && { S1=1M; S8=1M,8M; IT=1; }
run_bench direct-1G ob1-ipc --sizes "$S1" --modes mpi,direct,auto --iters "$IT"
run_bench direct-1G-piece1G ob1-ipc --sizes "$S1" --modes direct --piece 1G --iters "$IT"
run_bench staged-ob1-noipc ob1-noipc --sizes "$S8" --modes mpi,staged,shm --iters "$IT"
run_bench staged-ucx-sm ucx-sm --sizes "$S8" --modes mpi,staged,shm --iters "$IT"
run_bench staged-ob1-tcp ob1-tcp --sizes "$S1" --modes mpi,staged,shm --iters "$IT"
run_bench staged-ucx-tcp ucx-tcp --sizes "$S1" --modes mpi,staged,shm --iters "$IT"

printf '{"schema":"gpumpi.lib-gpu/1","tests":[%s],"bench":[%s],"failedSteps":%d}\n' "$tests_json" "$bench_json" "$fail" >"$JSON"
log "== lib.sh done: $fail failed step(s); $(date -u +%FT%TZ)"
exit "$fail"
