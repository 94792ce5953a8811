#!/usr/bin/env bash
# `gpumpi inspect` on the GPU device, run by scripts/testGpu.sh (or by hand) from the repository root with the
# CUDA-aware testbed MPI on PATH (/opt/testbed2, see ../shared/testbed/README.md). No Node needed.
# Builds the engine with the testbed's mpicc into /tmp/build-engine, then runs it under the testbed's mpirun:
#   np1      1 rank,  --mca mca_base_component_path <prefix>/lib/openmpi
#   np4      4 ranks, same
#   np4-nocp 4 ranks WITHOUT the component path: shows the site's OMPI_MCA_mca_base_component_path override and
#            what MPIX_Query_cuda_support() says when the CUDA component cannot be found
#   np1-verbose  1 rank with the component path and --mca accelerator_base_verbose 100 (log only)
#   np2-bind-core, np2-bind-none  2 ranks --bind-to core / none: each rank's "affinity" (CPU mask vs the GPU's NUMA node)
# Writes exactly two files: $OUT/inspect.log (everything) and $OUT/inspect.json ({"runs":[...]}, one entry per run
# with the rank-0 document or null; addon_probe: the addon core's probe result, or null). Exit status: 0 when the builds and the component-path runs succeeded.
set -u
. "$(dirname "$0")/common.bash" inspect
error_doc() { printf '{"error":"%s","runs":[]}\n' "$1"; }

fail=0
log "== inspect.sh $(date -u +%FT%TZ) host=$(hostname)"
gpu_require
log "== mpirun: $MPIRUN ($("$MPIRUN" --version 2>&1 | head -n1))"
log "== nvidia-smi -L: $(nvidia-smi -L 2>&1 | tr '\n' ' ')"

if ! gpu_build gpumpi_cli; then
  log "inspect.sh: engine build failed (see $LOG)"
  error_doc "engine build failed" >"$JSON"
  exit 1
fi
log "== engine: $ENGINE"

CP=(--mca mca_base_component_path "$PREFIX/lib/openmpi")
BASE=("$MPIRUN" --allow-run-as-root --oversubscribe)
entries=()

# run NAME REQUIRED ARGV... : runs one launch with a timeout, logs everything, records the rank-0 document.
run() {
  local name=$1 required=$2
  shift 2
  local doc
  launch_logged "$name" 90 "$@"
  # Seen on the testbed (Open MPI 5.0.7, -np 4, 2026-12-02): stdout began with a NUL byte before the document.
  # Count and drop NULs rather than lose the run; the TypeScript parser tolerates bytes before the JSON too.
  local nuls
  nuls=$(tr -cd '\000' <"$LAUNCH_OUT" | wc -c)
  if [ "$nuls" -gt 0 ]; then log "-- note: $nuls NUL byte(s) in stdout (dropped before parsing)"; fi
  doc=$(tr -d '\000' <"$LAUNCH_OUT" | grep -m1 '^{"schema":"gpumpi.inspect/1"' || true)
  [ -n "$doc" ] || doc=null
  entries+=("{\"name\":\"$name\",\"argv\":[$LAUNCH_ARGV],\"exit_code\":$LAUNCH_RC,\"document\":$doc}")
  # A short human summary per rank (no jq on the device): CUDA init and CUDA awareness as each rank saw them.
  if [ "$doc" != null ]; then
    printf '%s\n' "$doc" | grep -o '"rank":[0-9]*,"local_rank":[0-9]*\|"cuda_aware":{[^}]*}\|"selected_device":-\{0,1\}[0-9]*,"initialised_before_mpi_init":[a-z]*\|"OMPI_MCA_mca_base_component_path":"[^"]*"' |
      tee -a "$LOG"
  fi
  launch_done "$required" "$doc"
}

