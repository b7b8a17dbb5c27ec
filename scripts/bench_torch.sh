#!/usr/bin/env bash
# The torch.compile backend "graphi" measured (benchmarks/torch/bench_torch_backend.py): per-call
# overhead against graphi.Session directly, and nn.LSTM h256 b1 T100 compiled against eager
# PyTorch 2 at 1 and 2 threads. Builds the Python package, makes/updates the venv (PyTorch 2.13
# from scripts/requirements-bench.txt), then runs under the venv's interpreter.
#   scripts/bench_torch.sh [--budget-ms MS] [--rounds N] [--boost]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${GRAPHI_BUILD_DIR:-build}
VENV=${GRAPHI_VENV:-.venv}
BOOST=0
ARGS=()
for a in "$@"; do
  case "$a" in
    --boost) BOOST=1 ;;
    *) ARGS+=("$a") ;;
  esac
done
source scripts/bench_common.sh
bench_build _graphi
GRAPHI_VENV=$VENV ./scripts/bench_venv.sh >&2
PYTHONPATH="$BUILD_DIR/python" bench_run "$VENV/bin/python" benchmarks/torch/bench_torch_backend.py "${ARGS[@]}"
