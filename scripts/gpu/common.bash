# Shared start of the device scripts: `. scripts/gpu/common.bash NAME` (sourced, never run: scripts/testGpu.sh runs
# only scripts/gpu/*.sh). Sets OUT, LOG ($OUT/NAME.log, emptied), JSON ($OUT/NAME.json), PREFIX, MPICC, MPIRUN, and
# BUILD/ENGINE: ONE build folder for every script, so a testGpu.sh run configures and compiles the engine once and
# later scripts only relink what they add. Defines:
#   log TEXT...                  print and append to $LOG
#   gpu_require [TOOL...]        cmake, mpicc, mpirun (+ TOOLs) must exist, else the script's error document, exit 1
#   gpu_build TARGET...          configure + build TARGETs into $BUILD (output to $LOG); returns cmake's status
#   bench_doc ARGS -- ARGS       one `gpumpi bench --json` launch: BENCH_RC, BENCH_DOC (see below)
#   timed_run FILE LIMIT ARGV... one launch under timeout into FILE and $LOG: RUN_RC, RUN_TIMED_OUT, RUN_SECS (see below)
#   launch_logged NAME LIMIT ARGV...; launch_done REQUIRED DOC   one logged launch of a run table (see below)
#   gpu_cli_node [--run]         NODE for the scripts that run the headless CLI; exits unless it and dist/cli.js are there
#   json_str                     stdin -> one JSON string; framed_doc FILE; reap (see below)
#   error_doc [MESSAGE]          the error document {"error":MESSAGE<ERROR_DOC_FIELDS>} on stdout (MESSAGE default:
#                                "see NAME.log"; ERROR_DOC_FIELDS e.g. ',"runs":[]', set before sourcing); a script
#                                whose document has another shape defines its own error_doc after sourcing
# and the Open MPI launch pieces of the testbed: COMPONENTS (REPRO_COMPONENT_PATH or $PREFIX/lib/openmpi),
#   COMPONENT_PATH=(--mca mca_base_component_path $COMPONENTS), MPIRUN_BASE=($MPIRUN --allow-run-as-root
#   --oversubscribe ${COMPONENT_PATH[@]}), UCX_PML=(pml ucx with any transport and device, UCX_NET_DEVICES=lo).
GPU_NAME="$1"
OUT="${OUT:-$PWD/gpu-out}"
mkdir -p "$OUT"
LOG="$OUT/$GPU_NAME.log"
JSON="$OUT/$GPU_NAME.json"
PREFIX="${TESTBED_PREFIX:-/opt/testbed2}"
MPICC="$PREFIX/bin/mpicc"
MPIRUN="$PREFIX/bin/mpirun"
BUILD="${GPU_BUILD_DIR:-/tmp/build-engine}"  # GPU_BUILD_DIR: a private folder (CPU smoke tests)
ENGINE="$BUILD/gpumpi"
: >"$LOG"

log() { printf '%s\n' "$*" | tee -a "$LOG"; }

error_doc() { printf '{"error":%s%s}\n' "$(printf '%s' "${1:-see $GPU_NAME.log}" | json_str)" "${ERROR_DOC_FIELDS:-}"; }

COMPONENTS="${REPRO_COMPONENT_PATH:-$PREFIX/lib/openmpi}"  # the site may override it for the ranks (observed.md B)
COMPONENT_PATH=(--mca mca_base_component_path "$COMPONENTS")
MPIRUN_BASE=("$MPIRUN" --allow-run-as-root --oversubscribe "${COMPONENT_PATH[@]}")
UCX_PML=(--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x UCX_NET_DEVICES=lo)

gpu_require() {
  local tool
  for tool in cmake "$MPICC" "$MPIRUN" "$@"; do
    if ! command -v "$tool" >/dev/null 2>&1; then
      log "$GPU_NAME.sh: $tool not found (testbed installed? cmake installed?)"
      error_doc "$tool not found" >"$JSON"
      exit 1
    fi
  done
}

