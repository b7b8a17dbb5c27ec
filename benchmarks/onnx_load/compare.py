#!/usr/bin/python3
"""graphi's own ONNX protobuf reader against libprotobuf (issue 16): load time, peak memory and
robustness on the same files. A throwaway comparison; the numbers and the decision are in
graph/onnx/ONNX.md ("Why graphi parses protobuf itself").

  /usr/bin/python3 benchmarks/onnx_load/compare.py [--build build] [--large DIR] [--mutants N]

Every load runs in its own child process (build/benchmarks/graphi_bench_onnx_load MODE FILE R):
MODE graphi = graph::onnx::decode_model, protobuf = onnx::ModelProto::ParseFromArray. Times are
medians over interleaved processes (each the median of R in-process parses); memory is the
child's peak RSS (getrusage ru_maxrss) minus the bytes of the file it holds. Robustness: the
mutants of scripts/fuzz_inputs.py (byte-level and ONNX-aware) are fed to both parsers under an
address-space cap; crashes (signals), hangs (timeouts) and huge allocations are counted.
--large DIR adds the models of benchmarks/onnx_load/make_models.py (generate them in a temp dir).
"""
import argparse
import importlib.util
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CAP_MB = 3072  # address-space cap of a fuzz child: a runaway allocation becomes bad_alloc


