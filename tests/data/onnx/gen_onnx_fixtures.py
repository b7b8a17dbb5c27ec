#!/usr/bin/python3
"""Regenerates the ONNX import fixtures of tests/graph/test_onnx_import.cpp.

Each model NAME is exported with torch.onnx.export to NAME.onnx, with its inputs as
NAME.in<i>.npy and PyTorch's outputs as NAME.out<i>.npy (graph input/output order). Weights and
inputs come from fixed seeds, so reruns give the same files up to PyTorch version differences.
Run: /usr/bin/python3 tests/data/onnx/gen_onnx_fixtures.py [NAME ...]  (from anywhere; with
names, only those fixtures are written, so adding a case leaves the others' bytes alone)
"""
import os
import sys

import numpy as np
import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))


class LstmCellUnrolled(nn.Module):
    """A hand-written LSTM cell (plain Linear, chunk, sigmoid, tanh, mul, add) unrolled over
    the steps of x [T, B, I]; returns all hidden states stacked [T, B, H] and the last c."""

    def __init__(self, inp, hidden):
        super().__init__()
        self.hidden = hidden
        self.wx = nn.Linear(inp, 4 * hidden)
        self.wh = nn.Linear(hidden, 4 * hidden, bias=False)

    def forward(self, x):
        b = x.shape[1]
        h = torch.zeros(b, self.hidden)
        c = torch.zeros(b, self.hidden)
        hs = []
        for t in range(x.shape[0]):
            gates = self.wx(x[t]) + self.wh(h)
            i, f, g, o = gates.chunk(4, 1)
            i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
            c = f * c + i * g
            h = o * torch.tanh(c)
            hs.append(h)
        return torch.stack(hs), c


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(4 * 4 * 4, 10)

    def forward(self, x):
        y = self.pool(torch.relu(self.conv(x)))
        return self.fc(y.view(y.size(0), -1))  # Shape/Gather/Unsqueeze/Concat -> Reshape


class CnnBn(nn.Module):
    """BatchNorm after the ReLU (so the exporter cannot fold it into the Conv), global average
    pooling, Flatten, Dropout (eval: identity)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3, padding=1)
        self.bn = nn.BatchNorm2d(6)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.drop = nn.Dropout(0.5)
        self.fc = nn.Linear(6, 4)

    def forward(self, x):
        y = self.pool(self.bn(torch.relu(self.conv(x))))
        return self.fc(self.drop(torch.flatten(y, 1)))


class Rnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(6, 10, num_layers=1, nonlinearity="tanh", batch_first=True)

    def forward(self, x):
        y, h = self.rnn(x)
        return y, h


class EmbedLstm(nn.Module):
    """Token ids [T, B] (int64) -> nn.Embedding -> nn.LSTM -> Linear on the last step: Gather
    with run-time indices."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(20, 6)
        self.lstm = nn.LSTM(6, 8)
        self.fc = nn.Linear(8, 3)

    def forward(self, ids):
        y, _ = self.lstm(self.embed(ids))
        return self.fc(y[-1])


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(),
                                 nn.Linear(32, 10), nn.Softmax(dim=1))

    def forward(self, x):
        return self.net(x)


