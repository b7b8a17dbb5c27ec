#!/usr/bin/env bash
# graphi served by Ray Serve on loopback, under an open-loop load from a second process
# (benchmarks/serve/bench_serve.py, loadgen.py; docs/SERVING.md; results in benchmarks/README.md):
# 1 replica, 2 replicas, then 2 replicas with one replica's process killed mid-load.
#   scripts/bench_serve.sh [--seconds 60] [--rate 20] [--model lstm|cnn] [--phases 1,2,kill] [--boost]
# Builds the graphi CLI and the Python package, makes/updates .venv-serve (Ray Serve pinned in
# scripts/requirements-serve.txt), starts a Ray head node on 127.0.0.1 with free ports, and stops
# Ray (`ray stop --force`) on every exit path. The whole run is bounded by `timeout`.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${GRAPHI_BUILD_DIR:-build}
VENV=${GRAPHI_SERVE_VENV:-.venv-serve}
SECONDS_PER_PHASE=60
RATE=20
MODEL=lstm
PHASES=1,2,kill
BATCH=()
BOOST=0
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) SECONDS_PER_PHASE=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --model) MODEL=$2; shift 2 ;;
    --phases) PHASES=$2; shift 2 ;;
    --boost) BOOST=1; shift ;;
    *) echo "usage: scripts/bench_serve.sh [--seconds S] [--rate R] [--model lstm|cnn] [--phases 1,2,kill] [--boost]" >&2; exit 2 ;;
  esac
done
source scripts/bench_common.sh
bench_build graphi _graphi >&2
GRAPHI_SERVE_VENV=$VENV ./scripts/serve_venv.sh >&2
PY=$VENV/bin/python
RAY=$VENV/bin/ray

OUT=$BUILD_DIR/bench/serve
rm -rf "$OUT" && mkdir -p "$OUT"
case "$MODEL" in
  lstm)  # the RNN benchmark's LSTM h256 b1 T100 (1 layer), one sequence per request
    MODEL_FILE=$OUT/lstm_h256_b1_t100.graphi
    "$BUILD_DIR/graphi" model lstm --input 256 --hidden 256 --seq 100 --batch 1 -o "$MODEL_FILE" >/dev/null
    OUTPUTS=h_n; LABEL="LSTM h256 b1 T100" ;;
  cnn)   # the ONNX zoo's MobileNet-like CNN with a symbolic batch: requests are batched
    MODEL_FILE=tests/data/onnx_zoo/mobilenetish_dyn_op17.onnx
    OUTPUTS=out0; BATCH=(--batch-dim batch --max-batch-size 8)
    LABEL="ONNX zoo mobilenetish_dyn, 1 image per request, dynamic batching up to 8" ;;
  *) echo "bench_serve: --model lstm or cnn" >&2; exit 2 ;;
esac

free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
GCS_PORT=$(free_port); HTTP_PORT=$(free_port); DASH_PORT=$(free_port)

cleanup() {
  "$RAY" stop --force >/dev/null 2>&1 || true
  rm -rf "$OUT/locks"
}
trap cleanup EXIT INT TERM

export PYTHONPATH="$PWD/$BUILD_DIR/python${PYTHONPATH:+:$PYTHONPATH}"
export RAY_USAGE_STATS_ENABLED=0 RAY_DEDUP_LOGS=0
# Single-machine cluster: without this Ray replaces 127.0.0.1 by the machine's network address
# (ray._private.services.resolve_ip_for_localhost) and its processes talk over that interface.
export RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0
# Head node on loopback only; its CPUs are the cores graphi's replicas divide between them (Serve's
# controller and proxy reserve none).
CORES=$(nproc)
# --boost: Ray's processes (raylet, proxy, replicas) run in the benchmark's autogroup at nice -20 too.
bench_run "$RAY" start --head --node-ip-address=127.0.0.1 --port="$GCS_PORT" \
  --dashboard-host=127.0.0.1 --dashboard-port="$DASH_PORT" --num-cpus="$CORES" \
  --disable-usage-stats >"$OUT/ray_start.log" 2>&1 || { cat "$OUT/ray_start.log" >&2; exit 1; }

n_phases=$(echo "$PHASES" | tr ',' '\n' | wc -l)
LIMIT=$(( n_phases * (${SECONDS_PER_PHASE%.*} + 180) + 120 ))
rc=0
bench_run timeout --signal=TERM --kill-after=20 "$LIMIT" "$PY" benchmarks/serve/bench_serve.py \
  --ray-address "127.0.0.1:$GCS_PORT" --http-port "$HTTP_PORT" --model "$MODEL_FILE" \
  --outputs "$OUTPUTS" --label "$LABEL" --seconds "$SECONDS_PER_PHASE" --rate "$RATE" \
  --cores "$CORES" --phases "$PHASES" --out "$OUT" ${BATCH[@]+"${BATCH[@]}"} || rc=$?
[ "$rc" = 124 ] && echo "bench_serve: stopped after $LIMIT s" >&2
exit "$rc"
