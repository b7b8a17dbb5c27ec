#!/usr/bin/python3
"""Builds the ONNX model zoo of tests/graph/test_onnx_zoo.cpp: small but realistic PyTorch
models (transformer layers, attention, a GPT-style block, CNNs, RNNs, masking, index ops),
exported with torch.onnx.export at opsets 13 and 17, some with a dynamic batch.

For each model NAME it writes NAME.onnx, the inputs NAME.in<i>.npy and PyTorch's outputs
NAME.out<i>.npy (graph input/output order), and one line of MANIFEST
(`NAME dim=value ...`: the values of the model's symbolic dims, which graphi takes as
`--dim NAME=VALUE`). Weights and inputs come from fixed seeds.

Run: /usr/bin/python3 tests/data/onnx_zoo/make_zoo.py [NAME ...]   (with names: only those;
the MANIFEST is rewritten from all models either way). The *_op20 models are PyTorch 2's exports
(its TorchScript exporter's default opset, with ONNX's Gelu op and opset 18's reductions): make
them with the benchmarks' venv, `.venv/bin/python tests/data/onnx_zoo/make_zoo.py --op20`
(PyTorch 2.13 from scripts/requirements-bench.txt); PyTorch 1.13 skips them. The *_dynamo models
are PyTorch 2's dynamo exporter (`torch.onnx.export(..., dynamo=True)`, the default since
PyTorch 2.9: torch.export's ATen graph translated by onnxscript, opset 18+, LayerNormalization,
LSTM/GRU nodes, weights named after the module's parameters), which needs onnxscript:
`.venv/bin/pip install --target DIR onnxscript`, then
`PYTHONPATH=DIR .venv/bin/python tests/data/onnx_zoo/make_zoo.py --dynamo`.
Known gaps (models graphi refuses, with the error they must give): make_zoo.py --gaps.
Check against graphi: PYTHONPATH=build/python /usr/bin/python3 tests/data/onnx_zoo/make_zoo.py --check
(graphi.Session on the committed files), --torch (graphi.torch.compile on the modules),
--torch-no-grad (the same, compile() called inside torch.no_grad()).
"""
import io
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))


# ---------------------------------------------------------------------------------------------
# Models


class Mha(nn.Module):
    """nn.MultiheadAttention on its own (self-attention, batch_first), both outputs."""

    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(16, 4, batch_first=True)

    def forward(self, x):
        y, w = self.mha(x, x, x, need_weights=True)
        return y, w


class MhaCross(nn.Module):
    """Cross attention with separate key/value widths (kdim/vdim), seq-first layout."""

    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(16, 2, kdim=12, vdim=8)

    def forward(self, q, kv_k, kv_v):
        y, _ = self.mha(q, kv_k, kv_v, need_weights=False)
        return y


class EncoderLayer(nn.Module):
    def __init__(self, norm_first=False, activation="relu"):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.1,
                                                batch_first=True, norm_first=norm_first,
                                                activation=activation)

    def forward(self, x):
        return self.layer(x)


class EncoderLayerMasked(nn.Module):
    """Padding mask built inside the model from int64 lengths (positions >= length are
    padding), as a bool src_key_padding_mask."""

    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, batch_first=True)

    def forward(self, x, lengths):
        t = x.shape[1]
        mask = torch.arange(t).unsqueeze(0) >= lengths.unsqueeze(1)
        return self.layer(x, src_key_padding_mask=mask)


class EncoderStack(nn.Module):
    """nn.TransformerEncoder of 2 layers with a final LayerNorm, then mean pooling."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(16))
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        return self.head(self.enc(x).mean(dim=1))


class GptBlock(nn.Module):
    """Token + position embeddings, one pre-norm causal self-attention block written by hand
    (torch.triu mask, masked_fill, softmax), GELU (tanh approximation) MLP, residuals, tied
    output head."""

    def __init__(self, vocab=50, d=16, heads=2, ctx=8):
        super().__init__()
        self.heads = heads
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(ctx, d)
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)
        self.lnf = nn.LayerNorm(d)

    def forward(self, ids):
        b, t = ids.shape
        pos = torch.arange(t, device=ids.device)
        x = self.tok(ids) + self.pos(pos)
        h = self.ln1(x)
        q, k, v = self.qkv(h).split(x.shape[-1], dim=-1)
        d = x.shape[-1] // self.heads
        q = q.view(b, t, self.heads, d).transpose(1, 2)
        k = k.view(b, t, self.heads, d).transpose(1, 2)
        v = v.view(b, t, self.heads, d).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d)
        causal = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        att = att.masked_fill(causal, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, -1)
        x = x + self.proj(y)
        x = x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))
        return self.lnf(x) @ self.tok.weight.t()


class TextCnn(nn.Module):
    """Embedding -> Conv1d + BatchNorm1d + ReLU + MaxPool1d, twice -> global max -> Linear."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(40, 12)
        self.c1 = nn.Conv1d(12, 16, 3, padding=1)
        self.b1 = nn.BatchNorm1d(16)
        self.p1 = nn.MaxPool1d(2)
        self.c2 = nn.Conv1d(16, 16, 5, padding=2, stride=1)
        self.b2 = nn.BatchNorm1d(16)
        self.fc = nn.Linear(16, 4)

    def forward(self, ids):
        x = self.emb(ids).transpose(1, 2)
        x = self.p1(F.relu(self.b1(self.c1(x))))
        x = F.relu(self.b2(self.c2(x)))
        return self.fc(x.max(dim=2).values)


