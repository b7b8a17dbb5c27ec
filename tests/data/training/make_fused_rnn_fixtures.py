#!/usr/bin/python3
"""PyTorch references for training the FUSED LSTM/GRU sequence ops (tests/engine/test_training_fused_rnn.cpp).

Run with /usr/bin/python3 (torch 1.13, numpy, onnx). Each folder under tests/data/training/ gets
model.onnx (ONNX LSTM/GRU nodes as graphi imports them, weights as initializers), the data
(.npy), grad_<weight>.npy (float64 torch autograd at the initial weights, stored as float32,
ONNX layouts) and loss0.npy; the classifiers also get sgd_losses.npy / adam_losses.npy (100 steps
of torch.optim.SGD(lr 0.1, momentum 0.9) / Adam(lr 0.01) in float32 from the same weights); the
small cases get fd_<weight>.npy, central finite differences of a float64 forward (no autograd).

  fused_lstm  2-layer LSTM classifier: x [T=7, B=4, I=5]; layer 0 LSTM forward H=8 with bias and
              trainable initial_h / initial_c; layer 1 LSTM bidirectional H=6 with bias on layer
              0's Y (squeezed); logits = Gemm(reshape(transpose(Y_h of layer 1)), transB);
              cross-entropy with labels [4].
  fused_gru   2-layer GRU classifier: x [T=6, B=3, I=4]; layer 0 GRU forward
              linear_before_reset=1 (PyTorch's GRU) H=7 with bias; layer 1 GRU reverse
              linear_before_reset=0 H=5 with bias and trainable initial_h; logits =
              Gemm(mean over time of layer 1's Y); cross-entropy.
  fused_lstm_fd  one bidirectional LSTM, layout 1, peepholes, bias, initial_h/c; loss =
              sum(Y*R1) + sum(Y_h*R2) + sum(Y_c*R3) with constant R's (graph inputs).
  fused_gru_fd   one bidirectional GRU, layout 1, linear_before_reset=0, initial_h; loss =
              sum(Y*R1) + sum(Y_h*R2).
  fused_rnn   2-layer RNN classifier: layer 0 Tanh forward with trainable initial_h, layer 1
              Relu bidirectional; logits = Gemm(flattened Y_h of layer 1); cross-entropy.
  fused_rnn_fd   one bidirectional RNN, layout 1, activations Sigmoid (forward) and Tanh
              (reverse), initial_h; loss = sum(Y*R1) + sum(Y_h*R2).
The reference forward is written per step from ONNX's equations in torch; for the classifiers it
is also checked against torch.nn.LSTM / nn.GRU / nn.RNN (same loss to 1e-10 in float64).
"""
import os

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = 100
SGD = dict(lr=0.1, momentum=0.9)
ADAM = dict(lr=0.01)


def save(folder, name, a):
    path = os.path.join(HERE, folder, name.replace("/", "_") + ".npy")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    np.save(path, a)


# ---- ONNX LSTM / GRU forward in torch (any dtype), ONNX gate orders and layouts ----

def lstm_layer(x, W, R, B=None, h0=None, c0=None, P=None, direction="forward", layout=0):
    """x [T, B, I] (layout 0) or [B, T, I]; returns Y, Y_h, Y_c in ONNX shapes."""
    if layout == 1:  # batch-first x, Y and states
        x = x.transpose(0, 1)
        h0 = h0.transpose(0, 1) if h0 is not None else None
        c0 = c0.transpose(0, 1) if c0 is not None else None
    T, N, _ = x.shape
    D, GH, _ = W.shape
    H = GH // 4
    ys, hs, cs = [], [], []
    for d in range(D):
        rev = direction == "reverse" or d == 1
        h = h0[d] if h0 is not None else torch.zeros(N, H, dtype=x.dtype)
        c = c0[d] if c0 is not None else torch.zeros(N, H, dtype=x.dtype)
        out = [None] * T
        for k in range(T):
            t = T - 1 - k if rev else k
            g = x[t] @ W[d].t() + h @ R[d].t()
            if B is not None:
                g = g + B[d, :GH] + B[d, GH:]
            gi, go, gf, gc = g.split(H, dim=1)
            if P is not None:
                gi = gi + P[d, :H] * c
                gf = gf + P[d, 2 * H:] * c
            i, f, cc = torch.sigmoid(gi), torch.sigmoid(gf), torch.tanh(gc)
            c = f * c + i * cc
            if P is not None:
                go = go + P[d, H:2 * H] * c
            h = torch.sigmoid(go) * torch.tanh(c)
            out[t] = h
        ys.append(torch.stack(out))  # [T, N, H]
        hs.append(h)
        cs.append(c)
    Y = torch.stack(ys, 1)  # [T, D, N, H]
    Yh, Yc = torch.stack(hs), torch.stack(cs)
    if layout == 1:
        return Y.permute(2, 0, 1, 3), Yh.transpose(0, 1), Yc.transpose(0, 1)
    return Y, Yh, Yc


