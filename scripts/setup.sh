#!/usr/bin/env bash
# Installs graphi's dependencies from Debian's archive (Debian 12), and for benchmarks a Python
# virtual environment from PyPI. Only what is missing is installed, so a second run costs a
# dpkg query.
#
#   scripts/setup.sh [run]   build the library and the `graphi` command (what run.sh needs)
#   scripts/setup.sh python  + the Python package (pybind11, numpy)
#   scripts/setup.sh test    + everything the test suite needs (what test.sh and CI need),
#                            including a virtual environment at .venv (override: GRAPHI_VENV)
#                            made from scripts/requirements-bench.txt (ONNX Runtime, PyTorch 2
#                            CPU) over /usr/bin/python3, for the torch.compile backend's tests
#                            (ctest python/venv; about 2.5 min the first time, then free)
#   scripts/setup.sh bench   + the benchmarks' peers (the same packages and venv)
#   scripts/setup.sh serve   + Ray Serve in its own venv .venv-serve (scripts/serve_venv.sh, from
#                            scripts/requirements-serve.txt) for scripts/bench_serve.sh, serve_demo.sh
#   scripts/setup.sh lint    clang-format and clang-tidy (Debian's 14) for scripts/lint.sh
#   scripts/setup.sh sanitize + clang 14, its sanitizer runtimes and libomp (with the Archer TSan
#                            tool) for scripts/test_sanitizers.sh (docs/RELIABILITY.md)
# The packages and why each is needed: docs/DEPENDENCIES.md.
set -euo pipefail
cd "$(dirname "$0")/.."
LEVEL=${1:-run}

RUN_PACKAGES=(
  build-essential cmake pkgconf
  libhwloc-dev hwloc              # topology and pinning
  libdnnl-dev ocl-icd-opencl-dev  # oneDNN 2.6 (its CMake config needs the OpenCL dev files)
  libxsmm-dev                     # LIBXSMM 1.17 small-GEMM microkernels
  nlohmann-json3-dev              # the .graphi file's JSON header
  ccache                          # build.sh and the sanitizer lanes compile through it: a
                                  # second clone (CI) recompiles only what changed
)
PYTHON_PACKAGES=(
  pybind11-dev python3-dev python3-numpy  # the Python package (python/: pybind11 over libgraphi)
)
TEST_PACKAGES=(
  git catch2                      # Catch2 v2 tests
  libtbb-dev                      # oneTBB: the dispatch benchmark's competitor (built with the tests)
  libonnx-testdata python3-onnx   # ONNX backend cases, converted to .npy by tests/ops/onnx_rnn_cases.py
  python3-venv                    # the benchmarks' virtual environment (scripts/bench_venv.sh)
  python3-torch                   # PyTorch 1.13: tests regenerate their PyTorch fixtures with it
  libopenblas0-pthread            # the BLAS PyTorch should use (Debian's reference BLAS is ~10x slower)
  python3-matplotlib              # scripts/plot_timeline.py (its test draws a trace)
)
SANITIZE_PACKAGES=(
  clang-14 libclang-rt-14-dev     # the TSan lane's compiler and runtimes (ASan/UBSan use GCC's)
  libomp-dev                      # LLVM's OpenMP + libarcher.so: OpenMP synchronisation TSan sees
)
LINT_PACKAGES=(
  clang-format clang-tidy         # scripts/lint.sh (.clang-format, .clang-tidy)
  libomp-dev                      # clang's omp.h, so clang-tidy parses the OpenMP sources
)

case "$LEVEL" in
  run) PACKAGES=("${RUN_PACKAGES[@]}") ;;
  python) PACKAGES=("${RUN_PACKAGES[@]}" "${PYTHON_PACKAGES[@]}") ;;
  test|bench|serve) PACKAGES=("${RUN_PACKAGES[@]}" "${PYTHON_PACKAGES[@]}" "${TEST_PACKAGES[@]}") ;;
  sanitize) PACKAGES=("${RUN_PACKAGES[@]}" "${PYTHON_PACKAGES[@]}" "${TEST_PACKAGES[@]}" "${SANITIZE_PACKAGES[@]}") ;;
  lint) PACKAGES=("${LINT_PACKAGES[@]}") ;;
  *) echo "usage: scripts/setup.sh [run|python|test|bench|serve|sanitize|lint]" >&2; exit 2 ;;
esac

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup ($LEVEL): all Debian packages present" >&2
else
  echo "setup ($LEVEL): installing ${missing[*]}" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq >&2
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

if [ "$LEVEL" = test ] || [ "$LEVEL" = bench ]; then
  ./scripts/bench_venv.sh >&2
fi
if [ "$LEVEL" = serve ]; then
  ./scripts/serve_venv.sh >&2
fi
