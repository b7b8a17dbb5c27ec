#!/usr/bin/python3
"""The CNNs of scripts/bench_cnn.sh (issue 18), as PyTorch modules exported to ONNX.

Models (each at batch 1 and 8):
- the 2-D and 1-D CNNs of the ONNX zoo (tests/data/onnx_zoo/make_zoo.py: the same module
  classes and input sizes, re-exported at the benchmark's batch sizes);
- inception: GoogleNet's inception (3a) block (192 -> 64 + 128 + 32 + 32 channels, 28x28), its
  four branches in parallel;
- pathnet: a PathNet layer stack as in seed 002 (Table 1b, small size: image 32, 16 filters):
  3 layers of 6 modules, each module 3x3 conv + ReLU + 2x2 max-pool, the modules of a layer
  summed;
- googlenet: GoogleNet (inception v1, no LRN, no auxiliary heads) at Table 1c's smallest size:
  image 128, width 1 (the filter counts of the paper);
- group "common" (benchmarks/cnn/common_cnns.py; only when named, `--models common` names them
  all): ResNet-18, MobileNetV2, an EfficientNet-like MobileNetV2, a ShuffleNetV2-like stack, a
  DenseNet-like and a U-Net-like model, the architectures a user brings, none tuned for;
- group "volumetric" (benchmarks/cnn/volumetric_cnns.py; only when named): a C3D-like video
  classifier, a 3-D U-Net, an r3d_18-style video ResNet and an X3D-style net.

For each model M and batch B it writes OUT/M_bB.onnx, OUT/M_bB.in0.npy (the input) and
OUT/M.pt (the state_dict, so the PyTorch peer in another interpreter uses the same weights).
Exported with the TorchScript exporter of /usr/bin/python3's torch (opset 13); weights from
fixed seeds.

Run: /usr/bin/python3 benchmarks/cnn/cnn_models.py OUT_DIR [--only NAME ...]
"""
import os
import sys
import zlib

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common_cnns  # noqa: E402
import volumetric_cnns  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ZOO_DIR = os.path.join(HERE, "..", "..", "tests", "data", "onnx_zoo")
BATCHES = (1, 8)


def _zoo():
    sys.path.insert(0, ZOO_DIR)
    try:
        import make_zoo
    finally:
        sys.path.pop(0)
    return make_zoo


class Inception(nn.Module):
    """One inception block: 1x1 | 1x1 -> 3x3 | 1x1 -> 5x5 | 3x3 max-pool -> 1x1, each conv with
    ReLU, concatenated on channels (GoogleNet, Szegedy et al. 2015, Table 1)."""

    def __init__(self, cin, c1, c3r, c3, c5r, c5, cp):
        super().__init__()
        self.b1 = nn.Conv2d(cin, c1, 1)
        self.b2a = nn.Conv2d(cin, c3r, 1)
        self.b2b = nn.Conv2d(c3r, c3, 3, padding=1)
        self.b3a = nn.Conv2d(cin, c5r, 1)
        self.b3b = nn.Conv2d(c5r, c5, 5, padding=2)
        self.b4 = nn.Conv2d(cin, cp, 1)

    def forward(self, x):
        y1 = F.relu(self.b1(x))
        y2 = F.relu(self.b2b(F.relu(self.b2a(x))))
        y3 = F.relu(self.b3b(F.relu(self.b3a(x))))
        y4 = F.relu(self.b4(F.max_pool2d(x, 3, stride=1, padding=1)))
        return torch.cat([y1, y2, y3, y4], 1)


class PathNet(nn.Module):
    """Seed 002's PathNet: `layers` layers of `modules` parallel modules (3x3 conv with
    `filters` filters + ReLU + 2x2 max-pool), the module outputs of a layer summed; a linear
    read-out at the end."""

    def __init__(self, cin=3, filters=16, layers=3, modules=6, image=32, classes=10):
        super().__init__()
        self.layers = nn.ModuleList()
        c = cin
        for _ in range(layers):
            self.layers.append(nn.ModuleList(nn.Conv2d(c, filters, 3, padding=1)
                                             for _ in range(modules)))
            c = filters
            image //= 2
        self.fc = nn.Linear(filters * image * image, classes)

    def forward(self, x):
        for mods in self.layers:
            ys = [F.max_pool2d(F.relu(m(x)), 2) for m in mods]
            x = ys[0]
            for y in ys[1:]:
                x = x + y
        return self.fc(torch.flatten(x, 1))


