#!/usr/bin/env bash
# What tracing costs (issue 10; numbers in benchmarks/README.md "Tracing overhead"):
#  1. off: BASE_BUILD (a build of the commit before tracing, e.g. main) against this tree's
#     build (tracing compiled in, off), R interleaved rounds of the quick engine benchmarks
#     (bench_engine.sh --quick's arguments, graphi competitors only); prints, per case, the
#     median over rounds of each run's median and the median of the per-round ratios;
#  2. on: graphi_bench_dispatch --trace on the LSTM-shaped DAG with ~1 us ops (traced twins in
#     the same rounds; goal row "tracing on <= 1.05 x off").
#
#   BASE_BUILD=/tmp/base/build scripts/bench_trace_overhead.sh [R]      (default R = 6)
# A base build: git archive main | tar -x -C /tmp/base && cmake -S /tmp/base -B /tmp/base/build
#   -DCMAKE_BUILD_TYPE=Release && cmake --build /tmp/base/build --target graphi_bench_dispatch graphi_bench_lstm
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${GRAPHI_BUILD_DIR:-build}
R=${1:-6}
: "${BASE_BUILD:?set BASE_BUILD to the build directory of the commit to compare against}"
OUT="$BUILD_DIR/bench/trace_overhead"
mkdir -p "$OUT"
echo "bench_trace_overhead: load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$R"); do
  for v in base trace; do
    if [ $v = base ]; then B=$BASE_BUILD; else B=$BUILD_DIR; fi
    "$B/benchmarks/graphi_bench_dispatch" --work 0,1000 --repeats 9 --only graphi --csv "$OUT/dispatch_${v}_$r.csv" > "$OUT/dispatch_${v}_$r.txt" 2>&1
    "$B/benchmarks/graphi_bench_lstm" --repeats 7 --csv "$OUT/lstm_${v}_$r.csv" > "$OUT/lstm_${v}_$r.txt" 2>&1
  done
  echo "round $r of $R done, load average $(cut -d' ' -f1-3 /proc/loadavg)"
done
/usr/bin/python3 - "$OUT" <<'PY'
import csv, glob, statistics, sys
D = sys.argv[1]
def load(kind, v, keyf, valf):
    files = [f for f in glob.glob("%s/%s_%s_*.csv" % (D, kind, v)) if "goals" not in f]
    runs = []
    for f in sorted(files, key=lambda p: int(p.rsplit("_", 1)[1][:-4])):
        with open(f) as fh:
            runs.append({keyf(r): float(valf(r)) for r in csv.DictReader(fh)})
    return runs
def report(kind, keyf, valf, unit):
    base, tr = load(kind, "base", keyf, valf), load(kind, "trace", keyf, valf)
    n = min(len(base), len(tr))
    print("== %s: %d interleaved rounds, median over rounds of each run's median %s ==" % (kind, n, unit))
    print("%-58s %10s %10s %7s %7s" % ("case", "base", "trace-off", "ratio", "paired"))
    ratios = []
    for k in base[0]:
        b = [r[k] for r in base[:n] if k in r]
        t = [r[k] for r in tr[:n] if k in r]
        if not b or not t or statistics.median(b) == 0:
            continue
        paired = statistics.median([x / y for x, y in zip(t, b) if y > 0])
        ratios.append(paired)
        print("%-58s %10.1f %10.1f %7.3f %7.3f" % (" ".join(k), statistics.median(b), statistics.median(t),
                                                  statistics.median(t) / statistics.median(b), paired))
    print("median of the paired ratios over all cases: %.3f (min %.3f, max %.3f)" %
          (statistics.median(ratios), min(ratios), max(ratios)))
report("dispatch", lambda r: (r["shape"], r["work_ns"] + "ns", r["competitor"], r["config"]),
       lambda r: r["median_ns_per_op"], "ns/op")
report("lstm", lambda r: (r["policy"], r["config"]), lambda r: r["median_ms"], "ms")
PY
"$BUILD_DIR/benchmarks/graphi_bench_dispatch" --shapes lstm --work 1000 --repeats 21 \
  --only "graphi cpf,graphi sequential" --trace --csv "$OUT/trace_on.csv" | tee "$OUT/trace_on.txt"
echo "bench_trace_overhead: load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
