# Sourced by the bench_*.sh scripts (after `cd` to the repository root and setting BUILD_DIR and
# BOOST): building benchmark targets and running a binary, boosted if asked.

# bench_build TARGET...: configures (Release) and builds only the given targets, with Debian's
# cmake as scripts/build.sh does (a pip CMake 4 first on PATH would re-configure a tree made by
# cmake 3.25 and rebuild everything).
bench_build() {
  local cmake=${GRAPHI_CMAKE:-/usr/bin/cmake}
  [ -x "$cmake" ] || cmake=cmake
  "$cmake" -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release > "$BUILD_DIR.configure.log" 2>&1 \
    || { cat "$BUILD_DIR.configure.log"; exit 1; }
  "$cmake" --build "$BUILD_DIR" --target "$@" -j "$(nproc)"
}

# bench_run COMMAND ARGS...: runs a benchmark; with BOOST=1 in a scheduler autogroup of its own at
# nice -20 (with autogroups, Linux's default, plain `nice` only ranks processes inside one
# session, so other sessions' builds would still take turns on the cores). Needs root: without
# it the boost is skipped with a warning.
bench_run() {
  if [ "${BOOST:-0}" = 1 ] && [ "$(id -u)" -eq 0 ]; then
    setsid sh -c 'echo -20 > /proc/self/autogroup && exec nice -n -20 "$@"' sh "$@"
  else
    if [ "${BOOST:-0}" = 1 ] && [ -z "${BENCH_BOOST_WARNED:-}" ]; then
      echo "warning: --boost needs root; running at normal priority" >&2
      BENCH_BOOST_WARNED=1
    fi
    "$@"
  fi
}
