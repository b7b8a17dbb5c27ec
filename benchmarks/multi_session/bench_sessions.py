#!/usr/bin/python3
"""Several graphi Sessions in one process against the same Sessions in separate processes on the
same cores (issue 14, "Several models in one process").

    PYTHONPATH=build/python /usr/bin/python3 benchmarks/multi_session/bench_sessions.py \
        --graphi build/graphi [--models lstm,gru,tests/data/onnx_zoo/mobilenetish_op13.onnx] \
        [--sessions 2,4,8] [--threads 2] [--seconds 3] [--rounds 3] [--modes default,processes]

Models: `lstm` / `gru` are the makespan RNNs (`graphi model`, E = H = 256, 4 layers, batch 1,
50 steps; fused into sequence ops), anything else an ONNX file; Session i runs model i mod the
count. N Sessions of 1 executor x `threads` (sequential scheduler), each driven by its own caller
in a closed loop for `seconds`. Modes, each sample set in a fresh process:
  1 proc, default  N Python threads in one process, one Session each (run() releases the GIL),
                   GRAPHI_SHARED_TEAMS unset: a run that starts while others hold the CPUs gets
                   a team of 1 (engine/run_width.h)
  1 proc, own      the same with GRAPHI_SHARED_TEAMS=0: every run opens its full team on its
                   caller (libgomp: a worker pool per caller thread)
  1 proc, leader   GRAPHI_SHARED_TEAMS=1: the runs take turns on one process-wide team
                   (engine/team_leader.h)
  N processes      N copies of this script (--worker), one Session each, started together
Reported per mode: total runs/s, work (sum over Sessions of runs/s x that model's run time
alone: how many Sessions' worth of busy time the mode delivers, comparable across mixes of
short and long models), median and p90 latency, and each Session's runs/s against the same
Session in its own process (geometric mean and minimum), and per model the smallest ratio of its
Sessions (issue 14's "never slower by more than 10% per Session": every value >= 0.90). Modes
alternate over `rounds` (order rotated); medians over rounds. Outputs are checked against a 1x1
Session's.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

import graphi


def inputs_for(s):
    rng = np.random.default_rng(0)
    return {t.name: rng.uniform(-1, 1, t.shape).astype(np.float32) for t in s.inputs}


def drive(s, feed, seconds, start_at):
    """Closed loop on one Session until start_at + seconds; returns the run latencies (ms)."""
    while time.time() < start_at:
        time.sleep(0.001)
    lat = []
    end = start_at + seconds
    while time.time() < end or not lat:  # at least one run (a loaded machine may start late)
        t0 = time.perf_counter()
        s.run(feed)
        lat.append((time.perf_counter() - t0) * 1e3)
    return lat


def worker(args):
    s = graphi.Session(args.model, threads=args.threads)
    feed = inputs_for(s)
    s.run(feed)
    lat = drive(s, feed, args.seconds, args.start_at)
    sys.stdout.write(" ".join("%.4f" % v for v in lat) + "\n")


def model_list(arg):
    return arg.split(",")


def inproc_worker(args):
    """--inproc N: N Sessions and N caller threads in this (fresh) process; one line of
    latencies per caller. A fresh process per sample set, because libgomp keeps the worker pool
    of every thread that opened a team until that thread exits: a warm-up on the main thread
    in one mode would leave a pool behind that throttles the next mode."""
    models = model_list(args.model)
    sessions = [graphi.Session(models[i % len(models)], threads=args.threads)
                for i in range(args.inproc)]
    feeds = [inputs_for(s) for s in sessions]
    results = [None] * args.inproc
    start_at = time.time() + 0.5

    def go(i):
        sessions[i].run(feeds[i])  # warm-up on the caller thread itself
        results[i] = drive(sessions[i], feeds[i], args.seconds, start_at)
    ts = [threading.Thread(target=go, args=(i,)) for i in range(args.inproc)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for lat in results:
        sys.stdout.write(" ".join("%.4f" % v for v in lat) + "\n")


SHARING = {"1 proc, default": None, "1 proc, own": "0", "1 proc, leader": "1"}


def env_for(sharing):
    env = dict(os.environ)
    env.pop("GRAPHI_SHARED_TEAMS", None)
    if sharing is not None:
        env["GRAPHI_SHARED_TEAMS"] = sharing
    return env


def one_process(models, n, threads, seconds, sharing=None):
    env = env_for(sharing)
    r = subprocess.run([sys.executable, __file__, "--inproc", str(n), "--model", ",".join(models),
                        "--threads", str(threads), "--seconds", str(seconds)],
                       stdout=subprocess.PIPE, text=True, env=env)
    if r.returncode != 0:
        sys.exit("in-process worker failed with code %d" % r.returncode)
    return [[float(v) for v in line.split()] for line in r.stdout.splitlines()]


def separate_processes(models, n, threads, seconds):
    start_at = time.time() + 3.0 + 0.3 * n  # time for the interpreters to start and load
    env = env_for(None)  # one Session per process: its runs never meet another's
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", "--model",
                               models[i % len(models)],
                               "--threads", str(threads), "--seconds", str(seconds),
                               "--start-at", repr(start_at)],
                              stdout=subprocess.PIPE, text=True, env=env)
             for i in range(n)]
    out = []
    for p in procs:
        stdout, _ = p.communicate()
        if p.returncode != 0:
            sys.exit("worker failed with code %d" % p.returncode)
        out.append([float(v) for v in stdout.split()])
    return out


def summary(lat_lists, seconds):
    allv = [v for lat in lat_lists for v in lat]
    return {"rps": len(allv) / seconds, "p50": statistics.median(allv),
            "p90": sorted(allv)[int(0.9 * (len(allv) - 1))]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--graphi", default="build/graphi")
    ap.add_argument("--sessions", default="2,4")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--inproc", type=int)
    ap.add_argument("--model")
    ap.add_argument("--models", default="lstm",
                    help="comma-separated: lstm, gru (graphi model, 4x256, T50) or .onnx files; "
                         "session i runs model i mod the count")
    ap.add_argument("--start-at", type=float)
    ap.add_argument("--modes", default="default,own,leader,processes",
                    help="comma-separated subset of default, own, leader, processes "
                         "(processes is always run: the ratios are against it)")
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    if args.inproc:
        return inproc_worker(args)
    tmp = tempfile.mkdtemp(prefix="graphi_sessions_")
    models, names = [], []
    for kind in args.models.split(","):
        if kind in ("lstm", "gru"):  # the makespan RNN: E = H = 256, 4 layers, batch 1, 50 steps
            path = os.path.join(tmp, kind + ".graphi")
            subprocess.run([args.graphi, "model", kind, "--input", "256", "--hidden", "256",
                            "--layers", "4", "--batch", "1", "--seq", "50", "-o", path],
                           check=True, stdout=subprocess.DEVNULL)
            names.append("%s 4x256 T50" % kind.upper())
        else:  # an ONNX file, e.g. the zoo's CNN
            path = kind
            names.append(os.path.basename(kind))
        models.append(path)
    errs = []
    for path in models:
        ref = graphi.Session(path, threads=1)
        feed = inputs_for(ref)
        want = ref.run(feed)
        got = graphi.Session(path, threads=args.threads).run(feed)
        errs.append(max(float(np.max(np.abs(got[k] - want[k]))) for k in want))
        del ref
    # Each model alone (its own process, one caller): the cost of one run, so that modes can be
    # compared by the work they get done (sum over Sessions of runs/s x alone time) whatever
    # the mix of run lengths.
    alone = [statistics.median(one_process([m], 1, args.threads, min(args.seconds, 2.0))[0])
             for m in models]
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print("alone, one Session 1x%d: %s" % (args.threads, ", ".join(
        "%s %.3f ms" % (nm, t) for nm, t in zip(names, alone))))
    print("models (session i runs model i mod %d): %s; Sessions 1x%d sequential; %.0f s per "
          "mode, %d rounds; max |diff| to 1x1 %.1e; OMP_WAIT_POLICY=%s; load average %s" % (
              len(models), ", ".join(names), args.threads, args.seconds, args.rounds, max(errs),
              os.environ.get("OMP_WAIT_POLICY", "(unset)"), load), flush=True)
    print("work = sum over Sessions of runs/s x the model's alone time (1.0 = one Session busy "
          "all the time); ratios: each Session's runs/s against the same Session in its own "
          "process (geometric mean, minimum)")
    print("%-9s %-16s %10s %8s %10s %10s %10s %10s" % ("sessions", "mode", "runs/s", "work",
                                                        "p50 ms", "p90 ms", "geo ratio",
                                                        "min ratio"))
    for n in [int(v) for v in args.sessions.split(",")]:
        wanted = set(args.modes.split(",")) | {"processes"}
        modes = [m for m in list(SHARING) + ["processes"] if m.split(", ")[-1] in wanted]
        res = {m: [] for m in modes}
        per = {m: [] for m in modes}  # per round: runs/s of each Session
        for r in range(args.rounds):
            for mode in modes[r % len(modes):] + modes[:r % len(modes)]:
                if mode == "processes":
                    lat = separate_processes(models, n, args.threads, args.seconds)
                else:
                    lat = one_process(models, n, args.threads, args.seconds, SHARING[mode])
                res[mode].append(summary(lat, args.seconds))
                per[mode].append([len(v) / args.seconds for v in lat])
        # Each Session's median runs/s over rounds, against the same Session in its own process.
        med_per = {m: [statistics.median(rd[i] for rd in per[m]) for i in range(n)] for m in modes}
        ratios = {m: [a / b if b else float("nan") for a, b in zip(med_per[m], med_per["processes"])]
                  for m in modes}
        work = {m: sum(r * alone[i % len(models)] / 1e3 for i, r in enumerate(med_per[m]))
                for m in modes}
        for mode, rs in res.items():
            med = {k: statistics.median(x[k] for x in rs) for k in ("rps", "p50", "p90")}
            geo = float(np.exp(np.mean(np.log(np.maximum(ratios[mode], 1e-9)))))
            label = "%d processes" % n if mode == "processes" else mode
            print("%-9d %-16s %10.1f %8.2f %10.2f %10.2f %10.2f %10.2f" % (
                n, label, med["rps"], work[mode], med["p50"], med["p90"], geo,
                min(ratios[mode])), flush=True)
        print("%-9d one process / processes, work: %s" % (n, ", ".join(
            "%s %.2f" % (m.split(", ")[1], work[m] / work["processes"]) for m in modes
            if m != "processes")), flush=True)
        for m in modes:
            if m == "processes":
                continue
            per_model = []
            for k, nm in enumerate(names):
                rs = [ratios[m][i] for i in range(n) if i % len(models) == k]
                if rs:
                    per_model.append("%s %.2f" % (nm, min(rs)))
            print("%-9d %s: runs/s per Session against its own process, smallest per model: %s"
                  % (n, m, ", ".join(per_model)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
