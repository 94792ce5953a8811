#!/usr/bin/env bash
# testGpu: only when named (bash scripts/testGpu.sh ucxVersions): UCXV_BUDGET_S (default 540) bounds it.
# Issue 33: the seed's UCX (1.20.0) beside the testbed's 1.13.1, same Open MPI 5.0.7, same GPU, same call.
# Prepare HERE first: bash scripts/gpuPrepareUcx.sh (the v1.20.0 source with autogen.sh run, a slim testbed, node.xz);
# carry .gpu and dist/cli.js.
# UCX 1.20.0: /opt/ucx120 from .gpu/ucx-1.20.0-bin.tar.xz when present (a previous call's build, carried back),
# else configured and built here from .gpu/ucx-1.20.0-src.tar.xz with the testbed's own UCX flags (its
# ucx_info -b, ../shared/fixtures/h200-testbed/ucx_info_b.txt) plus --disable-static and sm_90 device code; the build
# is written back as $OUT/ucx-1.20.0-bin.tar.xz.
# Open MPI is the testbed's, built against 1.13.1's headers. Each stack runs with its UCX bin first on PATH (so
# inspect reads its ucx_info) and LD_LIBRARY_PATH=<its UCX lib>:/opt/testbed2/lib (libmpi's RUNPATH yields to
# LD_LIBRARY_PATH; local ranks inherit mpirun's environment); the dynamic loader's trace (LD_DEBUG=libs) of one
# engine launch per stack records which libucp / libucs / libuct a rank really loaded ("loaded").
# UCX keeps libucp.so.0's ABI backward compatible; what a build against 1.20's headers would add is not measured.
# UCXV_GROUPS (default inspect,ipc64,fallback,pool,ipc4; comma-separated) picks the groups, each run once per stack,
# in this order (what a budget cut skips comes last):
#   inspect   gpumpi-doctor inspect --ranks 2 (inspect takes no --mca: it reports the site's component-path override)
#   ipc64     repro ipc --pml-ucx --also UCX_TLS=^cuda_ipc --variants direct,send-from-import,bounce --size 64M,
#             UCXV_TRIALS trials (default 6)
#   fallback  repro fallback --pml-ucx --preset UCX_TLS=sm,cuda_copy,self --modes mpi,lib-shm --sizes 256M,1G
#             --try-ucx staging, 3 trials
#   pool      repro ipc --pml-ucx --variants pool,vmm,direct --size 64M (a plain send of cudaMallocAsync / VMM memory,
#             cuMemAlloc as the baseline), UCXV_TRIALS trials
#   ipc4      the IPC reproducer as ipc64 at 4M
# Writes $OUT/ucxVersions.log and $OUT/ucxVersions.json ({"schema":"gpumpi.gpu-ucx-versions/1","stacks":[{"ucx",
# "lib","loaded","ucx_info_v","ucx_info_b"}],"runs":[{"stack","name","args","exit","seconds","doc"|"skipped"}]}); after a build,
# also $OUT/ucx-1.20.0-bin.tar.xz.
set -u
. "$(dirname "$0")/common.bash" ucxVersions
error_doc() { printf '{"schema":"gpumpi.gpu-ucx-versions/1","error":"%s","stacks":[],"runs":[]}\n' "$1"; }
BUDGET_S="${UCXV_BUDGET_S:-540}"
TRIALS="${UCXV_TRIALS:-6}"
GROUPS_="${UCXV_GROUPS:-inspect,ipc64,fallback,pool,ipc4}"
START=$(date +%s)
NEW=/opt/ucx120
gpu_cli_node
gpu_require timeout

