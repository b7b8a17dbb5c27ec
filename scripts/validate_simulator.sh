#!/usr/bin/env bash
# Validates `graphi simulate` on this machine (issue 11): for each model, per-op costs are
# measured with `graphi profile --plan-out`, `graphi simulate --this-machine --costs` predicts
# every split x policy, and `graphi run` measures each one (median of --iterations runs).
# Writes the table to $BUILD_DIR/bench/sim_validation.md and replaces the section between the
# markers "<!-- sim-validation:begin -->" / "<!-- sim-validation:end -->" in benchmarks/README.md.
#
#   scripts/validate_simulator.sh              # the four models of issue 11
#   ITER=30 scripts/validate_simulator.sh      # more timed runs per point
#
# The machine is shared: the load average before and after is printed and recorded in the table.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${GRAPHI_BUILD_DIR:-build}
ITER=${ITER:-15}
G="$BUILD_DIR/graphi"
[ -x "$G" ] || /usr/bin/cmake --build "$BUILD_DIR" -j2 --target graphi
OUT="$BUILD_DIR/bench/sim_validation"
mkdir -p "$OUT"
"$G" model lstm --input 128 --hidden 128 --layers 4 --seq 30 -o "$OUT/lstm4.graphi" > /dev/null
"$G" model gru --input 128 --hidden 128 --layers 4 --seq 30 -o "$OUT/gru4.graphi" > /dev/null
exec /usr/bin/python3 - "$G" "$OUT" "$ITER" <<'PY'
import json, os, subprocess, sys, datetime, platform
G, OUT, ITER = sys.argv[1], sys.argv[2], int(sys.argv[3])
models = [
    ("LSTM 4x128, 30 steps, unfused", f"{OUT}/lstm4.graphi", ["--no-fuse"]),
    ("LSTM 4x128, 30 steps, fused", f"{OUT}/lstm4.graphi", []),
    ("GRU 4x128, 30 steps, fused", f"{OUT}/gru4.graphi", []),
    ("mobilenetish_op13 (ONNX zoo CNN)", "tests/data/onnx_zoo/mobilenetish_op13.onnx", []),
]
def load(): return open("/proc/loadavg").read().split()[0]
def cpu():
    for l in open("/proc/cpuinfo"):
        if l.startswith("model name"): return l.split(":", 1)[1].strip()
    return platform.processor()
load_before = load()
rows = []
for name, path, extra in models:
    plan = f"{OUT}/{os.path.basename(path)}{'-nofuse' if extra else ''}.plan.json"
    subprocess.run([G, "profile", path, "--top-k", "1", "--runs", "5", "--no-cache", "--quiet", "--plan-out", plan] + extra,
                   check=True, stdout=subprocess.DEVNULL)
    sim = json.loads(subprocess.run([G, "simulate", path, "--this-machine", "--costs", plan, "--json"] + extra,
                                    check=True, capture_output=True, text=True).stdout)
    for p in sim["predictions"]:
        n, k, pol = p["executors"], p["threads"], p["policy"]
        r = subprocess.run([G, "run", path, "--executors", str(n), "--threads", str(k), "--scheduler", pol,
                            "--iterations", str(ITER), "--warmup", "3", "--json"] + extra,
                           capture_output=True, text=True)
        if r.returncode != 0:
            rows.append((name, f"{n}x{k}", pol, p["makespan_ms"], None, r.stderr.strip().splitlines()[-1:])); continue
        meas = json.loads(r.stdout)["latency_ms"]["median"]
        rows.append((name, f"{n}x{k}", pol, p["makespan_ms"], meas, ""))
        print(f"{name:36s} {n}x{k} {pol:13s} predicted {p['makespan_ms']:9.3f} measured {meas:9.3f} ms", file=sys.stderr)
load_after = load()
within = [r for r in rows if r[4] and abs(r[3] / r[4] - 1) <= 0.25]
measured = [r for r in rows if r[4]]
lines = [f"Machine: {cpu()}, {os.cpu_count()} CPUs; {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC; "
         f"load average {load_before} before, {load_after} after (shared with other engineers' builds). "
         f"Median of {ITER} runs per point; costs from `graphi profile --top-k 1 --plan-out`.",
         "", f"**{len(within)} of {len(measured)} points within 25%.**", "",
         "| model | config | policy | predicted ms | measured ms | error |",
         "| --- | --- | --- | ---: | ---: | ---: |"]
for name, cfg, pol, pred, meas, err in rows:
    if meas: lines.append(f"| {name} | {cfg} | {pol} | {pred:.3f} | {meas:.3f} | {100 * (pred / meas - 1):+.0f}% |")
    else: lines.append(f"| {name} | {cfg} | {pol} | {pred:.3f} | failed | {err} |")
table = "\n".join(lines) + "\n"
open(f"{OUT}.md", "w").write(table)
readme = "benchmarks/README.md"
text = open(readme).read()
b, e = "<!-- sim-validation:begin -->", "<!-- sim-validation:end -->"
if b in text and e in text:
    text = text[:text.index(b) + len(b)] + "\n" + table + text[text.index(e):]
    open(readme, "w").write(text)
print(table)
PY
