#!/usr/bin/env python3
"""The evaluation models of seed 002 (models/eval_models.h) as PyTorch modules over the exact
weights of a `graphi model NAME --size S` file, for the training benchmark
(scripts/bench_train.sh), the loss fixtures of the training ctest and the ONNX export.

  python scripts/eval_models_torch.py train MODEL.graphi BATCH.npz [--steps N] [--lr LR]
        [--variant cells|fused] [--threads K] [--warmup W]    -> one JSON object on stdout
  python scripts/eval_models_torch.py export MODEL.graphi BATCH.npz OUT.onnx

Each module computes what graphi's graph computes, op for op (same gate order i|o|f|c, same
zero initial state, the PhasedLSTM time gate as u - floor(u) and torch.where, pools with
symmetric padding, flatten in NCHW order). `--variant fused` runs the LSTM as torch.nn.LSTM
(weights permuted to torch's i|f|g|o order; mathematically the same model, torch's fastest
CPU LSTM); the other models have one variant. Training: SGD (no momentum) on
torch.nn.CrossEntropyLoss, one fixed batch, as `graphi train --loss ce --optimizer sgd`.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from eval_graphi_file import GOOGLENET_BLOCKS, dims, model_kind, read_graphi  # noqa: E402

ALPHA = 0.001  # PhasedLSTM leak, as models/eval_rnn.cpp


class GraphiWeights(torch.nn.Module):
    """Parameters named as graphi's constants ('/' -> '__', ParameterDict forbids dots)."""

    def __init__(self, weights):
        super().__init__()
        self.p = torch.nn.ParameterDict(
            {k.replace("/", "__"): torch.nn.Parameter(torch.from_numpy(v.copy()))
             for k, v in weights.items() if v.dtype == np.float32 and v.ndim >= 1})

    def w(self, name):
        return self.p[name.replace("/", "__")]


class RnnClassifier(GraphiWeights):
    def __init__(self, weights, d, phased):
        super().__init__(weights)
        self.d, self.phased = d, phased

    def forward(self, x, times=None):
        H, L = self.d["hidden"], self.d["layers"]
        xs = list(x.unbind(0))
        ts = [t.reshape(-1, 1) for t in times.unbind(0)] if self.phased else None
        h = None
        for l in range(L):
            W, R, b = self.w(f"l{l}/W"), self.w(f"l{l}/R"), self.w(f"l{l}/b")
            if self.phased:
                tau, shift, r_on = self.w(f"l{l}/tau"), self.w(f"l{l}/shift"), self.w(f"l{l}/r_on")
                r_half = r_on * 0.5
            h = c = None
            for t in range(len(xs)):
                g = xs[t] @ W + b
                if h is not None:
                    g = g + h @ R
                gi, go, gf, gc = g.split(H, 1)
                i, o, gg = torch.sigmoid(gi), torch.sigmoid(go), torch.tanh(gc)
                c_new = i * gg if c is None else torch.sigmoid(gf) * c + i * gg
                h_new = o * torch.tanh(c_new)
                if not self.phased:
                    h, c = h_new, c_new
                else:
                    u = (ts[t] - shift) / tau
                    phi = u - torch.floor(u)
                    up = (phi * 2.0) / r_on
                    k = torch.where(phi < r_half, up,
                                    torch.where(phi < r_on, 2.0 - up, phi * ALPHA))
                    if c is None:
                        c, h = k * c_new, k * h_new
                    else:
                        keep = 1.0 - k
                        c, h = k * c_new + keep * c, k * h_new + keep * h
                xs[t] = h
        return h @ self.w("fc/W") + self.w("fc/b")


class FusedLstmClassifier(torch.nn.Module):
    """The lstm model as torch.nn.LSTM (graphi's i|o|f|c columns -> torch's i|f|g|o rows)."""

    def __init__(self, weights, d):
        super().__init__()
        H, L = d["hidden"], d["layers"]
        self.lstm = torch.nn.LSTM(H, H, L)
        order = [0, 2, 3, 1]  # torch block j takes graphi block order[j]
        with torch.no_grad():
            for l in range(L):
                def perm(m):  # m [in, 4H] -> [4H, in] in torch's gate order
                    blocks = np.split(m.T, 4, axis=0)
                    return torch.from_numpy(np.concatenate([blocks[j] for j in order], 0).copy())
                getattr(self.lstm, f"weight_ih_l{l}").copy_(perm(weights[f"l{l}/W"]))
                getattr(self.lstm, f"weight_hh_l{l}").copy_(perm(weights[f"l{l}/R"]))
                bb = np.split(weights[f"l{l}/b"], 4)
                getattr(self.lstm, f"bias_ih_l{l}").copy_(
                    torch.from_numpy(np.concatenate([bb[j] for j in order]).copy()))
                getattr(self.lstm, f"bias_hh_l{l}").zero_()
        self.fc_w = torch.nn.Parameter(torch.from_numpy(weights["fc/W"].copy()))
        self.fc_b = torch.nn.Parameter(torch.from_numpy(weights["fc/b"].copy()))

    def forward(self, x):
        y, _ = self.lstm(x)
        return y[-1] @ self.fc_w + self.fc_b