def gru_layer(x, W, R, B=None, h0=None, direction="forward", layout=0, lbr=0):
    if layout == 1:
        x = x.transpose(0, 1)
        h0 = h0.transpose(0, 1) if h0 is not None else None
    T, N, _ = x.shape
    D, GH, _ = W.shape
    H = GH // 3
    ys, hs = [], []
    for d in range(D):
        rev = direction == "reverse" or d == 1
        h = h0[d] if h0 is not None else torch.zeros(N, H, dtype=x.dtype)
        out = [None] * T
        Wz, Wr, Wh = W[d].split(H)
        Rz, Rr, Rh = R[d].split(H)
        if B is not None:
            wbz, wbr, wbh, rbz, rbr, rbh = B[d].split(H)
        else:
            wbz = wbr = wbh = rbz = rbr = rbh = torch.zeros(H, dtype=x.dtype)
        for k in range(T):
            t = T - 1 - k if rev else k
            z = torch.sigmoid(x[t] @ Wz.t() + h @ Rz.t() + wbz + rbz)
            r = torch.sigmoid(x[t] @ Wr.t() + h @ Rr.t() + wbr + rbr)
            if lbr:
                n = torch.tanh(x[t] @ Wh.t() + r * (h @ Rh.t() + rbh) + wbh)
            else:
                n = torch.tanh(x[t] @ Wh.t() + (r * h) @ Rh.t() + rbh + wbh)
            h = (1 - z) * n + z * h
            out[t] = h
        ys.append(torch.stack(out))
        hs.append(h)
    Y = torch.stack(ys, 1)
    Yh = torch.stack(hs)
    if layout == 1:
        return Y.permute(2, 0, 1, 3), Yh.transpose(0, 1)
    return Y, Yh


def rnn_layer(x, W, R, B=None, h0=None, direction="forward", layout=0, acts=("tanh",)):
    if layout == 1:
        x = x.transpose(0, 1)
        h0 = h0.transpose(0, 1) if h0 is not None else None
    T, N, _ = x.shape
    D, H, _ = W.shape
    fns = {"tanh": torch.tanh, "relu": torch.relu, "sigmoid": torch.sigmoid}
    ys, hs = [], []
    for d in range(D):
        rev = direction == "reverse" or d == 1
        act = fns[acts[d % len(acts)]]
        h = h0[d] if h0 is not None else torch.zeros(N, H, dtype=x.dtype)
        out = [None] * T
        for k in range(T):
            t = T - 1 - k if rev else k
            g = x[t] @ W[d].t() + h @ R[d].t()
            if B is not None:
                g = g + B[d, :H] + B[d, H:]
            h = act(g)
            out[t] = h
        ys.append(torch.stack(out))
        hs.append(h)
    Y = torch.stack(ys, 1)
    Yh = torch.stack(hs)
    if layout == 1:
        return Y.permute(2, 0, 1, 3), Yh.transpose(0, 1)
    return Y, Yh


# ---- models: params (ONNX layouts, numpy float32), torch loss, ONNX graph ----

def init(rng, shape, s):
    return rng.uniform(-s, s, size=shape).astype(np.float32)


