#!/usr/bin/env bash
# peerSuite: a third-party MPI test suite with and without the guard. Builds a subset of MPICH's own test suite
# (test/mpi of an MPICH source tree: pt2pt, coll, comm by default; rma on request) with plain mpicc for each MPI on this
# machine (Open MPI: mpicc.openmpi/mpirun.openmpi; MPICH: mpicc.mpich/mpirun.mpich), without MPICH's configure (the
# two configure-generated headers the tests include, mpitestconf.h and mtest_mpix.h, are written here, minimal),
# then runs every built program twice per MPI: without the guard (mode "none") and with libgpumpi_guard.so preloaded
# in report mode (mode "report", GPUMPI_GUARD=report, a fresh GPUMPI_GUARD_DIR per run, GPUMPI_GUARD_EVERY_RANK=1).
# Report mode must change nothing, so a program's pass/fail must be the same both ways. A run passes when it exits 0
# and its output has MPICH's success line " No Errors". Programs whose result differs are re-run PEER_RECHECK more
# times each way (flaky or the guard?).
#
# The MPICH source is fetched by the developer; nothing of it is in this repository, and CI does not run this script
# (CI cannot fetch sources). E.g. from a clone or mirror of github.com/pmodels/mpich:
#   mkdir -p /tmp/mpich-src && git -C MPICH_GIT archive v4.0.2 test/mpi | tar x -C /tmp/mpich-src
#   bash scripts/peerSuite.sh /tmp/mpich-src/test/mpi          (or MPICH_TEST_SRC=/tmp/mpich-src/test/mpi)
#
# Which tests: each directory's testlist.in gives `name nprocs [arg=..] [key=value]`. Per program the first entry
# that needs at most PEER_MAXNP ranks, is not xfail=, has no mem= (big memory) and no env= (MPICH CVAR variants) is
# run. Skipped, with the reason: xfail, more ranks, mem=, env-only, @configure@-substituted lines, sources using
# dtpools (DTP) or threads, strict=false (MPICH extensions: skipped for Open MPI, which is built as test/mpi/README
# says for other MPIs, i.e. --enable-strictmpi: -DUSE_STRICT_MPI), and programs that do not compile or link against
# that MPI (e.g. MPI-4 calls under Open MPI 4.1, an MPI-3.1 library).
#
# Env: MPICH_TEST_SRC (or $1); PEER_WORK (build and run dir, default /tmp/peer-suite); PEER_OUT (results dir, default
# $PEER_WORK/results); PEER_TAG (file name stem, default mpich-testsuite-v<ver>-<date>); PEER_MPICH_VERSION (for the
# name; else read from MPICH_SRC/maint/version.m4); PEER_MPIS ("openmpi mpich"); PEER_DIRS ("pt2pt coll comm";
# adding rma runs ~170 more programs, ~8 min more per MPI); PEER_MAXNP (4); PEER_TIMEOUT (60 s per run);
# PEER_RECHECK (3); PEER_ONLY ("dir/prog ..." to run just those); PEER_TRIALS (1: runs per mode in the main pass, the
# summary compares the first); GUARD_OPENMPI / GUARD_MPICH (default native/build/engine-<mpi>/libgpumpi_guard.so).
# Writes $PEER_OUT/$PEER_TAG.jsonl, one line per run:
#   {"mpi","dir","program","np","args","mode","trial","rc","noErrors","pass","secs","timedOut","guardReports",
#    "guardNotFinalized","guardStderr","guardInitLeft","outSha","tail"}   (guardReports: guard-*.json files written;
#   guardInitLeft: the guard's .gpumpi-guard-init.* files left behind, i.e. ranks that never reached MPI_Finalize or
#   exit; outSha: of the sorted stdout; tail: the last lines of stdout+stderr, failed runs only)
# and $PEER_OUT/$PEER_TAG-summary.txt (also printed). Whole outputs stay in $PEER_WORK/runs/.
set -u
SRC="${1:-${MPICH_TEST_SRC:-}}"
[ -n "$SRC" ] && [ -f "$SRC/util/mtest.c" ] || { echo "usage: peerSuite.sh MPICH_SRC/test/mpi (or MPICH_TEST_SRC=...)" >&2; exit 2; }
SRC="$(cd "$SRC" && pwd)"
REPO="$(cd "$(dirname "$0")/.." && pwd)"
WORK="${PEER_WORK:-/tmp/peer-suite}"
OUTDIR="${PEER_OUT:-$WORK/results}"
MPIS="${PEER_MPIS:-openmpi mpich}"
DIRS="${PEER_DIRS:-pt2pt coll comm}"
MAXNP="${PEER_MAXNP:-4}"
TMO="${PEER_TIMEOUT:-60}"
RECHECK="${PEER_RECHECK:-3}"
TRIALS="${PEER_TRIALS:-1}"
ONLY=" ${PEER_ONLY:-} "
VER="${PEER_MPICH_VERSION:-$(sed -n 's/^m4_define(\[MPICH_VERSION_m4\],\[\([^]]*\)\].*/\1/p' "$SRC/../../maint/version.m4" 2>/dev/null)}"
TAG="${PEER_TAG:-mpich-testsuite-${VER:+v$VER-}$(date -u +%Y-%m-%d)}"
JL="$OUTDIR/$TAG.jsonl"
SUM="$OUTDIR/$TAG-summary.txt"
command -v jq >/dev/null || { echo "peerSuite: needs jq" >&2; exit 2; }
unset GPUMPI_GUARD GPUMPI_GUARD_DIR GPUMPI_GUARD_STAGE LD_PRELOAD
export UCX_NET_DEVICES=lo
mkdir -p "$WORK/include" "$OUTDIR"
: >"$JL"

