#!/usr/bin/env python3
"""Weight gradients of graphi's evaluation models (models/eval_models.h) against PyTorch
autograd in float64 on identical weights and data (issue 12: "max relative error <= 1e-4 on
every weight gradient").

graphi's gradient is read from one plain SGD step: `graphi train --optimizer sgd --lr LR
--momentum 0 --steps 1 --save` writes W1 = W0 - LR * g, so g = (W0 - W1) / LR (LR large, so
the float32 rounding of W1 costs little against g). The reference is the module of
scripts/eval_models_torch.py over the same .graphi weights and batch, in float64. Error per
weight: max |g - g_ref| / max |g_ref|.

  tests/models/check_eval_gradients.py GRAPHI_BINARY [MODEL ...]      (default: phased-lstm lstm)
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
from eval_graphi_file import read_graphi  # noqa: E402
from eval_models_torch import build, inputs_of, load  # noqa: E402

LR = 65536.0  # a power of two: LR * g is exact, only the rounding of W1 remains
LIMIT = 1e-4


def check(graphi, name, work):
    model = os.path.join(work, name + ".graphi")
    batch = os.path.join(work, name + ".npz")
    trained = os.path.join(work, name + ".trained.graphi")
    subprocess.run([graphi, "model", name, "--size", "small", "--batch", "4", "--seed", "3",
                    "--batch-npz", batch, "-o", model], check=True, capture_output=True)
    r = subprocess.run([graphi, "train", model, "--batch-from", batch, "--optimizer", "sgd",
                        "--lr", str(LR), "--momentum", "0", "--steps", "1", "--save", trained,
                        "--executors", "1", "--threads", "1"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("graphi train failed:\n" + r.stderr)
    w0, _ = read_graphi(model)
    w1, _ = read_graphi(trained)

    kind, weights, data, d = load(model, batch)
    torch.set_default_dtype(torch.float64)
    ref = build(kind, weights, d).double()
    xs = [x.double() if x.is_floating_point() else x for x in inputs_of(kind, data)]
    loss = torch.nn.functional.cross_entropy(ref(*xs), torch.from_numpy(data["labels"]))
    loss.backward()
    grads = {k.replace("__", "/"): p.grad.numpy() for k, p in ref.p.items()}

    worst = 0.0
    rows = []
    for k, g_ref in sorted(grads.items()):
        g = (w0[k].astype(np.float64) - w1[k].astype(np.float64)) / LR
        scale = np.abs(g_ref).max()
        err = np.abs(g - g_ref).max() / scale if scale > 0 else np.abs(g).max()
        rows.append((k, g_ref.shape, scale, err))
        worst = max(worst, err)
    print(f"{name}: loss {float(loss):.6f} (float64 reference), {len(rows)} weights")
    for k, shape, scale, err in rows:
        print(f"  {k:24s} {str(tuple(shape)):16s} max|g| {scale:.3e}  rel err {err:.2e}")
    print(f"{name}: worst relative error {worst:.2e} (limit {LIMIT:g})")
    return worst <= LIMIT


def main():
    graphi = sys.argv[1]
    names = sys.argv[2:] or ["phased-lstm", "lstm"]
    with tempfile.TemporaryDirectory(prefix="eval_grads.") as work:
        ok = [check(graphi, n, work) for n in names]
    sys.exit(0 if all(ok) else 1)


if __name__ == "__main__":
    main()