def run(bench, mode, path, repeats, timeout=120, cap_mb=None):
    def limits():
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if cap_mb:
            resource.setrlimit(resource.RLIMIT_AS, (cap_mb << 20, cap_mb << 20))
    t0 = time.monotonic()
    p = subprocess.Popen([bench, mode, path, str(repeats)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, preexec_fn=limits)
    hung = False
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() - t0 > timeout:
            p.kill()
            _, status, ru = os.wait4(p.pid, 0)
            hung = True
            break
        time.sleep(0.002)
    p.returncode = 0
    out = p.stdout.read().decode("utf-8", "replace")
    err = p.stderr.read().decode("utf-8", "replace")
    res = {"hung": hung, "maxrss_kb": ru.ru_maxrss, "stderr": err[-300:]}
    if os.WIFSIGNALED(status):
        res["signal"] = os.WTERMSIG(status)
    else:
        res["rc"] = os.WEXITSTATUS(status)
    try:
        res.update(json.loads(out.strip().splitlines()[-1]))
    except (ValueError, IndexError):
        pass
    return res


def timing(bench, files, procs):
    rows = []
    for path in files:
        size = os.path.getsize(path)
        repeats = 1 if size > 20 << 20 else 3 if size > 2 << 20 else 20
        ms = {"graphi": [], "protobuf": []}
        mem = {"graphi": [], "protobuf": []}
        for _ in range(procs):  # interleaved: graphi, protobuf, graphi, ...
            for mode in ("graphi", "protobuf"):
                r = run(bench, mode, path, repeats)
                if not r.get("ok"):
                    ms[mode].append(float("nan"))
                    continue
                ms[mode].append(r["median_ms"])
                # peak minus what the process held before parsing (binary + the file bytes)
                mem[mode].append((r["maxrss_kb"] - r["rss_file_kb"]) / 1024.0)
        rows.append((os.path.relpath(path, REPO) if path.startswith(REPO) else path, size,
                     statistics.median(ms["graphi"]), statistics.median(ms["protobuf"]),
                     statistics.median(mem["graphi"]) if mem["graphi"] else float("nan"),
                     statistics.median(mem["protobuf"]) if mem["protobuf"] else float("nan")))
        print("%-60s %9.1f KB  graphi %9.3f ms %7.1f MB | protobuf %9.3f ms %7.1f MB" %
              (rows[-1][0], size / 1024, rows[-1][2], rows[-1][4], rows[-1][3], rows[-1][5]),
              flush=True)
    return rows


def fuzz(bench, graphi, count, seed):
    spec = importlib.util.spec_from_file_location("fuzz_inputs",
                                                  os.path.join(REPO, "scripts/fuzz_inputs.py"))
    fz = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fz)
    work = tempfile.mkdtemp(prefix="graphi_pbcmp_")
    rng = random.Random(seed)
    seeds = fz.collect_seeds(work, graphi, False)
    cases = [c for c in fz.make_cases(rng, seeds, count, work) if c.path.endswith(".onnx")
             and os.path.dirname(c.path) == work]
    tally = {m: {"parsed": 0, "refused": 0, "crash": 0, "hang": 0, "huge": 0, "max_rss_mb": 0}
             for m in ("graphi", "protobuf")}
    disagree = {"graphi refuses, protobuf parses": 0, "graphi parses, protobuf refuses": 0}
    bad = []
    for c in cases:
        verdict = {}
        for mode in ("graphi", "protobuf"):
            r = run(bench, mode, c.path, 1, timeout=10, cap_mb=CAP_MB)
            t = tally[mode]
            t["max_rss_mb"] = max(t["max_rss_mb"], r["maxrss_kb"] // 1024)
            if r["hung"]:
                t["hang"] += 1
                v = "hang"
            elif "bad_alloc" in r["stderr"] or r["maxrss_kb"] > 1 << 20:
                t["huge"] += 1
                v = "huge"
            elif "signal" in r:
                t["crash"] += 1
                v = "crash"
            elif r.get("ok"):
                t["parsed"] += 1
                v = "parsed"
            else:
                t["refused"] += 1
                v = "refused"
            verdict[mode] = v
            if v in ("hang", "huge", "crash"):
                bad.append((mode, v, c.mutator, c.path))
        if verdict["graphi"] == "refused" and verdict["protobuf"] == "parsed":
            disagree["graphi refuses, protobuf parses"] += 1
        if verdict["graphi"] == "parsed" and verdict["protobuf"] == "refused":
            disagree["graphi parses, protobuf refuses"] += 1
    return len(cases), tally, disagree, bad, work


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    ap.add_argument("--large", help="folder of make_models.py's models")
    ap.add_argument("--procs", type=int, default=3, help="interleaved processes per parser")
    ap.add_argument("--mutants", type=int, default=600, help="fuzz cases to generate")
    ap.add_argument("--seed", type=int, default=16)
    ap.add_argument("--skip-timing", action="store_true")
    a = ap.parse_args()
    bench = os.path.join(a.build, "benchmarks/graphi_bench_onnx_load")
    graphi = os.path.join(a.build, "graphi")
    if not os.path.exists(bench):
        sys.exit("%s is not built (needs libprotobuf-dev, protobuf-compiler, onnx-ml.proto)" % bench)
    if not a.skip_timing:
        files = []
        for folder in ("tests/data/onnx_zoo", "tests/data/onnx"):
            full = os.path.join(REPO, folder)
            files += sorted(os.path.join(full, f) for f in os.listdir(full) if f.endswith(".onnx"))
        small = timing(bench, files, a.procs)
        ratio = [g / p for _, _, g, p, _, _ in small if p > 0]
        print("small models: %d; graphi/protobuf time ratio: median %.2f, min %.2f, max %.2f; "
              "sum graphi %.1f ms, protobuf %.1f ms" %
              (len(small), statistics.median(ratio), min(ratio), max(ratio),
               sum(r[2] for r in small), sum(r[3] for r in small)))
        if a.large:
            timing(bench, sorted(os.path.join(a.large, f) for f in os.listdir(a.large)
                                 if f.endswith(".onnx")), a.procs)
    n, tally, disagree, bad, work = fuzz(bench, graphi, a.mutants, a.seed)
    print("fuzz: %d .onnx mutants from scripts/fuzz_inputs.py (seed %d), cap %d MB address space"
          % (n, a.seed, CAP_MB))
    for mode, t in tally.items():
        print("  %-9s %s" % (mode, json.dumps(t)))
    print("  disagreements: %s" % json.dumps(disagree))
    for b in bad[:20]:
        print("  BAD %s %s (%s) %s" % b)
    print("  mutants kept in %s" % work)


if __name__ == "__main__":
    main()