# ---- the configure-generated headers, minimal (Linux, gcc, no GPU, single-threaded tests only) ----
cat >"$WORK/include/mpitestconf.h" <<'EOF'
#ifndef MPITESTCONF_H_INCLUDED
#define MPITESTCONF_H_INCLUDED
#define HAVE_STDARG_H 1
#define HAVE_STRING_H 1
#define HAVE_STDLIB_H 1
#define HAVE_UNISTD_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_RESOURCE_H 1
#define HAVE_STRDUP 1
#define HAVE_USLEEP 1
#define HAVE_GETRUSAGE 1
#define HAVE_LONG_DOUBLE 1
#define HAVE_LONG_LONG 1
#define HAVE_MPI_INIT_THREAD 1
#define HAVE_MPI_WIN_CREATE 1
#define THREAD_PACKAGE_NAME THREAD_PACKAGE_NONE
#define POINTERINT_t intptr_t
#endif
EOF
printf '#ifndef MTEST_MPIX_H_INCLUDED\n#define MTEST_MPIX_H_INCLUDED\n#endif\n' >"$WORK/include/mtest_mpix.h"

mpicc_of() { echo "mpicc.$1"; }
guard_of() {
  case "$1" in
    openmpi) echo "${GUARD_OPENMPI:-$REPO/native/build/engine-openmpi/libgpumpi_guard.so}";;
    mpich) echo "${GUARD_MPICH:-$REPO/native/build/engine-mpich/libgpumpi_guard.so}";;
  esac
}

