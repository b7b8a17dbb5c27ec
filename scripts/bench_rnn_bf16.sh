#!/usr/bin/env bash
# Reduced-precision RNN weights (issue 17): graphi fp32 / bf16 / int8 weights against oneDNN
# 2.6's fp32 / bf16 / int8 lstm_forward (graphi_bench_rnn --bf16, same process, interleaved
# sample by sample), ONNX Runtime's fp32 LSTM and its int8 DynamicQuantizeLSTM (one process per
# row, the two in turns of a tenth of the budget; benchmarks/rnn/peers/ort_lowp_lstm_time.py, on
# the weights and input the C++ bench dumps), alternating one round of each ROUNDS times; prints every round and, per
# row, the medians of the round medians, the goal ratios and the accuracy against graphi fp32.
#
#   scripts/bench_rnn_bf16.sh --quick     # LSTM h256 and h1024, b1, T100, 2 threads, 5 rounds
#   scripts/bench_rnn_bf16.sh [--hidden 256,1024] [--batch 1] [--threads 2] [--rounds 5]
#                             [--cell lstm|gru] [--budget-ms 1500]
#
# GRU rows have no int8 peers (oneDNN 2.6 and ONNX Runtime have no int8 GRU); ORT fp32 then comes
# from benchmarks/rnn/peers/ort_fp32_lstm_time.py. The machine is usually shared: look at the
# load average printed by each round.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${GRAPHI_BUILD_DIR:-build}
VENV=${GRAPHI_VENV:-.venv}
HIDDEN=1024 BATCH=1 THREADS=2 ROUNDS=5 CELL=lstm BUDGET=1500
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) HIDDEN=256,1024; BATCH=1; THREADS=2; ROUNDS=5; CELL=lstm; BUDGET=1500; shift ;;
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
rm -rf "$OUT"
mkdir -p "$OUT"
: > "$OUT/rounds.txt"
for r in $(seq 1 "$ROUNDS"); do
  "$BUILD_DIR/benchmarks/graphi_bench_rnn" --bf16 --rounds 1 --cells "$CELL" --hidden "$HIDDEN" \
    --batch "$BATCH" --seq 100 --threads "$THREADS" --budget-ms "$BUDGET" \
    --dump "$OUT/dump" --csv "$OUT/cpp_round$r.csv" | tee -a "$OUT/rounds.txt"
  for h in ${HIDDEN//,/ }; do
    if [ "$CELL" = lstm ]; then
      "$VENV/bin/python" benchmarks/rnn/peers/ort_lowp_lstm_time.py \
        --dump "$OUT/dump/lstm_h${h}_b${BATCH}_s100" --threads "$THREADS" --budget-ms "$BUDGET" \
        > "$OUT/ort_h${h}_round$r.json"
    else
      "$VENV/bin/python" benchmarks/rnn/peers/ort_fp32_lstm_time.py --cell "$CELL" --hidden "$h" \
        --batch "$BATCH" --seq 100 --threads "$THREADS" --budget-ms "$BUDGET" \
        > "$OUT/ort_h${h}_round$r.json"
    fi
    /usr/bin/python3 - "$OUT/ort_h${h}_round$r.json" "$h" "$r" <<'PY' | tee -a "$OUT/rounds.txt"
import json, sys
j = json.load(open(sys.argv[1]))
dq = " DynamicQuantizeLSTM %.3f ms" % j["ort_dq_median_ms"] if "ort_dq_median_ms" in j else ""
print("round %s h%s: ONNX Runtime %s fp32 %.3f ms%s" % (
    sys.argv[3], sys.argv[2], j["ort"], j.get("ort_fp32_median_ms", j.get("median_ms")), dq))
PY
  done
done
/usr/bin/python3 - "$OUT" "$ROUNDS" "$HIDDEN" <<'PY'
import csv, json, statistics, sys
out, rounds, hiddens = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")
cols = ["graphi_fp32_ms", "graphi_bf16_ms", "graphi_int8_ms", "onednn_fp32_ms", "onednn_bf16_ms",
        "onednn_int8_ms"]
nan = float("nan")
summary = []
for h in hiddens:
    per = {c: [] for c in cols + ["ort_fp32_ms", "ort_dq_ms"]}
    row = ort = None
    for r in range(1, rounds + 1):
        row = next(x for x in csv.DictReader(open(f"{out}/cpp_round{r}.csv")) if x["hidden"] == h)
        for c in cols:
            per[c].append(float(row[c]))
        ort = json.load(open(f"{out}/ort_h{h}_round{r}.json"))
        per["ort_fp32_ms"].append(ort.get("ort_fp32_median_ms", ort.get("median_ms")))
        per["ort_dq_ms"].append(ort.get("ort_dq_median_ms", nan))
    med = {c: statistics.median(v) for c, v in per.items()}
    print("\n%s h%s b%s T%s, %s threads: medians of %d round medians (ms)" % (
        row["cell"], h, row["batch"], row["seq"], row["threads"], rounds))
    for c, v in med.items():
        print("  %-16s %9.3f   rounds: %s" % (c, v, " ".join("%.3f" % x for x in per[c])))
    peer32 = min(med["onednn_fp32_ms"], med["ort_fp32_ms"])
    b16, i8 = med["graphi_bf16_ms"], med["graphi_int8_ms"]
    ratios = [
        ("graphi bf16 vs oneDNN bf16", med["onednn_bf16_ms"] / b16, 1.3),
        ("graphi bf16 vs best fp32 peer", peer32 / b16, 1.7),
        ("graphi int8 vs ORT DynamicQuantizeLSTM", med["ort_dq_ms"] / i8, 1.3),
        ("graphi int8 vs oneDNN int8", med["onednn_int8_ms"] / i8, None),
        ("graphi int8 vs best fp32 peer", peer32 / i8, None),
        ("graphi fp32 vs best fp32 peer", peer32 / med["graphi_fp32_ms"], None),
    ]
    for name, v, goal in ratios:
        g = "" if goal is None else ("   goal >= %.1fx: %s" % (goal, "met" if v >= goal else "NOT met"))
        print("  %-40s %6.2fx%s" % (name, v, g))
    print("  accuracy, |Y - graphi fp32 Y| over %s steps, max / mean:" % row["seq"])
    print("    graphi bf16  %s / %s     oneDNN bf16 %s / %s" % (
        row["graphi_bf16_max_abs_err"], row["graphi_bf16_mean_abs_err"],
        row["onednn_bf16_max_abs_err"], row["onednn_bf16_mean_abs_err"]))
    print("    graphi int8  %s / %s     oneDNN int8 %s / %s" % (
        row["graphi_int8_max_abs_err"], row["graphi_int8_mean_abs_err"],
        row["onednn_int8_max_abs_err"], row["onednn_int8_mean_abs_err"]))
    if "err_ort_dq" in ort:
        print("    ORT DynamicQuantizeLSTM %.3g / %.3g     (ORT fp32 %.3g / %.3g)" % (
            ort["err_ort_dq"]["max"], ort["err_ort_dq"]["mean"], ort["err_ort_fp32"]["max"],
            ort["err_ort_fp32"]["mean"]))
    summary.append((h, ratios))
print("\nsummary (ratio = peer time / graphi time, > 1: graphi faster):")
for h, ratios in summary:
    print("  h%-5s " % h + "  ".join("%s %.2fx" % (n.replace("graphi ", ""), v) for n, v, _ in ratios[:3]))
PY
