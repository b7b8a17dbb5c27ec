"""The torch.compile backend "graphi" measured (benchmarks/README.md, "PyTorch 2 backend").

    scripts/bench_torch.sh [--budget-ms 400] [--rounds 3]

(1) Per-call overhead: the same small graphs run four ways in one process, interleaved:
    torch.compile(m, backend="graphi") called with a torch tensor (dynamo's guards, the backend's
    signature and weight checks, tensor -> numpy, graphi.Session.run, torch.from_numpy), the
    very graphi.Session the backend made, called directly with a numpy array (s.run({name: x})),
    eager PyTorch, and torch.compile(m, backend="eager") (dynamo's own cost). Overhead =
    backend median - Session median, split into dynamo's part and graphi.torch's.
(2) nn.LSTM(256, 256), batch 1, 100 steps: compiled (graphi team of 1 and of 2 threads) against
    eager PyTorch 2.13 at torch.set_num_threads(1) and (2); speedup = best eager / best graphi
    (issue 14: >= 2x). Right after each compiled sample set, the same graphi Session called
    directly (its native run, as lstm_breakdown.py does): compiled - Session = the backend's
    per-call overhead on this model.
All under torch.inference_mode(); medians over `rounds` interleaved rounds of `budget` ms each
per variant (order rotated per round), after a warm-up.
"""
import argparse
import gc
import os
import statistics
import sys
import time

import numpy as np
import torch

import graphi
import graphi.torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import roofline_probe  # noqa: E402 (benchmarks/roofline_probe.py)


def timed(fn, budget_ms, min_samples=20):
    samples = []
    start = time.perf_counter()
    while len(samples) < min_samples or (time.perf_counter() - start) * 1e3 < budget_ms:
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e6)
        if len(samples) >= 20000:
            break
    return samples


def run_interleaved(variants, rounds, budget_ms):
    """variants: {name: callable}; returns {name: median us} over all rounds' samples."""
    samples = {k: [] for k in variants}
    names = list(variants)
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for k in order:
            samples[k] += timed(variants[k], budget_ms)
            time.sleep(0.02)
    return {k: statistics.median(v) for k, v in samples.items()}


def only_session(before):
    """The graphi Session the backend made since index `before` of graphi.torch._functions."""
    sessions = [c for f in graphi.torch.graphs(before) for c in f.compiled.values()
                if isinstance(c, graphi.torch._Compiled)]
    assert len(sessions) == 1, sessions
    return sessions[0]


def overhead(args):
    torch.manual_seed(0)
    models = {
        "Linear 64x64, batch 1": (torch.nn.Linear(64, 64), (1, 64)),
        "MLP 3 layers 256, batch 8": (torch.nn.Sequential(
            torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
            torch.nn.ReLU(), torch.nn.Linear(256, 10)), (8, 256)),
    }
    rows = []
    for name, (m, shape) in models.items():
        m.eval()
        torch.set_num_threads(1)
        before = len(graphi.torch._functions)
        f = torch.compile(m, backend="graphi")
        x = torch.randn(*shape)
        xn = x.numpy()
        with torch.inference_mode():
            want = m(x)
            got = f(x)
            c = only_session(before)
            direct = c.session.run({c.input_pos[0][1]: xn})[c.output_names[0]]
            assert float((got - want).abs().max()) < 1e-4
            assert float(np.abs(direct - want.numpy()).max()) < 1e-4
            iname = c.input_pos[0][1]
            fe = torch.compile(m, backend="eager")  # dynamo's own cost: guards, frame, FX call
            fe(x)
            med = run_interleaved({
                "backend": lambda: f(x),
                "session": lambda: c.session.run({iname: xn}),
                "eager": lambda: m(x),
                "dynamo_eager": lambda: fe(x),
            }, args.rounds, args.budget_ms)
        rows.append((name, med))
    return rows