def lstm_classifier(rng):
    T, N, I, H0, H1, C = 7, 4, 5, 8, 6, 3
    s0, s1 = 1 / np.sqrt(H0), 1 / np.sqrt(H1)
    p = {
        "l0/W": init(rng, (1, 4 * H0, I), s0), "l0/R": init(rng, (1, 4 * H0, H0), s0),
        "l0/B": init(rng, (1, 8 * H0), s0),
        "l0/h0": init(rng, (1, N, H0), 0.5), "l0/c0": init(rng, (1, N, H0), 0.5),
        "l1/W": init(rng, (2, 4 * H1, H0), s1), "l1/R": init(rng, (2, 4 * H1, H1), s1),
        "l1/B": init(rng, (2, 8 * H1), s1),
        "fc/W": init(rng, (C, 2 * H1), 0.4), "fc/b": init(rng, (C,), 0.1),
    }
    data = {"x": init(rng, (T, N, I), 1.0), "labels": rng.integers(0, C, size=N).astype(np.int64)}

    def loss(q, d):
        y0, _, _ = lstm_layer(d["x"], q["l0/W"], q["l0/R"], q["l0/B"], q["l0/h0"], q["l0/c0"])
        _, yh1, _ = lstm_layer(y0[:, 0], q["l1/W"], q["l1/R"], q["l1/B"], direction="bidirectional")
        feat = yh1.transpose(0, 1).reshape(N, 2 * H1)
        return torch.nn.functional.cross_entropy(feat @ q["fc/W"].t() + q["fc/b"], d["labels"])

    def loss_nn(q, d):  # the same model on torch.nn.LSTM (PyTorch gate order i, f, g, o)
        def to_torch(w):  # ONNX (i, o, f, c) blocks -> torch (i, f, g, o)
            i, o, f, c = w.chunk(4, 0)
            return torch.cat([i, f, c, o])
        l0 = torch.nn.LSTM(I, H0).double()
        l1 = torch.nn.LSTM(H0, H1, bidirectional=True).double()
        with torch.no_grad():
            l0.weight_ih_l0.copy_(to_torch(q["l0/W"][0])); l0.weight_hh_l0.copy_(to_torch(q["l0/R"][0]))
            l0.bias_ih_l0.copy_(to_torch(q["l0/B"][0, :4 * H0])); l0.bias_hh_l0.copy_(to_torch(q["l0/B"][0, 4 * H0:]))
            for d_, sfx in ((0, ""), (1, "_reverse")):
                getattr(l1, "weight_ih_l0" + sfx).copy_(to_torch(q["l1/W"][d_]))
                getattr(l1, "weight_hh_l0" + sfx).copy_(to_torch(q["l1/R"][d_]))
                getattr(l1, "bias_ih_l0" + sfx).copy_(to_torch(q["l1/B"][d_, :4 * H1]))
                getattr(l1, "bias_hh_l0" + sfx).copy_(to_torch(q["l1/B"][d_, 4 * H1:]))
        y0, _ = l0(d["x"], (q["l0/h0"], q["l0/c0"]))
        _, (hn, _) = l1(y0)
        feat = hn.transpose(0, 1).reshape(N, 2 * H1)
        return torch.nn.functional.cross_entropy(feat @ q["fc/W"].t() + q["fc/b"], d["labels"])

    nodes = [
        helper.make_node("LSTM", ["x", "l0/W", "l0/R", "l0/B", "", "l0/h0", "l0/c0"], ["y0", "yh0", "yc0"],
                         name="lstm0", hidden_size=H0),
        helper.make_node("Reshape", ["y0", "y0_shape"], ["y0s"], name="squeeze0"),
        helper.make_node("LSTM", ["y0s", "l1/W", "l1/R", "l1/B"], ["y1", "yh1"], name="lstm1",
                         hidden_size=H1, direction="bidirectional"),
        helper.make_node("Transpose", ["yh1"], ["yh1t"], name="bt", perm=[1, 0, 2]),
        helper.make_node("Reshape", ["yh1t", "feat_shape"], ["feat"], name="flat"),
        helper.make_node("Gemm", ["feat", "fc/W", "fc/b"], ["logits"], name="fc", transB=1),
    ]
    consts = {"y0_shape": np.array([T, N, H0], np.int64), "feat_shape": np.array([N, 2 * H1], np.int64)}
    graph = onnx_graph("fused_lstm", nodes, p, consts, {"x": data["x"]}, ("logits", [N, C]))
    return p, data, loss, loss_nn, graph


