#!/usr/bin/env bash
# Issue 13's loss check at every size: each evaluation model trains 20 SGD steps in graphi and in
# PyTorch from the same weights and batch (full batch), every step's loss compared within 1e-3
# relative (scripts/check_train_losses.py says how, and why the learning rates are what they are).
#   scripts/check_train_losses.sh [--boost] [-- --sizes small,medium,large --models M,... --steps N]
# PyTorch comes from .venv (scripts/bench_venv.sh). Exit 1 when a row is outside the tolerance.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${GRAPHI_BUILD_DIR:-build}
BOOST=0
while [ $# -gt 0 ]; do
  case "$1" in
    --boost) BOOST=1 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "check_train_losses: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
. scripts/bench_common.sh
bench_build graphi
VENV=${GRAPHI_VENV:-.venv}
GRAPHI_VENV=$VENV ./scripts/bench_venv.sh > /dev/null \
  || { echo "check_train_losses: scripts/bench_venv.sh failed (the venv holds PyTorch 2)" >&2; exit 1; }
mkdir -p "$BUILD_DIR/check_train_losses"
bench_run /usr/bin/python3 scripts/check_train_losses.py --graphi "$BUILD_DIR/graphi" \
  --torch-python "$VENV/bin/python" --workdir "$BUILD_DIR/check_train_losses" \
  --json-out "$BUILD_DIR/check_train_losses/results.json" "$@"
