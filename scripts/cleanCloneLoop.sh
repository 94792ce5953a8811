#!/usr/bin/env bash
# Issue 15's measurement: N runs of `bash .ci/run` (CI=true), one after another, each on a fresh clone of this
# checkout's HEAD (committed work only), as CI runs it. Run it as root on a disposable 2-core Debian 12 machine:
# .ci/run installs packages. Summaries go to LOGDIR/summary.tsv (start, head, load, exit, "N passed, N failed",
# seconds), each run's whole log to LOGDIR/run-<start>-<head>.log and its .test-work/results to LOGDIR/res-<start>/.
#   bash scripts/cleanCloneLoop.sh N [LOAD_RUN …]     e.g. `5 1`: five runs, the first with a load beside it
# The load beside a run: `cmake --build -j2 --clean-first` of native/ in a loop (a clone of its own in WORK/load).
# Env: LOGDIR (default /work/cilogs), WORK (default /work/cc; clones are removed after each run).
set -u
N="${1:?usage: cleanCloneLoop.sh N [LOAD_RUN ...]}"; shift
LOADS=" $* "
REPO="$(cd "$(dirname "$0")/.." && pwd)"
LOGDIR="${LOGDIR:-/work/cilogs}"
WORK="${WORK:-/work/cc}"
mkdir -p "$LOGDIR" "$WORK"
for i in $(seq 1 "$N"); do
	stamp=$(date -u +%Y%m%dT%H%M%S)
	dir="$WORK/run-$stamp"
	git clone -q "$REPO" "$dir"
	head=$(git -C "$dir" rev-parse --short HEAD)
	load=no
	loadpid=
	if [[ "$LOADS" == *" $i "* ]]; then
		load=yes
		rm -rf "$WORK/load" && git clone -q "$REPO" "$WORK/load"
		( cd "$WORK/load" && cmake -S native -B build -DMPI_C_COMPILER=mpicc >/dev/null 2>&1
		  while true; do cmake --build build -j2 --clean-first >/dev/null 2>&1; done ) &
		loadpid=$!
	fi
	log="$LOGDIR/run-$stamp-$head.log"
	t0=$SECONDS
	( cd "$dir" && CI=true bash .ci/run ) >"$log" 2>&1 </dev/null
	rc=$?
	dt=$((SECONDS - t0))
	if [ -n "$loadpid" ]; then pkill -P "$loadpid"; kill "$loadpid" 2>/dev/null; pkill -f 'cmake --build build -j2 --clean-first'; fi
	res=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$stamp" "$head" "$load" "rc=$rc" "${res:-no summary}" "${dt}s" >>"$LOGDIR/summary.tsv"
	mkdir -p "$LOGDIR/res-$stamp" && cp -r "$dir/.test-work/results" "$LOGDIR/res-$stamp/" 2>/dev/null
	rm -rf "$dir"
done