class GoogleNet(nn.Module):
    """Inception v1 with every filter count multiplied by `width` (seed 002, Table 1c)."""

    def __init__(self, width=1, classes=1000):
        super().__init__()
        w = lambda c: max(1, int(c * width))  # noqa: E731
        self.c1 = nn.Conv2d(3, w(64), 7, stride=2, padding=3)
        self.c2r = nn.Conv2d(w(64), w(64), 1)
        self.c2 = nn.Conv2d(w(64), w(192), 3, padding=1)
        spec = {  # cin, 1x1, 3x3 reduce, 3x3, 5x5 reduce, 5x5, pool proj
            "3a": (192, 64, 96, 128, 16, 32, 32), "3b": (256, 128, 128, 192, 32, 96, 64),
            "4a": (480, 192, 96, 208, 16, 48, 64), "4b": (512, 160, 112, 224, 24, 64, 64),
            "4c": (512, 128, 128, 256, 24, 64, 64), "4d": (512, 112, 144, 288, 32, 64, 64),
            "4e": (528, 256, 160, 320, 32, 128, 128), "5a": (832, 256, 160, 320, 32, 128, 128),
            "5b": (832, 384, 192, 384, 48, 128, 128)}
        self.blocks = nn.ModuleDict({k: Inception(*[w(c) for c in v]) for k, v in spec.items()})
        self.fc = nn.Linear(w(1024), classes)

    def forward(self, x):
        pool = lambda t: F.max_pool2d(t, 3, stride=2, padding=1)  # noqa: E731
        x = pool(F.relu(self.c1(x)))
        x = pool(F.relu(self.c2(F.relu(self.c2r(x)))))
        for k in ("3a", "3b"):
            x = self.blocks[k](x)
        x = pool(x)
        for k in ("4a", "4b", "4c", "4d", "4e"):
            x = self.blocks[k](x)
        x = pool(x)
        for k in ("5a", "5b"):
            x = self.blocks[k](x)
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        return self.fc(x)


def models():
    """name -> (make module, per-sample input shape, input dtype, group)."""
    z = _zoo()
    return {
        "zoo_mobilenetish": (z.MobileNetish, (3, 16, 16), "float32", "zoo"),
        "zoo_super_resolution": (z.SuperResolution, (1, 8, 8), "float32", "zoo"),
        "zoo_autoencoder2d": (z.AutoEncoder2d, (3, 8, 10), "float32", "zoo"),
        "zoo_upsample": (z.UpsampleNet, (3, 3, 5), "float32", "zoo"),
        "zoo_ceil_pool_net": (z.CeilPoolNet, (3, 11, 11), "float32", "zoo"),
        "zoo_text_cnn": (z.TextCnn, (20,), "int64", "zoo"),
        "zoo_conv1d_signal": (z.Conv1dSignal, (2, 32), "float32", "zoo"),
        "zoo_upconv1d": (z.UpConv1d, (4, 9), "float32", "zoo"),
        "inception": (lambda: Inception(192, 64, 96, 128, 16, 32, 32), (192, 28, 28),
                      "float32", "seed"),
        "pathnet": (PathNet, (3, 32, 32), "float32", "seed"),
        "googlenet": (lambda: GoogleNet(1), (3, 128, 128), "float32", "seed"),
        **{n: (make, shape, "float32", "common")
           for n, (make, shape) in common_cnns.models().items()},
        **{n: (make, shape, "float32", "volumetric")
           for n, (make, shape) in volumetric_cnns.models().items()},
    }


def make_input(name, shape, dtype, batch):
    rng = np.random.default_rng(zlib.crc32(name.encode()) + batch)
    if dtype == "int64":
        return rng.integers(0, 40, size=(batch,) + shape).astype(np.int64)
    return rng.standard_normal((batch,) + shape).astype(np.float32)


def build(name, make):
    torch.manual_seed(1234)
    m = make().eval()
    # BatchNorm statistics that are not the identity, so folding or skipping them shows.
    g = torch.Generator().manual_seed(7)
    for mod in m.modules():
        if isinstance(mod, (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)):
            mod.running_mean.uniform_(-0.5, 0.5, generator=g)
            mod.running_var.uniform_(0.5, 1.5, generator=g)
    return m


def export(out_dir, only=()):
    os.makedirs(out_dir, exist_ok=True)
    for name, (make, shape, dtype, _) in models().items():
        if only and name not in only:
            continue
        m = build(name, make)
        torch.save(m.state_dict(), os.path.join(out_dir, name + ".pt"))
        for b in BATCHES:
            x = make_input(name, shape, dtype, b)
            np.save(os.path.join(out_dir, f"{name}_b{b}.in0.npy"), x)
            path = os.path.join(out_dir, f"{name}_b{b}.onnx")
            with torch.no_grad():
                torch.onnx.export(m, (torch.from_numpy(x),), path, opset_version=13,
                                  input_names=["x"], do_constant_folding=True)
            print(f"{name}_b{b}: {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    import warnings
    warnings.filterwarnings("ignore")
    only = sys.argv[3:] if len(sys.argv) > 2 and sys.argv[2] == "--only" else ()
    export(sys.argv[1], only)
