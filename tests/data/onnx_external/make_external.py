#!/usr/bin/python3
"""Generates the ONNX external-data fixtures of tests/graph/test_onnx_external_data.cpp.

Usage: make_external.py [OUT_DIR]   (default: this script's directory; /usr/bin/python3 with
torch and onnx). Exit status 77 when torch or onnx is missing.

A small LSTM + Linear classifier (nn.LSTM(6, 8) -> last step -> nn.Linear(8, 3)) is exported with
torch.onnx.export (opset 14), then converted to external data with onnx's own converter
(onnx.save_model(..., save_as_external_data=True, all_tensors_to_one_file=True,
size_threshold=0)): every initializer's bytes move to lstm_classifier.onnx.data, and the model
keeps only TensorProto.external_data = {location, offset, length} (data_location = EXTERNAL).
This is what torch.onnx.export itself writes for models over 2 GB.

Files:
  lstm_classifier.onnx        the model (no weight bytes inside)
  lstm_classifier.onnx.data   the weights, back to back at the offsets onnx chose
  input.npy                   x float32 [T=5, B=2, 6]
  expected.npy                PyTorch's output for input.npy, float32 [2, 3]
Seeded (torch.manual_seed(15)), so a rerun with the same torch gives the same numbers.
"""
import os
import sys

try:
    import numpy as np
    import onnx
    import torch
except ImportError as e:  # pragma: no cover
    print("make_external.py: %s" % e, file=sys.stderr)
    sys.exit(77)


class LstmClassifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(6, 8)
        self.head = torch.nn.Linear(8, 3)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.head(y[-1])


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(15)
    m = LstmClassifier().eval()
    x = torch.randn(5, 2, 6)
    with torch.no_grad():
        expected = m(x)
    tmp = os.path.join(out, "tmp_inline.onnx")
    torch.onnx.export(m, (x,), tmp, input_names=["x"], output_names=["logits"], opset_version=14)
    model = onnx.load(tmp)
    os.remove(tmp)
    path = os.path.join(out, "lstm_classifier.onnx")
    data = "lstm_classifier.onnx.data"
    if os.path.exists(os.path.join(out, data)):
        os.remove(os.path.join(out, data))  # the converter appends to an existing file
    onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location=data, size_threshold=0)
    check = onnx.load(path, load_external_data=False)
    n_ext = sum(1 for t in check.graph.initializer
                if t.data_location == onnx.TensorProto.EXTERNAL)
    assert n_ext == len(check.graph.initializer) and n_ext > 0, "expected external initializers"
    onnx.checker.check_model(path)
    np.save(os.path.join(out, "input.npy"), x.numpy())
    np.save(os.path.join(out, "expected.npy"), expected.numpy())
    print("wrote %s (%d external initializers) and %s" % (path, n_ext, data))


if __name__ == "__main__":
    main()
