#!/usr/bin/env bash
# Installs what is missing, builds everything, and runs the whole test suite through ctest.
# Extra arguments go to ctest (e.g. -R cli).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh test
./scripts/build.sh
BUILD_DIR=${GRAPHI_BUILD_DIR:-build}
CTEST=/usr/bin/ctest
[ -x "$CTEST" ] || CTEST=ctest
cd "$BUILD_DIR"
"$CTEST" --output-on-failure -j "$(nproc)" --timeout 600 "$@"