run np1 yes "${BASE[@]}" "${CP[@]}" -np 1 "$ENGINE" inspect
run np4 yes "${BASE[@]}" "${CP[@]}" -np 4 "$ENGINE" inspect
run np4-nocp no "${BASE[@]}" -np 4 "$ENGINE" inspect
run np1-verbose no "${BASE[@]}" "${CP[@]}" --mca accelerator_base_verbose 100 -np 1 "$ENGINE" inspect
# Rank CPU affinity against the GPU's NUMA node (issue 16 item 5): bound to one core each, and unbound.
log "== NUMA: $(lscpu 2>/dev/null | grep -i '^NUMA' | tr '\n' ';') GPU numa_node: $(for d in /sys/bus/pci/devices/*; do [ "$(cat "$d/vendor" 2>/dev/null)" = 0x10de ] && [ "$(cat "$d/class" 2>/dev/null | cut -c1-6)" = 0x0302 ] && printf '%s=%s ' "${d##*/}" "$(cat "$d/numa_node")"; done)"
run np2-bind-core no "${BASE[@]}" "${CP[@]}" --bind-to core --map-by core -np 2 "$ENGINE" inspect
run np2-bind-none no "${BASE[@]}" "${CP[@]}" --bind-to none -np 2 "$ENGINE" inspect

# The addon's core (native/addon/probe.cc, nvmlProbe.cc: plain C++, no Node) with a throw-away main, so the CUDA
# and NVML paths the CPU machines cannot exercise run against the real driver here (there is no Node on the device).
PROBE_MAIN=/tmp/gpumpi-addon-probe-main.cc
PROBE_BIN=/tmp/gpumpi-addon-probe
cat >"$PROBE_MAIN" <<'CC'
#include <cstdio>
#include "json.hh"
#include "probe.hh"
int main() {
	using namespace gpumpi;
	addon::HostProbe p = addon::probeHost();
	JsonWriter w;
	w.beginObject().key("libraries").beginArray();
	for (const auto& l : p.libraries) {
		w.beginObject();
		w.key("kind").value(l.kind).key("soname").value(l.soname).key("loaded").value(l.loaded);
		w.key("path").value(l.path).key("version").value(l.version).key("error").value(l.error);
		w.endObject();
	}
	w.endArray().key("nvml");
	if (!p.nvml) w.null();
	else {
		w.beginObject().key("error").value(p.nvml->error).key("driver_version").value(p.nvml->driverVersion);
		w.key("cuda_driver_version").value(p.nvml->cudaDriverVersion).key("devices").beginArray();
		for (const auto& d : p.nvml->devices) {
			w.beginObject().key("index").value(d.index).key("name").value(d.name).key("uuid").value(d.uuid);
			w.key("pci_bus_id").value(d.pciBusId).key("nvlinks").beginArray();
			for (const auto& l : d.nvlinks) {
				w.beginObject().key("link").value(l.link).key("active").value(l.active);
				w.key("remote_pci_bus_id").value(l.remotePciBusId).endObject();
			}
			w.endArray().endObject();
		}
		w.endArray().endObject();
	}
	w.key("elapsed_ms").value(p.elapsedMs).endObject();
	std::printf("%s\n", w.str().c_str());
	return 0;
}
CC
probe_doc=null
log "== addon core probe: g++ native/addon/probe.cc nvmlProbe.cc + main"
if g++ -std=c++17 -O1 -Wall -Inative/addon -Inative/common native/addon/probe.cc native/addon/nvmlProbe.cc "$PROBE_MAIN" \
     -o "$PROBE_BIN" -ldl >>"$LOG" 2>&1; then
  probe_doc=$(timeout -k 5 60 "$PROBE_BIN" 2>>"$LOG" | grep -m1 '^{"libraries"' || true)
  [ -n "$probe_doc" ] || probe_doc=null
  printf '%s\n' "$probe_doc" >>"$LOG"
else
  log "addon core probe: compile failed (see $LOG)"
fi
rm -f "$PROBE_MAIN" "$PROBE_BIN"

{
  printf '{"schema":"gpumpi.gpu-inspect-runs/1","host":"%s","addon_probe":%s,"runs":[' "$(hostname)" "$probe_doc"
  sep=""
  for e in "${entries[@]}"; do printf '%s%s' "$sep" "$e"; sep=","; done
  printf ']}\n'
} >"$JSON"
log "== wrote $JSON ($(wc -c <"$JSON") bytes); result: $([ $fail -eq 0 ] && echo ok || echo FAILED)"
exit $fail
