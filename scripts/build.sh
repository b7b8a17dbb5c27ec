#!/usr/bin/env bash
# Configures and builds graphi in Release into ./build (or $GRAPHI_BUILD_DIR).
#   scripts/build.sh [--run-only] [CMAKE_ARGS...]
# --run-only builds the library and the `graphi` command only (tests and benchmarks are left off
# when the build directory is new); without it, everything (tests, benchmarks, Python package).
# Debian's cmake (/usr/bin/cmake) is used on purpose: a pip-installed CMake 4 may come first on
# PATH and rejects old cmake_minimum_required lines in dependencies' config files.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${GRAPHI_BUILD_DIR:-build}
CMAKE=${GRAPHI_CMAKE:-/usr/bin/cmake}
[ -x "$CMAKE" ] || CMAKE=cmake
RUN_ONLY=0
if [ "${1:-}" = "--run-only" ]; then RUN_ONLY=1; shift; fi
ARGS=(-DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-Release}" -DPython_EXECUTABLE=/usr/bin/python3)
if command -v ccache > /dev/null; then export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}; ARGS+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache); fi
if [ $RUN_ONLY = 1 ]; then
  # A new build directory gets no tests/benchmarks (their dependencies may be missing); an
  # existing one keeps its settings and only the targets below are built.
  [ -f "$BUILD_DIR/CMakeCache.txt" ] || ARGS+=(-DGRAPHI_BUILD_TESTS=OFF -DGRAPHI_BUILD_BENCHMARKS=OFF)
else
  ARGS+=(-DGRAPHI_BUILD_TESTS=ON -DGRAPHI_BUILD_BENCHMARKS=ON)
fi
mkdir -p "$BUILD_DIR"
"$CMAKE" -S . -B "$BUILD_DIR" "${ARGS[@]}" "$@" > "$BUILD_DIR.configure.log" 2>&1 \
  || { cat "$BUILD_DIR.configure.log" >&2; exit 1; }
if [ $RUN_ONLY = 1 ]; then
  "$CMAKE" --build "$BUILD_DIR" -j "$(nproc)" --target graphi graphi_api
else
  "$CMAKE" --build "$BUILD_DIR" -j "$(nproc)"
fi
