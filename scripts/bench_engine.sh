#!/usr/bin/env bash
# Builds and runs the engine benchmarks of issue 3: dispatch overhead and scheduling quality of
# graphi's policies against oneTBB (graphi_bench_dispatch), and the LSTM makespan per policy and
# configuration (graphi_bench_lstm). Tables go to stdout and $BUILD_DIR/bench/*.txt, CSVs to
# $BUILD_DIR/bench/*.csv.
#
#   scripts/bench_engine.sh                 # everything (about 5 minutes on 2 cores)
#   scripts/bench_engine.sh --quick         # fewer samples, empty and 1 us ops only
#   GRAPHI_BUILD_DIR=build-x scripts/bench_engine.sh
#
# Other load on the machine (a build, a test run) distorts every number: the script prints the
# load average before and after, and the binaries print it too.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${GRAPHI_BUILD_DIR:-build}
QUICK=0
for a in "$@"; do
  case "$a" in
    --quick) QUICK=1 ;;
    *) echo "bench_engine.sh: unknown option '$a' (use --quick)" >&2; exit 2 ;;
  esac
done

cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release > "$BUILD_DIR.configure.log" 2>&1 \
  || { cat "$BUILD_DIR.configure.log"; exit 1; }
cmake --build "$BUILD_DIR" --target graphi_bench_dispatch graphi_bench_lstm -j "$(nproc)"

OUT="$BUILD_DIR/bench"
mkdir -p "$OUT"
echo "bench_engine: load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$QUICK" = 1 ]; then
  DISPATCH_ARGS=(--work 0,1000 --repeats 9)
  LSTM_ARGS=(--repeats 7)
else
  DISPATCH_ARGS=()
  LSTM_ARGS=()
fi
"$BUILD_DIR/benchmarks/graphi_bench_dispatch" --csv "$OUT/dispatch.csv" "${DISPATCH_ARGS[@]}" | tee "$OUT/dispatch.txt"
echo
"$BUILD_DIR/benchmarks/graphi_bench_lstm" --csv "$OUT/lstm_makespan.csv" "${LSTM_ARGS[@]}" | tee "$OUT/lstm_makespan.txt"
echo "bench_engine: load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "bench_engine: results in $OUT/"
