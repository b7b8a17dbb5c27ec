#!/usr/bin/python3
"""Exports hand-written LSTM/GRU cells (plain tensor ops, not nn.LSTM/nn.GRU) with
torch.onnx.export, as a user would, plus PyTorch's inputs and outputs as .npy files.

graphi's rnn_fusion pass must recognize these unrolled cells structurally and fuse each layer
into one ONNX LSTM/GRU op (tests/graph/test_rnn_fusion.cpp). Run from anywhere:
    /usr/bin/python3 tests/data/onnx_cells/gen_onnx_cells.py [OUT_DIR]
Every model: input "x" f32[T, B, I] (plus "h0"/"c0" f32[L, B, H] where noted), outputs "y"
f32[T, B, H] (the top layer's h_t for every t) and "h_n" f32[L, B, H] (and "c_n" for LSTMs).
Files per model NAME: NAME.onnx, NAME.in.<input>.npy, NAME.out.<output>.npy.
"""
import os
import sys

import numpy as np
import torch
from torch import nn

torch.manual_seed(1234)


class LstmChunk(nn.Module):
    """gates = x W_ih^T + b_ih + h W_hh^T + b_hh; i, f, g, o = gates.chunk(4, 1)."""

    def __init__(self, inp, hid):
        super().__init__()
        k = hid ** -0.5
        self.w_ih = nn.Parameter(torch.empty(4 * hid, inp).uniform_(-k, k))
        self.w_hh = nn.Parameter(torch.empty(4 * hid, hid).uniform_(-k, k))
        self.b_ih = nn.Parameter(torch.empty(4 * hid).uniform_(-k, k))
        self.b_hh = nn.Parameter(torch.empty(4 * hid).uniform_(-k, k))

    def forward(self, x, h, c):
        gates = x @ self.w_ih.t() + self.b_ih + h @ self.w_hh.t() + self.b_hh
        i, f, g, o = gates.chunk(4, 1)
        i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
        c = f * c + i * g
        h = o * torch.tanh(c)
        return h, c


class LstmPerGate(nn.Module):
    """One nn.Linear per gate and operand (8 Gemms), gates written in the order f, o, g, i."""

    def __init__(self, inp, hid):
        super().__init__()
        self.xf, self.xo, self.xg, self.xi = (nn.Linear(inp, hid) for _ in range(4))
        self.hf, self.ho, self.hg, self.hi = (nn.Linear(hid, hid, bias=False) for _ in range(4))

    def forward(self, x, h, c):
        f = torch.sigmoid(self.xf(x) + self.hf(h))
        o = torch.sigmoid(self.ho(h) + self.xo(x))
        g = torch.tanh(self.xg(x) + self.hg(h))
        i = torch.sigmoid(self.xi(x) + self.hi(h))
        c = i * g + c * f
        h = torch.tanh(c) * o
        return h, c


class LstmPerGateRelu(LstmPerGate):
    """Not an LSTM cell: the candidate goes through relu. graphi must not fuse it into a
    sequence op; MM fusion and phase hoisting still apply."""

    def forward(self, x, h, c):
        f = torch.sigmoid(self.xf(x) + self.hf(h))
        o = torch.sigmoid(self.ho(h) + self.xo(x))
        g = torch.relu(self.xg(x) + self.hg(h))
        i = torch.sigmoid(self.xi(x) + self.hi(h))
        c = i * g + c * f
        h = torch.tanh(c) * o
        return h, c


