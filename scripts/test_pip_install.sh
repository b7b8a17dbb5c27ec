#!/usr/bin/env bash
# `pip install .` as a Python user does it: a fresh virtual environment of an interpreter that is
# not Debian's (default: the first python3 on PATH; this machine kind's is pyenv's 3.11 with
# numpy 2), the package built by pip through pyproject.toml (scikit-build-core, CMake), then the
# package's tests against the installed package (run from python/tests, with no PYTHONPATH: the
# import comes from the venv's site-packages) and the `graphi` command the wheel put on the venv's
# PATH. Needs the C++ dependencies (./scripts/setup.sh python) and PyPI (build requirements,
# numpy). The compile happens in build/pip/ and is reused by the next run (about 4 minutes on 2
# cores the first time). docs/PYTHON.md, "pip install".
#
#   scripts/test_pip_install.sh                 # python3 from PATH
#   scripts/test_pip_install.sh /usr/bin/python3.11
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "pip install: $("$PY" --version 2>&1) ($(command -v "$PY"))" >&2
"$PY" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --upgrade pip >&2
t0=$SECONDS
# ccache (CMakeLists.txt uses it under pip) keys paths relative to the source root, so a fresh
# clone's pip build reuses an earlier clone's objects.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
"$work/venv/bin/python" -m pip install --quiet . >&2
echo "pip install: built and installed in $((SECONDS - t0)) s" >&2
# Installed where it should be: the package with its module and library, the command.
"$work/venv/bin/python" - <<'PY'
import os, graphi, numpy
d = os.path.dirname(graphi.__file__)
assert "site-packages" in d, d
names = sorted(os.listdir(d))
assert any(n.startswith("_graphi") and n.endswith(".so") for n in names), names
assert "libgraphi.so" in names, names
print("pip install: graphi %s from %s (numpy %s)" % (graphi.__version__, d, numpy.__version__))
PY
"$work/venv/bin/graphi" --version
cd python/tests
env -u PYTHONPATH GRAPHI_BIN="$work/venv/bin/graphi" "$work/venv/bin/python" -m unittest test_graphi