class Conv1dSignal(nn.Module):
    """Raw float signal [N, C, L]: strided and dilated Conv1d, AvgPool1d, Flatten, Linear."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(2, 8, 7, stride=2, padding=3)
        self.c2 = nn.Conv1d(8, 8, 3, dilation=2, padding=2, groups=2)
        self.pool = nn.AvgPool1d(2)
        self.fc = nn.Linear(8 * 8, 5)

    def forward(self, x):
        x = F.relu(self.c1(x))
        x = self.pool(F.silu(self.c2(x)))
        return self.fc(torch.flatten(x, 1))


class WaveNetish(nn.Module):
    """A WaveNet-style 1-D stack [N, 1, L]: causal dilated Conv1d (F.pad on the left), a gated
    activation (chunk into tanh and sigmoid halves), 1x1 residual and skip convs, a per-channel
    BatchNorm1d, log-softmax over channels (graph/passes/conv1d_lift.h)."""

    def __init__(self, c=32, layers=4):
        super().__init__()
        self.inp = nn.Conv1d(1, c, 1)
        self.f = nn.ModuleList([nn.Conv1d(c, 2 * c, 2, dilation=2 ** k) for k in range(layers)])
        self.r = nn.ModuleList([nn.Conv1d(c, c, 1) for _ in range(layers)])
        self.bn = nn.BatchNorm1d(c)
        self.out = nn.Conv1d(c, 8, 1)

    def forward(self, x):
        h = self.inp(x)
        skip = torch.zeros_like(h)
        for k, (f, r) in enumerate(zip(self.f, self.r)):
            a, g = f(F.pad(h, (2 ** k, 0))).chunk(2, 1)
            z = torch.tanh(a) * torch.sigmoid(g)
            h = h + r(z)
            skip = skip + z
        return self.out(F.relu(self.bn(skip))).log_softmax(1)


class Tcn(nn.Module):
    """Bai et al.'s temporal convolutional network [N, 8, L]: per level two dilated Conv1d padded
    by (k - 1) d on both sides and chomped (x[:, :, :-(k - 1) d]), a 1x1 downsample on the
    residual, a Linear on the last step (graph/passes/pad_fold.h's crop rule)."""

    def __init__(self, c=24, levels=3, k=3):
        super().__init__()
        self.c1, self.c2, self.down, self.chomp = nn.ModuleList(), nn.ModuleList(), nn.ModuleList(), []
        cin = 8
        for i in range(levels):
            d = 2 ** i
            p = (k - 1) * d
            self.c1.append(nn.Conv1d(cin, c, k, padding=p, dilation=d))
            self.c2.append(nn.Conv1d(c, c, k, padding=p, dilation=d))
            self.down.append(nn.Conv1d(cin, c, 1) if cin != c else nn.Identity())
            self.chomp.append(p)
            cin = c
        self.fc = nn.Linear(c, 5)

    def forward(self, x):
        for c1, c2, down, p in zip(self.c1, self.c2, self.down, self.chomp):
            y = F.relu(c1(x)[:, :, :-p])
            y = F.relu(c2(y)[:, :, :-p])
            x = F.relu(y + down(x))
        return self.fc(x[:, :, -1])


class GlobalPools1d3d(nn.Module):
    """Conv1d + BatchNorm1d + GELU + MaxPool1d, then AdaptiveAvgPool1d(1) and AdaptiveMaxPool1d(1)
    (GlobalAveragePool / GlobalMaxPool on a 3-D input) and AdaptiveAvgPool3d(1) on the signal viewed
    as 5-D (GlobalAveragePool on a 5-D input; PyTorch exports AdaptiveMaxPool3d as a 3-D MaxPool)."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv1d(4, 6, 5, padding=2)
        self.bn = nn.BatchNorm1d(6)
        self.fc = nn.Linear(12, 3)

    def forward(self, x):
        y = F.max_pool1d(F.gelu(self.bn(self.c(x))), 2)
        head = self.fc(torch.cat([F.adaptive_avg_pool1d(y, 1), F.adaptive_max_pool1d(y, 1)], 1)
                       .flatten(1))
        v = x.view(x.shape[0], 2, 2, 4, x.shape[2] // 4)
        return head, F.adaptive_avg_pool3d(v, 1) - v.amax(dim=(2, 3, 4), keepdim=True)


class DilatedPools(nn.Module):
    """MaxPool2d with dilation (and ceil_mode, stride, padding), MaxPool1d with dilation."""

    def forward(self, x):
        a = F.max_pool2d(x, 3, stride=2, padding=1, dilation=2)
        b = F.max_pool2d(x, (2, 3), stride=1, dilation=(3, 2), ceil_mode=True)
        c = F.max_pool1d(x.flatten(2), 3, stride=2, dilation=3)
        return a, b, c


def max_unpool2d_symbolic(g, x, indices, output_size):
    """ONNX export of aten::max_unpool2d, which PyTorch 1.13's exporter lacks (and PyTorch 2.13's
    TorchScript exporter cannot trace; its dynamo exporter's torchlib does not implement it): a
    MaxUnpool with output_shape. PyTorch's indices count within each (n, c) plane, ONNX's over
    the whole tensor, so the plane offsets are added back (the exporter subtracted them after
    MaxPool). Static shapes; kernel_shape and strides only matter without output_shape."""
    from torch.onnx import symbolic_helper as sh
    if sh._is_packed_list(output_size):
        out_hw = [sh._get_const(v, "i", "output_size") for v in sh._unpack_list(output_size)]
    else:
        out_hw = list(sh._get_const(output_size, "is", "output_size"))
    n, c, h, w = sh._get_tensor_sizes(x)
    offsets = (torch.arange(n * c, dtype=torch.int64) * out_hw[0] * out_hw[1]).reshape(n, c, 1, 1)
    flat = g.op("Add", indices, g.op("Constant", value_t=offsets))
    shape = g.op("Constant", value_t=torch.tensor([n, c] + out_hw, dtype=torch.int64))
    k = [max(1, out_hw[0] // h), max(1, out_hw[1] // w)]
    return g.op("MaxUnpool", x, flat, shape, kernel_shape_i=k, strides_i=k)


torch.onnx.register_custom_op_symbolic("aten::max_unpool2d", max_unpool2d_symbolic, 11)


class SegNetLike(nn.Module):
    """SegNet-style encoder-decoder: Conv + BatchNorm + ReLU, 2x2 max pools that return their
    indices (MaxPool's Indices output), nn.MaxUnpool2d with them (output_size for the odd
    width), the indices of the inner pool as an output, and an nn.LPPool2d head (PyTorch writes
    it as Pow, AveragePool, Sign, Abs, Relu, Mul, Pow)."""

    def __init__(self):
        super().__init__()
        self.enc1 = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.enc2 = nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.pool = nn.MaxPool2d(2, 2, return_indices=True)
        self.unpool = nn.MaxUnpool2d(2, 2)
        self.dec2 = nn.Sequential(nn.Conv2d(16, 8, 3, padding=1), nn.ReLU())
        self.dec1 = nn.Conv2d(8, 4, 3, padding=1)
        self.lp = nn.LPPool2d(2, 3, stride=2)

    def forward(self, x):
        e1 = self.enc1(x)
        p1, i1 = self.pool(e1)
        e2 = self.enc2(p1)
        p2, i2 = self.pool(e2)
        d2 = self.dec2(self.unpool(p2, i2, output_size=e2.shape[-2:]))
        d1 = self.dec1(self.unpool(d2, i1, output_size=e1.shape[-2:]))
        return d1, i2, self.lp(e2)


class Bicubic(nn.Module):
    """Bicubic interpolation (Resize mode 'cubic', cubic_coeff_a -0.75): x2 (pytorch_half_pixel),
    to a fixed size with align_corners, and a downsampling; taps past the edges read the edge."""

    def forward(self, x):
        up = F.interpolate(x, scale_factor=2, mode="bicubic", align_corners=False)
        sized = F.interpolate(x, size=(7, 9), mode="bicubic", align_corners=True)
        down = F.interpolate(up, size=(3, 4), mode="bicubic", align_corners=False)
        return up, sized, down


class MobileNetish(nn.Module):
    """Conv2d stride 2, depthwise (groups = channels) dilated conv, pointwise conv, BatchNorm,
    Hardswish/ReLU6, AdaptiveAvgPool2d(1), Flatten, Linear."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False)
        self.bn0 = nn.BatchNorm2d(8)
        self.dw = nn.Conv2d(8, 8, 3, padding=2, dilation=2, groups=8, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.pw = nn.Conv2d(8, 16, 1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = F.hardswish(self.bn0(self.stem(x)))
        x = F.relu6(self.bn1(self.dw(x)))
        x = self.pw(x)
        return self.fc(torch.flatten(self.pool(x), 1))


class GruClassifier(nn.Module):
    """Embedding -> bidirectional GRU (batch_first) -> last step -> Linear -> LogSoftmax."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(30, 8)
        self.gru = nn.GRU(8, 12, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(24, 5)

    def forward(self, ids):
        y, _ = self.gru(self.emb(ids))
        return F.log_softmax(self.fc(y[:, -1, :]), dim=-1)


class LstmDropout(nn.Module):
    """2-layer LSTM with dropout between layers (eval: no-op), projection of every step."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(6, 10, num_layers=2, dropout=0.3)
        self.out = nn.Linear(10, 3)

    def forward(self, x):
        y, (h, c) = self.lstm(x)
        return torch.sigmoid(self.out(y)), h


class WhereMask(nn.Module):
    """torch.where with a computed condition, masked_fill, clamp, comparison chains."""

    def forward(self, x, y):
        m = x > 0.2
        a = torch.where(m, x, y * 2.0)
        b = a.masked_fill(y < -0.5, 0.0)
        c = torch.where((x.abs() < 0.1) | (y > 1.0), torch.zeros_like(x), b)
        return c, torch.clamp(x * y, min=-0.3, max=0.4)


class ShapeChain(nn.Module):
    """expand / repeat / permute / flatten / unsqueeze / squeeze / view / chunk / cat."""

    def forward(self, x, y):  # x [B, 3, 4], y [B, 4]
        a = x.permute(0, 2, 1).unsqueeze(1)          # [B, 1, 4, 3]
        a = a.expand(-1, 2, -1, -1)                  # [B, 2, 4, 3]
        b = y.unsqueeze(-1).repeat(1, 1, 3)          # [B, 4, 3]
        c = a + b.unsqueeze(1)
        d = torch.flatten(c, start_dim=1)            # [B, 24]
        e, f = d.chunk(2, dim=1)
        g = torch.cat([f, e * 2.0], dim=1).view(-1, 6, 4)
        return g.squeeze(0) if g.shape[0] == 1 else g, x.transpose(1, 2).reshape(x.shape[0], -1)


class IndexOps(nn.Module):
    """argmax / topk / gather with computed indices / Cast to float."""

    def forward(self, x):  # [B, 10]
        am = torch.argmax(x, dim=1)
        vals, idx = torch.topk(x, 3, dim=1)
        g = torch.gather(x, 1, idx)
        onehot = (torch.arange(10).unsqueeze(0) == am.unsqueeze(1)).float()
        return am, vals, g, onehot, idx.to(torch.float32) / 10.0


class SoftmaxAxes(nn.Module):
    def forward(self, x):  # [B, 3, 4, 5]
        return (torch.softmax(x, dim=1), torch.softmax(x, dim=2), torch.log_softmax(x, dim=-1),
                torch.softmax(x.transpose(1, 3), dim=0))


class Activations(nn.Module):
    def forward(self, x):
        return (torch.sigmoid(x) + F.hardswish(x), F.silu(x), F.mish(x), F.gelu(x), F.elu(x),
                F.hardsigmoid(x), F.softplus(x), F.relu6(x), F.leaky_relu(x, 0.1), torch.tanh(x))


class Norms(nn.Module):
    """InstanceNorm2d (affine), GroupNorm, LayerNorm over two dims, on an NCHW tensor."""

    def __init__(self):
        super().__init__()
        self.inorm = nn.InstanceNorm2d(4, affine=True)
        self.gn = nn.GroupNorm(2, 4)
        self.ln = nn.LayerNorm([5, 6])

    def forward(self, x):
        return self.inorm(x), self.gn(x), self.ln(x)


class UpsampleNet(nn.Module):
    """Upsample nearest (scale 2), interpolate nearest to a size, a Conv2d in between."""

    def __init__(self):
        super().__init__()
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.conv = nn.Conv2d(3, 3, 3, padding=1)

    def forward(self, x):
        y = self.conv(self.up(x))
        return y, F.interpolate(x, size=(6, 10), mode="nearest")


class MlpDynamic(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(12, 24), nn.GELU(), nn.Dropout(0.2), nn.Linear(24, 24),
                                 nn.Tanh(), nn.Linear(24, 3), nn.Softmax(dim=-1))

    def forward(self, x):
        return self.net(x)


class IntegerOps(nn.Module):
    """int64 arithmetic on ids (add, mul, remainder, clamp), casts both ways, embedding of the
    result, a sum over the sequence."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(16, 4)

    def forward(self, ids):  # int64 [B, T]
        j = (ids * 3 + 1) % 16
        e = self.emb(j)
        k = ids.float().sum(dim=1, keepdim=True)
        return e.sum(dim=1) + k, (ids.float() * 0.5).long() + 1


class AutoEncoder2d(nn.Module):
    """Conv2d stride 2 + PReLU per channel, ConvTranspose2d back up (stride 2, padding 1,
    output_padding 1), PReLU with one slope, ConvTranspose2d grouped, Sigmoid."""

    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.act1 = nn.PReLU(8)
        self.up = nn.ConvTranspose2d(8, 6, 3, stride=2, padding=1, output_padding=1)
        self.act2 = nn.PReLU()
        self.out = nn.ConvTranspose2d(6, 4, (2, 3), stride=1, padding=(0, 1), groups=2,
                                      dilation=(1, 2), bias=False)

    def forward(self, x):
        return torch.sigmoid(self.out(self.act2(self.up(self.act1(self.down(x))))))


class UpConv1d(nn.Module):
    """ConvTranspose1d (stride 3, dilation 2, groups 2) between Conv1d layers (a vocoder-like
    upsampler)."""

    def __init__(self):
        super().__init__()
        self.pre = nn.Conv1d(4, 8, 3, padding=1)
        self.up = nn.ConvTranspose1d(8, 6, 4, stride=3, padding=1, dilation=2, groups=2)
        self.post = nn.Conv1d(6, 2, 5, padding=2)

    def forward(self, x):
        return self.post(F.leaky_relu(self.up(F.leaky_relu(self.pre(x), 0.2)), 0.2))


class PositionIds(nn.Module):
    """RoBERTa-style position ids from the token ids (padding id 1): ne, int cast, cumsum,
    integer multiply and add; token + position embeddings, LayerNorm."""

    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(20, 8, padding_idx=1)
        self.pos = nn.Embedding(16, 8, padding_idx=1)
        self.ln = nn.LayerNorm(8)

    def forward(self, ids):
        mask = ids.ne(1).int()
        pos = (torch.cumsum(mask, dim=1).type_as(mask) * mask).long() + 1
        return self.ln(self.tok(ids) + self.pos(pos)), pos


class DecoderLayer(nn.Module):
    """nn.TransformerDecoderLayer (batch_first) with a causal float tgt_mask from
    nn.Transformer.generate_square_subsequent_mask and a memory input."""

    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerDecoderLayer(16, 2, dim_feedforward=32, batch_first=True)

    def forward(self, tgt, memory):
        mask = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1])
        return self.layer(tgt, memory, tgt_mask=mask)


class RotaryEinsum(nn.Module):
    """Rotary position embedding (einsum outer product of positions and frequencies, cos/sin,
    rotate-half) and attention written with torch.einsum."""

    def __init__(self, d=8):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d)))

    def forward(self, x):  # [B, T, D]
        t = torch.arange(x.shape[1]).float()
        freqs = torch.einsum("i,j->ij", t, self.inv_freq)
        emb = torch.cat([freqs, freqs], dim=-1)
        x1, x2 = x.chunk(2, dim=-1)
        y = x * emb.cos() + torch.cat([-x2, x1], dim=-1) * emb.sin()
        att = torch.einsum("bqd,bkd->bqk", y, y).softmax(dim=-1)
        return torch.einsum("bqk,bkd->bqd", att, x)


class SuperResolution(nn.Module):
    """The PyTorch ONNX tutorial's super-resolution net (smaller): convs, PixelShuffle(2)."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 8, 5, padding=2)
        self.c2 = nn.Conv2d(8, 8, 3, padding=1)
        self.c3 = nn.Conv2d(8, 4, 3, padding=1)
        self.shuffle = nn.PixelShuffle(2)

    def forward(self, x):
        return self.shuffle(self.c3(F.relu(self.c2(F.relu(self.c1(x))))))


class CeilPoolNet(nn.Module):
    """SqueezeNet-style pooling with ceil_mode, CELU, PixelUnshuffle, one-hot of the argmax."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.fc = nn.Linear(16 * 2 * 2, 5)

    def forward(self, x):  # [N, 3, 11, 11]
        y = F.max_pool2d(F.celu(self.conv(x), 0.5), 3, stride=2, ceil_mode=True)  # 9 -> 4
        y = F.avg_pool2d(y, 2, stride=2, ceil_mode=True, count_include_pad=False)  # 4 -> 2
        y = F.pixel_unshuffle(F.pad(y, (0, 2, 0, 2)), 2)  # [N, 16, 2, 2]
        logits = self.fc(torch.flatten(y, 1))
        return logits, F.one_hot(logits.argmax(-1), 5).float()


class ScatterOps(nn.Module):
    """torch.scatter with a larger src, scatter_add, x[idx] = v (index_put: ScatterND) and
    advanced indexing x[rows, cols] on run-time index tensors."""

    def forward(self, x, idx, rows, cols):  # x [4, 6], idx [4, 2], rows/cols [3]
        a = torch.scatter(x, 1, idx, torch.ones_like(x) * 5.0)
        b = torch.zeros(4, 6).scatter_add(1, idx, x[:, :2])
        c = x.clone()
        c[rows] = -1.0
        return a, b, c, x[rows, cols]


# ---------------------------------------------------------------------------------------------
# The zoo: name -> (factory, input factory, opset, dynamic batch?)


class ShuffleStage(nn.Module):
    """ShuffleNetV2's unit twice: chunk, a 1x1 / depthwise 3x3 / 1x1 branch, Concat, channel
    shuffle (view + transpose + reshape); 20 channels, so blocked values are padded. Outputs the
    shuffled tensor and a channel slice of it."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 20, 3, padding=1)

        def branch():
            return nn.Sequential(nn.Conv2d(10, 10, 1), nn.BatchNorm2d(10), nn.ReLU(),
                                 nn.Conv2d(10, 10, 3, padding=1, groups=10), nn.BatchNorm2d(10),
                                 nn.Conv2d(10, 10, 1), nn.ReLU())
        self.b1, self.b2 = branch(), branch()

    @staticmethod
    def unit(x, branch):
        a, b = x.chunk(2, dim=1)
        y = torch.cat([a, branch(b)], 1)
        n, c, h, w = y.shape
        return y.view(n, 2, c // 2, h, w).transpose(1, 2).reshape(n, c, h, w)

    def forward(self, x):
        y = self.unit(self.unit(torch.relu(self.stem(x)), self.b1), self.b2)
        return y, y[:, 5:15]


def randn(*s):
    return torch.randn(*s)


def ids(high, *s):
    return torch.randint(0, high, s, dtype=torch.int64)


ZOO = {}


def add(name, make, inputs, opsets=(13, 17), dynamic=None):
    """dynamic: {input_index: axis} of symbolic 'batch' dims, or {input_index: {axis: name}}
    (the values are the example's; outputs get the same names on the same axes of output 0)."""
    for opset in opsets:
        ZOO[f"{name}_op{opset}"] = (make, inputs, opset, dynamic)


add("mha", Mha, lambda: [randn(2, 5, 16)])
add("mha_cross", MhaCross, lambda: [randn(4, 2, 16), randn(6, 2, 12), randn(6, 2, 8)], (13,))
add("encoder_layer", EncoderLayer, lambda: [randn(2, 6, 16)])
add("encoder_layer_gelu_prenorm", lambda: EncoderLayer(True, "gelu"), lambda: [randn(2, 6, 16)],
    (17,))
add("encoder_layer_masked", EncoderLayerMasked,
    lambda: [randn(3, 6, 16), torch.tensor([6, 4, 2], dtype=torch.int64)])
add("encoder_stack_dyn", EncoderStack, lambda: [randn(3, 5, 16)], (13,), {0: 0})
add("gpt_block", GptBlock, lambda: [ids(50, 2, 8)], (14, 17))  # triu: opset >= 14
add("text_cnn", TextCnn, lambda: [ids(40, 3, 20)])
add("conv1d_signal", Conv1dSignal, lambda: [randn(2, 2, 32)], (13,))
add("wavenetish", WaveNetish, lambda: [randn(2, 1, 50)], (13, 17))
add("tcn", Tcn, lambda: [randn(2, 8, 40)], (13,))
add("global_pools_1d3d", GlobalPools1d3d, lambda: [randn(2, 4, 16)], (13, 17))
add("bicubic", Bicubic, lambda: [randn(2, 3, 5, 6)], (13, 17))
add("dilated_pools", DilatedPools, lambda: [randn(2, 3, 11, 12)], (13, 17))
# MaxPool's Indices and MaxUnpool (a known gap until session 26).
add("segnet_unpool", SegNetLike, lambda: [randn(2, 3, 13, 18)], (13, 17))
add("mobilenetish", MobileNetish, lambda: [randn(2, 3, 16, 16)], (13,))
add("mobilenetish_dyn", MobileNetish, lambda: [randn(3, 3, 16, 16)], (17,), {0: 0})
add("gru_classifier", GruClassifier, lambda: [ids(30, 3, 7)])
add("gru_classifier_dyn", GruClassifier, lambda: [ids(30, 2, 7)], (13,), {0: 0})
add("lstm_dropout", LstmDropout, lambda: [randn(5, 2, 6)])
add("where_mask", WhereMask, lambda: [randn(3, 8), randn(3, 8)])
add("shape_chain", ShapeChain, lambda: [randn(2, 3, 4), randn(2, 4)])
add("index_ops", IndexOps, lambda: [randn(4, 10)])
add("softmax_axes", SoftmaxAxes, lambda: [randn(2, 3, 4, 5)])
add("activations", Activations, lambda: [randn(3, 7) * 3])
add("norms", Norms, lambda: [randn(2, 4, 5, 6)])
add("upsample", UpsampleNet, lambda: [randn(1, 3, 3, 5)])
add("mlp_dyn", MlpDynamic, lambda: [randn(5, 12)], (13, 17), {0: 0})
add("integer_ops", IntegerOps, lambda: [ids(16, 2, 5)], (13,))
add("autoencoder2d", AutoEncoder2d, lambda: [randn(2, 3, 8, 10)])
add("upconv1d", UpConv1d, lambda: [randn(2, 4, 9)], (13,))
add("position_ids", PositionIds,
    lambda: [torch.tensor([[5, 7, 3, 1, 1], [4, 4, 9, 12, 1]], dtype=torch.int64)], (13, 17))
add("encoder_layer_dynseq", EncoderLayer, lambda: [randn(2, 7, 16)], (17,),
    {0: {0: "batch", 1: "seq"}})
add("gpt_block_dynseq", GptBlock, lambda: [ids(50, 3, 6)], (17,), {0: {0: "batch", 1: "seq"}})
add("rotary_einsum", RotaryEinsum, lambda: [randn(2, 6, 8)], (13, 17))
add("super_resolution", SuperResolution, lambda: [randn(1, 1, 8, 8)], (13, 17))
add("ceil_pool_net", CeilPoolNet, lambda: [randn(2, 3, 11, 11)], (13, 17))
add("scatter_ops", ScatterOps,
    lambda: [randn(4, 6), torch.tensor([[0, 3], [1, 5], [2, 2], [4, 0]]),
             torch.tensor([3, 0, 2]), torch.tensor([5, 1, 1])], (16, 17))  # scatter_add: 16
add("channel_shuffle", ShuffleStage, lambda: [randn(2, 3, 9, 11)])
add("decoder_layer", DecoderLayer, lambda: [randn(2, 5, 16), randn(2, 7, 16)], (14, 17))
# PyTorch 2's default export (opset 20): needs torch >= 2 (see the module docstring).
for _name, _make, _inputs in [
        ("encoder_layer_gelu_prenorm", lambda: EncoderLayer(True, "gelu"),
         lambda: [randn(2, 6, 16)]),
        ("gpt_block", GptBlock, lambda: [ids(50, 2, 8)]),
        ("decoder_layer", DecoderLayer, lambda: [randn(2, 5, 16), randn(2, 7, 16)]),
        ("mobilenetish", MobileNetish, lambda: [randn(2, 3, 16, 16)]),
        ("gru_classifier", GruClassifier, lambda: [ids(30, 3, 7)]),
        ("lstm_dropout", LstmDropout, lambda: [randn(5, 2, 6)]),
        ("norms", Norms, lambda: [randn(2, 4, 5, 6)]),
        ("activations", Activations, lambda: [randn(3, 7) * 3]),
        ("global_pools_1d3d", GlobalPools1d3d, lambda: [randn(2, 4, 16)]),
        ("softmax_axes", SoftmaxAxes, lambda: [randn(2, 3, 4, 5)]),
        ("upsample", UpsampleNet, lambda: [randn(1, 3, 3, 5)])]:
    add(_name, _make, _inputs, (20,))

# PyTorch 2's dynamo exporter (see the module docstring): the same modules through torch.export.
DYNAMO = set()
for _name, _make, _inputs, _dynamic in [
        ("encoder_layer_gelu_prenorm", lambda: EncoderLayer(True, "gelu"),
         lambda: [randn(2, 6, 16)], None),
        ("gpt_block", GptBlock, lambda: [ids(50, 2, 8)], None),
        ("decoder_layer", DecoderLayer, lambda: [randn(2, 5, 16), randn(2, 7, 16)], None),
        ("mobilenetish", MobileNetish, lambda: [randn(2, 3, 16, 16)], None),
        ("wavenetish", WaveNetish, lambda: [randn(2, 1, 50)], None),
        ("tcn", Tcn, lambda: [randn(2, 8, 40)], None),
        ("mobilenetish_dyn", MobileNetish, lambda: [randn(3, 3, 16, 16)], {0: 0}),
        ("gru_classifier", GruClassifier, lambda: [ids(30, 3, 7)], None),
        ("lstm_dropout", LstmDropout, lambda: [randn(5, 2, 6)], None),
        ("norms", Norms, lambda: [randn(2, 4, 5, 6)], None),
        ("activations", Activations, lambda: [randn(3, 7) * 3], None),
        ("softmax_axes", SoftmaxAxes, lambda: [randn(2, 3, 4, 5)], None),
        ("upsample", UpsampleNet, lambda: [randn(1, 3, 3, 5)], None),
        ("autoencoder2d", AutoEncoder2d, lambda: [randn(2, 3, 8, 10)], None),
        ("ceil_pool_net", CeilPoolNet, lambda: [randn(2, 3, 11, 11)], None),
        ("channel_shuffle", ShuffleStage, lambda: [randn(2, 3, 9, 11)], None),
        ("super_resolution", SuperResolution, lambda: [randn(1, 1, 8, 8)], None),
        ("rotary_einsum", RotaryEinsum, lambda: [randn(2, 6, 8)], None),
        ("index_ops", IndexOps, lambda: [randn(4, 10)], None),
        ("where_mask", WhereMask, lambda: [randn(3, 8), randn(3, 8)], None)]:
    ZOO[f"{_name}_dynamo"] = (_make, _inputs, 20, _dynamic)
    DYNAMO.add(f"{_name}_dynamo")


# ---------------------------------------------------------------------------------------------
# Known gaps: models graphi refuses. Written to gaps/NAME.onnx; gaps/EXPECTED lists each with
# the text its error must contain (the test also checks the message names the file).


class BoolMaskInput(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, batch_first=True)

    def forward(self, x, pad_mask):
        return self.layer(x, src_key_padding_mask=pad_mask)


class NonZero(nn.Module):
    def forward(self, x):
        return torch.nonzero(x > 0)


class Volumetric(nn.Module):
    """A video / 3-D CNN block: Conv3d + BatchNorm3d + ReLU, max pooling with ceil_mode, a grouped
    strided Conv3d, average pooling without the padding, a ConvTranspose3d with output_padding
    (known gaps until session 25)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(2, 8, 3, padding=1)
        self.bn = nn.BatchNorm3d(8)
        self.conv2 = nn.Conv3d(8, 8, (1, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1), groups=2)
        self.up = nn.ConvTranspose3d(8, 4, 3, stride=2, padding=1, output_padding=1)

    def forward(self, x):
        x = F.max_pool3d(torch.relu(self.bn(self.conv(x))), 2, ceil_mode=True)
        x = F.avg_pool3d(self.conv2(x), 3, stride=1, padding=1, count_include_pad=False)
        return self.up(x)


class Unique(nn.Module):
    """An output whose size depends on the data (graphi's graphs are static)."""

    def forward(self, x):
        return torch.unique(x.round(), sorted=True)


class Det(nn.Module):
    """torch.linalg.det (ONNX Det, opset 11) on a batch of 4x4 matrices, and on 3x3 matrices a
    Linear layer makes (a known gap until session 26)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x, y):
        return torch.linalg.det(x), torch.linalg.det(self.lin(y))


class Fold(nn.Module):
    """nn.Fold (ONNX Col2Im, opset 18: PyTorch 2's exporter) after nn.Unfold and a per-block
    scaling: overlapping 3x3 blocks with stride 2 and padding 1 summed back, and dilated 2x2
    blocks."""

    def __init__(self):
        super().__init__()
        self.unfold = nn.Unfold(3, padding=1, stride=2)
        self.fold = nn.Fold((7, 9), 3, padding=1, stride=2)
        self.fold2 = nn.Fold((6, 5), 2, dilation=(2, 1))

    def forward(self, x, cols):
        return self.fold(self.unfold(x) * 0.5), self.fold2(cols)


class GridSample(nn.Module):
    """F.grid_sample (a spatial transformer's sampler, flow warping): bilinear with zeros,
    nearest with reflection and bicubic with zeros padding (where PyTorch and ONNX agree on
    points outside the image; bicubic with border or reflection pads differently in PyTorch)."""

    def forward(self, x, grid):
        return (F.grid_sample(x, grid, align_corners=False),
                F.grid_sample(x, grid, mode="nearest", padding_mode="reflection",
                              align_corners=True),
                F.grid_sample(x, grid, mode="bicubic", align_corners=False))


class EmbeddingBagMean(nn.Module):
    def __init__(self):
        super().__init__()
        self.bag = nn.EmbeddingBag(10, 4, mode="mean")

    def forward(self, ids):
        return self.bag(ids)


class HalveUntilSmall(nn.Module):
    """A loop whose end depends on the data (scripted: a Loop with a run-time condition)."""

    def forward(self, x):
        return halve_until_small(x)


@torch.jit.script
def halve_until_small(x):
    while bool(x.abs().sum() > 1.0):
        x = x / 2
    return x


GAPS = {
    "nonzero": (NonZero, lambda: [randn(3, 4)], 13, "op type 'NonZero'"),
    "unique": (Unique, lambda: [randn(3, 4)], 13, "op type 'Unique'"),
    "data_loop": (HalveUntilSmall, lambda: [randn(2, 3)], 13, "computed at run time"),
}

# GridSample, opset 16 (bilinear/bicubic) and 20 (linear/cubic); grid points up to 1.3 outside
# [-1, 1] (a known gap until the grid-sample branch).
add("grid_sample", GridSample,
    lambda: [randn(2, 3, 5, 6), torch.rand(2, 4, 7, 2) * 2.6 - 1.3], (16, 20))
add("volumetric", Volumetric, lambda: [randn(2, 2, 5, 9, 10)], (13,))
# torch.linalg.det (Det, a known gap until session 26); nn.Fold (Col2Im, opset 18: PyTorch 2's
# exporter, `.venv/bin/python tests/data/onnx_zoo/make_zoo.py fold_op18`).
add("det", Det, lambda: [randn(2, 3, 4, 4), randn(5, 3, 3)], (13,))
add("fold", Fold, lambda: [randn(2, 3, 7, 9), randn(2, 3 * 4, 4 * 4)], (18,))
# nn.EmbeddingBag exports a Loop over the bags (constant trip count): unrolled at import (it
# was a known gap until session 20).
add("embedding_bag", EmbeddingBagMean, lambda: [torch.randint(0, 10, (3, 4))], (13,))
# A bool graph input (src_key_padding_mask): graphi feeds it as float32 0/1, so its .npy is
# saved that way (export() below); PyTorch's outputs are from the bool mask.
add("bool_mask_input", BoolMaskInput,
    lambda: [randn(2, 4, 16), torch.tensor([[0, 0, 1, 1], [0, 0, 0, 1]]).bool()], (13,))


def export_gaps():
    os.makedirs(os.path.join(HERE, "gaps"), exist_ok=True)
    lines = []
    for name, (make, inputs, opset, expect) in GAPS.items():
        torch.manual_seed(1)
        model = make().eval()
        xs = inputs()
        torch.onnx.export(model, tuple(xs), os.path.join(HERE, "gaps", name + ".onnx"),
                          opset_version=opset, input_names=[f"in{i}" for i in range(len(xs))])
        lines.append(f"{name}\t{expect}")
        print(f"gaps/{name}: {os.path.getsize(os.path.join(HERE, 'gaps', name + '.onnx'))} bytes")
    with open(os.path.join(HERE, "gaps", "EXPECTED"), "w") as f:
        f.write("\n".join(lines) + "\n")


def dyn_axes(spec):
    return {spec: "batch"} if isinstance(spec, int) else spec


def manifest_dims(name, dynamic):
    """`name=value` of every symbolic dim, values from the saved inputs."""
    dims = {}
    for i, spec in (dynamic or {}).items():
        shape = np.load(os.path.join(HERE, f"{name}.in{i}.npy")).shape
        for ax, dim in dyn_axes(spec).items():
            dims[dim] = shape[ax]
    return "".join(f" {k}={v}" for k, v in dims.items())


def torch_major():
    return int(torch.__version__.split(".")[0])


def export(name):
    make, inputs, opset, dynamic = ZOO[name]
    torch.manual_seed(sum(map(ord, name.rsplit("_op", 1)[0].removesuffix("_dynamo"))))
    model = make().eval()
    # Non-trivial BatchNorm statistics, so folding them is tested.
    for m in model.modules():
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
        if isinstance(m, (nn.LayerNorm, nn.GroupNorm, nn.InstanceNorm2d)) and m.weight is not None:
            with torch.no_grad():
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
    xs = inputs()
    with torch.no_grad():
        ys = model(*xs)
    ys = list(ys) if isinstance(ys, (tuple, list)) else [ys]
    in_names = [f"in{i}" for i in range(len(xs))]
    out_names = [f"out{i}" for i in range(len(ys))]
    dyn = None
    if dynamic:
        dyn = {in_names[i]: dyn_axes(spec) for i, spec in dynamic.items()}
        for k in range(len(ys)):
            dyn[out_names[k]] = {0: "batch"}
        first = dyn_axes(next(iter(dynamic.values())))
        if ys and all(ax < ys[0].dim() for ax in first):
            dyn[out_names[0]] = dict(first)
    if name in DYNAMO:
        # One file, weights inside (the dynamo exporter's default writes them beside it).
        path = os.path.join(HERE, name + ".onnx")
        torch.onnx.export(model, tuple(xs), path, dynamo=True, external_data=False,
                          input_names=in_names, output_names=out_names, dynamic_axes=dyn)
        if os.path.exists(path + ".data"):
            os.remove(path + ".data")
        save_io(name, xs, ys)
        return manifest_dims(name, dynamic)
    buf = io.BytesIO()
    # Not under no_grad: eval + no_grad sends nn.MultiheadAttention and
    # nn.TransformerEncoderLayer down their fused fast path, which the exporter cannot write.
    # PyTorch 2: its TorchScript exporter (dynamo=False), as PyTorch 1.13 has only that one.
    extra = {"dynamo": False} if torch_major() >= 2 else {}
    torch.onnx.export(model, tuple(xs), buf, opset_version=opset, input_names=in_names,
                      output_names=out_names, dynamic_axes=dyn, do_constant_folding=True, **extra)
    with open(os.path.join(HERE, name + ".onnx"), "wb") as f:
        f.write(buf.getvalue())
    save_io(name, xs, ys)
    return manifest_dims(name, dynamic)


def save_io(name, xs, ys):
    for i, x in enumerate(xs):
        a = x.numpy()  # a bool input as graphi feeds it (graph/onnx/ONNX.md, Booleans)
        np.save(os.path.join(HERE, f"{name}.in{i}.npy"), a.astype(np.float32) if a.dtype == bool else a)
    for i, y in enumerate(ys):
        np.save(os.path.join(HERE, f"{name}.out{i}.npy"), y.numpy())


def write_manifest():
    lines = []
    for name, (make, inputs, opset, dynamic) in ZOO.items():
        if not os.path.exists(os.path.join(HERE, name + ".onnx")):
            continue
        lines.append(name + manifest_dims(name, dynamic))
    with open(os.path.join(HERE, "MANIFEST"), "w") as f:
        f.write("\n".join(lines) + "\n")


def close(a, b):
    """1e-4 relative to the output's scale, 1e-5 absolute."""
    if a.shape != b.shape:
        return False, f"shape {a.shape} vs {b.shape}"
    if a.dtype.kind in "iu" or b.dtype.kind in "iu":
        ok = np.array_equal(a.astype(np.int64), b.astype(np.int64))
        return ok, "" if ok else "integer values differ"
    fin = np.isfinite(b)
    if not np.array_equal(fin, np.isfinite(a)) or not np.array_equal(a[~fin], b[~fin]):
        return False, "non-finite values differ"
    scale = float(np.max(np.abs(b[fin]))) if fin.any() else 0.0
    err = float(np.max(np.abs(a[fin] - b[fin]))) if fin.any() else 0.0
    ok = err <= 1e-5 + 1e-4 * scale
    return ok, f"max abs err {err:.3g} (scale {scale:.3g})"


def check(names):
    """Runs each model through graphi.Session and compares with the committed outputs."""
    import graphi
    bad = 0
    for name in names:
        dims = {}
        for line in open(os.path.join(HERE, "MANIFEST")):
            parts = line.split()
            if parts and parts[0] == name:
                dims = {k: int(v) for k, v in (p.split("=") for p in parts[1:])}
        path = os.path.join(HERE, name + ".onnx")
        try:
            s = graphi.Session(path, dims=dims or None)
            xs = [np.load(os.path.join(HERE, f"{name}.in{i}.npy")) for i in range(len(s.inputs))]
            out = s.run(xs)
            msgs = []
            ok = True
            for i, o in enumerate(s.outputs):
                want = np.load(os.path.join(HERE, f"{name}.out{i}.npy"))
                good, msg = close(out[o.name], want)
                ok &= good
                msgs.append(f"{o.name}: {msg}")
            print(f"{'PASS' if ok else 'WRONG'} {name}: {'; '.join(msgs)}")
            bad += not ok
        except Exception as e:  # graphi.Error
            first = str(e).split(". graphi runs these")[0]
            print(f"FAIL {name}: {first[:400]}")
            bad += 1
    return bad


def check_torch(names, no_grad=False):
    """Runs each zoo module through graphi.torch.compile (opset 14, static shapes) and compares
    with the module's own outputs (ZOO names without the _op suffix are the same module)."""
    import graphi
    import graphi.torch  # noqa: F401
    import contextlib
    import warnings
    warnings.filterwarnings("ignore")
    bad = 0
    seen = set()
    for name in names:
        base = name.rsplit("_op", 1)[0]
        if base in seen:
            continue
        seen.add(base)
        make, inputs, opset, dynamic = ZOO[name]
        torch.manual_seed(sum(map(ord, base)))
        model = make().eval()
        xs = inputs()
        with torch.no_grad():
            want = model(*xs)
        want = [w.numpy() for w in (want if isinstance(want, (tuple, list)) else [want])]
        try:
            with torch.no_grad() if no_grad else contextlib.nullcontext():
                f = graphi.torch.compile(model, tuple(xs))
            got = f(*xs)
            got = [g.numpy() for g in (got if isinstance(got, tuple) else (got,))]
            res = [close(g, w) for g, w in zip(got, want)]
            ok = len(got) == len(want) and all(r[0] for r in res)
            print(f"{'PASS' if ok else 'WRONG'} {base}: {'; '.join(r[1] for r in res)}")
            bad += not ok
        except Exception as e:
            print(f"FAIL {base}: {str(e).split('. graphi runs these')[0][:300]}")
            bad += 1
    return bad


def main():
    args = sys.argv[1:]
    if args and args[0] in ("--torch", "--torch-no-grad"):
        names = args[1:] or list(ZOO)
        sys.exit(1 if check_torch(names, args[0] == "--torch-no-grad") else 0)
    if args and args[0] == "--gaps":
        import warnings
        warnings.filterwarnings("ignore")
        export_gaps()
        return
    if args and args[0] == "--check":
        names = args[1:] or list(ZOO)
        sys.exit(1 if check(names) else 0)
    if args and args[0] == "--op20":
        args = [n for n in ZOO if n.endswith("_op20")]
    if args and args[0] == "--dynamo":
        args = sorted(DYNAMO)
    names = args or [n for n in ZOO if n not in DYNAMO and (ZOO[n][2] < 18 or torch_major() >= 2)]
    for n in names:
        if n not in ZOO:
            sys.exit(f"unknown model {n}; models: {' '.join(ZOO)}")
    import warnings
    warnings.filterwarnings("ignore")
    failed = []
    for n in names:
        try:
            export(n)
        except Exception as e:  # an export PyTorch 1.13 cannot do: reported, not fatal
            print(f"{n}: export failed: {str(e).splitlines()[0][:200]}")
            failed.append(n)
            continue
        size = os.path.getsize(os.path.join(HERE, n + ".onnx"))
        print(f"{n}: {size} bytes")
    write_manifest()
    if failed:
        sys.exit(f"export failed: {' '.join(failed)}")


if __name__ == "__main__":
    main()
