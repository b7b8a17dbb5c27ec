#!/usr/bin/env bash
# graphi as a backend (issue 14), both speed goals in one run, <= 4 min on a quiet 2-core machine:
#  (1) torch.compile(m, backend="graphi"): per-call overhead against graphi.Session directly, and
#      nn.LSTM(256, 256) b1 T100 compiled against eager PyTorch at its best thread count
#      (benchmarks/torch/bench_torch_backend.py, the venv's PyTorch 2);
#  (2) several Sessions in one process (2, 4, 8; LSTM, GRU, the zoo's tiny CNN; one caller thread
#      each) against the same Sessions in separate processes: per-Session and per-model ratios
#      (benchmarks/multi_session/bench_sessions.py, default mode against processes).
# The RNN schedule search runs afresh in a temporary cache (as on a user's first run on this
# machine), so a schedule cached under another load is not reused.
#   scripts/bench_backend.sh [--boost] [--rounds N] [--seconds S]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${GRAPHI_BUILD_DIR:-build}
VENV=${GRAPHI_VENV:-.venv}
BOOST=0
ROUNDS=3
SECONDS_PER_MODE=3
while [ $# -gt 0 ]; do
  case "$1" in
    --boost) BOOST=1 ;;
    --rounds) ROUNDS=$2; shift ;;
    --seconds) SECONDS_PER_MODE=$2; shift ;;
    *) echo "usage: $0 [--boost] [--rounds N] [--seconds S]" >&2; exit 2 ;;
  esac
  shift
done
source scripts/bench_common.sh
bench_build _graphi graphi graphi_bench_rnn
GRAPHI_VENV=$VENV ./scripts/bench_venv.sh >&2
CACHE=$(mktemp -d /tmp/graphi_bench_backend.XXXXXX)
trap 'rm -rf "$CACHE"' EXIT
export GRAPHI_CACHE_DIR=$CACHE
echo "== (1) torch.compile backend: overhead against graphi.Session, LSTM h256 b1 T100 against eager"
PYTHONPATH="$BUILD_DIR/python" bench_run "$VENV/bin/python" benchmarks/torch/bench_torch_backend.py \
  --rounds "$ROUNDS" --budget-ms 300 --build-dir "$BUILD_DIR"
echo
echo "== (2) several Sessions in one process against the same Sessions in separate processes"
PYTHONPATH="$BUILD_DIR/python" bench_run /usr/bin/python3 benchmarks/multi_session/bench_sessions.py \
  --graphi "$BUILD_DIR/graphi" --models lstm,gru,tests/data/onnx_zoo/mobilenetish_op13.onnx \
  --sessions 2,4,8 --modes default,processes --seconds "$SECONDS_PER_MODE" --rounds "$ROUNDS"