class PathNet(GraphiWeights):
    def forward(self, x):
        for l in range(3):
            s = None
            for m in range(6):
                p = f"l{l}/m{m}/conv"
                y = F.max_pool2d(F.relu(F.conv2d(x, self.w(p + "/W"), self.w(p + "/b"), 1, 1)), 2, 2)
                s = y if s is None else s + y
            x = s
        return x.reshape(x.shape[0], -1) @ self.w("fc/W") + self.w("fc/b")


class GoogleNet(GraphiWeights):
    def conv(self, name, x, stride=1):
        W = self.w(name + "/W")
        return F.relu(F.conv2d(x, W, self.w(name + "/b"), stride, W.shape[2] // 2))

    def forward(self, x):
        x = self.conv("stem/conv1", x, 2)
        x = F.max_pool2d(x, 3, 2, 1)
        x = self.conv("stem/conv3", self.conv("stem/conv2", x))
        x = F.max_pool2d(x, 3, 2, 1)
        for i, blk in enumerate(GOOGLENET_BLOCKS):
            p = f"inc{i}"
            b1 = self.conv(p + "/b1", x)
            b2 = self.conv(p + "/b2b", self.conv(p + "/b2a", x))
            b3 = self.conv(p + "/b3b", self.conv(p + "/b3a", x))
            b4 = self.conv(p + "/b4", F.max_pool2d(x, 3, 1, 1))
            x = torch.cat([b1, b2, b3, b4], 1)
            if blk[6]:
                x = F.max_pool2d(x, 3, 2, 1)
        x = F.avg_pool2d(x, x.shape[2])
        return x.reshape(x.shape[0], -1) @ self.w("fc/W") + self.w("fc/b")


def build(name, weights, d, variant="cells"):
    if name == "lstm" and variant == "fused":
        return FusedLstmClassifier(weights, d)
    if name in ("lstm", "phased-lstm"):
        return RnnClassifier(weights, d, name == "phased-lstm")
    if name == "pathnet":
        return PathNet(weights)
    if name == "googlenet":
        return GoogleNet(weights)
    raise ValueError(f"unknown model '{name}'")


def load(model_path, batch_path):
    weights, header = read_graphi(model_path)
    name = model_kind(header)
    with np.load(batch_path) as z:
        batch = {k: z[k] for k in z.files}
    return name, weights, batch, dims(name, weights, batch)


def inputs_of(name, batch):
    xs = [torch.from_numpy(batch["x"])]
    if name == "phased-lstm":
        xs.append(torch.from_numpy(batch["times"]))
    return xs


def train(args):
    torch.set_num_threads(args.threads)
    name, weights, batch, d = load(args.model, args.batch)
    model = build(name, weights, d, args.variant)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    xs, labels = inputs_of(name, batch), torch.from_numpy(batch["labels"])
    loss_fn = torch.nn.CrossEntropyLoss()
    steps = []
    for _ in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(*xs), labels)
        loss.backward()
        opt.step()
        value = float(loss.detach())
        steps.append({"loss": value, "ms": (time.perf_counter() - t0) * 1e3})
    print(json.dumps({"framework": "pytorch", "version": torch.__version__, "model": name,
                      "variant": args.variant, "threads": args.threads, "warmup": args.warmup,
                      "steps": steps}))


def export(args):
    name, weights, batch, d = load(args.model, args.batch)
    model = build(name, weights, d).eval()
    xs = tuple(inputs_of(name, batch))
    names = ["x", "times"][:len(xs)]
    torch.onnx.export(model, xs, args.out, input_names=names, output_names=["logits"],
                      opset_version=17, dynamo=False)
    print(f"wrote {args.out}")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train")
    t.add_argument("model")
    t.add_argument("batch")
    t.add_argument("--steps", type=int, default=20)
    t.add_argument("--warmup", type=int, default=0)
    t.add_argument("--lr", type=float, default=0.01)
    t.add_argument("--threads", type=int, default=os.cpu_count())
    t.add_argument("--variant", choices=["cells", "fused"], default="cells")
    e = sub.add_parser("export")
    e.add_argument("model")
    e.add_argument("batch")
    e.add_argument("out")
    args = ap.parse_args()
    train(args) if args.cmd == "train" else export(args)


if __name__ == "__main__":
    main()