def lstm(args):
    """One graphi Session at a time: each graphi sample set compiles afresh and drops its
    Session afterwards (torch._dynamo.reset()), so a 1-thread and a 2-thread team never share
    the process (that is the several-Sessions case, measured by itself in issue 14)."""
    torch._dynamo.reset()  # drops part (1)'s Sessions
    gc.collect()
    torch.manual_seed(0)
    m = torch.nn.LSTM(256, 256).eval()
    x = torch.randn(100, 1, 256)
    names = ["graphi threads 1", "graphi threads 2", "eager threads 1", "eager threads 2"]
    samples = {k: [] for k in names}
    session_samples = {k: [] for k in names if k.startswith("graphi")}
    configs = {}
    with torch.inference_mode():
        want = m(x)[0]
        for r in range(args.rounds):
            for k in names[r % 4:] + names[:r % 4]:
                t = int(k[-1])
                if k.startswith("graphi"):
                    torch._dynamo.reset()
                    gc.collect()
                    before = len(graphi.torch._functions)
                    f = torch.compile(m, backend="graphi", options={"threads": t})
                    err = float((f(x)[0] - want).abs().max())
                    assert err < 1e-4, err
                    samples[k] += timed(lambda: f(x), args.budget_ms)
                    # The Session of the graph dynamo made last (a recompile may leave two).
                    c = [v for g in graphi.torch.graphs(before) for v in g.compiled.values()
                         if isinstance(v, graphi.torch._Compiled)][-1]
                    configs[k] = c.session.config
                    feed = [(c.input_pos[0][1], x.numpy())]
                    session_samples[k] += timed(lambda: c.session._s.run(feed), args.budget_ms / 2)
                    del f, c
                    torch._dynamo.reset()
                    gc.collect()
                else:
                    torch.set_num_threads(t)
                    m(x)
                    samples[k] += timed(lambda: m(x), args.budget_ms)
                time.sleep(0.02)
    torch.set_num_threads(1)
    med = {k: statistics.median(v) for k, v in samples.items()}
    med_session = {k: statistics.median(v) for k, v in session_samples.items()}
    return med, med_session, configs


def lstm_bounds(probe, T=100, B=1, I=256, H=256):
    """Bounds (ms) of any LSTM kernel for nn.LSTM(I, H) on this machine: the hoisted input GEMM
    (2 T B I 4H flops) at the FMA peak, plus R (4H x H floats, L2-resident on 2 cores of 1 MiB
    each) read from L2 every step; and with the two perfectly overlapped, the larger of all
    flops at the FMA peak and R's reads."""
    gemm_s = 2.0 * T * B * I * 4 * H / (probe["fma_gflops"] * 1e9)
    r_s = T * 4 * H * H * 4 / (probe["l2_gbs"] * 1e9)
    all_s = 2.0 * T * B * (I + H) * 4 * H / (probe["fma_gflops"] * 1e9)
    return (gemm_s + r_s) * 1e3, max(all_s, r_s) * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--budget-ms", type=float, default=400)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--build-dir", default="build", help="where graphi_bench_rnn (the roofline "
                    "probe) is")
    args = ap.parse_args()
    with open("/proc/loadavg") as fh:
        load0 = " ".join(fh.read().split()[:3])
    print("torch %s, graphi backend, %d rounds x %.0f ms per variant; load average %s" % (
        torch.__version__, args.rounds, args.budget_ms, load0), flush=True)
    rows = overhead(args)
    print("\n(1) per-call overhead (median us per call)")
    print("%-26s %8s %8s %8s %13s %9s %8s %8s" % (
        "graph", "backend", "Session", "eager", "dynamo+eager", "overhead", "dynamo", "graphi.torch"))
    for name, med in rows:
        over = med["backend"] - med["session"]
        dyn = med["dynamo_eager"] - med["eager"]
        print("%-26s %8.1f %8.1f %8.1f %13.1f %9.1f %8.1f %8.1f" % (
            name, med["backend"], med["session"], med["eager"], med["dynamo_eager"], over, dyn,
            over - dyn))
    print("overhead = backend - Session; dynamo = torch.compile(backend='eager') - eager (guards,"
          " frame evaluation); graphi.torch = the rest (signature and weight checks, tensor <->"
          " numpy, the native run call)")
    med, med_session, configs = lstm(args)
    print("\n(2) nn.LSTM(256, 256), batch 1, 100 steps (median ms per call)")
    for k, v in med.items():
        extra = ""
        if k in med_session:
            extra = "   Session direct %.3f, overhead %.1f us (%s)" % (
                med_session[k] / 1e3, v - med_session[k], configs.get(k, "?"))
        print("%-20s %8.3f%s" % (k, v / 1e3, extra))
    best_e_name = min((k for k in med if k.startswith("eager")), key=med.get)
    best_g_name = min((k for k in med if k.startswith("graphi")), key=med.get)
    print("best eager (%s) / best compiled (%s) = %.2fx   [issue 14: >= 2.00x]" % (
        best_e_name, best_g_name, med[best_e_name] / med[best_g_name]))
    probe = roofline_probe.probe(args.build_dir, 2)
    if probe:
        serial, overlap = lstm_bounds(probe)
        eager = med[best_e_name] / 1e3
        print("bound of any kernel here (2 threads: FMA %.0f GFLOP/s, L2 %.0f GB/s): %.3f ms "
              "(input GEMM, then R from L2 every step), %.3f ms with the two overlapped; best "
              "eager / bound = %.2fx, %.2fx: the largest speed-up any backend could show" % (
                  probe["fma_gflops"], probe["l2_gbs"], serial, overlap, eager / serial,
                  eager / overlap))
    else:
        print("bound: not probed (build graphi_bench_rnn)")
    with open("/proc/loadavg") as fh:
        print("load average at the end: %s" % " ".join(fh.read().split()[:3]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
