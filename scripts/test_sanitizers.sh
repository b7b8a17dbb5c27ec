#!/usr/bin/env bash
# The sanitizer lanes of CI (docs/RELIABILITY.md): each builds its own tree and runs tests in it.
#
#   scripts/test_sanitizers.sh [asan|tsan|all] [CTEST_ARGS...]      (default: all)
#
# asan  build-asan: GCC, -fsanitize=address,undefined (UBSan errors abort, LeakSanitizer on),
#       the whole C++ test suite (every ctest entry but the two that need the Python package,
#       which is not built under a sanitizer: an uninstrumented interpreter cannot load an ASan
#       module).
# tsan  build-tsan: clang 14 with LLVM's libomp and its Archer tool (OpenMP's barriers and
#       team hand-offs become visible to TSan; libgomp's futexes are not), -fsanitize=thread,
#       the engine, ops and stress tests.
# Both compile at -O1 -g (fast to build, readable stacks) and use ccache. Extra arguments go to
# ctest (e.g. -R engine/). GRAPHI_SAN_JOBS sets the build and ctest parallelism (default: nproc).
set -euo pipefail
cd "$(dirname "$0")/.."
LANE=${1:-all}
[ $# -gt 0 ] && shift
case "$LANE" in asan|tsan|all) ;; *) echo "usage: scripts/test_sanitizers.sh [asan|tsan|all] [CTEST_ARGS...]" >&2; exit 2 ;; esac
./scripts/setup.sh sanitize
ROOT=$PWD
JOBS=${GRAPHI_SAN_JOBS:-$(nproc)}
CMAKE=/usr/bin/cmake
CTEST=/usr/bin/ctest
SUPP=$ROOT/scripts/sanitizers
LAUNCHER=()
if command -v ccache > /dev/null; then
  export CCACHE_BASEDIR=$ROOT
  # The lanes compile with -g, for which ccache hashes the build directory by default: a fresh
  # clone elsewhere (CI) would miss every entry. Paths in the debug info are then those of the
  # tree that filled the cache (same sources).
  export CCACHE_NOHASHDIR=1
  LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi

configure() {  # configure DIR ARGS...: quiet unless it fails
  local dir=$1; shift
  mkdir -p "$dir"
  "$CMAKE" -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g -DNDEBUG" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g -DNDEBUG" -DPython_EXECUTABLE=/usr/bin/python3 \
    -DGRAPHI_BUILD_TESTS=ON -DGRAPHI_BUILD_BENCHMARKS=OFF "${LAUNCHER[@]}" "$@" \
    > "$dir.configure.log" 2>&1 || { cat "$dir.configure.log" >&2; exit 1; }
}

lane_asan() {
  local dir=${GRAPHI_ASAN_BUILD_DIR:-build-asan}
  local t0=$SECONDS
  configure "$dir" -DGRAPHI_SANITIZE=address
  "$CMAKE" --build "$dir" -j "$JOBS"
  echo "asan: built in $((SECONDS - t0)) s" >&2
  # allocator_may_return_null: a huge allocation must reach the code's own bad_alloc/nullptr
  # handling (the loaders' tests rely on it) instead of ASan aborting first.
  # detect_stack_use_after_return: catches stack addresses kept past their frame.
  export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:allocator_may_return_null=1:detect_stack_use_after_return=1:strict_init_order=1:check_initialization_order=1:suppressions=$SUPP/asan.supp"
  export LSAN_OPTIONS="suppressions=$SUPP/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$SUPP/ubsan.supp"
  # install/prefix and readme/examples import the Python package, which is not built here.
  (cd "$dir" && "$CTEST" --output-on-failure -j "$JOBS" --timeout 900 \
    -E '^(install/prefix|readme/examples)$' "$@")
  echo "asan: lane done in $((SECONDS - t0)) s" >&2
}

lane_tsan() {
  local dir=${GRAPHI_TSAN_BUILD_DIR:-build-tsan}
  local t0=$SECONDS
  # libomp's own lock words are uninstrumented: Archer asks for ignore_noninstrumented_modules.
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1:suppressions=$SUPP/tsan.supp"
  configure "$dir" -DGRAPHI_SANITIZE=thread -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14
  "$CMAKE" --build "$dir" -j "$JOBS" --target graphi_tests_engine graphi_tests_ops graphi_tests_stress
  echo "tsan: built in $((SECONDS - t0)) s" >&2
  # oneDNN (libdnnl.so) is linked against libgomp: its GOMP_*/omp_* calls bind to libomp, which
  # the test binaries need directly and so load first (one OpenMP runtime in the process, seen
  # by Archer). The check below (every symbol bound at load) fails the lane otherwise.
  local bindings
  bindings=$(LD_BIND_NOW=1 LD_DEBUG=bindings "$dir/tests/graphi_tests_engine" --list-test-names-only 2>&1 >/dev/null |
    grep "binding file [^ ]*libdnnl" || true)
  # Here-strings, not `echo | grep -q`: under pipefail grep -q's early exit can SIGPIPE the echo
  # and turn a match into a failure (seen once in CI with 472 binding lines).
  if grep -q " to [^ ]*libgomp" <<< "$bindings" || ! grep -q " to [^ ]*libomp" <<< "$bindings"; then
    echo "tsan: oneDNN's OpenMP calls do not bind to libomp (docs/RELIABILITY.md):" >&2
    grep -m5 "omp" <<< "$bindings" >&2 || true
    exit 1
  fi
  (cd "$dir" && "$CTEST" --output-on-failure -j "$JOBS" --timeout 900 \
    -R '^(engine|ops|stress)/' "$@")
  echo "tsan: lane done in $((SECONDS - t0)) s" >&2
}

case "$LANE" in
  asan) lane_asan "$@" ;;
  tsan) lane_tsan "$@" ;;
  all) lane_asan "$@"; lane_tsan "$@" ;;
esac
