#!/usr/bin/env bash
# Creates (or updates) the serving virtual environment: Ray Serve pinned in
# scripts/requirements-serve.txt, in $GRAPHI_SERVE_VENV (default .venv-serve, gitignored), made by
# scripts/bench_venv.sh with /usr/bin/python3 -m venv --system-site-packages (the _graphi module
# is built for Debian's interpreter, and Debian's numpy stays visible). Kept apart from the
# benchmarks' .venv so Ray's dependencies (pydantic, grpcio, ...) never change what the test
# suite's venv resolves. A stamp makes a second run free; the first takes ~1-2 min.
set -euo pipefail
cd "$(dirname "$0")/.."
GRAPHI_VENV=${GRAPHI_SERVE_VENV:-.venv-serve} \
  GRAPHI_VENV_REQUIREMENTS=scripts/requirements-serve.txt exec ./scripts/bench_venv.sh
