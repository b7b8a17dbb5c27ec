#!/usr/bin/env bash
# A local Ray cluster on loopback (a head node with 2 CPUs; Ray's worker processes host the
# replicas) serving an LSTM (`graphi model lstm`, h256, 100 steps) with graphi.serve: 2 replicas
# on a core each; a client sends a few HTTP requests and checks the answers against a local
# Session. Stops Ray on every exit path. One node only: a second node on the same machine needs
# RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=1, with which Ray talks over the machine's network address
# instead of 127.0.0.1 (docs/SERVING.md).
#   scripts/serve_demo.sh [--requests N]
# docs/SERVING.md says how the same deployment spreads over the nodes of a real cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${GRAPHI_BUILD_DIR:-build}
VENV=${GRAPHI_SERVE_VENV:-.venv-serve}
REQUESTS=5
[ "${1:-}" = --requests ] && REQUESTS=$2
BOOST=0
source scripts/bench_common.sh
bench_build graphi _graphi >&2
GRAPHI_SERVE_VENV=$VENV ./scripts/serve_venv.sh >&2
PY=$VENV/bin/python
RAY=$VENV/bin/ray
OUT=$BUILD_DIR/serve_demo
mkdir -p "$OUT"
MODEL=$OUT/lstm_h256_t100.graphi
"$BUILD_DIR/graphi" model lstm --input 256 --hidden 256 --seq 100 -o "$MODEL" >/dev/null

free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
GCS_PORT=$(free_port); HTTP_PORT=$(free_port)
trap '"$RAY" stop --force >/dev/null 2>&1 || true' EXIT INT TERM
export PYTHONPATH="$PWD/$BUILD_DIR/python${PYTHONPATH:+:$PYTHONPATH}"
export RAY_USAGE_STATS_ENABLED=0 RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0
echo "serve_demo: starting a Ray head node on 127.0.0.1" >&2
timeout 180 "$RAY" start --head --node-ip-address=127.0.0.1 --port="$GCS_PORT" \
  --include-dashboard=false --num-cpus=2 --disable-usage-stats >"$OUT/head.log" 2>&1 \
  || { cat "$OUT/head.log" >&2; exit 1; }

timeout 300 "$PY" - "$MODEL" "$GCS_PORT" "$HTTP_PORT" "$REQUESTS" <<'EOF'
import base64, json, sys, urllib.request
import numpy as np
import ray
from ray import serve
import graphi, graphi.serve

model, gcs, http, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
ray.init(address="127.0.0.1:" + gcs, log_to_driver=False)
print("nodes:", [(nd["NodeManagerAddress"], nd["Resources"].get("CPU")) for nd in ray.nodes()
                 if nd["Alive"]])
serve.start(http_options={"host": "127.0.0.1", "port": http})
serve.run(graphi.serve.app(model, replicas=2, cores_per_replica=1), name="graphi",
          route_prefix="/")
ref = graphi.Session(model)
rng = np.random.default_rng(0)
for i in range(n):
    feed = {t.name: rng.uniform(-1, 1, t.shape).astype(np.float32) for t in ref.inputs}
    body = json.dumps({"id": "demo-%d" % i, "outputs": ["h_n"], "inputs": {
        name: {"dtype": "float32", "shape": list(a.shape),
               "b64": base64.b64encode(a.tobytes()).decode()} for name, a in feed.items()}}).encode()
    req = urllib.request.Request("http://127.0.0.1:%d/" % http, data=body,
                                 headers={"Content-Type": "application/json"})
    reply = json.load(urllib.request.urlopen(req, timeout=30))
    spec = reply["outputs"]["h_n"]
    h = np.frombuffer(base64.b64decode(spec["b64"]), np.float32).reshape(spec["shape"])
    want = ref.run(feed)["h_n"]
    print("request %s -> replica pid %d, h_n %s, max |diff| to a local Session %.1e" % (
        reply["id"], reply["pid"], spec["shape"], float(np.max(np.abs(h - want)))))
serve.shutdown()
EOF
