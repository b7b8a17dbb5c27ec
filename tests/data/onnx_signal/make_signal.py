#!/usr/bin/env python3
"""Builds the signal-op fixtures of tests/graph/test_onnx_signal.cpp: spectrogram front-ends
exported from PyTorch 2.13 with torch.onnx.export (TorchScript exporter, opsets 17, 18, 20) and
ONNX models written with onnx.helper for the DFT forms PyTorch cannot export, each with its
inputs and a reference output from PyTorch (or, for ONNX-only ops, ONNX Runtime).

For each model NAME: NAME.onnx, NAME.in<i>.npy, NAME.out<i>.npy, and a MANIFEST line (the
reference's source after a '#').

What PyTorch 2.13 exports here (dynamo=False; its dynamo exporter needs onnxscript, which the
venv does not have): torch.stft with return_complex=False (as Pad + STFT, the window folded to a
constant) at opsets 17-20. Refused by the exporter: torch.stft(..., return_complex=True)
("STFT does not currently support complex types"), torch.fft.rfft / fft ("Exporting the operator
'aten::fft_rfft' to ONNX opset version 17 is not supported"), torch.view_as_complex. The dft_*
models are therefore hand-written DFT nodes, checked against torch.fft on the same inputs.

Run with the benchmarks' venv (PyTorch 2.13, onnxruntime):
  .venv/bin/python tests/data/onnx_signal/make_signal.py            # regenerate all
  PYTHONPATH=build/python .venv/bin/python tests/data/onnx_signal/make_signal.py --check
      # graphi.Session and ONNX Runtime against the committed references, max abs differences
"""
import io
import os
import sys
import warnings

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
warnings.filterwarnings("ignore")


