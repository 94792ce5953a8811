# Shared start of the device scripts: `. scripts/gpu/common.bash NAME` (sourced, never run: scripts/testGpu.sh runs
# only scripts/gpu/*.sh). Sets OUT, LOG ($OUT/NAME.log, emptied), JSON ($OUT/NAME.json), PREFIX, MPICC, MPIRUN, and
# BUILD/ENGINE: ONE build folder for every script, so a testGpu.sh run configures and compiles the engine once and
# later scripts only relink what they add. Defines:
#   log TEXT...                  print and append to $LOG
#   gpu_require [TOOL...]        cmake, mpicc, mpirun (+ TOOLs) must exist, else the script's error document, exit 1
#   gpu_build TARGET...          configure + build TARGETs into $BUILD (output to $LOG); returns cmake's status
# The sourcing script defines `error_doc MESSAGE` (prints its own JSON error document) before gpu_require.
GPU_NAME="$1"
OUT="${OUT:-$PWD/gpu-out}"
mkdir -p "$OUT"
LOG="$OUT/$GPU_NAME.log"
JSON="$OUT/$GPU_NAME.json"
PREFIX="${TESTBED_PREFIX:-/opt/testbed2}"
MPICC="$PREFIX/bin/mpicc"
MPIRUN="$PREFIX/bin/mpirun"
BUILD=/tmp/build-engine
ENGINE="$BUILD/gpumpi"
: >"$LOG"

log() { printf '%s\n' "$*" | tee -a "$LOG"; }

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
