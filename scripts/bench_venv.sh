#!/usr/bin/env bash
# Creates (or updates) the benchmarks' virtual environment from scripts/requirements-bench.txt and
# prints nothing else on stdout. --system-site-packages over /usr/bin/python3 keeps Debian's numpy,
# onnx and pybind11 visible; the pinned PyPI packages (ONNX Runtime, PyTorch 2 CPU) shadow
# Debian's where both exist. The venv lives at $GRAPHI_VENV (default .venv, gitignored).
# A stamp holding the requirements file's hash makes a second run free.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${GRAPHI_VENV:-.venv}
REQ=${GRAPHI_VENV_REQUIREMENTS:-scripts/requirements-bench.txt}
if [ ! -x "$VENV/bin/python" ]; then
  echo "bench_venv: creating $VENV (python3 -m venv --system-site-packages over /usr/bin/python3)"
  /usr/bin/python3 -m venv --system-site-packages "$VENV" || {
    echo "bench_venv: venv failed; on Debian: apt-get install python3-venv" >&2; exit 1; }
fi
want=$(sha256sum "$REQ" | cut -d' ' -f1)
if [ "$(cat "$VENV/.requirements.sha256" 2>/dev/null)" != "$want" ]; then
  echo "bench_venv: installing $REQ into $VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$REQ"
  echo "$want" > "$VENV/.requirements.sha256"
fi