# ---- the test list: one selected entry per program, or a skip reason ----
# PLAN lines: dir<TAB>prog<TAB>np<TAB>args<TAB>strict(0/1: strict=false)<TAB>sources<TAB>cppflags ; SKIP lines: dir<TAB>prog<TAB>reason
PLAN="$WORK/plan.tsv"; SKIP="$WORK/skip.tsv"; : >"$PLAN"; : >"$SKIP"
mk_value() {  # Makefile.am VAR value (one line), $(AM_CPPFLAGS)/$(LDADD) dropped
  sed -n "s/^$2[[:space:]]*=[[:space:]]*//p" "$1" | head -n1 | sed 's/\$([A-Z_]*)//g; s/[[:space:]]*$//'
}
for d in $DIRS; do
  tl="$SRC/$d/testlist.in"; [ -f "$tl" ] || tl="$SRC/$d/testlist"
  [ -f "$tl" ] || { echo "peerSuite: no testlist in $d" >&2; continue; }
  # name -> chosen entry or best reason (xfail > mem > env > nprocs)
  awk -v maxnp="$MAXNP" -v dir="$d" '
    /^[[:space:]]*#/ || NF < 2 { next }
    {
      name = $1; np = $2; args = ""; strict = 0; why = ""
      if (name ~ /@/) { sub(/^@[^@]*@/, "", name); why = "configure-substituted (@...@) line" }
      for (i = 3; i <= NF; i++) {
        if ($i ~ /^arg=/) { a = $i; sub(/^arg=/, "", a); args = args (args == "" ? "" : " ") a }
        else if ($i ~ /^xfail=/) { if (why == "") why = "xfail" }
        else if ($i ~ /^mem=/) { if (why == "") why = "mem= (large memory)" }
        else if ($i ~ /^env=/) { if (why == "") why = "env= variant only (MPICH CVARs)" }
        else if ($i == "strict=false") strict = 1
      }
      if (why == "" && np + 0 > maxnp) why = "nprocs > " maxnp
      if (!(name in seen)) { seen[name] = 1; order[++n] = name }
      if (why == "") { if (!(name in ok)) ok[name] = np "\t" (args == "" ? "-" : args) "\t" strict }
      else if (!(name in reason) || rank(why) < rank(reason[name])) reason[name] = why
    }
    function rank(w) { return w ~ /^configure/ ? 0 : w == "xfail" ? 1 : w ~ /^mem/ ? 2 : w ~ /^env/ ? 3 : 4 }
    END { for (k = 1; k <= n; k++) { nm = order[k]
      if (nm in ok) print "OK\t" dir "\t" nm "\t" ok[nm]; else print "SKIP\t" dir "\t" nm "\t" reason[nm] } }
  ' "$tl" | while IFS=$'\t' read -r kind dd prog np args strict; do
    [ "$ONLY" = "  " ] || [[ "$ONLY" == *" $dd/$prog "* ]] || continue
    if [ "$kind" = SKIP ]; then printf '%s\t%s\t%s\n' "$dd" "$prog" "$np" >>"$SKIP"; continue; fi
    mk="$SRC/$dd/Makefile.am"
    srcs="$(mk_value "$mk" "${prog}_SOURCES")"; [ -n "$srcs" ] || srcs="$prog.c"
    srcs="$(for s in $srcs; do case "$s" in *.c) printf '%s ' "$SRC/$dd/$s";; esac; done)"
    cpp="$(mk_value "$mk" "${prog}_CPPFLAGS")"; [ -n "$cpp" ] || cpp=-
    missing=0; for s in $srcs; do [ -f "$s" ] || missing=1; done
    if [ -z "$srcs" ] || [ "$missing" = 1 ]; then printf '%s\t%s\t%s\n' "$dd" "$prog" "no C source" >>"$SKIP"; continue; fi
    # shellcheck disable=SC2086
    if grep -qE 'dtpools\.h|mtest_dtp\.h|DTP_' $srcs; then printf '%s\t%s\t%s\n' "$dd" "$prog" "dtpools (DTP)" >>"$SKIP"; continue; fi
    # shellcheck disable=SC2086
    if grep -qE 'MTest_Start_thread|pthread_create|MTest_thread' $srcs; then printf '%s\t%s\t%s\n' "$dd" "$prog" "threads" >>"$SKIP"; continue; fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$dd" "$prog" "$np" "$args" "$strict" "$srcs" "$cpp" >>"$PLAN"
  done
done