if [ ! -f "$NEW/lib/libucp.so.0" ]; then
  if [ -f .gpu/ucx-1.20.0-bin.tar.xz ]; then
    log "== UCX 1.20.0 from .gpu/ucx-1.20.0-bin.tar.xz"
    tar xJf .gpu/ucx-1.20.0-bin.tar.xz -C /opt
  elif [ -f .gpu/ucx-1.20.0-src.tar.xz ]; then
    log "== UCX 1.20.0: configure and build from .gpu/ucx-1.20.0-src.tar.xz ($(date -u +%H:%M:%S))"
    rm -rf /tmp/ucx-1.20.0 && tar xJf .gpu/ucx-1.20.0-src.tar.xz -C /tmp
    ( cd /tmp/ucx-1.20.0 &&
      ./configure --disable-logging --disable-debug --disable-assertions --disable-params-check --prefix="$NEW" \
        --with-cuda=/usr/local/cuda --without-java --without-go --disable-doxygen-doc --without-rocm --without-knem \
        --without-xpmem --disable-static --with-nvcc-gencode="-gencode=arch=compute_90,code=sm_90" &&
      make -j 16 && make install ) >>"$LOG" 2>&1
    brc=$?
    log "== UCX 1.20.0 build exit=$brc in $(( $(date +%s) - START )) s"
    if [ "$brc" -ne 0 ] || [ ! -f "$NEW/lib/libucp.so.0" ]; then
      tail -n 60 "$LOG"; error_doc "UCX 1.20.0 build failed" >"$JSON"; exit 1
    fi
    tar cJf "$OUT/ucx-1.20.0-bin.tar.xz" --exclude='*.la' --exclude=share --exclude=include -C /opt "$(basename "$NEW")"
    log "== wrote $OUT/ucx-1.20.0-bin.tar.xz ($(stat -c %s "$OUT/ucx-1.20.0-bin.tar.xz") bytes)"
  else
    log "ucxVersions.sh: no /opt/ucx120 and neither .gpu/ucx-1.20.0-bin.tar.xz nor -src.tar.xz (scripts/gpuPrepareUcx.sh)"
    error_doc "no UCX 1.20.0" >"$JSON"; exit 1
  fi
fi
if ! gpu_build gpumpi_cli; then log "ucxVersions.sh: engine build failed"; error_doc "engine build failed" >"$JSON"; exit 1; fi
log "== ucxVersions.sh $(date -u +%FT%TZ) host=$(hostname) setup took $(( $(date +%s) - START )) s"

STACKS=("1.13.1:$PREFIX/lib:$PREFIX/bin" "1.20.0:$NEW/lib:$NEW/bin")
BASE_LD="${LD_LIBRARY_PATH:-}"
stack_json=()
for s in "${STACKS[@]}"; do
  IFS=: read -r ver lib bin <<<"$s"
  v=$(LD_LIBRARY_PATH="$lib:$BASE_LD" "$bin/ucx_info" -v 2>&1 | head -n 3)
  b=$(LD_LIBRARY_PATH="$lib:$BASE_LD" "$bin/ucx_info" -b 2>&1 | grep -E 'UCX_CONFIGURE_FLAGS|HAVE_CUDA|UCX_VERSION' | head -n 8)
  # which libucp / libucs / libuct (and UCX modules) a rank really loaded: the dynamic loader's own trace of one
  # engine launch under pml ucx
  loaded=$(PATH="$bin:$PATH" LD_LIBRARY_PATH="$lib:$BASE_LD" LD_DEBUG=libs timeout -k 5 60 "${MPIRUN_BASE[@]}" "${UCX_PML[@]}" -np 1 "$ENGINE" inspect 2>&1 >/dev/null |
    grep -o 'calling init: /[^ ]*libuc[pst][a-z_]*\.so[.0-9]*' | sed 's/calling init: //' | sort -u | tr '\n' ' ')
  log "== stack $ver: $lib; a rank loaded: $loaded"; log "$v"
  stack_json+=("{\"ucx\":\"$ver\",\"lib\":\"$lib\",\"loaded\":$(printf '%s' "$loaded" | json_str),\"ucx_info_v\":$(printf '%s' "$v" | json_str),\"ucx_info_b\":$(printf '%s' "$b" | json_str)}")
done

