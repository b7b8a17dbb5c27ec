#!/usr/bin/env bash
# Profiler benchmark (issue 10; docs/PROFILER.md):
#  A. `graphi profile --compare-exhaustive --top-k 2`: does the cost model's top 2 hold the split
#     exhaustive calibration finds fastest (model rank of the true best, makespan lost, calibration
#     time), and `graphi profile --top-k 2` alone: its choice against the exhaustive best and how
#     long profiling took.
#  B. `graphi run` with no flags (the quick analytical choice, then the plan cached by profile)
#     against --executors 1 --threads 1, --threads 2 and --executors 2: medians of each variant's
#     per-process median latency over interleaved rounds.
# Models: a 4-layer LSTM (hidden 128, 30 steps, batch 1) unfused (--no-fuse) and fused, and the
# mobilenetish CNN of tests/data/onnx_zoo. Prints markdown tables.
#   scripts/bench_profile.sh [--rounds R] [--iterations N] [--runs R]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${GRAPHI_BUILD_DIR:-build}
ROUNDS=7 ITERS=30 RUNS=10
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) ROUNDS=$2; shift 2 ;;
    --iterations) ITERS=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    *) echo "usage: $0 [--rounds R] [--iterations N] [--runs R]" >&2; exit 2 ;;
  esac
done
/usr/bin/cmake --build "$BUILD_DIR" --target graphi -j "$(nproc)" > /dev/null
exec /usr/bin/python3 - "$BUILD_DIR/graphi" "$ROUNDS" "$ITERS" "$RUNS" <<'PY'
import json, os, statistics, subprocess, sys, tempfile
graphi, rounds, iters, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
work = tempfile.mkdtemp(prefix="bench_profile.")
rnn_cache = os.path.join(work, "rnn")          # RNN schedules: shared by every run
os.makedirs(rnn_cache)
def sh(args, cache, check=True):
    env = dict(os.environ, GRAPHI_CACHE_DIR=cache)
    r = subprocess.run([graphi] + args, capture_output=True, text=True, env=env)
    if check and r.returncode != 0:
        sys.exit("failed: graphi %s\n%s" % (" ".join(args), r.stderr))
    return r
lstm = os.path.join(work, "lstm4.graphi")
sh(["model", "lstm", "--input", "128", "--hidden", "128", "--layers", "4", "--seq", "30", "-o", lstm], rnn_cache)
models = [("LSTM 4x128x30 unfused", lstm, ["--no-fuse"]),
          ("LSTM 4x128x30 fused", lstm, []),
          ("mobilenetish (onnx_zoo)", "tests/data/onnx_zoo/mobilenetish_op13.onnx", [])]
def name(c): return "%dx%d %s" % (c["executors"], c["threads"], c["scheduler"])

print("## A. graphi profile: cost model top-2 vs exhaustive calibration (--runs %d)\n" % runs)
print("| model | configs | fastest (exhaustive) | model's rank of it | top-2 picks | lost | calibration top-2 / all | `--top-k 2` chose | vs fastest | profiling time |")
print("|---|---|---|---|---|---|---|---|---|---|")
plan_caches = {}
for label, path, flags in models:
    # The RNN schedule search happens in the first runs; keep it out of the measurements.
    sh(["run", path, "--no-plan", "--iterations", "1"] + flags, rnn_cache)
    ex = json.loads(sh(["profile", path, "--compare-exhaustive", "--top-k", "2", "--json", "--quiet",
                        "--no-cache", "--runs", str(runs)] + flags, rnn_cache).stdout)
    c = ex["compare_exhaustive"]
    cache = os.path.join(work, "plans_" + str(len(plan_caches)))
    os.makedirs(cache)
    # the plan cache directory also holds the RNN schedules: start it from the warm ones
    if os.path.exists(os.path.join(rnn_cache, "rnn_schedules.json")):
        with open(os.path.join(rnn_cache, "rnn_schedules.json")) as f, open(os.path.join(cache, "rnn_schedules.json"), "w") as g:
            g.write(f.read())
    top = json.loads(sh(["profile", path, "--top-k", "2", "--json", "--quiet", "--runs", str(runs)] + flags, cache).stdout)
    plan_caches[label] = cache
    ch = top["chosen"]
    ex_ms = {(x["executors"], x["threads"], x["scheduler"]): x.get("makespan_ms") for x in ex["configs"]}
    chosen_ex = ex_ms.get((ch["executors"], ch["threads"], ch["scheduler"]))
    vs = "%+.1f%%" % ((chosen_ex / c["true_best_ms"] - 1) * 100) if chosen_ex else "n/a"
    print("| %s | %d | %s %.3f ms | %d | %s %.3f ms | %+.1f%% | %.1f s / %.1f s | %s | %s | %.1f s |" % (
        label, len(ex["configs"]), c["true_best"], c["true_best_ms"], c["true_best_model_rank"],
        c["top_k_choice"], c["top_k_ms"], c["lost_pct"], c["top_k_s"], c["exhaustive_s"], name(ch), vs,
        top["profiling_s"]))

print("\n## B. graphi run: no flags vs fixed splits (median of per-process medians, %d interleaved rounds x %d iterations)\n" % (rounds, iters))
variants = [("no flags, no plan cached", None, []), ("no flags, plan cached by profile", "plan", []),
            ("1x1 sequential", None, ["--executors", "1", "--threads", "1"]),
            ("1x2 (--threads 2)", None, ["--threads", "2"]), ("2x1 (--executors 2)", None, ["--executors", "2"])]
print("| model | " + " | ".join(v[0] for v in variants) + " | no flags vs best fixed |")
print("|---|" + "---|" * (len(variants) + 1))
for label, path, flags in models:
    samples = {v[0]: [] for v in variants}
    chosen = {}
    for r in range(rounds):
        order = variants[r % len(variants):] + variants[:r % len(variants)]  # rotate: interleaved
        for vname, cache_kind, vflags in order:
            cache = plan_caches[label] if cache_kind == "plan" else rnn_cache
            res = sh(["run", path, "--json", "--iterations", str(iters), "--warmup", "3"] + flags + vflags, cache)
            j = json.loads(res.stdout)
            samples[vname].append(j["latency_ms"]["median"])
            chosen[vname] = "%dx%d" % (j["config"]["executors"], j["config"]["threads"])
    med = {k: statistics.median(v) for k, v in samples.items()}
    best_fixed = min(med[v[0]] for v in variants[2:])
    cells = ["%.3f ms (%s)" % (med[v[0]], chosen[v[0]]) if v[1] is not None or not v[2] else "%.3f ms" % med[v[0]]
             for v in variants]
    worst_auto = max(med[variants[0][0]], med[variants[1][0]])
    print("| %s | %s | %+.1f%% / %+.1f%% |" % (label, " | ".join(cells),
          (med[variants[0][0]] / best_fixed - 1) * 100, (med[variants[1][0]] / best_fixed - 1) * 100))
print("\n(work directory: %s)" % work)
PY
