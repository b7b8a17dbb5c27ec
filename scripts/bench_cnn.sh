#!/usr/bin/env bash
# The CNN benchmark of issue 18: graphi beside ONNX Runtime's Python package (all graph
# optimizations, intra-op threads = 1 and 2, and its parallel executor) and PyTorch 2 (eager and
# TorchScript, NCHW and channels_last: the best of them) on the ONNX zoo's CNNs, an inception
# block, a PathNet layer stack (seed 002 Table 1b: image 32, 16 filters, 3 layers x 6 modules)
# and a GoogleNet (Table 1c smallest: image 128, width 1), batch 1 and 8, 1 and 2 threads, all
# peers in one run, interleaved rounds, medians. At 2 threads graphi's number is the split it
# chooses itself (plan auto); 1x2 and 2x1 are shown beside it.
# Beside each row, the bound: the model's FLOPs at this machine's FMA peak (the roofline probe of
# benchmarks/rnn, run before and after), and best peer / bound, the largest speed-up an
# implementation doing all the direct convolutions' multiplies could show here (Winograd does
# fewer). Table to stdout and $BUILD_DIR/bench/cnn.txt, CSV to
# $BUILD_DIR/bench/cnn.csv.
#
#   scripts/bench_cnn.sh                         # everything (~15-25 minutes on 2 loaded cores)
#   scripts/bench_cnn.sh --quick                 # the quiet-machine run (<= 4 min quiet): inception,
#                                                #   PathNet, GoogleNet, zoo mobilenetish; batch 1 and
#                                                #   8; 2 threads; 5 rounds of 0.1 s blocks
#   scripts/bench_cnn.sh --models pathnet,inception --rounds 7 --threads 2
#   scripts/bench_cnn.sh --boost                 # top priority (root; see bench_common.sh)
#   scripts/bench_cnn.sh --models common --threads 2 --batches 1   # ResNet-18, MobileNetV2, ...
#                                                #   (benchmarks/cnn/common_cnns.py; not in the
#                                                #   default run: 224x224 models are slow)
#   scripts/bench_cnn.sh --models volumetric --threads 2   # a C3D-like, a 3-D U-Net, an
#                                                #   r3d_18-like and an X3D-like
#                                                #   (benchmarks/cnn/volumetric_cnns.py)
#
# Models are exported by benchmarks/cnn/cnn_models.py with /usr/bin/python3 (torch 1.13's
# TorchScript exporter, opset 13) into $BUILD_DIR/bench/cnn (re-exported when the script is
# newer). The peers run in the benchmarks' venv ($GRAPHI_VENV, default .venv, made by
# scripts/bench_venv.sh); graphi through its Python module (build/python).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${GRAPHI_BUILD_DIR:-build}
BOOST=0
ARGS=()
for a in "$@"; do
  case "$a" in
    --boost) BOOST=1 ;;
    --quick) ARGS+=(--models inception,pathnet,googlenet,zoo_mobilenetish --threads 2 --rounds 5 --block 0.1) ;;
    *) ARGS+=("$a") ;;
  esac
done

source scripts/bench_common.sh

# graphi's "auto" must be the choice it makes by itself on a graph it has not profiled: a plan
# cached by an earlier `graphi profile` of the same model would be used instead.
export GRAPHI_CACHE_DIR=$(mktemp -d /tmp/bench_cnn_cache.XXXXXX)
trap 'rm -rf "$GRAPHI_CACHE_DIR"' EXIT

bench_build _graphi graphi graphi_bench_rnn
VENV=${GRAPHI_VENV:-.venv}
GRAPHI_VENV=$VENV ./scripts/bench_venv.sh > /dev/null \
  || { echo "bench_cnn: scripts/bench_venv.sh failed (the venv holds ONNX Runtime and PyTorch 2)" >&2; exit 1; }

MODELS=$BUILD_DIR/bench/cnn
mkdir -p "$MODELS"
if [ ! -f "$MODELS/googlenet_b8.onnx" ] || [ ! -f "$MODELS/unet_like_b8.onnx" ] \
   || [ ! -f "$MODELS/unet3d_like_b8.onnx" ] || [ ! -f "$MODELS/x3d_like_b8.onnx" ] \
   || [ benchmarks/cnn/cnn_models.py -nt "$MODELS/googlenet_b8.onnx" ] \
   || [ benchmarks/cnn/common_cnns.py -nt "$MODELS/unet_like_b8.onnx" ] \
   || [ benchmarks/cnn/volumetric_cnns.py -nt "$MODELS/unet3d_like_b8.onnx" ]; then
  /usr/bin/python3 benchmarks/cnn/cnn_models.py "$MODELS"
fi

echo "bench_cnn: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
bench_run "$VENV/bin/python" benchmarks/cnn/bench_cnn.py --models-dir "$MODELS" --build-dir "$BUILD_DIR" \
  --csv "$BUILD_DIR/bench/cnn.csv" "${ARGS[@]}" | tee "$BUILD_DIR/bench/cnn.txt"
echo "bench_cnn: load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