def gru_classifier(rng):
    T, N, I, H0, H1, C = 6, 3, 4, 7, 5, 3
    s0, s1 = 1 / np.sqrt(H0), 1 / np.sqrt(H1)
    p = {
        "l0/W": init(rng, (1, 3 * H0, I), s0), "l0/R": init(rng, (1, 3 * H0, H0), s0),
        "l0/B": init(rng, (1, 6 * H0), s0),
        "l1/W": init(rng, (1, 3 * H1, H0), s1), "l1/R": init(rng, (1, 3 * H1, H1), s1),
        "l1/B": init(rng, (1, 6 * H1), s1), "l1/h0": init(rng, (1, N, H1), 0.5),
        "fc/W": init(rng, (C, H1), 0.4), "fc/b": init(rng, (C,), 0.1),
    }
    data = {"x": init(rng, (T, N, I), 1.0), "labels": rng.integers(0, C, size=N).astype(np.int64)}

    def loss(q, d):
        y0, _ = gru_layer(d["x"], q["l0/W"], q["l0/R"], q["l0/B"], lbr=1)
        y1, _ = gru_layer(y0[:, 0], q["l1/W"], q["l1/R"], q["l1/B"], q["l1/h0"], direction="reverse", lbr=0)
        feat = y1.mean(dim=(0, 1))
        return torch.nn.functional.cross_entropy(feat @ q["fc/W"].t() + q["fc/b"], d["labels"])

    def loss_nn(q, d):  # layer 0 on torch.nn.GRU (gate order r, z, n; linear_before_reset = 1)
        def to_torch(w):
            z, r, n = w.chunk(3, 0)
            return torch.cat([r, z, n])
        l0 = torch.nn.GRU(I, H0).double()
        with torch.no_grad():
            l0.weight_ih_l0.copy_(to_torch(q["l0/W"][0])); l0.weight_hh_l0.copy_(to_torch(q["l0/R"][0]))
            l0.bias_ih_l0.copy_(to_torch(q["l0/B"][0, :3 * H0])); l0.bias_hh_l0.copy_(to_torch(q["l0/B"][0, 3 * H0:]))
        y0, _ = l0(d["x"])
        y1, _ = gru_layer(y0, q["l1/W"], q["l1/R"], q["l1/B"], q["l1/h0"], direction="reverse", lbr=0)
        feat = y1.mean(dim=(0, 1))
        return torch.nn.functional.cross_entropy(feat @ q["fc/W"].t() + q["fc/b"], d["labels"])

    nodes = [
        helper.make_node("GRU", ["x", "l0/W", "l0/R", "l0/B"], ["y0"], name="gru0", hidden_size=H0,
                         linear_before_reset=1),
        helper.make_node("Reshape", ["y0", "y0_shape"], ["y0s"], name="squeeze0"),
        helper.make_node("GRU", ["y0s", "l1/W", "l1/R", "l1/B", "", "l1/h0"], ["y1", "yh1"], name="gru1",
                         hidden_size=H1, direction="reverse"),
        helper.make_node("ReduceMean", ["y1"], ["feat"], name="mean", axes=[0, 1], keepdims=0),
        helper.make_node("Gemm", ["feat", "fc/W", "fc/b"], ["logits"], name="fc", transB=1),
    ]
    consts = {"y0_shape": np.array([T, N, H0], np.int64)}
    graph = onnx_graph("fused_gru", nodes, p, consts, {"x": data["x"]}, ("logits", [N, C]))
    return p, data, loss, loss_nn, graph