gpu_build() {
  log "== build: cmake -S native -B $BUILD -DMPI_C_COMPILER=$MPICC --target $*"
  cmake -S native -B "$BUILD" -DMPI_C_COMPILER="$MPICC" -DCMAKE_BUILD_TYPE=Release >>"$LOG" 2>&1 &&
    cmake --build "$BUILD" -j "${GPU_BUILD_JOBS:-16}" --target "$@" >>"$LOG" 2>&1
}

# bench_doc MPIRUN-ARG... -- BENCH-ARG...: one `gpumpi bench --json` launch of 2 ranks under $MPIRUN (timeout
# ${BENCH_TIMEOUT:-240} s), stdout and stderr appended to $LOG. Sets BENCH_RC (its exit status) and BENCH_DOC (the
# gpumpi.bench/1 document line, or null).
bench_doc() {
  local pre=() out
  while [ $# -gt 0 ] && [ "$1" != -- ]; do pre+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  out=$(timeout -k 5 "${BENCH_TIMEOUT:-240}" "$MPIRUN" "${pre[@]}" -np 2 "$ENGINE" bench --json "$@" 2>>"$LOG")
  BENCH_RC=$?
  printf '%s\n' "$out" >>"$LOG"
  BENCH_DOC=$(printf '%s\n' "$out" | grep -m1 '^{"schema":"gpumpi.bench/1"' || true)
  [ -n "$BENCH_DOC" ] || BENCH_DOC=null
}

# timed_run FILE LIMIT ARGV...: ARGV under `timeout -k 5 LIMIT`, stdout and stderr into FILE, then FILE appended to
# $LOG. Sets RUN_RC (ARGV's exit status), RUN_TIMED_OUT (true when it ran past LIMIT: RUN_RC 124, or 137 after the
# kill 5 s later) and RUN_SECS (wall seconds, 2 decimals).
timed_run() {
  local file=$1 limit=$2 t0
  shift 2
  t0=$(date +%s.%N)
  timeout -k 5 "$limit" "$@" >"$file" 2>&1
  RUN_RC=$?
  RUN_TIMED_OUT=false
  { [ "$RUN_RC" -eq 124 ] || [ "$RUN_RC" -eq 137 ]; } && RUN_TIMED_OUT=true
  RUN_SECS=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
  cat "$file" >>"$LOG"
}

# launch_logged NAME LIMIT ARGV... (inspect.sh, map.sh: each run of their table): ARGV under `timeout -k 5 LIMIT`,
# logged whole: "== run NAME: ARGV", "-- exit RC; stdout:", its stdout, "-- stderr:", its stderr. Sets LAUNCH_RC (its
# exit status), LAUNCH_OUT and LAUNCH_ERR (files with its stdout and stderr, for the caller to read) and LAUNCH_ARGV
# (ARGV as the items of a JSON array). launch_done REQUIRED DOC then removes the files and sets fail=1 when REQUIRED
# is yes and the launch failed or DOC (the document the caller found) is null.
launch_logged() {
  local name=$1 limit=$2 a
  shift 2
  LAUNCH_OUT=$(mktemp) LAUNCH_ERR=$(mktemp)
  log "== run $name: $*"
  timeout -k 5 "$limit" "$@" >"$LAUNCH_OUT" 2>"$LAUNCH_ERR"
  LAUNCH_RC=$?
  log "-- exit $LAUNCH_RC; stdout:"
  cat "$LAUNCH_OUT" >>"$LOG"
  log "-- stderr:"
  cat "$LAUNCH_ERR" >>"$LOG"
  LAUNCH_ARGV=""
  for a in "$@"; do LAUNCH_ARGV+="${LAUNCH_ARGV:+,}\"${a//\"/\\\"}\""; done
}

launch_done() {
  rm -f "$LAUNCH_OUT" "$LAUNCH_ERR"
  if [ "$1" = yes ] && { [ "$LAUNCH_RC" -ne 0 ] || [ "$2" = null ]; }; then fail=1; fi
}

# gpu_cli_node [--run] (the scripts that run the headless CLI, node bin/gpumpi-doctor.js): NODE = `node` on PATH, else
# .gpu/node.xz (this machine's node, xz-compressed; carry ".gpu") unpacked to /tmp/node. The CLI also needs dist/cli.js
# (carry "dist"). Without either: "NAME.sh: needs node and dist/cli.js" in $LOG, error_doc "no node or dist/cli.js" in
# $JSON, exit 1. With --run, NODE must also run (its --version goes to $LOG), and each lack has its own line and
# error: "NAME.sh: no usable node (PATH or .gpu/node.xz)" / "no node", "NAME.sh: dist/cli.js missing (carry dist)" /
# "no dist/cli.js".
gpu_cli_node() {
  NODE="$(command -v node || true)"
  if [ -z "$NODE" ] && [ -f .gpu/node.xz ]; then
    xz -dc .gpu/node.xz >/tmp/node && chmod +x /tmp/node && NODE=/tmp/node
  fi
  if [ "${1:-}" = --run ]; then
    if [ -z "$NODE" ] || ! "$NODE" --version >>"$LOG" 2>&1; then
      log "$GPU_NAME.sh: no usable node (PATH or .gpu/node.xz)"; error_doc "no node" >"$JSON"; exit 1
    fi
    if [ ! -f dist/cli.js ]; then log "$GPU_NAME.sh: dist/cli.js missing (carry dist)"; error_doc "no dist/cli.js" >"$JSON"; exit 1; fi
  elif [ -z "$NODE" ] || [ ! -f dist/cli.js ]; then
    log "$GPU_NAME.sh: needs node and dist/cli.js"; error_doc "no node or dist/cli.js" >"$JSON"; exit 1
  fi
}

# framed_doc FILE: the engine's framed result document in FILE (native/common/docFrame.hh) on stdout, or nothing.
# Takes, for each chunk index, the first copy whose payload has the announced byte length (the product's reader,
# extension/core/parsers/framedDocument.ts, also checks the CRC-32s; the tests that read these results validate the
# JSON). Accepts an older engine's document alone between the marker lines too.
framed_doc() {
  LC_ALL=C tr -d '\000' <"$1" | LC_ALL=C awk '
    {
      i = index($0, "@@GPUMPI-JSON@@ ")
      if (i > 0) {
        n = split(substr($0, i + 16), f, " ")
        if (n >= 7 && f[1] ~ /^[0-9a-f]+$/) {
          head = f[1] " " f[2] " " f[3] " " f[4] " " f[5] " " f[6] " " f[7] " "
          p = substr($0, i + 16 + length(head))
          if (id == "") id = f[1]
          if (f[1] == id && !(f[2] in part) && length(p) >= f[6] + 0) { part[f[2]] = substr(p, 1, f[6] + 0); k = f[3] + 0 }
        }
        next
      }
      if ($0 == "@@GPUMPI-JSON-BEGIN@@") { legacy = 1; next }
      if ($0 == "@@GPUMPI-JSON-END@@") { legacy = 0; next }
      if (legacy && $0 ~ /^\{"schema":"gpumpi/) old = $0
    }
    END {
      if (k > 0) { for (j = 0; j < k; j++) { if (!(j in part)) exit 1; doc = doc part[j] } print doc }
      else if (old != "") print old
    }' || true
}

# stdin -> one JSON string (ASCII only: control and non-ASCII bytes dropped; no jq/python on the device).
json_str() {
  LC_ALL=C tr -d '\000-\010\013\014\016-\037\177-\377' |
    LC_ALL=C sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/\t/\\t/g' -e 's/\r//g' |
    awk 'BEGIN { ORS = ""; printf "\"" } NR > 1 { printf "\\n" } { print } END { printf "\"" }'
}

# Kill engine processes a timed-out run left behind (found by this script's own engine path; by pid).
reap() {
  local p
  for p in $(pgrep -x gpumpi 2>/dev/null); do
    if [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$ENGINE" ]; then kill -9 "$p" 2>/dev/null && log "   reaped left-over engine pid $p"; fi
  done
}