# ---- build, per MPI ----
build_mpi() {  # MPI -> $WORK/bin-MPI/{dir}__{prog}, $WORK/build-MPI.tsv (dir prog ok|reason)
  local m=$1 cc; cc=$(mpicc_of "$m")
  local B="$WORK/bin-$m" U="$WORK/util-$m"; rm -rf "$B" "$U"; mkdir -p "$B" "$U"
  # another MPI than MPICH is tested as MPICH's test/mpi/README says (--enable-strictmpi): USE_STRICT_MPI, and the
  # strict=false tests (MPICH extensions) are not built
  local strict=""; [ "$m" = mpich ] || strict=-DUSE_STRICT_MPI
  local CF=(-O1 -w $strict -I"$WORK/include" -I"$SRC/include")
  for f in mtest mtest_common mtest_single dtypes; do
    "$cc" "${CF[@]}" -c "$SRC/util/$f.c" -o "$U/$f.o" >"$U/$f.log" 2>&1 || { echo "peerSuite: $m: util/$f.c does not compile" >&2; cat "$U/$f.log" >&2; return 1; }
  done
  : >"$WORK/build-$m.tsv"
  export cc B U WORK SRC m strict
  awk -F'\t' -v m="$m" '{ if ($5 == 1 && m != "mpich") print $1 "\t" $2 "\tSTRICT"; else print $1 "\t" $2 "\t" $6 "\t" $7 }' "$PLAN" |
  xargs -d '\n' -P "$(nproc)" -n 1 bash -c '
    IFS=$'"'"'\t'"'"' read -r d p srcs cpp <<<"$1"
    if [ "$srcs" = STRICT ]; then printf "%s\t%s\t%s\n" "$d" "$p" "strict=false (MPICH extensions; MPICH only)"; exit 0; fi
    log="$B/${d}__$p.log"
    # shellcheck disable=SC2086
    [ "$cpp" = - ] && cpp=
    if "$cc" -O1 -w $strict -I"$WORK/include" -I"$SRC/include" -I"$SRC/$d" $cpp $srcs "$U"/*.o -lm -o "$B/${d}__$p" >"$log" 2>&1; then
      printf "%s\t%s\tok\n" "$d" "$p"
    else
      printf "%s\t%s\tdoes not compile/link against %s: %s\n" "$d" "$p" "$m" "$(grep -m1 -E "error|undefined reference" "$log" | sed "s/^[^ ]*: //; s/\t/ /g" | cut -c1-160)"
    fi' _ >>"$WORK/build-$m.tsv"
}

# ---- one run ----
BOILER='^[[:space:]]*$|^-{5,}|^={5,}|^=   |Primary job +terminated|a non-zero exit code|Per user-direction|detected that one or more processes exited|the job to be terminated|The first process to do so|^ +Process name:|^ +Exit code:|YOUR APPLICATION TERMINATED|This typically refers to a problem|Please see the FAQ page'
run_one() {  # MPI dir prog np args mode trial -> one JSONL line
  local m=$1 d=$2 p=$3 np=$4 args=$5 mode=$6 trial=$7 g rd t0 t1 rc secs to=false
  g=$(guard_of "$m")
  rd="$WORK/runs/$m/${d}__$p.$mode.$trial"; rm -rf "$rd"; mkdir -p "$rd/cwd"
  local L=() A=()
  # shellcheck disable=SC2206
  [ -n "$args" ] && A=($args)
  case "$m" in
    openmpi) L=(mpirun.openmpi --allow-run-as-root --oversubscribe --mca btl_tcp_if_include lo -np "$np")
      [ "$mode" = report ] && L+=(-x "LD_PRELOAD=$g" -x GPUMPI_GUARD=report -x "GPUMPI_GUARD_DIR=$rd/cwd" -x GPUMPI_GUARD_EVERY_RANK=1);;
    mpich) L=(mpirun.mpich -np "$np")
      [ "$mode" = report ] && L+=(-genv LD_PRELOAD "$g" -genv GPUMPI_GUARD report -genv GPUMPI_GUARD_DIR "$rd/cwd" -genv GPUMPI_GUARD_EVERY_RANK 1);;
  esac
  t0=$(date +%s.%N)
  (cd "$rd/cwd" && exec timeout -k 5 "$TMO" "${L[@]}" "$WORK/bin-$m/${d}__$p" "${A[@]}" >"$rd/out" 2>"$rd/err" </dev/null)
  rc=$?
  t1=$(date +%s.%N)
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
  [ "$rc" = 124 ] || [ "$rc" = 137 ] && to=true
  local ne=false pass=false nrep nnf gse sha tail=""
  grep -q '^ No Errors' "$rd/out" "$rd/err" 2>/dev/null && ne=true
  [ "$rc" = 0 ] && [ "$ne" = true ] && pass=true
  nrep=$(find "$rd/cwd" -maxdepth 1 -name 'guard-*.json' | wc -l)
  nnf=$(grep -l '"finalized":false' "$rd/cwd"/guard-*.json 2>/dev/null | wc -l)
  nif=$(find "$rd/cwd" -maxdepth 1 -name '.gpumpi-guard-init.*' | wc -l)
  gse=$(grep -ci 'gpumpi\|guard' "$rd/err")
  sha=$(sort "$rd/out" | sha1sum | cut -c1-12)
  # the tail of a failed run: only the program's lines, no launcher boilerplate
  [ "$pass" = true ] || tail=$(cat "$rd/out" "$rd/err" | grep -avE "$BOILER" | tail -n 8 | cut -c1-300)
  [ "$pass" = true ] || [ -n "$tail" ] || tail="(no program output)"
  jq -nc --arg mpi "$m" --arg dir "$d" --arg program "$p" --argjson np "$np" --arg args "$args" --arg mode "$mode" \
    --argjson trial "$trial" --argjson rc "$rc" --argjson noErrors "$ne" --argjson pass "$pass" --argjson secs "$secs" \
    --argjson timedOut "$to" --argjson guardReports "$nrep" --argjson guardNotFinalized "$nnf" --argjson guardStderr "$gse" \
    --argjson guardInitLeft "$nif" --arg outSha "$sha" --arg tail "$tail" \
    '{mpi:$mpi,dir:$dir,program:$program,np:$np,args:$args,mode:$mode,trial:$trial,rc:$rc,noErrors:$noErrors,pass:$pass,secs:$secs,timedOut:$timedOut,guardReports:$guardReports,guardNotFinalized:$guardNotFinalized,guardStderr:$guardStderr,guardInitLeft:$guardInitLeft,outSha:$outSha} + (if $tail == "" then {} else {tail:$tail} end)' >>"$JL"
  echo "$pass"
}

T0=$SECONDS
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
declare -A WALL_OF
for m in $MPIS; do
  command -v "$(mpicc_of "$m")" >/dev/null || { echo "peerSuite: no $(mpicc_of "$m"), $m skipped" >&2; continue; }
  [ -f "$(guard_of "$m")" ] || { echo "peerSuite: no guard library $(guard_of "$m"), $m skipped" >&2; continue; }
  t_m=$SECONDS
  echo "== $m: building $(wc -l <"$PLAN") programs" >&2
  build_mpi "$m" || continue
  sort -o "$WORK/build-$m.tsv" "$WORK/build-$m.tsv"
  echo "== $m: $(grep -c $'\tok$' "$WORK/build-$m.tsv") built; running" >&2
  while IFS=$'\t' read -r d p np args _strict _srcs _cpp; do
    grep -q "^$d"$'\t'"$p"$'\tok$' "$WORK/build-$m.tsv" || continue
    [ "$args" = - ] && args=
    for t in $(seq 1 "$TRIALS"); do
      a=$(run_one "$m" "$d" "$p" "$np" "$args" none "$t" </dev/null)
      b=$(run_one "$m" "$d" "$p" "$np" "$args" report "$t" </dev/null)
      printf '  %-7s %-34s none=%-5s report=%-5s\n' "$m" "$d/$p" "$a" "$b" >&2
    done
  done <"$PLAN"
  WALL_OF[$m]=$((SECONDS - t_m))
done
WALL=$((SECONDS - T0))

# ---- recheck: each program whose pass/fail differed, PEER_RECHECK more runs each way (flaky, or the guard?) ----
T1=$SECONDS
if [ "$RECHECK" -gt 0 ]; then
  jq -rs '[.[] | select(.trial <= '"$TRIALS"')] | group_by(.mpi + "\t" + .dir + "\t" + .program)
      | map(select((map(.pass) | unique | length) > 1)) | .[] | [.[0].mpi, .[0].dir, .[0].program, (.[0].np | tostring), .[0].args] | @tsv' "$JL" |
  while IFS=$'\t' read -r m d p np args; do
    for t in $(seq $((TRIALS + 1)) $((TRIALS + RECHECK))); do
      a=$(run_one "$m" "$d" "$p" "$np" "$args" none "$t" </dev/null)
      b=$(run_one "$m" "$d" "$p" "$np" "$args" report "$t" </dev/null)
      printf '  %-7s %-34s recheck %d: none=%-5s report=%-5s\n' "$m" "$d/$p" "$t" "$a" "$b" >&2
    done
  done
fi
WALL2=$((SECONDS - T1))

# ---- summary ----
{
  echo "peerSuite: MPICH test suite ($SRC${VER:+, MPICH $VER}), dirs: $DIRS; nprocs <= $MAXNP; timeout ${TMO}s per run; rechecks $RECHECK"
  echo "date $(date -u +%FT%TZ), host $(hostname), $(nproc) cores; wall: main pass ${WALL}s ($(for m in "${!WALL_OF[@]}"; do printf '%s %ss ' "$m" "${WALL_OF[$m]}"; done)incl. builds), rechecks ${WALL2}s"
  echo "guard mode: report (GPUMPI_GUARD=report, GPUMPI_GUARD_EVERY_RANK=1, fresh GPUMPI_GUARD_DIR per run)"
  echo "repo: $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?')$( [ -n "$(git -C "$REPO" status --porcelain -- native 2>/dev/null)" ] && echo ' (native/ has uncommitted changes)')"
  for m in $MPIS; do g=$(guard_of "$m"); [ -f "$g" ] && echo "guard $m: $g sha256 $(sha256sum "$g" | cut -c1-12), built $(date -u -r "$g" +%FT%TZ)"; done
  echo "load average: at start $LOAD0; at end $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "pass = exit code 0 and a ' No Errors' line; 'identical' = same pass/fail without and with the guard in the main pass"
  total=$(cut -f1,2 "$PLAN" "$SKIP" | sort -u | wc -l)
  for m in $MPIS; do
    [ -f "$WORK/build-$m.tsv" ] || continue
    echo
    echo "== $m ($( { mpirun.$m --version 2>/dev/null || true; } | grep -m1 -E 'OpenRTE|Version:' | tr -s ' '))"
    echo "programs in the testlists: $total; built: $(grep -c $'\tok$' "$WORK/build-$m.tsv")"
    echo "skipped by reason:"
    { cut -f3 "$SKIP"; grep -v $'\tok$' "$WORK/build-$m.tsv" | cut -f3 | sed 's/: .*//'; } | sort | uniq -c | sort -rn | sed 's/^/  /'
    ce=$(grep -v $'\tok$' "$WORK/build-$m.tsv" | grep 'does not compile' | awk -F'\t' '{ printf "%s/%s ", $1, $2 }')
    [ -n "$ce" ] && echo "  not compiled/linked: $ce"
    jq -rs --arg m "$m" --argjson tr "$TRIALS" '
      [.[] | select(.mpi == $m)] as $r
      | ($r | map(select(.trial == 1)) | group_by(.dir + "/" + .program)) as $g
      | ($g | map({p: (.[0].dir + "/" + .[0].program),
                   n: (map(select(.mode == "none")) | .[0]), g: (map(select(.mode == "report")) | .[0])})) as $pp
      | "programs run: \($pp | length); passed without guard: \($pp | map(select(.n.pass)) | length); passed with guard: \($pp | map(select(.g.pass)) | length); identical pass/fail: \($pp | map(select(.n.pass == .g.pass)) | length)",
        "timeouts: without guard \($pp | map(select(.n.timedOut)) | length), with guard \($pp | map(select(.g.timedOut)) | length); same sorted stdout both ways: \($pp | map(select(.n.outSha == .g.outSha)) | length)",
        "guard reports: runs with one per rank \($pp | map(select(.g.guardReports == .g.np)) | length)/\($pp | length); reports in runs without the guard: \($pp | map(.n.guardReports) | add // 0); guard/gpumpi lines on stderr with the guard: \($pp | map(.g.guardStderr) | add // 0)",
        "seconds: without guard \($pp | map(.n.secs) | add // 0 | floor), with guard \($pp | map(.g.secs) | add // 0 | floor)",
        ( $pp | map(select(.n.pass | not)) | if length > 0 then "failed WITHOUT the guard (suite/MPI, not the guard): " + (map("\(.p) (rc \(.n.rc)\(if .n.timedOut then ", timeout" else "" end); with guard: \(if .g.pass then "pass" else "fail rc \(.g.rc)" end))") | join("; ")) else "failed without the guard: none" end ),
        ( $pp | map(select(.n.pass != .g.pass)) | if length == 0 then "DIFFERENCES: none" else "DIFFERENCES (\(length)):",
          (.[] | . as $x | "  \($x.p): without guard rc \($x.n.rc) noErrors \($x.n.noErrors); with guard rc \($x.g.rc)\(if $x.g.timedOut then " (timeout)" else "" end) noErrors \($x.g.noErrors), guard reports \($x.g.guardReports)/\($x.g.np), guard init files left \($x.g.guardInitLeft)",
            ($r | map(select((.dir + "/" + .program) == $x.p and .trial > $tr)) | if length > 0 then
              "    rechecks: without guard \(map(select(.mode == "none" and .pass)) | length)/\(map(select(.mode == "none")) | length) pass (rc \(map(select(.mode == "none") | .rc) | map(tostring) | join(","))), with guard \(map(select(.mode == "report" and .pass)) | length)/\(map(select(.mode == "report")) | length) pass (rc \(map(select(.mode == "report") | .rc) | map(tostring) | join(",")))" else empty end),
            (if $x.n.pass | not then "    tail without guard: " + ($x.n.tail // "" | split("\n") | map(select(length > 0)) | .[-4:] | join(" | ")) else empty end),
            (if $x.g.pass | not then "    tail with guard: " + ($x.g.tail // "" | split("\n") | map(select(length > 0)) | .[-4:] | join(" | ")) else empty end)) end )
    ' "$JL"
  done
} | tee "$SUM"
