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
  cnn_bn/ x [8, 2, 8, 8], labels [8]; conv 3x3 pad 1 without bias (c1) -> batch norm (bn1) -> relu
         -> maxpool 2 -> conv 3x3 pad 1 without bias (c2) -> batch norm (bn2) -> relu -> global
         average pool -> linear (fc); cross-entropy. (A conv bias before a batch norm has a zero
         gradient, so the convs have none, as usual in torch models.) Batch norm in training mode (F.batch_norm(training=True), torch momentum
         0.1 = ONNX momentum 0.9, eps 1e-5) with random initial running statistics
         bn{1,2}/mean, bn{1,2}/var; the running statistics after the 100 steps of each optimizer:
         {sgd,adam}_final_bn{1,2}_{mean,var}.npy, and the trained weights' inference (eval mode)
         logits on x: {sgd,adam}_eval_logits.npy
  gru/   x [T=4, B=3, E=5], target [4, 3, 6], a 2-layer torch.nn.GRUCell loop (h0 = 0) mapped to
         graphi's unrolled GRU with linear_before_reset (models/gru.h): l{0,1}/W [in, 3H] and
         l{0,1}/R [H, 3H] with column blocks z | r | h, l{0,1}/b = b_ih, l{0,1}/Rb = b_hh (same
         order); torch's GRUCell order is r | z | n. Loss: MSE of the last layer's h against target
  mlp_dropout/ the mlp's x, labels and weights with a Dropout (ratio 0.3, seed 7) after the relu:
         logits = dropout(relu(x @ W1 + b1)) @ W2^T + b2. The masks are graphi's documented
         counter-based stream (ops/dropout_rng.h, recomputed here in Python) for steps 1, 2, ...:
         the gradients are at step 1's mask, the curves use step k's mask at step k
  cnn_bn_dropout.onnx (+ onnx/): the cnn_bn module (its initial weights and running statistics)
         with nn.Dropout(0.25) before the linear layer, exported by torch.onnx.export in TRAINING
         mode (opset 13: BatchNormalization with its running-statistics outputs, Dropout with
         training_mode = true). onnx/eval_logits.npy: the module's eval-mode output on cnn_bn's x;
         onnx/grad_<param>.npy, onnx/loss0.npy: float64 autograd in training mode with graphi's
         step-1 mask of the Dropout node '/drop/Dropout' (no seed attribute: the seed is
         FNV-1a-64(name) >> 1, docs/TRAINING.md)
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


def cnn_bn_forward(p, data, buffers, training):
    """Returns the logits; updates `buffers` (running statistics) in place when training."""
    F = torch.nn.functional
    def bn(h, name):
        return F.batch_norm(h, buffers[name + "/mean"], buffers[name + "/var"], p[name + "/scale"],
                            p[name + "/B"], training=training, momentum=0.1, eps=1e-5)
    h = F.max_pool2d(F.relu(bn(F.conv2d(data["x"], p["c1/W"], padding=1), "bn1")), 2)
    h = F.relu(bn(F.conv2d(h, p["c2/W"], padding=1), "bn2"))
    h = F.avg_pool2d(h, 4).reshape(h.shape[0], -1)
    return h @ p["fc/W"].t() + p["fc/b"]


# graphi's GRU column blocks z | r | h from torch's row blocks r | z | n.
def gru_to_graphi(w):  # torch [3H, in] or [3H] -> graphi [in, 3H] or [3H]
    r, z, n = np.split(w, 3, axis=0)
    out = np.concatenate([z, r, n], axis=0)
    return out.T.copy() if out.ndim == 2 else out


def graphi_to_gru(w):  # the inverse, on torch tensors
    if w.dim() == 2:
        w = w.t()
    z, r, n = torch.chunk(w, 3, dim=0)
    return torch.cat([r, z, n], dim=0)


