#!/usr/bin/env bash
# Installs graphi's build and test dependencies from Debian's archive (Debian 12).
# Only what is missing is installed, so a second run costs a dpkg query.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkgconf git
  libhwloc-dev hwloc            # topology and pinning
  libdnnl-dev ocl-icd-opencl-dev  # oneDNN 2.6 (its CMake config needs the OpenCL dev files)
  libxsmm-dev                   # LIBXSMM 1.17 small-GEMM microkernels
  catch2                        # Catch2 v2 tests
  nlohmann-json3-dev            # the .graphi file's JSON header
  libtbb-dev                    # oneTBB: the benchmarks' reference competitor (flow_graph, task_group)
  python3 python3-numpy         # /usr/bin/python3 for the numpy cross-checks in tests
  libonnx-testdata python3-onnx # ONNX backend cases of LSTM/GRU/RNN, converted to .npy by tests/ops/onnx_rnn_cases.py
  pybind11-dev python3-dev      # the Python package (python/: pybind11 module over libgraphi)
  python3-torch                 # PyTorch 1.13: tests regenerate their PyTorch fixtures with it; the RNN benchmark's peer
  libopenblas0-pthread          # the BLAS PyTorch should use (Debian's reference BLAS makes nn.LSTM ~10x slower)
  nodejs                        # ONNX Runtime peer of the RNN benchmark (npm onnxruntime-node)
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm: Debian ships it as its own package; a NodeSource nodejs (as on this machine) bundles it.
if ! command -v npm >/dev/null 2>&1 && ! dpkg-query -W -f='${Status}' npm 2>/dev/null | grep -q "install ok installed"; then
  missing+=(npm)
fi
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all dependencies present"
  exit 0
fi
echo "setup: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
