#!/bin/bash
# Captures the guard report fixtures of this folder from REAL runs: guard_demo under real mpirun (Open MPI 4.1.4 and
# MPICH 4.0.2 of the CI machine), with the guard preloaded; the IPC scenarios with the fake CUDA driver
# (native/fakes/fakeCuda.c: the only fake; see test/engine/guardFakeCuda.test.ts). Run from the repository root after
# `node scripts/ensure.mjs --all-mpis`:  bash test-fixtures/guard/capture.sh  (ONLY="openmpi-stage" for one)
set -euo pipefail
ROOT=$(pwd)
OUT=$ROOT/test-fixtures/guard
unset UCX_TLS GPUMPI_GUARD GPUMPI_GUARD_DIR
root=(); [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
cap() {  # cap NAME FLAVOR MODE -- mpirun-options... -- guard_demo args...
	local name=$1 flavor=$2 mode=$3; shift 4
	if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then return 0; fi  # ONLY="name ...": capture just these
	local b=$ROOT/native/build/engine-$flavor d; d=$(mktemp -d)
	local fwd=()
	for kv in "LD_PRELOAD=$b/libgpumpi_guard.so" "GPUMPI_GUARD=$mode" "GPUMPI_GUARD_DIR=$d" "GPUMPI_LIBCUDA=$b/libgpumpi_fakecuda.so" "UCX_NET_DEVICES=lo" ${EXTRA:-}; do
		if [ "$flavor" = openmpi ]; then fwd+=(-x "$kv"); else fwd+=(-genv "${kv%%=*}" "${kv#*=}"); fi
	done
	local launch=()
	while [ "$1" != -- ]; do launch+=("$1"); shift; done; shift
	set +e; "${launch[0]}" "${fwd[@]}" "${launch[@]:1}" "$b/examples/${PROG:-guard_demo}" "$@" > "$d/stdout.txt" 2>&1; local rc=$?; set -e
	mkdir -p "$OUT/$name"; rm -f "$OUT/$name"/*.json
	local i=0
	for f in $(ls "$d"/guard-*.json | sort); do
		r=$(node -e 'process.stdout.write(String(JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")).rank))' "$f")
		cp "$f" "$OUT/$name/rank$r.json"; i=$((i+1))
	done
	echo "$rc" > "$OUT/$name/exitcode"
	echo "$name: exit $rc, $i reports"; rm -rf "$d"
}
OMPI=(mpirun.openmpi "${root[@]}" --oversubscribe)
OMPI_UCX=("${OMPI[@]}" --mca pml ucx --mca pml_ucx_devices any --mca pml_ucx_tls any)
cap openmpi-demo openmpi report -- "${OMPI[@]}" -np 2 --
cap mpich-demo mpich report -- mpirun.mpich -np 2 --
cap openmpi-nofinalize openmpi report -- "${OMPI[@]}" -np 2 -- --no-finalize
cap openmpi-ipc-report openmpi report -- "${OMPI_UCX[@]}" -np 4 -- --ipc --size 1048576
cap openmpi-ipc-fix openmpi fix -- "${OMPI_UCX[@]}" -np 4 -- --ipc --size 1048576
cap mpich-ipc-report mpich report -- mpirun.mpich -np 4 -- --ipc --size 1048576
# STAGE (GPUMPI_GUARD_STAGE=1 on both ranks): guard_stage's 9 device messages of 2 MiB staged (fake driver: "device"
# memory, MPI not CUDA-aware, so the peer is host-staged); and the same with a threshold above the size (nothing staged)
PROG=guard_stage EXTRA="GPUMPI_GUARD_STAGE=1" cap openmpi-stage openmpi report -- "${OMPI[@]}" -np 2 -- --size 2097152
PROG=guard_stage EXTRA="GPUMPI_GUARD_STAGE=1 GPUMPI_GUARD_STAGE_MIN=4194304" cap openmpi-stage-min openmpi report -- "${OMPI[@]}" -np 2 -- --size 2097152
