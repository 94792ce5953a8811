#!/usr/bin/env bash
# GPU checks, run ON THE GPU MACHINE from the repository root (no Node needed there).
# Installs the CUDA-aware testbed MPI from .gpu/ (see ../shared/testbed/README.md) when /opt/testbed2 is absent,
# then runs every scripts/gpu/*.sh in turn. Each script writes at most two files under $OUT (default ./gpu-out).
# A failing script does not stop the others; the exit code is the number of failed scripts.
set -u
cd "$(dirname "$0")/.."
export OUT="${OUT:-$PWD/gpu-out}"
mkdir -p "$OUT"
if [ ! -x /opt/testbed2/bin/mpirun ]; then
  tarball=$(ls .gpu/openmpi-*-cuda*.tar.xz 2>/dev/null | head -n1)
  if [ -z "$tarball" ]; then
    echo "testGpu: no /opt/testbed2 and no testbed tarball in .gpu/ (cp ../shared/testbed/*.tar.xz .gpu/)" >&2
    exit 1
  fi
  tar xJf "$tarball" -C /opt
fi
export PATH=/opt/testbed2/bin:$PATH LD_LIBRARY_PATH=/opt/testbed2/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L || true
failed=0
only="${1:-}"
for s in scripts/gpu/*.sh; do
  name=$(basename "$s" .sh)
  if [ -n "$only" ] && [[ ",$only," != *",$name,"* ]]; then continue; fi
  if [ -z "$only" ] && grep -q '^# testGpu: only when named' "$s"; then continue; fi
  echo "=== testGpu: $name ($(date -u +%H:%M:%S))"
  start=$(date +%s)
  if bash "$s"; then rc=0; else rc=$?; failed=$((failed + 1)); fi
  echo "=== testGpu: $name rc=$rc in $(( $(date +%s) - start )) s"
done
echo "testGpu: $failed script(s) failed"
exit $failed
