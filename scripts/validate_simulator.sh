#!/usr/bin/env bash
# Validates `graphi simulate` on this machine (issue 11): for each model, per-op costs are the
# median over 5 traced sequential 1x1 runs and 5 traced 1x2 runs (`graphi run --trace`; the
# simulator uses each team size's times as measured for that k), `graphi simulate
# --this-machine --costs TRACE...` predicts every split x policy, and `graphi run` measures each
# one (median and minimum of ITER timed runs). Before each model the script waits (up to
# WAIT_MAX seconds, default 240) for the 1-minute load average to drop below LOAD_MAX (default 3).
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
G="${GRAPHI:-$BUILD_DIR/graphi}"
[ -x "$G" ] || /usr/bin/cmake --build "$BUILD_DIR" -j2 --target graphi
OUT="$BUILD_DIR/bench/sim_validation"
mkdir -p "$OUT"
"$G" model lstm --input 128 --hidden 128 --layers 4 --seq 30 -o "$OUT/lstm4.graphi" > /dev/null
"$G" model gru --input 128 --hidden 128 --layers 4 --seq 30 -o "$OUT/gru4.graphi" > /dev/null
exec /usr/bin/python3 - "$G" "$OUT" "$ITER" <<'PY'
import json, os, subprocess, sys, datetime, platform, time
LOAD_MAX, WAIT_MAX = float(os.environ.get("LOAD_MAX", 3)), float(os.environ.get("WAIT_MAX", 240))
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
loads = []
for name, path, extra in models:
    t0 = time.time()
    while float(load()) > LOAD_MAX and time.time() - t0 < WAIT_MAX: time.sleep(10)
    loads.append(load())
    tag = os.path.basename(path) + ("-nofuse" if extra else "")
    traces = []
    for k in range(1, min(2, os.cpu_count()) + 1):  # teams of every size the configs use here
        for i in range(5):
            tr = f"{OUT}/{tag}.seq{i}.k{k}.trace.json"
            subprocess.run([G, "run", path, "--executors", "1", "--threads", str(k), "--scheduler", "sequential",
                            "--iterations", "3", "--warmup", "2", "--trace", tr] + extra,
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            traces += ["--costs", tr]
    sim = json.loads(subprocess.run([G, "simulate", path, "--this-machine", "--json"] + traces + extra,
                                    check=True, capture_output=True, text=True).stdout)
    for p in sim["predictions"]:
        n, k, pol = p["executors"], p["threads"], p["policy"]
        r = subprocess.run([G, "run", path, "--executors", str(n), "--threads", str(k), "--scheduler", pol,
                            "--iterations", str(ITER), "--warmup", "3", "--json"] + extra,
                           capture_output=True, text=True)
        if r.returncode != 0:
            rows.append((name, f"{n}x{k}", pol, p["makespan_ms"], None, " ".join(r.stderr.strip().splitlines()[-1:]))); continue
        lat = json.loads(r.stdout)["latency_ms"]
        meas = lat["median"]
        rows.append((name, f"{n}x{k}", pol, p["makespan_ms"], meas, lat["min"]))
        print(f"{name:36s} {n}x{k} {pol:13s} predicted {p['makespan_ms']:9.3f} measured {meas:9.3f} ms", file=sys.stderr)
load_after = load()
within = [r for r in rows if r[4] and abs(r[3] / r[4] - 1) <= 0.25]
measured = [r for r in rows if r[4]]
within_min = [r for r in rows if r[4] and abs(r[3] / r[5] - 1) <= 0.25]
lines = [f"Machine: {cpu()}, {os.cpu_count()} CPUs (KVM guest); {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC; "
         f"load average {load_before} before, {', '.join(loads)} at each model's start, {load_after} after "
         f"(the machine is shared with other engineers' builds). {ITER} timed runs per point; per-op costs: "
         f"median over 5 traced sequential 1x1 runs (and 5 1x2 runs for teams of 2).",
         "", f"**{len(within)} of {len(measured)} points within 25% of the measured median, "
         f"{len(within_min)} within 25% of the measured minimum.**", "",
         "| model | config | policy | predicted ms | measured median ms | error | measured min ms | error vs min |",
         "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"]
for name, cfg, pol, pred, meas, mn in rows:
    if meas: lines.append(f"| {name} | {cfg} | {pol} | {pred:.3f} | {meas:.3f} | {100 * (pred / meas - 1):+.0f}% "
                          f"| {mn:.3f} | {100 * (pred / mn - 1):+.0f}% |")
    else: lines.append(f"| {name} | {cfg} | {pol} | {pred:.3f} | failed: {mn} | | | |")
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