def rnn_classifier(rng):
    T, N, I, H0, H1, C = 6, 3, 4, 7, 5, 3
    s0, s1 = 1 / np.sqrt(H0), 1 / np.sqrt(H1)
    p = {
        "l0/W": init(rng, (1, H0, I), s0), "l0/R": init(rng, (1, H0, H0), s0),
        "l0/B": init(rng, (1, 2 * H0), s0), "l0/h0": init(rng, (1, N, H0), 0.5),
        "l1/W": init(rng, (2, H1, H0), s1), "l1/R": init(rng, (2, H1, H1), s1),
        "l1/B": init(rng, (2, 2 * H1), s1),
        "fc/W": init(rng, (C, 2 * H1), 0.4), "fc/b": init(rng, (C,), 0.1),
    }
    data = {"x": init(rng, (T, N, I), 1.0), "labels": rng.integers(0, C, size=N).astype(np.int64)}

    def loss(q, d):
        y0, _ = rnn_layer(d["x"], q["l0/W"], q["l0/R"], q["l0/B"], q["l0/h0"])
        _, yh1 = rnn_layer(y0[:, 0], q["l1/W"], q["l1/R"], q["l1/B"], direction="bidirectional", acts=("relu",))
        feat = yh1.transpose(0, 1).reshape(N, 2 * H1)
        return torch.nn.functional.cross_entropy(feat @ q["fc/W"].t() + q["fc/b"], d["labels"])

    def loss_nn(q, d):  # on torch.nn.RNN (tanh, then relu bidirectional)
        l0 = torch.nn.RNN(I, H0).double()
        l1 = torch.nn.RNN(H0, H1, nonlinearity="relu", bidirectional=True).double()
        with torch.no_grad():
            l0.weight_ih_l0.copy_(q["l0/W"][0]); l0.weight_hh_l0.copy_(q["l0/R"][0])
            l0.bias_ih_l0.copy_(q["l0/B"][0, :H0]); l0.bias_hh_l0.copy_(q["l0/B"][0, H0:])
            for d_, sfx in ((0, ""), (1, "_reverse")):
                getattr(l1, "weight_ih_l0" + sfx).copy_(q["l1/W"][d_])
                getattr(l1, "weight_hh_l0" + sfx).copy_(q["l1/R"][d_])
                getattr(l1, "bias_ih_l0" + sfx).copy_(q["l1/B"][d_, :H1])
                getattr(l1, "bias_hh_l0" + sfx).copy_(q["l1/B"][d_, H1:])
        y0, _ = l0(d["x"], q["l0/h0"])
        _, hn = l1(y0)
        feat = hn.transpose(0, 1).reshape(N, 2 * H1)
        return torch.nn.functional.cross_entropy(feat @ q["fc/W"].t() + q["fc/b"], d["labels"])

    nodes = [
        helper.make_node("RNN", ["x", "l0/W", "l0/R", "l0/B", "", "l0/h0"], ["y0"], name="rnn0", hidden_size=H0),
        helper.make_node("Reshape", ["y0", "y0_shape"], ["y0s"], name="squeeze0"),
        helper.make_node("RNN", ["y0s", "l1/W", "l1/R", "l1/B"], ["y1", "yh1"], name="rnn1",
                         hidden_size=H1, direction="bidirectional", activations=["Relu", "Relu"]),
        helper.make_node("Transpose", ["yh1"], ["yh1t"], name="bt", perm=[1, 0, 2]),
        helper.make_node("Reshape", ["yh1t", "feat_shape"], ["feat"], name="flat"),
        helper.make_node("Gemm", ["feat", "fc/W", "fc/b"], ["logits"], name="fc", transB=1),
    ]
    consts = {"y0_shape": np.array([T, N, H0], np.int64), "feat_shape": np.array([N, 2 * H1], np.int64)}
    graph = onnx_graph("fused_rnn", nodes, p, consts, {"x": data["x"]}, ("logits", [N, C]))
    return p, data, loss, loss_nn, graph


