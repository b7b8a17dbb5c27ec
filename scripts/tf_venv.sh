#!/usr/bin/env bash
# Creates (or updates) the TensorFlow peer's virtual environment from scripts/requirements-tf.txt
# (a venv of its own over /usr/bin/python3, without system site packages: TensorFlow pins its own
# numpy). Never installs into a system interpreter. The venv lives at $GRAPHI_TF_VENV (default
# .venv-tf, gitignored). A stamp holding the requirements file's hash makes a second run free.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${GRAPHI_TF_VENV:-.venv-tf}
REQ=scripts/requirements-tf.txt
if [ ! -x "$VENV/bin/python" ]; then
  echo "tf_venv: creating $VENV (python3 -m venv over /usr/bin/python3)" >&2
  /usr/bin/python3 -m venv "$VENV" || {
    echo "tf_venv: venv failed; on Debian: apt-get install python3-venv" >&2; exit 1; }
fi
want=$(sha256sum "$REQ" | cut -d' ' -f1)
if [ "$(cat "$VENV/.requirements.sha256" 2>/dev/null)" != "$want" ]; then
  echo "tf_venv: installing $REQ into $VENV" >&2
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$REQ" >&2
  echo "$want" > "$VENV/.requirements.sha256"
fi
