#!/usr/bin/env bash
# Builds and runs the RNN benchmark of issue 4: graphi's fused LSTM and GRU (linear-before-reset)
# sequence ops against oneDNN 2.6 (lstm_forward / lbr_gru_forward, same process), ONNX Runtime
# (its Python package from PyPI, in the benchmarks' venv; models exported from PyTorch) and
# PyTorch (Debian's nn.LSTM / nn.GRU on OpenBLAS) at the DeepCPU Table 1 configurations, all peers in one run, interleaved, two rounds,
# medians, GFLOP/s, % of the roofline bound measured on this machine, the WCS-shuffled op, and
# every peer's max abs difference to graphi's output (same weights everywhere).
# Table to stdout and $BUILD_DIR/bench/rnn.txt, CSV to $BUILD_DIR/bench/rnn.csv.
#
#   scripts/bench_rnn.sh              # threads 2 and 1 (about 5 minutes on 2 cores)
#   scripts/bench_rnn.sh --quick      # smoke run: hidden 64 and 256, batch 1, 2 threads (~1 min)
#   scripts/bench_rnn.sh --full       # also hidden 1024 at batch 10 and 20, longer budgets (~10 min)
#   scripts/bench_rnn.sh --boost      # everything at top priority (root; see bench_engine.sh)
#   scripts/bench_rnn.sh --threads 2 --cells lstm --hidden 256 --batch 1   # other options: run_all.py
#   scripts/bench_rnn.sh --cpp-only --threads 2 --hidden 256      # graphi vs oneDNN only
#   GRAPHI_BUILD_DIR=build-x scripts/bench_rnn.sh
#
# Set-up it does itself: builds graphi_bench_rnn, creates or updates the benchmarks' virtual
# environment ($GRAPHI_VENV, default .venv: scripts/bench_venv.sh, onnxruntime pinned in
# scripts/requirements-bench.txt; a no-op when it is current), checks that /usr/bin/python3
# imports torch and which BLAS libblas.so.3 points to. Debian packages come from
# `scripts/setup.sh bench`. A peer that is unavailable is named in the table, never dropped.
# Other load on the machine (a build, a test run) distorts every number: use --boost, and look
# at the load average printed before and after.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${GRAPHI_BUILD_DIR:-build}
BOOST=0
CPP_ONLY=0
ARGS=()
for a in "$@"; do
  case "$a" in
    --boost) BOOST=1 ;;
    --cpp-only) CPP_ONLY=1 ;;
    *) ARGS+=("$a") ;;
  esac
done

source scripts/bench_common.sh

bench_build graphi_bench_rnn graphi_l3_probe graphi_overlap_probe
mkdir -p "$BUILD_DIR/bench"

if [ "$CPP_ONLY" = 1 ]; then
  bench_run "$BUILD_DIR/benchmarks/graphi_bench_rnn" --csv "$BUILD_DIR/bench/rnn_cpp.csv" "${ARGS[@]}" \
    | tee "$BUILD_DIR/bench/rnn_cpp.txt"
  exit "${PIPESTATUS[0]}"
fi

# ONNX Runtime peer: onnxruntime from PyPI in the benchmarks' venv (run_all.py --venv).
VENV=${GRAPHI_VENV:-.venv}
PEERS=benchmarks/rnn/peers
GRAPHI_VENV=$VENV ./scripts/bench_venv.sh \
  || echo "bench_rnn: scripts/bench_venv.sh failed: the ONNX Runtime peer will be reported unavailable" >&2

# PyTorch peer: Debian's python3-torch on whatever libblas.so.3 points to (OpenBLAS wanted).
if ! /usr/bin/python3 -c "import torch" 2> /dev/null; then
  echo "bench_rnn: /usr/bin/python3 cannot import torch (apt-get install python3-torch" \
       "libopenblas0-pthread): the PyTorch peer will be reported unavailable and ORT runs a model" \
       "built with the onnx package" >&2
fi
BLAS=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2> /dev/null || echo "not found")
echo "bench_rnn: libblas.so.3 -> $BLAS"
case "$BLAS" in
  *openblas*) ;;
  *) echo "bench_rnn: warning: libblas.so.3 is not OpenBLAS (apt-get install libopenblas0-pthread);" \
          "PyTorch's RNNs run ~10x slower on the reference BLAS" >&2 ;;
esac

bench_run /usr/bin/python3 "$PEERS/run_all.py" --build-dir "$BUILD_DIR" --venv "$VENV" "${ARGS[@]}"