def rnn_fd_case(rng):
    T, N, I, H = 5, 2, 3, 4
    s = 0.6
    p = {"W": init(rng, (2, H, I), s), "R": init(rng, (2, H, H), s), "B": init(rng, (2, 2 * H), s),
         "h0": init(rng, (N, 2, H), 0.5)}
    data = {"x": init(rng, (N, T, I), 1.0), "r1": init(rng, (N, T, 2, H), 1.0), "r2": init(rng, (N, 2, H), 1.0)}

    def loss(q, d):
        Y, Yh = rnn_layer(d["x"], q["W"], q["R"], q["B"], q["h0"], direction="bidirectional", layout=1,
                          acts=("sigmoid", "tanh"))
        return (Y * d["r1"]).sum() + (Yh * d["r2"]).sum()

    nodes = [
        helper.make_node("RNN", ["x", "W", "R", "B", "", "h0"], ["y", "yh"], name="rnn", hidden_size=H,
                         direction="bidirectional", layout=1, activations=["Sigmoid", "Tanh"]),
    ] + sum_products([("y", "r1"), ("yh", "r2")])
    graph = onnx_graph("fused_rnn_fd", nodes, p, {}, data, ("total", []))
    return p, data, loss, graph


def lstm_fd_case(rng):
    T, N, I, H = 5, 2, 3, 4
    s = 0.6
    p = {"W": init(rng, (2, 4 * H, I), s), "R": init(rng, (2, 4 * H, H), s), "B": init(rng, (2, 8 * H), s),
         "h0": init(rng, (N, 2, H), 0.5), "c0": init(rng, (N, 2, H), 0.5), "P": init(rng, (2, 3 * H), s)}
    data = {"x": init(rng, (N, T, I), 1.0), "r1": init(rng, (N, T, 2, H), 1.0),
            "r2": init(rng, (N, 2, H), 1.0), "r3": init(rng, (N, 2, H), 1.0)}

    def loss(q, d):
        Y, Yh, Yc = lstm_layer(d["x"], q["W"], q["R"], q["B"], q["h0"], q["c0"], q["P"],
                               direction="bidirectional", layout=1)
        return (Y * d["r1"]).sum() + (Yh * d["r2"]).sum() + (Yc * d["r3"]).sum()

    nodes = [
        helper.make_node("LSTM", ["x", "W", "R", "B", "", "h0", "c0", "P"], ["y", "yh", "yc"], name="lstm",
                         hidden_size=H, direction="bidirectional", layout=1),
    ] + sum_products([("y", "r1"), ("yh", "r2"), ("yc", "r3")])
    graph = onnx_graph("fused_lstm_fd", nodes, p, {}, data, ("total", []))
    return p, data, loss, graph


def gru_fd_case(rng):
    T, N, I, H = 5, 2, 3, 4
    s = 0.6
    p = {"W": init(rng, (2, 3 * H, I), s), "R": init(rng, (2, 3 * H, H), s), "B": init(rng, (2, 6 * H), s),
         "h0": init(rng, (N, 2, H), 0.5)}
    data = {"x": init(rng, (N, T, I), 1.0), "r1": init(rng, (N, T, 2, H), 1.0), "r2": init(rng, (N, 2, H), 1.0)}

    def loss(q, d):
        Y, Yh = gru_layer(d["x"], q["W"], q["R"], q["B"], q["h0"], direction="bidirectional", layout=1, lbr=0)
        return (Y * d["r1"]).sum() + (Yh * d["r2"]).sum()

    nodes = [
        helper.make_node("GRU", ["x", "W", "R", "B", "", "h0"], ["y", "yh"], name="gru", hidden_size=H,
                         direction="bidirectional", layout=1),
    ] + sum_products([("y", "r1"), ("yh", "r2")])
    graph = onnx_graph("fused_gru_fd", nodes, p, {}, data, ("total", []))
    return p, data, loss, graph


def sum_products(pairs):
    nodes, terms = [], []
    for a, b in pairs:
        nodes.append(helper.make_node("Mul", [a, b], [a + "_m"], name=a + "_m"))
        nodes.append(helper.make_node("ReduceSum", [a + "_m"], [a + "_s"], name=a + "_s", keepdims=0))
        terms.append(a + "_s")
    acc = terms[0]
    for k, t in enumerate(terms[1:]):
        out = "total" if k == len(terms) - 2 else f"acc{k}"
        nodes.append(helper.make_node("Add", [acc, t], [out], name=out))
        acc = out
    return nodes


