#!/usr/bin/env bash
# Builds and runs one libFuzzer target of tests/fuzz (docs/FUZZING.md).
#   scripts/fuzz.sh TARGET [--seconds N] [--jobs J] [-- LIBFUZZER_ARGS...]
#   scripts/fuzz.sh TARGET --merge [--max-kb K]   minimize the working corpus into
#                                       tests/fuzz/corpus/TARGET (at most K KiB, default 300)
#   scripts/fuzz.sh --seeds             (re)make the .graphi/.json seeds from tests/data models
#   scripts/fuzz.sh --stats             CPU time, executions and coverage summed per target
#   scripts/fuzz.sh --rotate SECONDS [--goal CPU_S]   one target at a time for SECONDS in all, in
#                                       runs of <= 600 s, each run the target with the least CPU
#                                       time so far (skipping targets with open findings or at
#                                       the goal, default 1800 CPU-s = the issue's 30 CPU-minutes)
# TARGET: onnx, graphi, npy or compile. The fuzz build lives in ./build-fuzz (or
# $GRAPHI_FUZZ_BUILD_DIR): clang-14, -fsanitize=fuzzer-no-link,address,undefined, ccache, built
# under `nice -n 19`; the fuzzer runs at normal priority (GRAPHI_FUZZ_NICE=19: lowest). The
# working corpus (build-fuzz/corpus/TARGET) grows across runs; findings land in
# build-fuzz/findings/TARGET/ (crash-*, leak-*, oom-*, timeout-*): fix them and copy each into
# tests/fuzz/regressions/TARGET/, which the ctest fuzz/replay_TARGET replays in the normal build.
# Each run appends one line to build-fuzz/fuzz_stats.tsv.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${GRAPHI_FUZZ_BUILD_DIR:-build-fuzz}
CMAKE=${GRAPHI_CMAKE:-/usr/bin/cmake}
TARGETS="onnx graphi npy compile"

die() { echo "fuzz.sh: $*" >&2; exit 2; }

