#!/usr/bin/env bash
# Builds and runs the RNN benchmark of issue 4 (C++ peers only for now): graphi's fused LSTM and
# GRU (linear-before-reset) sequence ops against oneDNN 2.6's lstm_forward / lbr_gru_forward at
# the DeepCPU Table 1 configurations, 1 and 2 threads, two interleaved rounds, medians, and the
# max abs difference between the two outputs per row. Table to stdout and
# $BUILD_DIR/bench/rnn.txt, CSV to $BUILD_DIR/bench/rnn.csv.
#
#   scripts/bench_rnn.sh            # default set (about 1-2 minutes on 2 cores)
#   scripts/bench_rnn.sh --full     # also hidden 1024 at batch 10 and 20 (several minutes more)
#   scripts/bench_rnn.sh --threads 2 --cells gru    # other options go to graphi_bench_rnn
#   GRAPHI_BUILD_DIR=build-x scripts/bench_rnn.sh
#
# Other load on the machine (a build, a test run) distorts every number: the binary prints the
# load average before and after.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${GRAPHI_BUILD_DIR:-build}

cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release > "$BUILD_DIR.configure.log" 2>&1 \
  || { cat "$BUILD_DIR.configure.log"; exit 1; }
cmake --build "$BUILD_DIR" --target graphi_bench_rnn -j2
mkdir -p "$BUILD_DIR/bench"
"$BUILD_DIR/benchmarks/graphi_bench_rnn" --csv "$BUILD_DIR/bench/rnn.csv" "$@" | tee "$BUILD_DIR/bench/rnn.txt"