def onnx_graph(name, nodes, params, consts, inputs, output):
    inits = [numpy_helper.from_array(v, k) for k, v in params.items()]
    inits += [numpy_helper.from_array(v, k) for k, v in consts.items()]
    ins = [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape) for k, v in inputs.items()]
    out = [helper.make_tensor_value_info(output[0], TensorProto.FLOAT, output[1])]
    g = helper.make_graph(nodes, name, ins, out, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 7
    onnx.checker.check_model(m)
    return m


def t64(v):
    return torch.tensor(v) if v.dtype == np.int64 else torch.tensor(v, dtype=torch.float64)


def grads64(params, data, loss_fn):
    p64 = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in params.items()}
    d64 = {k: t64(v) for k, v in data.items()}
    loss = loss_fn(p64, d64)
    loss.backward()
    return loss.item(), {k: v.grad.numpy() for k, v in p64.items()}


def write_case(folder, params, data, loss_fn, graph):
    for k, v in data.items():
        save(folder, k, v)
    onnx.save(graph, os.path.join(HERE, folder, "model.onnx"))
    loss0, g = grads64(params, data, loss_fn)
    for k, v in g.items():
        save(folder, "grad_" + k, v.astype(np.float32))
    save(folder, "loss0", np.array(loss0, dtype=np.float32))
    return loss0, g


def curves(folder, params, data, loss_fn):
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


def finite_differences(folder, params, data, loss_fn, g, eps=1e-6):
    d64 = {k: t64(v) for k, v in data.items()}
    base = {k: torch.tensor(v, dtype=torch.float64) for k, v in params.items()}
    worst = 0.0
    for k, v in base.items():
        fd = np.zeros(v.shape)
        flat = v.view(-1)
        for i in range(flat.numel()):
            old = flat[i].item()
            flat[i] = old + eps
            lp = loss_fn(base, d64).item()
            flat[i] = old - eps
            lm = loss_fn(base, d64).item()
            flat[i] = old
            fd.reshape(-1)[i] = (lp - lm) / (2 * eps)
        worst = max(worst, np.abs(fd - g[k]).max() / np.abs(fd).max())
        save(folder, "fd_" + k, fd.astype(np.float32))
    assert worst < 1e-6, (folder, worst)  # autograd and differences agree in float64
    print(folder, "autograd vs finite differences: max relative error", worst)


def main():
    rng = np.random.default_rng(2026)
    for folder, make in (("fused_lstm", lstm_classifier), ("fused_gru", gru_classifier)):
        classifier(folder, make, rng)
    for folder, make in (("fused_lstm_fd", lstm_fd_case), ("fused_gru_fd", gru_fd_case)):
        fd_case(folder, make, rng)
    # Added later; after the others so their random draws stay the same.
    classifier("fused_rnn", rnn_classifier, rng)
    fd_case("fused_rnn_fd", rnn_fd_case, rng)


def fd_case(folder, make, rng):
    os.makedirs(os.path.join(HERE, folder), exist_ok=True)
    params, data, loss_fn, graph = make(rng)
    for k, v in params.items():
        save(folder, k, v)
    _, g = write_case(folder, params, data, loss_fn, graph)
    finite_differences(folder, params, data, loss_fn, g)


def classifier(folder, make, rng):
    os.makedirs(os.path.join(HERE, folder), exist_ok=True)
    params, data, loss_fn, loss_nn, graph = make(rng)
    loss0, _ = write_case(folder, params, data, loss_fn, graph)
    ref = loss_nn({k: t64(v) for k, v in params.items()}, {k: t64(v) for k, v in data.items()}).item()
    assert abs(ref - loss0) < 1e-10, (folder, ref, loss0)
    curves(folder, params, data, loss_fn)


if __name__ == "__main__":
    main()