entries=()
fail=0
# run STACK NAME EXPECTED_S ARGS...: gpumpi-doctor ARGS --json with STACK's UCX first on LD_LIBRARY_PATH.
run() {
  local stack="$1" name="$2" expected="$3"; shift 3
  local lib="" bin="" s ver l b
  for s in "${STACKS[@]}"; do IFS=: read -r ver l b <<<"$s"; [ "$ver" = "$stack" ] && lib=$l && bin=$b; done
  local left=$(( BUDGET_S - ($(date +%s) - START) ))
  local args; args=$(printf '%s ' "$@" | json_str)
  if [ "$left" -lt "$expected" ]; then
    log "== [$stack] $name: SKIPPED ($left s left, needs ~$expected s)"
    entries+=("{\"stack\":\"$stack\",\"name\":\"$name\",\"args\":$args,\"skipped\":\"$left s left of the budget, needs ~$expected s\"}")
    return
  fi
  log "== [$stack] $name: gpumpi-doctor $* ($(date -u +%H:%M:%S), $left s left)"
  local t0=$(date +%s)
  PATH="$bin:$PATH" LD_LIBRARY_PATH="$lib:$BASE_LD" timeout -k 5 "$left" "$NODE" bin/gpumpi-doctor.js "$@" --json >"/tmp/ucxv.json" 2>>"$LOG"
  local rc=$? secs=$(( $(date +%s) - t0 ))
  log "== [$stack] $name exit=$rc in $secs s"
  [ "$rc" -eq 0 ] || fail=$((fail + 1))
  if "$NODE" -e 'JSON.parse(require("fs").readFileSync(process.argv[1],"utf8"))' /tmp/ucxv.json 2>/dev/null; then
    "$NODE" -e 'const r=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8"));for(const v of r.variants||[])console.log(`   ${v.config} / ${v.variant}: ${v.class} ${JSON.stringify(v.counts)}`);if(r.verdict)console.log("   "+(r.verdict.answer||r.verdict.headline||JSON.stringify(r.verdict)).slice(0,400))' /tmp/ucxv.json >>"$LOG" 2>&1
    entries+=("{\"stack\":\"$stack\",\"name\":\"$name\",\"args\":$args,\"exit\":$rc,\"seconds\":$secs,\"doc\":$(cat /tmp/ucxv.json)}")
  else
    head -c 2000 /tmp/ucxv.json >>"$LOG"
    entries+=("{\"stack\":\"$stack\",\"name\":\"$name\",\"args\":$args,\"exit\":$rc,\"seconds\":$secs,\"doc\":null}")
  fi
}
want() { [[ ",$GROUPS_," == *",$1,"* ]]; }
L=(--mpirun "$MPIRUN" --engine "$ENGINE" "${COMPONENT_PATH[@]}")
for stack in 1.13.1 1.20.0; do
  want inspect && run "$stack" inspect 30 inspect --mpirun "$MPIRUN" --engine "$ENGINE" --ranks 2 --timeout 90
done
ipc() {  # ipc SIZE: the IPC reproducer at SIZE on both stacks
  for stack in 1.13.1 1.20.0; do
    run "$stack" "ipc-$1" 100 repro ipc "${L[@]}" --pml-ucx --also 'UCX_TLS=^cuda_ipc' \
      --variants direct,send-from-import,bounce --size "$1" --trials "$TRIALS" --timeout 45
  done
}
want ipc64 && ipc 64M
for stack in 1.13.1 1.20.0; do
  want fallback && run "$stack" fallback-tryucx 90 repro fallback "${L[@]}" --pml-ucx --preset UCX_TLS=sm,cuda_copy,self \
    --modes mpi,lib-shm --sizes 256M,1G --iters 3 --trials 3 --timeout 90 --try-ucx staging
done
for stack in 1.13.1 1.20.0; do
  want pool && run "$stack" pool-64M 60 repro ipc "${L[@]}" --pml-ucx --preset UCX_LOG_LEVEL=info --variants pool,vmm,direct \
    --size 64M --trials "$TRIALS" --timeout 45
done
want ipc4 && ipc 4M

{ printf '{"schema":"gpumpi.gpu-ucx-versions/1","host":"%s","trials":%s,"stacks":[' "$(hostname)" "$TRIALS"
  (IFS=,; printf '%s' "${stack_json[*]}"); printf '],"runs":['
  (IFS=,; printf '%s' "${entries[*]}"); printf ']}\n'; } >"$JSON"
log "ucxVersions.sh: $fail run(s) exited non-zero in $(( $(date +%s) - START )) s"
exit 0
