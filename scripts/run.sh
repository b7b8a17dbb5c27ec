#!/usr/bin/env bash
# Installs what is missing, builds the `graphi` command, generates the default model (a 2-layer
# LSTM) and runs it. Extra arguments go to `graphi run` (e.g. --json). Set-up and build output go
# to stderr, so stdout holds only graphi's own output.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh run >&2
./scripts/build.sh --run-only >&2
BUILD_DIR=${GRAPHI_BUILD_DIR:-build}
mkdir -p "$BUILD_DIR/models"
MODEL="$BUILD_DIR/models/lstm2.graphi"
"$BUILD_DIR/graphi" model lstm --input 64 --hidden 128 --layers 2 --batch 1 --seq 20 --seed 1 -o "$MODEL" >&2
"$BUILD_DIR/graphi" run "$MODEL" --iterations 20 --warmup 3 "$@"