def gru_loss(p, data, layers=2):
    x = data["x"]
    T, B, _ = x.shape
    H = p["l0/R"].shape[0]
    inp = [x[t] for t in range(T)]
    for l in range(layers):
        w_ih, w_hh = graphi_to_gru(p[f"l{l}/W"]), graphi_to_gru(p[f"l{l}/R"])
        b_ih, b_hh = graphi_to_gru(p[f"l{l}/b"]), graphi_to_gru(p[f"l{l}/Rb"])
        h = torch.zeros(B, H, dtype=x.dtype)
        out = []
        for t in range(T):
            h = torch._VF.gru_cell(inp[t], h, w_ih, w_hh, b_ih, b_hh)  # GRUCell.forward's kernel
            out.append(h)
        inp = out
    return torch.nn.functional.mse_loss(torch.stack(inp), data["target"])


def run_cnn_bn(folder, params, buffers, data):
    for k, v in list(params.items()) + list(buffers.items()) + list(data.items()):
        save(folder, k, v)
    def loss_fn(p, d, b):
        return torch.nn.functional.cross_entropy(cnn_bn_forward(p, d, b, True), d["labels"])
    p64 = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in params.items()}
    b64 = {k: torch.tensor(v, dtype=torch.float64) for k, v in buffers.items()}
    d64 = {"x": torch.tensor(data["x"], dtype=torch.float64), "labels": torch.tensor(data["labels"])}
    loss = loss_fn(p64, d64, b64)
    loss.backward()
    for k, v in p64.items():
        save(folder, "grad_" + k, v.grad.numpy().astype(np.float32))
    save(folder, "loss0", np.array(loss.item(), dtype=np.float32))
    for k, v in b64.items():  # the running statistics after that one step
        save(folder, "step1_" + k, v.numpy().astype(np.float32))
    d32 = {k: torch.tensor(v) for k, v in data.items()}
    for name, make in (("sgd", lambda ps: torch.optim.SGD(ps, **SGD)), ("adam", lambda ps: torch.optim.Adam(ps, **ADAM))):
        p32 = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
        b32 = {k: torch.tensor(v) for k, v in buffers.items()}
        opt = make(list(p32.values()))
        losses = []
        for _ in range(STEPS):
            opt.zero_grad()
            loss = loss_fn(p32, d32, b32)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        save(folder, name + "_losses", np.array(losses, dtype=np.float32))
        for k, v in b32.items():
            save(folder, name + "_final_" + k, v.numpy())
        with torch.no_grad():
            save(folder, name + "_eval_logits", cnn_bn_forward(p32, d32, b32, False).numpy())


M64 = (1 << 64) - 1