class LstmConcat(nn.Module):
    """[x, h] @ W + b with columns in the order o, g, i, f (one nn.Linear)."""

    def __init__(self, inp, hid):
        super().__init__()
        self.lin = nn.Linear(inp + hid, 4 * hid)

    def forward(self, x, h, c):
        o, g, i, f = self.lin(torch.cat([x, h], 1)).chunk(4, 1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        return h, c


class GruLbr(nn.Module):
    """PyTorch's nn.GRU cell written out: r applied after h W_hn (linear before reset)."""

    def __init__(self, inp, hid):
        super().__init__()
        self.ih = nn.Linear(inp, 3 * hid)
        self.hh = nn.Linear(hid, 3 * hid)

    def forward(self, x, h):
        i_r, i_z, i_n = self.ih(x).chunk(3, 1)
        h_r, h_z, h_n = self.hh(h).chunk(3, 1)
        r = torch.sigmoid(i_r + h_r)
        z = torch.sigmoid(i_z + h_z)
        n = torch.tanh(i_n + r * h_n)
        return (1 - z) * n + z * h


class GruCanonical(nn.Module):
    """The original GRU: r applied to h before its product with W_hn; weights as Parameters."""

    def __init__(self, inp, hid):
        super().__init__()
        k = hid ** -0.5
        self.w_x = nn.Parameter(torch.empty(inp, 3 * hid).uniform_(-k, k))  # z | r | n
        self.w_zr = nn.Parameter(torch.empty(hid, 2 * hid).uniform_(-k, k))
        self.w_n = nn.Parameter(torch.empty(hid, hid).uniform_(-k, k))
        self.b = nn.Parameter(torch.empty(3 * hid).uniform_(-k, k))
        self.hid = hid

    def forward(self, x, h):
        gx = x @ self.w_x + self.b
        zr = torch.sigmoid(gx[:, : 2 * self.hid] + h @ self.w_zr)
        z, r = zr[:, : self.hid], zr[:, self.hid:]
        n = torch.tanh(gx[:, 2 * self.hid:] + (r * h) @ self.w_n)
        return n + z * (h - n)


class Stacked(nn.Module):
    def __init__(self, cell, inp, hid, layers, lstm, zero_state):
        super().__init__()
        self.cells = nn.ModuleList(cell(inp if l == 0 else hid, hid) for l in range(layers))
        self.hid, self.lstm, self.zero_state = hid, lstm, zero_state

    def forward(self, x, *states):
        T, B = x.shape[0], x.shape[1]
        hs, cs = [], []
        seq = [x[t] for t in range(T)]
        for l, cell in enumerate(self.cells):
            if self.zero_state:
                h = torch.zeros(B, self.hid)
                c = torch.zeros(B, self.hid)
            else:
                h = states[0][l]
                c = states[1][l] if self.lstm else None
            out = []
            for t in range(T):
                if self.lstm:
                    h, c = cell(seq[t], h, c)
                else:
                    h = cell(seq[t], h)
                out.append(h)
            seq = out
            hs.append(h)
            cs.append(c)
        y = torch.stack(seq)
        if self.lstm:
            return y, torch.stack(hs), torch.stack(cs)
        return y, torch.stack(hs)


class LstmPeephole(nn.Module):
    """LSTM with peepholes (Gers & Schmidhuber): i, f see c_prev, o sees the new c."""

    def __init__(self, inp, hid):
        super().__init__()
        self.lin = nn.Linear(inp + hid, 4 * hid)
        self.p = nn.Parameter(torch.randn(3, hid) * 0.3)

    def forward(self, x, h, c):
        i, f, g, o = self.lin(torch.cat([x, h], 1)).chunk(4, 1)
        i = torch.sigmoid(i + self.p[0] * c)
        f = torch.sigmoid(f + self.p[1] * c)
        c = f * c + i * torch.tanh(g)
        o = torch.sigmoid(o + self.p[2] * c)
        return o * torch.tanh(c), c


class RnnTanh(nn.Module):
    """Elman RNN: h = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)."""

    def __init__(self, inp, hid):
        super().__init__()
        self.ih = nn.Linear(inp, hid)
        self.hh = nn.Linear(hid, hid)

    def forward(self, x, h):
        return torch.tanh(self.ih(x) + self.hh(h))


class Bidirectional(nn.Module):
    """One hand-written bidirectional LSTM layer: the backward cell reads x[T-1] .. x[0]; y is
    [T, B, 2H] (forward | backward, both in time order), h_n / c_n are [2, B, H]."""

    def __init__(self, cell, inp, hid, layers, lstm, zero_state):
        super().__init__()
        assert lstm and layers == 1 and not zero_state
        self.fwd, self.bwd = cell(inp, hid), cell(inp, hid)

    def forward(self, x, h0, c0):
        T = x.shape[0]
        outs, hs, cs = [], [], []
        for d, cell in enumerate((self.fwd, self.bwd)):
            h, c = h0[d], c0[d]
            out = [None] * T
            for t in (range(T) if d == 0 else reversed(range(T))):
                h, c = cell(x[t], h, c)
                out[t] = h
            outs.append(torch.stack(out))
            hs.append(h)
            cs.append(c)
        return torch.cat(outs, 2), torch.stack(hs), torch.stack(cs)


# name: (cell, lstm, input, hidden, layers, batch, seq, zero_state, opset)
MODELS = {
    "lstm_chunk": (LstmChunk, True, 6, 8, 2, 3, 5, False, 13),
    "lstm_chunk_b1": (LstmChunk, True, 5, 4, 1, 1, 4, True, 11),
    "lstm_per_gate": (LstmPerGate, True, 6, 5, 2, 1, 6, False, 13),
    "lstm_concat": (LstmConcat, True, 4, 6, 2, 3, 4, False, 13),
    "gru_lbr": (GruLbr, False, 6, 8, 2, 3, 5, False, 13),
    "gru_lbr_b1": (GruLbr, False, 7, 4, 1, 1, 6, True, 13),
    "gru_canonical": (GruCanonical, False, 5, 6, 2, 3, 4, False, 13),
    "lstm_relu_per_gate": (LstmPerGateRelu, True, 5, 4, 2, 2, 4, False, 13),
    "lstm_bidirectional": (LstmChunk, True, 5, 4, 1, 2, 5, False, 13),
    "lstm_peephole": (LstmPeephole, True, 4, 5, 1, 2, 4, False, 13),
    "rnn_tanh": (RnnTanh, False, 4, 6, 2, 3, 5, False, 13),
}


def shorten_names(path, keep):
    """Renames internal values and nodes to short names (the files stay small; the structure is
    untouched) and drops doc strings."""
    import onnx
    m = onnx.load(path)
    g = m.graph
    names = {k: k for k in keep}
    for init in g.initializer:
        names.setdefault(init.name, "w%d" % len(names))
    for n in g.node:
        for o in n.output:
            names.setdefault(o, "v%d" % len(names))
    for init in g.initializer:
        init.name = names[init.name]
    for i, n in enumerate(g.node):
        n.name = "n%d" % i
        n.doc_string = ""
        n.input[:] = [names.get(v, v) for v in n.input]
        n.output[:] = [names[v] for v in n.output]
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        vi.name = names.get(vi.name, vi.name)
    del g.value_info[:]
    m.doc_string = ""
    onnx.checker.check_model(m)
    onnx.save(m, path)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    os.makedirs(out_dir, exist_ok=True)
    for name, (cell, lstm, inp, hid, layers, batch, seq, zero, opset) in MODELS.items():
        bidir = name.endswith("bidirectional")
        model = (Bidirectional if bidir else Stacked)(cell, inp, hid, layers, lstm, zero).eval()
        states = layers * (2 if bidir else 1)
        inputs = {"x": torch.randn(seq, batch, inp)}
        if not zero:
            inputs["h0"] = torch.randn(states, batch, hid) * 0.5
            if lstm:
                inputs["c0"] = torch.randn(states, batch, hid) * 0.5
        outputs = ["y", "h_n"] + (["c_n"] if lstm else [])
        args = tuple(inputs.values())
        path = os.path.join(out_dir, name + ".onnx")
        with torch.no_grad():
            torch.onnx.export(model, args, path, input_names=list(inputs), output_names=outputs,
                              opset_version=opset, do_constant_folding=True)
            results = model(*args)
        for k, v in inputs.items():
            np.save(os.path.join(out_dir, f"{name}.in.{k}.npy"), v.numpy())
        for k, v in zip(outputs, results):
            np.save(os.path.join(out_dir, f"{name}.out.{k}.npy"), v.numpy())
        shorten_names(path, list(inputs) + outputs)
        print(f"{path}: {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
