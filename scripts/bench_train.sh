#!/usr/bin/env bash
# Training step time of seed 002's evaluation models (docs/EVALUATION.md): graphi against
# PyTorch 2 and TensorFlow 2 on identical initial weights and data, in one run.
#   scripts/bench_train.sh [--boost] [--quick] [--no-tf-install] [-- DRIVER_ARGS...]
# For each model (lstm, phased-lstm, pathnet, googlenet) and size (small, medium; --sizes
# small,medium,large after `--` for others) that fits in memory, small sizes first:
#   1. `graphi model NAME --size S --batch-npz` writes the model (seeded weights) and one batch;
#      every peer reads both (scripts/eval_graphi_file.py reads the .graphi weights);
#   2. `graphi simulate --machine knl7250` predicts the step graph on the Xeon Phi (Fig. 6 and
#      Table 2 there); `graphi profile --budget-s` (120 s; --quick 10 s) picks the split;
#   3. interleaved rounds (the order rotates each round) of: graphi at the profiler's split and
#      scheduler (it tries cpf and shared-queue), graphi sequential 1 x all cores (seed Fig. 6),
#      the other scheduler at the profiler's split, or cpf and shared-queue at cores x 1 when
#      it chose one executor (seed Table 2), for lstm graphi --fuse-rnn (the fused LSTM op and
#      its BPTT kernel) and for phased-lstm its PhasedLSTM sequence-op model (`graphi model
#      phased-lstm --fuse-rnn`),
#      PyTorch eager (unrolled cells as graphi; plus torch.nn.LSTM for lstm), TensorFlow
#      tf.function without and with jit_compile (XLA) at intra/inter-op thread settings
#      (--quick: intra = cores, inter 1; at a model's later sizes only its two fastest settings
#      of the first size, unless --all-tf-settings after `--`);
#   4. per peer the median step time over all timed steps of all rounds, the loss after the
#      same number of SGD steps, its relative difference to PyTorch's; then a summary: Fig. 6
#      (sequential / profiler's), Table 2 (shared-queue / cpf), best peer / graphi against the
#      issue's goal (2x LSTM/PhasedLSTM, 1.3x PathNet/GoogleNet), the simulator's predictions.
# --quick: 1 round of 1 warm-up + 2 timed steps, and no model/size is started after 150 s
# (--time-limit-s after `--`); those not started are rows saying so.
# A peer that is not installed is named in the table ("not installed"), never dropped. TF comes
# from scripts/tf_venv.sh (tensorflow-cpu==2.21.0 into .venv-tf, never a system interpreter);
# --no-tf-install skips installing it. PyTorch from .venv (scripts/bench_venv.sh).
# The machine may be shared: use --boost (root: own scheduler autogroup at nice -20) and read
# the load average printed with the table.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${GRAPHI_BUILD_DIR:-build}
BOOST=0
QUICK=()
TF_INSTALL=1
while [ $# -gt 0 ]; do
  case "$1" in
    --boost) BOOST=1 ;;
    --quick) QUICK=(--quick) ;;
    --no-tf-install) TF_INSTALL=0 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    *) echo "bench_train: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
. scripts/bench_common.sh
bench_build graphi
VENV=${GRAPHI_VENV:-.venv}
TF_VENV=${GRAPHI_TF_VENV:-.venv-tf}
if [ ! -x "$VENV/bin/python" ]; then ./scripts/bench_venv.sh >&2 || true; fi
if [ "$TF_INSTALL" = 1 ]; then
  ./scripts/tf_venv.sh || echo "bench_train: TensorFlow venv setup failed; its rows say so" >&2
fi
mkdir -p "$BUILD_DIR/bench_train"
bench_run /usr/bin/python3 scripts/bench_train.py --graphi "$BUILD_DIR/graphi" \
  --torch-python "$VENV/bin/python" --tf-python "$TF_VENV/bin/python" \
  --json-out "$BUILD_DIR/bench_train/results.json" "${QUICK[@]}" "$@"