class LayerNormGeluMlp(nn.Module):
    """Linear -> LayerNorm -> GELU -> Linear. At opset 14 torch 1.13 decomposes LayerNorm
    (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add) and the exact GELU (Div, Erf,
    Add, Mul, Mul)."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.norm = nn.LayerNorm(32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(nn.functional.gelu(self.norm(self.fc1(x))))


class Lstm(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 16, num_layers=2, bidirectional=True)

    def forward(self, x):
        y, (h, c) = self.lstm(x)
        return y, h, c


class Gru(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(8, 16, num_layers=1)

    def forward(self, x):
        y, h = self.gru(x)
        return y, h


ONLY = set(sys.argv[1:])  # fixture names to write; empty: all


def export(name, model, inputs, input_names, output_names, opset=14, dynamic_axes=None):
    if ONLY and name not in ONLY:
        return
    model.eval()
    with torch.no_grad():
        outs = model(*inputs)
    if isinstance(outs, torch.Tensor):
        outs = (outs,)
    path = os.path.join(HERE, name + ".onnx")
    torch.onnx.export(model, tuple(inputs), path, input_names=input_names,
                      output_names=output_names, opset_version=opset, dynamic_axes=dynamic_axes)
    for i, t in enumerate(inputs):
        a = t.numpy()
        np.save(os.path.join(HERE, "%s.in%d.npy" % (name, i)),
                a if a.dtype == np.int64 else a.astype(np.float32))
    for i, t in enumerate(outs):
        np.save(os.path.join(HERE, "%s.out%d.npy" % (name, i)), t.numpy().astype(np.float32))
    print("%s.onnx: %d bytes" % (name, os.path.getsize(path)))


def main():
    torch.manual_seed(0)
    export("lstm_2layer_bidir", Lstm(),
           [torch.randn(5, 4, 8)], ["x"], ["y", "h", "c"])
    torch.manual_seed(1)
    # Dynamic batch: the importer needs dims={"batch": 4} (graphi --dim batch=4).
    export("gru_dynamic_batch", Gru(), [torch.randn(5, 4, 8)], ["x"], ["y", "h"],
           dynamic_axes={"x": {1: "batch"}, "y": {1: "batch"}, "h": {1: "batch"}})
    torch.manual_seed(2)
    export("lstm_cell_unrolled", LstmCellUnrolled(8, 16), [torch.randn(3, 4, 8)], ["x"],
           ["hs", "c"])
    torch.manual_seed(3)
    # Opset 11: Split/Unsqueeze/Squeeze take attributes instead of constant inputs.
    export("lstm_cell_unrolled_opset11", LstmCellUnrolled(8, 16), [torch.randn(3, 4, 8)], ["x"],
           ["hs", "c"], opset=11)
    torch.manual_seed(4)
    export("mlp", Mlp(), [torch.randn(4, 16)], ["x"], ["probs"])
    torch.manual_seed(5)
    export("cnn", Cnn(), [torch.randn(2, 1, 8, 8)], ["image"], ["logits"])
    torch.manual_seed(7)
    cnn_bn = CnnBn()
    with torch.no_grad():  # non-trivial running statistics
        cnn_bn.bn.running_mean.uniform_(-0.5, 0.5)
        cnn_bn.bn.running_var.uniform_(0.5, 2.0)
        cnn_bn.bn.weight.uniform_(0.5, 1.5)
        cnn_bn.bn.bias.uniform_(-0.5, 0.5)
    export("cnn_bn_gap", cnn_bn, [torch.randn(2, 3, 6, 6)], ["image"], ["logits"])
    torch.manual_seed(8)
    export("rnn_batch_first", Rnn(), [torch.randn(3, 4, 6)], ["x"], ["y", "h"])
    torch.manual_seed(9)
    export("embed_lstm", EmbedLstm(), [torch.randint(0, 20, (5, 2))], ["ids"], ["logits"])
    torch.manual_seed(6)
    export("cnn_dynamic_batch", Cnn(), [torch.randn(3, 1, 8, 8)], ["image"], ["logits"],
           dynamic_axes={"image": {0: "n"}, "logits": {0: "n"}})
    torch.manual_seed(10)
    ln_mlp = LayerNormGeluMlp()
    with torch.no_grad():  # a non-trivial affine part of the LayerNorm
        ln_mlp.norm.weight.uniform_(0.5, 1.5)
        ln_mlp.norm.bias.uniform_(-0.5, 0.5)
    export("layernorm_gelu_mlp", ln_mlp, [torch.randn(4, 6, 16)], ["x"], ["y"])


if __name__ == "__main__":
    main()
