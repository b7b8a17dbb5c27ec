#!/usr/bin/env bash
# bf16 RNN weights (issue 17): graphi fp32 / bf16 weights against oneDNN 2.6's fp32 / bf16
# lstm_forward (graphi_bench_rnn --bf16, same process, interleaved sample by sample) and ONNX
# Runtime's fp32 LSTM (its own process, benchmarks/rnn/peers/ort_fp32_lstm_time.py), alternating
# one round of each ROUNDS times; prints every round and the medians of the round medians.
#
#   scripts/bench_rnn_bf16.sh [--hidden 1024] [--batch 1] [--threads 2] [--rounds 5] [--cell lstm]
#
# The machine is usually shared: look at the load average printed by each round.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${GRAPHI_BUILD_DIR:-build}
VENV=${GRAPHI_VENV:-.venv}
HIDDEN=1024 BATCH=1 THREADS=2 ROUNDS=5 CELL=lstm BUDGET=1500
while [ $# -gt 0 ]; do
  case "$1" in
    --hidden) HIDDEN=$2; shift 2 ;;
    --batch) BATCH=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --cell) CELL=$2; shift 2 ;;
    --budget-ms) BUDGET=$2; shift 2 ;;
    *) echo "bench_rnn_bf16: unknown option $1" >&2; exit 2 ;;
  esac
done
/usr/bin/cmake --build "$BUILD_DIR" -j2 --target graphi_bench_rnn > /dev/null
OUT="$BUILD_DIR/bench/rnn_bf16"
mkdir -p "$OUT"
: > "$OUT/rounds.txt"
for r in $(seq 1 "$ROUNDS"); do
  "$BUILD_DIR/benchmarks/graphi_bench_rnn" --bf16 --rounds 1 --cells "$CELL" --hidden "$HIDDEN" \
    --batch "$BATCH" --seq 100 --threads "$THREADS" --budget-ms "$BUDGET" \
    --csv "$OUT/cpp_round$r.csv" | tee -a "$OUT/rounds.txt"
  "$VENV/bin/python" benchmarks/rnn/peers/ort_fp32_lstm_time.py --cell "$CELL" --hidden "$HIDDEN" \
    --batch "$BATCH" --seq 100 --threads "$THREADS" --budget-ms "$BUDGET" > "$OUT/ort_round$r.json"
  echo "round $r: ONNX Runtime fp32 median $(/usr/bin/python3 -c "import json,sys; print('%.3f ms' % json.load(open(sys.argv[1]))['median_ms'])" "$OUT/ort_round$r.json")" | tee -a "$OUT/rounds.txt"
done
/usr/bin/python3 - "$OUT" "$ROUNDS" <<'PY'
import csv, json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
cols = ["graphi_fp32_ms", "graphi_bf16_ms", "onednn_fp32_ms", "onednn_bf16_ms"]
per = {c: [] for c in cols + ["ort_fp32_ms"]}
err = None
for r in range(1, rounds + 1):
    row = next(csv.DictReader(open(f"{out}/cpp_round{r}.csv")))
    for c in cols:
        per[c].append(float(row[c]))
    per["ort_fp32_ms"].append(json.load(open(f"{out}/ort_round{r}.json"))["median_ms"])
    err = row
med = {c: statistics.median(v) for c, v in per.items()}
print("\nmedians of %d round medians (ms):" % rounds)
for c, v in med.items():
    print("  %-16s %8.3f   rounds: %s" % (c, v, " ".join("%.3f" % x for x in per[c])))
best_fp32 = min(med["graphi_fp32_ms"], med["onednn_fp32_ms"], med["ort_fp32_ms"])
peer_fp32 = min(med["onednn_fp32_ms"], med["ort_fp32_ms"])
g = med["graphi_bf16_ms"]
print("graphi bf16 vs oneDNN bf16:        %.2fx" % (med["onednn_bf16_ms"] / g))
print("graphi bf16 vs best fp32 peer:     %.2fx (oneDNN / ORT fp32, %.3f ms)" % (peer_fp32 / g, peer_fp32))
print("graphi bf16 vs best fp32 overall:  %.2fx (incl. graphi fp32)" % (best_fp32 / g))
print("accuracy vs graphi fp32 Y: graphi bf16 max %s mean %s; oneDNN bf16 max %s mean %s" % (
    err["graphi_bf16_max_abs_err"], err["graphi_bf16_mean_abs_err"],
    err["onednn_bf16_max_abs_err"], err["onednn_bf16_mean_abs_err"]))
PY
