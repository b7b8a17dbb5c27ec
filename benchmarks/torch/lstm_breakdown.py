"""Where the time of torch.compile(nn.LSTM(256, 256), backend="graphi") goes, batch 1, 100 steps
(benchmarks/README.md, "PyTorch 2 backend").

    PYTHONPATH=build/python .venv/bin/python benchmarks/torch/lstm_breakdown.py [--threads 2] [--rounds 4]

Interleaved medians of: the compiled module (dynamo + backend + Session), the backend's
GraphiFunction called with the arguments dynamo passes it (so compiled - GraphiFunction =
dynamo's frame evaluation and guards), the native Session run alone, and eager PyTorch at the
same thread count; then the parts of graphi.torch's call path one by one, and the ops of the
Session from graphi's trace.
"""
import argparse
import json
import os
import statistics
import tempfile
import time

import torch

import graphi
import graphi.torch


def median_us(fn, n):
    s = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        s.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(s)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--calls", type=int, default=400)
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    m = torch.nn.LSTM(256, 256).eval()
    x = torch.randn(100, 1, 256)
    with torch.inference_mode():
        f = torch.compile(m, backend="graphi", options={"threads": args.threads})
        want = m(x)[0]
        assert float((f(x)[0] - want).abs().max()) < 1e-4
        g = graphi.torch.graphs()[0]
        c = [v for v in g.compiled.values() if isinstance(v, graphi.torch._Compiled)][0]
        seen = {}
        real = graphi.torch.GraphiFunction.__call__

        def spy(self, *a):
            seen["args"] = a
            return real(self, *a)
        graphi.torch.GraphiFunction.__call__ = spy
        f(x)
        graphi.torch.GraphiFunction.__call__ = real
        a = seen["args"]
        xs = a[c.input_pos[0][0]]
        feed = [(c.input_pos[0][1], xs.numpy())]
        out = c.session._s.run(feed)
        variants = {"compiled module": lambda: f(x), "GraphiFunction": lambda: g(*a),
                    "Session.run (native)": lambda: c.session._s.run(feed),
                    "eager PyTorch": lambda: m(x)}
        res = {k: [] for k in variants}
        for r in range(args.rounds):
            names = list(variants)
            for k in names[r % 4:] + names[:r % 4]:
                res[k].append(median_us(variants[k], args.calls))
        med = {k: statistics.median(v) for k, v in res.items()}
        n = 5000
        parts = {
            "weight checks": median_us(lambda: g._consts_changed(a), n),
            "signature": median_us(lambda: g._signature(a), n),
            "tensor.numpy()": median_us(lambda: xs.numpy(), n),
            "flags": median_us(lambda: (xs.requires_grad, xs.is_contiguous()), n),
            "from_numpy x outputs": median_us(
                lambda: tuple(torch.from_numpy(out[k][1]) for k in c.output_pos), n),
        }
        s = c.session
        s.tracing = True
        ops = {}
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.json")
            for i in range(100):
                s._s.run(feed)
                if i % 10 == 9:
                    s.trace(path)
                    with open(path) as fh:
                        ev = json.load(fh)
                    for e in ev["traceEvents"] if isinstance(ev, dict) else ev:
                        if e.get("ph") == "X":
                            ops.setdefault(e["name"], []).append(e["dur"])
        s.tracing = False
    with open("/proc/loadavg") as fh:
        load = " ".join(fh.read().split()[:3])
    print("nn.LSTM(256, 256) b1 T100, threads %d (%s); load average %s" % (
        args.threads, c.session.config, load))
    for k, v in med.items():
        print("%-24s %9.1f us" % (k, v))
    print("dynamo (compiled - GraphiFunction)   %7.1f us" % (med["compiled module"] -
                                                         med["GraphiFunction"]))
    print("graphi.torch parts: " + ", ".join("%s %.2f us" % kv for kv in parts.items()))
    print("Session ops (trace, median us): " + ", ".join(
        "%s %.1f" % (k, statistics.median(v)) for k, v in ops.items()))
    print("eager / compiled = %.2fx; eager / LSTM op alone = %.2fx" % (
        med["eager PyTorch"] / med["compiled module"],
        med["eager PyTorch"] / statistics.median(ops.get("LSTM", [float("nan")]))))


if __name__ == "__main__":
    main()
