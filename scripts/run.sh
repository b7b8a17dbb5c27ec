#!/usr/bin/env bash
# Installs what is missing, builds, generates the default model (a 2-layer LSTM) and runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
BUILD_DIR=${GRAPHI_BUILD_DIR:-build}
mkdir -p "$BUILD_DIR/models"
MODEL="$BUILD_DIR/models/lstm2.graphi"
"$BUILD_DIR/graphi" model lstm --input 64 --hidden 128 --layers 2 --batch 1 --seq 20 --seed 1 -o "$MODEL"
"$BUILD_DIR/graphi" run "$MODEL" --iterations 20 --warmup 3 "$@"
