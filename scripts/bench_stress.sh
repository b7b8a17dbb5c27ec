#!/usr/bin/env bash
# The concurrency and lifetime stress benchmark (docs/RELIABILITY.md, tests/stress/): for each
# policy, SECONDS of many client threads running several Sessions of that policy (splits 1x1, 1x2,
# 2x1; random scheduler role, pinning, shared or own Plan) while Sessions are created and
# destroyed under their callers. Reports runs, wrong outputs, unexpected errors, cancellations,
# Sessions churned and RSS (after the first 10% of the time and at the end); a watchdog turns a
# deadlock into a failure with a state and stack dump. Exit status: non-zero if any policy failed.
#
#   scripts/bench_stress.sh [--seconds 60] [--clients 6] [--policies cpf,fifo,shared-queue,sequential]
#                           [--build-dir build]
# The machine is shared: run counts vary with load; wrong outputs, errors and hangs must not.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_POLICY=60
CLIENTS=6
POLICIES=cpf,fifo,shared-queue,sequential
BUILD_DIR=${GRAPHI_BUILD_DIR:-build}
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) SECONDS_PER_POLICY=$2; shift 2 ;;
    --clients) CLIENTS=$2; shift 2 ;;
    --policies) POLICIES=$2; shift 2 ;;
    --build-dir) BUILD_DIR=$2; shift 2 ;;
    *) echo "usage: scripts/bench_stress.sh [--seconds N] [--clients N] [--policies a,b] [--build-dir DIR]" >&2; exit 2 ;;
  esac
done
BIN=$BUILD_DIR/tests/graphi_tests_stress
if [ ! -x "$BIN" ]; then
  /usr/bin/cmake --build "$BUILD_DIR" -j "$(nproc)" --target graphi_tests_stress
fi
status=0
IFS=, read -r -a list <<< "$POLICIES"
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT
for p in "${list[@]}"; do
  rc=0
  GRAPHI_STRESS_SECONDS=$SECONDS_PER_POLICY GRAPHI_STRESS_POLICY=$p GRAPHI_STRESS_CLIENTS=$CLIENTS \
    "$BIN" "stress: benchmark (scripts/bench_stress.sh)" > "$LOG" 2>&1 || rc=$?
  grep -E "^stress |^  [a-z]|watchdog|FAILED|with expansion" "$LOG" || true
  [ "$rc" = 0 ] || tail -n 40 "$LOG"
  echo "policy $p: $([ "$rc" = 0 ] && echo PASS || echo "FAIL (exit $rc)")"
  [ "$rc" = 0 ] || status=1
done
exit $status