def mel_filterbank(n_fft, n_mels, rate, fmin, fmax):
    """HTK-style triangular filters [n_fft // 2 + 1, n_mels] (a fixed matrix in the model)."""
    def mel(f):
        return 2595 * np.log10(1 + f / 700)

    def hz(m):
        return 700 * (10 ** (m / 2595) - 1)
    freqs = np.linspace(0, rate / 2, n_fft // 2 + 1)
    pts = hz(np.linspace(mel(fmin), mel(fmax), n_mels + 2))
    fb = np.zeros((n_fft // 2 + 1, n_mels), np.float32)
    for i in range(n_mels):
        lo, c, hi = pts[i], pts[i + 1], pts[i + 2]
        fb[:, i] = np.maximum(0, np.minimum((freqs - lo) / (c - lo), (hi - freqs) / (hi - c)))
    return torch.from_numpy(fb)


class Stft(torch.nn.Module):
    """torch.stft as real/imaginary pairs [B, bins, frames, 2]."""

    def __init__(self, n_fft, hop, window, win_length=None, center=True, onesided=True,
                 normalized=False):
        super().__init__()
        self.kw = dict(n_fft=n_fft, hop_length=hop, win_length=win_length, center=center,
                       onesided=onesided, normalized=normalized, return_complex=False)
        self.register_buffer("window", window)

    def forward(self, x):
        return torch.stft(x, window=self.window, **self.kw)


class LogMel(torch.nn.Module):
    """A speech front-end: 25 ms Hann frames every 10 ms at 16 kHz (n_fft 512, win 400),
    power spectrum, 40 mel filters, log."""

    def __init__(self):
        super().__init__()
        self.register_buffer("window", torch.hann_window(400))
        self.register_buffer("fb", mel_filterbank(512, 40, 16000, 20, 7600))

    def forward(self, x):
        s = torch.stft(x, 512, hop_length=160, win_length=400, window=self.window,
                       return_complex=False)                      # [B, 257, T, 2]
        power = s.pow(2).sum(-1).transpose(1, 2)                  # [B, T, 257]
        return torch.log(torch.matmul(power, self.fb) + 1e-6)     # [B, T, 40]


def torch_export(name, model, xs, opset):
    buf = io.BytesIO()
    torch.onnx.export(model, tuple(xs), buf, opset_version=opset, dynamo=False,
                      input_names=[f"in{i}" for i in range(len(xs))], output_names=["out0"])
    with torch.no_grad():
        y = model(*xs)
    return buf.getvalue(), [x.numpy() for x in xs], [y.numpy()], "torch"


def dft_model(name, x, opset, ref, inverse=0, onesided=0, axis=None, dft_length=None):
    """One DFT node on input x; axis an attribute (opset < 20) or a constant input."""
    inits, ins = [], ["in0"]
    ins.append("n" if dft_length is not None else "")
    if dft_length is not None:
        inits.append(numpy_helper.from_array(np.array(dft_length, np.int64), "n"))
    attrs = dict(inverse=inverse, onesided=onesided)
    if opset >= 20:
        if axis is not None:
            ins.append("axis")
            inits.append(numpy_helper.from_array(np.array(axis, np.int64), "axis"))
    elif axis is not None:
        attrs["axis"] = axis
    while ins and ins[-1] == "":
        ins.pop()
    node = helper.make_node("DFT", ins, ["out0"], **attrs)
    g = helper.make_graph([node], name, [helper.make_tensor_value_info("in0", TensorProto.FLOAT,
                                                                       list(x.shape))],
                          [helper.make_tensor_value_info("out0", TensorProto.FLOAT, None)],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m.SerializeToString(), [x], [ref.astype(np.float32)], "torch.fft"


def as_pairs(c):
    return np.stack([c.real, c.imag], -1).astype(np.float32)


def onnx_frontend(name):
    """An ONNX-native log-mel front-end: HannWindow(64) -> STFT(frame_step 16) -> |.|^2 ->
    MatMul(MelWeightMatrix(20 mels, 64, 8000 Hz, 60-3800 Hz)) -> Log; reference: ONNX Runtime."""
    c = lambda n, v, t=np.int64: numpy_helper.from_array(np.array(v, t), n)  # noqa: E731
    nodes = [
        helper.make_node("HannWindow", ["wsize"], ["win"]),
        helper.make_node("STFT", ["in0", "step", "win"], ["spec"]),
        helper.make_node("Mul", ["spec", "spec"], ["sq"]),
        helper.make_node("ReduceSum", ["sq", "last"], ["power"], keepdims=0),
        helper.make_node("MelWeightMatrix", ["mels", "wsize", "rate", "lo", "hi"], ["fb"]),
        helper.make_node("MatMul", ["power", "fb"], ["mel"]),
        helper.make_node("Add", ["mel", "eps"], ["mel_eps"]),
        helper.make_node("Log", ["mel_eps"], ["out0"]),
    ]
    inits = [c("wsize", 64), c("step", 16), c("last", [-1]), c("mels", 20), c("rate", 8000),
             c("lo", 60.0, np.float32), c("hi", 3800.0, np.float32), c("eps", 1e-6, np.float32)]
    x = np.random.default_rng(5).standard_normal((2, 800, 1)).astype(np.float32)
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("in0", TensorProto.FLOAT,
                                                                      [2, 800, 1])],
                          [helper.make_tensor_value_info("out0", TensorProto.FLOAT, None)],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 8
    data = m.SerializeToString()
    import onnxruntime as ort
    y = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"in0": x})[0]
    return data, [x], [y], "onnxruntime"


def models():
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    r = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    out = {}
    out["stft_hann_center_op17"] = lambda n: torch_export(
        n, Stft(64, 16, torch.hann_window(64)), [torch.from_numpy(r(2, 400))], 17)
    out["stft_logmel_op17"] = lambda n: torch_export(
        n, LogMel(), [torch.from_numpy(r(1, 1600))], 17)
    out["stft_hamming_prime_twosided_op20"] = lambda n: torch_export(
        n, Stft(37, 7, torch.hamming_window(37), center=False, onesided=False),
        [torch.from_numpy(r(3, 200))], 20)
    out["stft_blackman_normalized_op18"] = lambda n: torch_export(
        n, Stft(60, 15, torch.blackman_window(60), center=False, normalized=True),
        [torch.from_numpy(r(2, 300))], 18)
    x = r(3, 1009, 1)
    out["dft_rfft_prime_op20"] = lambda n: dft_model(
        n, x, 20, as_pairs(torch.fft.rfft(torch.from_numpy(x[..., 0]), dim=1).numpy()),
        onesided=1, axis=-2)
    xc = r(2, 4, 96, 2)
    out["dft_fft_complex_axis2_op17"] = lambda n: dft_model(
        n, xc, 17, as_pairs(torch.fft.fft(torch.view_as_complex(torch.from_numpy(xc)),
                                          dim=2).numpy()), axis=2)
    xs = r(2, 257, 2)
    out["dft_irfft_op20"] = lambda n: dft_model(
        n, xs, 20, torch.fft.irfft(torch.view_as_complex(torch.from_numpy(xs)), n=512,
                                   dim=1).numpy()[..., None], inverse=1, onesided=1, axis=1,
        dft_length=512)
    xp = r(2, 60, 1)
    out["dft_pad_length_op17"] = lambda n: dft_model(
        n, xp, 17, as_pairs(torch.fft.fft(torch.from_numpy(xp[..., 0]), n=100, dim=1).numpy()),
        axis=1, dft_length=100)
    xi = r(2, 3000, 2)
    out["dft_ifft_3000_op20"] = lambda n: dft_model(
        n, xi, 20, as_pairs(torch.fft.ifft(torch.view_as_complex(torch.from_numpy(xi)),
                                           dim=1).numpy()), inverse=1, axis=1)
    out["onnx_logmel_frontend_op18"] = onnx_frontend
    return out


def write(name, data, xs, ys, source):
    with open(os.path.join(HERE, name + ".onnx"), "wb") as f:
        f.write(data)
    for i, x in enumerate(xs):
        np.save(os.path.join(HERE, f"{name}.in{i}.npy"), x)
    for i, y in enumerate(ys):
        np.save(os.path.join(HERE, f"{name}.out{i}.npy"), y)
    return f"{name}  # reference: {source}"


def check():
    import onnxruntime as ort
    import graphi
    bad = 0
    for line in open(os.path.join(HERE, "MANIFEST")):
        name = line.split("#")[0].strip()
        if not name:
            continue
        path = os.path.join(HERE, name + ".onnx")
        x = np.load(os.path.join(HERE, name + ".in0.npy"))
        want = np.load(os.path.join(HERE, name + ".out0.npy"))
        got = graphi.Session(path).run([x])
        got = got[list(got)[0]] if isinstance(got, dict) else got[0]
        o = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"in0": x})[0]
        scale = float(np.abs(want).max())
        e_ref = float(np.abs(got - want).max())
        e_ort = float(np.abs(got - o).max())
        e_ort_ref = float(np.abs(o - want).max())
        ok = e_ref <= 1e-5 + 1e-4 * scale
        bad += not ok
        print(f"{'PASS' if ok else 'WRONG'} {name}: graphi vs reference {e_ref:.3g}, graphi vs ORT "
              f"{e_ort:.3g}, ORT vs reference {e_ort_ref:.3g} (scale {scale:.3g}, "
              f"{line.split('#')[1].strip()})")
    return bad


def main():
    if sys.argv[1:] == ["--check"]:
        sys.exit(1 if check() else 0)
    lines = []
    for name, make in models().items():
        lines.append(write(name, *make(name)))
        print(name, os.path.getsize(os.path.join(HERE, name + ".onnx")), "bytes")
    with open(os.path.join(HERE, "MANIFEST"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
