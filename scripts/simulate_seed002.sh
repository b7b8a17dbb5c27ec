#!/usr/bin/env bash
# The seed 002 (Graphi) evaluation on a simulated Xeon Phi 7250 (issue 11): `graphi simulate
# --machine knl7250` (package:1 l2:34 core:2 pu:4, splits over 64 cores) for the unfused 4-layer
# LSTM at Table 1a's small and medium sizes (batch 64), a PathNet stack (Table 1b medium) and an
# inception-block stack (Table 1c medium, see scripts/make_sim_models.py). Op times from the
# cost hints (nothing of the Phi is measured). Prints a markdown report (benchmarks/README.md,
# "Simulator (issue 11)") and keeps the JSON in $BUILD_DIR/bench/sim_seed002/.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${GRAPHI_BUILD_DIR:-build}
G="${GRAPHI:-$BUILD_DIR/graphi}"
[ -x "$G" ] || /usr/bin/cmake --build "$BUILD_DIR" -j2 --target graphi
OUT="$BUILD_DIR/bench/sim_seed002"
mkdir -p "$OUT"
"$G" model lstm --input 128 --hidden 128 --layers 4 --seq 20 --batch 64 -o "$OUT/lstm_small.graphi" > /dev/null
"$G" model lstm --input 512 --hidden 512 --layers 4 --seq 30 --batch 64 -o "$OUT/lstm_medium.graphi" > /dev/null
[ -f "$OUT/pathnet.onnx" ] || /usr/bin/python3 scripts/make_sim_models.py "$OUT" --only pathnet --batch 64 --size 48 --channels 32 > /dev/null
[ -f "$OUT/inception.onnx" ] || /usr/bin/python3 scripts/make_sim_models.py "$OUT" --only inception --batch 32 --size 24 --channels 256 > /dev/null
# The small LSTM once more with per-op times measured here (2x1 teams of 1 on the 2-core VM,
# scaled by the preset's core speed): how much the cost hints decide.
[ -f "$OUT/lstm_small.plan.json" ] || "$G" profile "$OUT/lstm_small.graphi" --no-fuse --top-k 1 --runs 3 --no-cache \
  --quiet --plan-out "$OUT/lstm_small.plan.json" > /dev/null
echo "load average while profiling: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
exec /usr/bin/python3 - "$G" "$OUT" <<'PY'
import json, subprocess, sys
G, OUT = sys.argv[1], sys.argv[2]
models = [("LSTM small (20 steps, 128, unfused)", "lstm_small.graphi", ["--no-fuse"], "2.3-3.1x", "8-12"),
          ("LSTM small, op times measured here", "lstm_small.graphi", ["--no-fuse", "--costs", f"{OUT}/lstm_small.plan.json"], "2.3-3.1x", "8-12"),
          ("LSTM medium (30 steps, 512, unfused)", "lstm_medium.graphi", ["--no-fuse"], "2.3-3.1x", "8-12"),
          ("PathNet medium (3 x 6 modules)", "pathnet.onnx", [], "1.2-2.1x", "6"),
          ("Inception stack (3 blocks)", "inception.onnx", [], "~1.2x", "2-3")]
seed_t2 = {"LSTM medium (30 steps, 512, unfused)": "0.82-0.91", "PathNet medium (3 x 6 modules)": "0.88-0.92",
           "Inception stack (3 blocks)": "0.91-0.96"}
print("| model | graph width | best split (sim) | seed's best n | best vs 1x64 sequential (sim) | seed Fig. 6 | cpf / shared-queue at 2x32, 4x16, 8x8, 16x4, 32x2 (sim) | seed Table 2 |")
print("| --- | ---: | --- | --- | ---: | --- | --- | --- |")
for name, f, extra, fig6, bestn in models:
    j = json.loads(subprocess.run([G, "simulate", f"{OUT}/{f}", "--machine", "knl7250", "--json"] + extra,
                                  check=True, capture_output=True, text=True).stdout)
    tag = f + (".measured" if "--costs" in extra else "")
    open(f"{OUT}/{tag}.sim.json", "w").write(json.dumps(j, indent=1))
    P = j["predictions"]
    best = min(P, key=lambda p: p["makespan_ms"])
    seq = j["sequential"]["makespan_ms"]
    by = {}
    for p in P: by.setdefault((p["executors"], p["threads"]), {})[p["policy"]] = p["makespan_ms"]
    rel = []
    for c in [(2, 32), (4, 16), (8, 8), (16, 4), (32, 2)]:
        v = by.get(c)
        rel.append(f"{v['cpf'] / v['shared-queue']:.2f}" if v else "-")
    print(f"| {name} | {j['graph_width']} | {best['executors']}x{best['threads']} {best['policy']} ({best['makespan_ms']:.2f} ms) | {bestn} "
          f"| {seq / best['makespan_ms']:.2f}x ({seq:.2f} ms) | {fig6} | {', '.join(rel)} | {seed_t2.get(name, '-')} |")
print()
print("Per split (cpf; ms): ")
for name, f, extra, *_ in models:
    j = json.load(open(f"{OUT}/{f + ('.measured' if '--costs' in extra else '')}.sim.json"))
    row = [f"{p['executors']}x{p['threads']} {p['makespan_ms']:.2f}" for p in j["predictions"] if p["policy"] == "cpf"]
    print(f"- {name}: " + ", ".join(row))
PY
