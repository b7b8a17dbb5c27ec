#!/usr/bin/env python3
"""Step time of training a 2-layer FUSED LSTM classifier: graphi (`graphi train`, ONNX LSTM nodes,
BPTT kernels of ops/rnn/rnn_train.h) against PyTorch eager (nn.LSTM + nn.Linear, same sizes), SGD,
cross-entropy. Rounds are interleaved (graphi, torch, graphi, ...); each side reports the median
of its per-step times over all rounds, the first WARMUP steps of every round excluded.

  python3 benchmarks/training/bench_fused_lstm_train.py [--graphi build/graphi] [--threads 2]
      [--seq 20] [--batch 64] [--input 128] [--hidden 256] [--classes 10] [--steps 12]
      [--rounds 5]

Needs numpy, onnx and torch (any of /usr/bin/python3's torch 1.13 or the bench venv's torch 2).
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

WARMUP = 2


def make_model(a, path, npz):
    rng = np.random.default_rng(0)
    T, N, I, H, C = a.seq, a.batch, a.input, a.hidden, a.classes
    u = lambda shape, s: rng.uniform(-s, s, size=shape).astype(np.float32)
    s = 1 / np.sqrt(H)
    p = {"l0/W": u((1, 4 * H, I), s), "l0/R": u((1, 4 * H, H), s), "l0/B": u((1, 8 * H), s),
         "l1/W": u((1, 4 * H, H), s), "l1/R": u((1, 4 * H, H), s), "l1/B": u((1, 8 * H), s),
         "fc/W": u((C, H), s), "fc/b": u((C,), s)}
    consts = {"y0_shape": np.array([T, N, H], np.int64), "feat_shape": np.array([N, H], np.int64)}
    nodes = [
        helper.make_node("LSTM", ["x", "l0/W", "l0/R", "l0/B"], ["y0"], name="lstm0", hidden_size=H),
        helper.make_node("Reshape", ["y0", "y0_shape"], ["y0s"], name="squeeze0"),
        helper.make_node("LSTM", ["y0s", "l1/W", "l1/R", "l1/B"], ["y1", "yh1"], name="lstm1", hidden_size=H),
        helper.make_node("Reshape", ["yh1", "feat_shape"], ["feat"], name="flat"),
        helper.make_node("Gemm", ["feat", "fc/W", "fc/b"], ["logits"], name="fc", transB=1),
    ]
    inits = [numpy_helper.from_array(v, k) for k, v in {**p, **consts}.items()]
    g = helper.make_graph(nodes, "lstm_classifier",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [T, N, I])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [N, C])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 7
    onnx.save(m, path)
    x = u((T, N, I), 1.0)
    labels = rng.integers(0, C, size=N).astype(np.int64)
    np.savez(npz, x=x, labels=labels)
    return p, x, labels


def torch_model(a, p):
    def to_torch(w):  # ONNX (i, o, f, c) -> torch (i, f, g, o)
        i, o, f, c = np.split(w, 4, axis=0)
        return torch.tensor(np.concatenate([i, f, c, o]))
    lstm = torch.nn.LSTM(a.input, a.hidden, num_layers=2)
    fc = torch.nn.Linear(a.hidden, a.classes)
    H4 = 4 * a.hidden
    with torch.no_grad():
        for l in range(2):
            getattr(lstm, f"weight_ih_l{l}").copy_(to_torch(p[f"l{l}/W"][0]))
            getattr(lstm, f"weight_hh_l{l}").copy_(to_torch(p[f"l{l}/R"][0]))
            getattr(lstm, f"bias_ih_l{l}").copy_(to_torch(p[f"l{l}/B"][0, :H4]))
            getattr(lstm, f"bias_hh_l{l}").copy_(to_torch(p[f"l{l}/B"][0, H4:]))
        fc.weight.copy_(torch.tensor(p["fc/W"]))
        fc.bias.copy_(torch.tensor(p["fc/b"]))
    return lstm, fc


def torch_round(lstm, fc, opt, x, labels, steps):
    times, losses = [], []
    for _ in range(steps):
        t0 = time.perf_counter()
        opt.zero_grad()
        _, (hn, _) = lstm(x)
        loss = torch.nn.functional.cross_entropy(fc(hn[-1]), labels)
        loss.backward()
        opt.step()
        times.append((time.perf_counter() - t0) * 1e3)
        losses.append(loss.item())
    return times, losses


def graphi_round(a, path, npz, steps):
    out = subprocess.run([a.graphi, "train", path, "--batch-from", npz, "--loss", "ce",
                          "--label-input", "labels", "--optimizer", "sgd", "--lr", "0.1",
                          "--steps", str(steps), "--threads", str(a.threads), "--no-pin", "--json"],
                         check=True, capture_output=True, text=True).stdout
    j = json.loads(out)
    return [s["ms"] for s in j["steps"]], [s["loss"] for s in j["steps"]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--graphi", default="build/graphi")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seq", type=int, default=20)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--input", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    with tempfile.TemporaryDirectory() as tmp:
        path, npz = os.path.join(tmp, "lstm.onnx"), os.path.join(tmp, "batch.npz")
        p, x, labels = make_model(a, path, npz)
        xt, lt = torch.tensor(x), torch.tensor(labels)
        g_times, t_times = [], []
        g_first = t_first = None
        for r in range(a.rounds):
            gt, gl = graphi_round(a, path, npz, a.steps)
            lstm, fc = torch_model(a, p)  # fresh weights each round, as graphi's process
            opt = torch.optim.SGD(list(lstm.parameters()) + list(fc.parameters()), lr=0.1)
            tt, tl = torch_round(lstm, fc, opt, xt, lt, a.steps)
            g_times += gt[WARMUP:]
            t_times += tt[WARMUP:]
            if r == 0:
                g_first, t_first = gl, tl
        gm, tm = statistics.median(g_times), statistics.median(t_times)
        print(json.dumps({
            "model": f"2-layer LSTM classifier T={a.seq} B={a.batch} I={a.input} H={a.hidden} C={a.classes}",
            "threads": a.threads, "torch": torch.__version__,
            "graphi_step_ms_median": round(gm, 3), "torch_step_ms_median": round(tm, 3),
            "speedup_vs_torch": round(tm / gm, 3),
            "samples": [len(g_times), len(t_times)],
            "max_loss_diff_first_round": max(abs(u - v) for u, v in zip(g_first, t_first)),
        }, indent=1))


if __name__ == "__main__":
    main()
