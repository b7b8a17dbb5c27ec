#!/usr/bin/python3
"""PyTorch references for graphi's training graphs (tests/engine/test_training.cpp).

Run with /usr/bin/python3 (torch 1.13, numpy); writes small .npy files next to this script:
  mlp/   batch.npz (x and labels, np.savez) for the CLI test;
         x [16, 10], labels [16] int64, W1 [10, 32], b1 [32], W2 [4, 32], b2 [4]
         model: logits = relu(x @ W1 + b1) @ W2^T + b2 (MatMul + Add + Relu + Gemm transB=1),
         loss: cross-entropy with integer labels (mean over the batch)
  cnn/   x [4, 2, 8, 8], labels [4]; conv 3x3 pad 1 (c1) -> relu -> maxpool 2 -> conv 3x3 pad 1
         (c2) -> relu -> global average pool (avg_pool2d 4) -> linear (fc, transB) ; cross-entropy
  lstm/  x [T=5, B=3, E=4], target [5, 3, 6], l{0,1}/{W,R,b} in graphi's unrolled LSTM layout
         (models/lstm.h: x W row-major [in, 4H], gate blocks i | o | f | c, one bias),
         loss: mean squared error of y (the last layer's h for every step) against target
For each: grad_<weight>.npy, the gradients at the initial weights in float64 autograd (stored as
float32); sgd_losses.npy, the losses of 100 steps of torch.optim.SGD (lr, momentum below) on the
same batch from the initial weights, float32 arithmetic; adam_losses.npy likewise with
torch.optim.Adam.
"""
import os

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = 100
SGD = dict(lr=0.1, momentum=0.9)
ADAM = dict(lr=0.01)


def save(folder, name, a):
    path = os.path.join(HERE, folder, name.replace("/", "_") + ".npy")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    np.save(path, a)


def mlp_loss(p, data):
    h = torch.relu(data["x"] @ p["W1"] + p["b1"])
    logits = h @ p["W2"].t() + p["b2"]
    return torch.nn.functional.cross_entropy(logits, data["labels"])


def cnn_loss(p, data):
    F = torch.nn.functional
    h = F.max_pool2d(F.relu(F.conv2d(data["x"], p["c1/W"], p["c1/b"], padding=1)), 2)
    h = F.relu(F.conv2d(h, p["c2/W"], p["c2/b"], stride=1, padding=1))
    h = F.avg_pool2d(h, 4).reshape(h.shape[0], -1)
    return F.cross_entropy(h @ p["fc/W"].t() + p["fc/b"], data["labels"])


def lstm_loss(p, data, layers=2):
    x = data["x"]
    T, B, _ = x.shape
    H = p["l0/R"].shape[0]
    inp = [x[t] for t in range(T)]
    for l in range(layers):
        h = torch.zeros(B, H, dtype=x.dtype)
        c = torch.zeros(B, H, dtype=x.dtype)
        out = []
        for t in range(T):
            g = inp[t] @ p[f"l{l}/W"] + p[f"l{l}/b"] + h @ p[f"l{l}/R"]
            i, o, f, gc = g.split(H, dim=1)
            i, o, f, gc = torch.sigmoid(i), torch.sigmoid(o), torch.sigmoid(f), torch.tanh(gc)
            c = f * c + i * gc
            h = o * torch.tanh(c)
            out.append(h)
        inp = out
    y = torch.stack(inp)
    return torch.nn.functional.mse_loss(y, data["target"])


def run(folder, params, data, loss_fn):
    for k, v in params.items():
        save(folder, k, v)
    for k, v in data.items():
        save(folder, k, v)
    # Gradients at the initial weights, float64.
    p64 = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in params.items()}
    d64 = {k: torch.tensor(v) if v.dtype == np.int64 else torch.tensor(v, dtype=torch.float64) for k, v in data.items()}
    loss = loss_fn(p64, d64)
    loss.backward()
    for k, v in p64.items():
        save(folder, "grad_" + k, v.grad.numpy().astype(np.float32))
    save(folder, "loss0", np.array(loss.item(), dtype=np.float32))
    # Loss curves, float32 as graphi.
    d32 = {k: torch.tensor(v) for k, v in data.items()}
    for name, make in (("sgd", lambda ps: torch.optim.SGD(ps, **SGD)), ("adam", lambda ps: torch.optim.Adam(ps, **ADAM))):
        p32 = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
        opt = make(list(p32.values()))
        losses = []
        for _ in range(STEPS):
            opt.zero_grad()
            loss = loss_fn(p32, d32)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        save(folder, name + "_losses", np.array(losses, dtype=np.float32))


def main():
    rng = np.random.default_rng(12)
    u = lambda shape, s: rng.uniform(-s, s, size=shape).astype(np.float32)
    mlp_data = {"x": u((16, 10), 1.0), "labels": rng.integers(0, 4, size=16).astype(np.int64)}
    run("mlp",
        {"W1": u((10, 32), 0.3), "b1": u((32,), 0.1), "W2": u((4, 32), 0.2), "b2": u((4,), 0.1)},
        mlp_data, mlp_loss)
    np.savez(os.path.join(HERE, "mlp", "batch.npz"), **mlp_data)  # for `graphi train --batch-from`
    run("cnn",
        {"c1/W": u((4, 2, 3, 3), 0.4), "c1/b": u((4,), 0.1), "c2/W": u((6, 4, 3, 3), 0.3),
         "c2/b": u((6,), 0.1), "fc/W": u((3, 6), 0.5), "fc/b": u((3,), 0.1)},
        {"x": u((4, 2, 8, 8), 1.0), "labels": rng.integers(0, 3, size=4).astype(np.int64)},
        cnn_loss)
    T, B, E, H = 5, 3, 4, 6
    s = 1 / np.sqrt(H)
    params = {}
    for l in range(2):
        params[f"l{l}/W"] = u((E if l == 0 else H, 4 * H), s)
        params[f"l{l}/R"] = u((H, 4 * H), s)
        params[f"l{l}/b"] = u((4 * H,), s)
    run("lstm", params, {"x": u((T, B, E), 1.0), "target": u((T, B, H), 0.5)}, lstm_loss)


if __name__ == "__main__":
    main()