def splitmix64(z):
    z = (z + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def dropout_mask(seed, step, n, ratio):
    """graphi's DropoutTraining mask (ops/dropout_ops.cpp): 0 or 1 / (1 - ratio), float32."""
    key = splitmix64(seed ^ splitmix64(step))
    u = np.array([(splitmix64((key + i) & M64) >> 40) / 16777216.0 for i in range(n)])
    return np.where(u >= ratio, np.float32(1.0 / (1.0 - ratio)), np.float32(0)).astype(np.float32)


DROPOUT_SEED, DROPOUT_RATIO = 7, 0.3


def mlp_dropout_loss(p, data):
    h = torch.relu(data["x"] @ p["W1"] + p["b1"])
    step = data.get("step", 1)
    mask = torch.tensor(dropout_mask(DROPOUT_SEED, step, h.numel(), DROPOUT_RATIO)).reshape(h.shape)
    logits = (h * mask.to(h.dtype)) @ p["W2"].t() + p["b2"]
    return torch.nn.functional.cross_entropy(logits, data["labels"])


class StepCounter(dict):
    """The data dict of run(), counting the steps of the loss curves (1, 2, ...)."""
    def __init__(self, d):
        super().__init__(d)
        self.calls = 0

    def get(self, key, default=None):
        if key != "step":
            return super().get(key, default)
        self.calls += 1
        return self.calls


def fnv1a64(name):
    h = 0xCBF29CE484222325
    for ch in name.encode():
        h = ((h ^ ch) * 0x100000001B3) & M64
    return h


class CnnBnDropout(torch.nn.Module):
    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.c1 = nn.Conv2d(2, 4, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(4)
        self.c2 = nn.Conv2d(4, 6, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(6)
        self.drop = nn.Dropout(0.25)
        self.fc = nn.Linear(6, 3)
        self.mask = None  # set: the dropout is this fixed mask (graphi's), not torch's RNG

    def forward(self, x):
        F = torch.nn.functional
        h = F.max_pool2d(F.relu(self.bn1(self.c1(x))), 2)
        h = F.avg_pool2d(F.relu(self.bn2(self.c2(h))), 4).flatten(1)
        h = self.drop(h) if self.mask is None else h * self.mask.to(h.dtype)
        return self.fc(h)


def run_onnx_cnn_bn_dropout():
    folder = os.path.join(HERE, "cnn_bn")
    ld = lambda k: torch.tensor(np.load(os.path.join(folder, k.replace("/", "_") + ".npy")))
    m = CnnBnDropout()
    with torch.no_grad():
        m.c1.weight.copy_(ld("c1/W")); m.c2.weight.copy_(ld("c2/W"))
        for i in (1, 2):
            bn = getattr(m, f"bn{i}")
            bn.weight.copy_(ld(f"bn{i}/scale")); bn.bias.copy_(ld(f"bn{i}/B"))
            bn.running_mean.copy_(ld(f"bn{i}/mean")); bn.running_var.copy_(ld(f"bn{i}/var"))
        m.fc.weight.copy_(ld("fc/W")); m.fc.bias.copy_(ld("fc/b"))
    x, labels = ld("x"), ld("labels")
    m.train()
    torch.onnx.export(m, x, os.path.join(HERE, "cnn_bn_dropout.onnx"), opset_version=13,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                      input_names=["x"], output_names=["logits"])
    m.eval()
    with torch.no_grad():
        save("onnx", "eval_logits", m(x).numpy())
    m64 = CnnBnDropout().double()
    m64.load_state_dict(m.state_dict())
    m64.train()
    seed = fnv1a64("/drop/Dropout") >> 1
    m64.mask = torch.tensor(dropout_mask(seed, 1, 8 * 6, 0.25)).reshape(8, 6)
    loss = torch.nn.functional.cross_entropy(m64(x.double()), labels)
    loss.backward()
    for k, v in m64.named_parameters():
        save("onnx", "grad_" + k, v.grad.numpy().astype(np.float32))
    save("onnx", "loss0", np.array(loss.item(), dtype=np.float32))


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
    for name, make in (("sgd", lambda ps: torch.optim.SGD(ps, **SGD)), ("adam", lambda ps: torch.optim.Adam(ps, **ADAM))):
        d32 = StepCounter({k: torch.tensor(v) for k, v in data.items()})
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
    # Added after the fixtures above, so their random draws (and files) stay as they were.
    run_cnn_bn("cnn_bn",
               {"c1/W": u((4, 2, 3, 3), 0.4), "bn1/scale": 1 + u((4,), 0.2),
                "bn1/B": u((4,), 0.1), "c2/W": u((6, 4, 3, 3), 0.3), "bn2/scale": 1 + u((6,), 0.2), "bn2/B": u((6,), 0.1), "fc/W": u((3, 6), 0.5),
                "fc/b": u((3,), 0.1)},
               {"bn1/mean": u((4,), 0.2), "bn1/var": 1 + u((4,), 0.3), "bn2/mean": u((6,), 0.2),
                "bn2/var": 1 + u((6,), 0.3)},
               {"x": u((8, 2, 8, 8), 1.0), "labels": rng.integers(0, 3, size=8).astype(np.int64)})
    T, B, E, H = 4, 3, 5, 6
    s = 1 / np.sqrt(H)
    params = {}
    for l in range(2):
        cell = {"W": u((3 * H, E if l == 0 else H), s), "R": u((3 * H, H), s),
                "b": u((3 * H,), s), "Rb": u((3 * H,), s)}
        for k, v in cell.items():
            params[f"l{l}/{k}"] = gru_to_graphi(v)
    run("gru", params, {"x": u((T, B, E), 1.0), "target": u((T, B, H), 0.5)}, gru_loss)
    mlp_params = {k: np.load(os.path.join(HERE, "mlp", k + ".npy")) for k in ("W1", "b1", "W2", "b2")}
    run("mlp_dropout", mlp_params, mlp_data, mlp_dropout_loss)
    run_onnx_cnn_bn_dropout()


if __name__ == "__main__":
    main()