make_seeds() {
  # .graphi seeds need the normal build's seed maker (gcc build, ./build).
  local maker=${GRAPHI_BUILD_DIR:-build}/tests/fuzz/graphi_fuzz_make_seeds
  [ -x "$maker" ] || die "build the seed maker first: /usr/bin/cmake --build build --target graphi_fuzz_make_seeds"
  local out=$BUILD/seeds
  rm -rf "$out/graphi" "$out/compile" "$out/onnx" "$out/npy"
  mkdir -p "$out/onnx" "$out/npy" "$out/graphi" "$out/compile"
  find tests/data -name '*.onnx' -size -64k -exec cp {} "$out/onnx/" \;
  find tests/data -name '*.npy' -size -4k | sort | awk 'NR <= 200' | xargs -I{} cp {} "$out/npy/"
  find tests/data -name '*.onnx' -size -256k -print0 | xargs -0 "$maker" "$out/graphi" "$out/compile"
  local g=${GRAPHI_BUILD_DIR:-build}/graphi tmp
  tmp=$(mktemp -d)
  "$g" model lstm --input 3 --hidden 4 --layers 2 --batch 2 --seq 3 -o "$tmp/lstm.graphi" > /dev/null
  "$g" model gru --input 3 --hidden 4 --seq 2 --linear-before-reset -o "$tmp/gru.graphi" > /dev/null
  "$g" model phased-lstm --input 3 --hidden 4 --seq 2 -o "$tmp/plstm.graphi" > /dev/null
  "$maker" "$out/graphi" "$out/compile" "$tmp"/*.graphi
  rm -rf "$tmp"
  for t in $TARGETS; do echo "seeds/$t: $(ls "$out/$t" | wc -l) files"; done
}

configure_build() {
  local target=$1
  # -O1: ASan's usual level; on a shared 2-core machine it also compiles much faster than -O3.
  # GRAPHI_FUZZ_FULL=1 instruments the whole tree; by default only graph/ (loaders, validation,
  # passes) is rebuilt with clang and instrumented, and ops/ and engine/ are linked from the
  # normal build (./build, which must be built from the same sources): a third of the compile
  # work, which matters on a shared 2-core machine. Then coverage and ASan checks cover graph/
  # only; ops/ and engine/ still run (compile, tiny runs) and can crash, but are not checked
  # for out-of-bounds accesses.
  local prebuilt=()
  if [ "${GRAPHI_FUZZ_FULL:-0}" != 1 ]; then
    local main_build
    main_build=$(cd "${GRAPHI_BUILD_DIR:-build}" && pwd)
    [ -f "$main_build/libgraphi_engine.a" ] || die "build ./build first (scripts/build.sh), or set GRAPHI_FUZZ_FULL=1"
    prebuilt=(-DGRAPHI_FUZZ_PREBUILT="$main_build")
    nice -n 19 "$CMAKE" --build "$main_build" -j "$(nproc)" --target graphi_engine > /dev/null
  fi
  local args=("${prebuilt[@]}" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG"
              "-DCMAKE_C_FLAGS_RELEASE=-O1 -DNDEBUG" -DGRAPHI_FUZZ=ON -DGRAPHI_BUILD_TESTS=OFF
              -DGRAPHI_BUILD_BENCHMARKS=OFF -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14
              -DPython_EXECUTABLE=/usr/bin/python3)
  if command -v ccache > /dev/null; then
    export CCACHE_BASEDIR=$ROOT
    args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  fi
  mkdir -p "$BUILD"
  if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    "$CMAKE" -S . -B "$BUILD" "${args[@]}" > "$BUILD/configure.log" 2>&1 \
      || { cat "$BUILD/configure.log" >&2; exit 1; }
  fi
  nice -n 19 "$CMAKE" --build "$BUILD" -j "$(nproc)" --target "graphi_fuzz_$target"
}

stats() {
  local f=$BUILD/fuzz_stats.tsv
  [ -f "$f" ] || die "no runs recorded yet ($f)"
  # date target wall_s cpu_s execs cov ft corpus findings
  # findings: the findings directory's size after the run (cumulative), so the maximum.
  awk -F'\t' 'NR > 1 { cpu[$2] += $4; ex[$2] += $5; runs[$2]++; if ($6 > cov[$2]) cov[$2] = $6;
                        if ($7 > ft[$2]) ft[$2] = $7; if ($9 > fnd[$2]) fnd[$2] = $9 }
              END { printf "%-8s %5s %9s %12s %6s %6s %8s\n", "target", "runs", "cpu_min", "execs", "cov", "ft", "findings";
                    for (t in cpu) printf "%-8s %5d %9.1f %12d %6d %6d %8d\n", t, runs[t], cpu[t] / 60, ex[t], cov[t], ft[t], fnd[t] }' "$f"
}

# --rotate: the target with the least CPU time in the stats file, among those without open
# findings and under the goal; empty when none is left.
next_target() {
  local goal=$1 best="" bestc="" t c
  for t in $TARGETS; do
    [ -n "$(ls "$BUILD/findings/$t" 2>/dev/null)" ] && continue
    c=$(awk -F'\t' -v t="$t" 'NR > 1 && $2 == t { s += $4 } END { print s + 0 }' \
        "$BUILD/fuzz_stats.tsv" 2>/dev/null || echo 0)
    [ "$c" -ge "$goal" ] && continue
    if [ -z "$best" ] || [ "$c" -lt "$bestc" ]; then best=$t bestc=$c; fi
  done
  echo "$best"
}

rotate() {
  local total=$1 goal=1800 end t left
  [ "${2:-}" = --goal ] && goal=$3
  end=$(( $(date +%s) + total ))
  [ "${GRAPHI_FUZZ_NO_BUILD:-0}" = 1 ] || for t in $TARGETS; do configure_build "$t"; done
  while left=$(( end - $(date +%s) )); [ "$left" -ge 30 ]; do
    t=$(next_target "$goal")
    [ -n "$t" ] || { echo "fuzz.sh: every target has $goal CPU-s or an open finding"; break; }
    GRAPHI_FUZZ_NO_BUILD=1 "$0" "$t" --seconds $(( left < 600 ? left : 600 )) \
      || echo "fuzz.sh: $t stopped with a finding (build-fuzz/findings/$t): fix it, then go on"
  done
  stats
}

case "${1:-}" in
  ""|-h|--help) sed -n 2,18p "$0"; exit 0 ;;
  --seeds) make_seeds; exit 0 ;;
  --stats) stats; exit 0 ;;
  --rotate) shift; [ $# -ge 1 ] || die "--rotate needs SECONDS"; rotate "$@"; exit 0 ;;
esac
TARGET=$1; shift
case " $TARGETS " in *" $TARGET "*) ;; *) die "unknown target '$TARGET' (known: $TARGETS)" ;; esac
SECONDS_TO_RUN=60 JOBS=1 MERGE=0 MAX_KB=300 EXTRA=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) SECONDS_TO_RUN=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --merge) MERGE=1; shift ;;
    --max-kb) MAX_KB=$2; shift 2 ;;
    --) shift; EXTRA=("$@"); break ;;
    *) die "unknown option '$1'" ;;
  esac
done
# GRAPHI_FUZZ_NO_BUILD=1: the target is already built (several targets fuzzed at once must not
# run make in one build directory concurrently).
[ "${GRAPHI_FUZZ_NO_BUILD:-0}" = 1 ] || configure_build "$TARGET"
BIN=$BUILD/tests/fuzz/graphi_fuzz_$TARGET
WORK=$BUILD/corpus/$TARGET FIND=$BUILD/findings/$TARGET
COMMITTED=tests/fuzz/corpus/$TARGET
mkdir -p "$WORK" "$FIND" "$COMMITTED" "$BUILD/logs"
DICT=()
DICT_NAME=$TARGET
[ "$TARGET" = graphi ] && DICT_NAME=compile  # the same JSON schema and op names
[ -f "tests/fuzz/$DICT_NAME.dict" ] && DICT=(-dict="tests/fuzz/$DICT_NAME.dict")
# Limits: an input that needs > 1 GiB in one allocation or > 2 GiB in all, or > 10 s, is a finding.
LIMITS=(-rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=10)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export OMP_NUM_THREADS=1
# The fuzzer's own priority: 0 by default (one libFuzzer process at a time, builds run under
# nice -n 10); GRAPHI_FUZZ_NICE=19 when it must yield to everything else.
NICE=${GRAPHI_FUZZ_NICE:-0}

if [ $MERGE = 1 ]; then
  # Minimize: the smallest set of inputs (from the committed corpus, the working corpus and the
  # seeds) that keeps all the coverage, written over the committed corpus.
  NEW=$(mktemp -d)
  SEEDS=()
  [ -d "$BUILD/seeds/$TARGET" ] && SEEDS=("$BUILD/seeds/$TARGET")
  # libFuzzer's merge tries the smallest inputs first, so most of what it keeps is small; then
  # the kept files are taken smallest first up to MAX_KB (the repository must stay small; the
  # working corpus keeps everything for fuzzing).
  nice -n 19 "$BIN" -merge=1 "${LIMITS[@]}" "$NEW" "$COMMITTED" "$WORK" "${SEEDS[@]}" \
    2>&1 | grep -E '^MERGE-OUTER: [0-9]+ new files' || true
  rm -rf "$COMMITTED"; mkdir -p "$COMMITTED"
  find "$NEW" -type f -printf '%s %p\n' | sort -n | awk -v max=$((MAX_KB * 1024)) \
    '{ if (sum + $1 > max) { dropped++; next } sum += $1; print $2 }
     END { if (dropped) printf "dropped %d inputs over the %d KiB budget\n", dropped, max / 1024 > "/dev/stderr" }' \
    | xargs -r cp -t "$COMMITTED/"
  rm -rf "$NEW"
  echo "$COMMITTED: $(ls "$COMMITTED" | wc -l) files, $(cat "$COMMITTED"/* | wc -c) bytes"
  # Coverage of what is committed (what the replay ctest runs).
  nice -n 19 "$BIN" -runs=0 "${LIMITS[@]}" "$COMMITTED" 2>&1 | grep -m1 -E 'INITED' || true
  exit 0
fi

LOG=$BUILD/logs/$TARGET-$(date -u +%Y%m%dT%H%M%S).log
SEEDS=("$COMMITTED")
[ -d "$BUILD/seeds/$TARGET" ] && SEEDS+=("$BUILD/seeds/$TARGET")
echo "fuzzing $TARGET for $SECONDS_TO_RUN s (log: $LOG)"
START=$(date +%s)
set +e
# -fork=J with J>1 runs J child processes; findings do not stop the run (-ignore_crashes=1).
FORK=()
[ "$JOBS" -gt 1 ] && FORK=(-fork="$JOBS" -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1)
/usr/bin/time -f '%U %S' -o "$LOG.time" nice -n "$NICE" "$BIN" "$WORK" "${SEEDS[@]}" "${DICT[@]}" "${LIMITS[@]}" \
  "${FORK[@]}" -max_total_time="$SECONDS_TO_RUN" -print_final_stats=1 -artifact_prefix="$FIND/" \
  "${EXTRA[@]}" > "$LOG" 2>&1
RC=$?
set -e
WALL=$(( $(date +%s) - START ))
# CPU = user + sys from the rusage /usr/bin/time reports on its last line (a non-zero exit adds a
# "Command exited with non-zero status N" line before it, which must not be summed).
CPU=$(tail -n 1 "$LOG.time" 2>/dev/null | awk '{ printf "%.0f", $1 + $2 }')
CPU=${CPU:-0}
EXECS=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$LOG" | awk '{ s += $2 } END { print s + 0 }')
LAST=$(grep -E '^#[0-9]+' "$LOG" | tail -1 || true)
COV=$(echo "$LAST" | grep -o 'cov: [0-9]*' | awk '{ print $2 + 0 }')
FT=$(echo "$LAST" | grep -o 'ft: [0-9]*' | awk '{ print $2 + 0 }')
# -fork mode reports its own totals ("#N ... cov: C ft: F corp: ...") on its status lines.
if [ "$EXECS" = 0 ]; then EXECS=$(echo "$LAST" | grep -o '^#[0-9]*' | tr -d '#'); fi
CORP=$(ls "$WORK" | wc -l)
FOUND=$(ls "$FIND" | wc -l)
STATS=$BUILD/fuzz_stats.tsv
[ -f "$STATS" ] || printf 'date\ttarget\twall_s\tcpu_s\texecs\tcov\tft\tcorpus\tfindings\n' > "$STATS"
printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$TARGET" "$WALL" "$CPU" \
  "${EXECS:-0}" "${COV:-0}" "${FT:-0}" "$CORP" "$FOUND" >> "$STATS"
echo "$TARGET: exit $RC, ${WALL}s wall, ${CPU}s CPU, ${EXECS:-0} executions, cov ${COV:-0}, ft ${FT:-0}, corpus $CORP, findings so far $FOUND ($FIND)"
grep -m3 -E 'FUZZ FINDING|ERROR: AddressSanitizer|runtime error|ERROR: libFuzzer' "$LOG" || true
exit $RC
