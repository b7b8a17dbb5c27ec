#!/usr/bin/python3
"""ONNX models for the simulator's evaluation (issue 11, seed 002 Table 1b/1c), exported with
torch 1.13 (run with /usr/bin/python3):
  pathnet.onnx    3 layers of 6 modules (3x3 conv + ReLU + 2x2 max-pool), modules summed per
                  layer (PathNet, Fernando et al. 2017, as seed 002 evaluates it); width 6.
  inception.onnx  3 GoogleNet inception blocks (1x1 | 1x1-3x3 | 1x1-5x5 | 3x3 pool-1x1,
                  concatenated); width 4 branches, 2-3 of them heavy.
usage: make_sim_models.py OUT_DIR [--only pathnet|inception] [--batch B] [--size S] [--channels C]
Seed 002 Table 1b medium PathNet: --only pathnet --batch 64 --size 48 --channels 32; the
inception stack at a GoogleNet 3a-like stage of a 192-pixel image, width 2 (Table 1c medium):
--only inception --batch 32 --size 24 --channels 256."""
import argparse, os, torch, torch.nn as nn

class PathNet(nn.Module):
    def __init__(self, c, layers=3, modules=6):
        super().__init__()
        self.layers = nn.ModuleList(nn.ModuleList(nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
                                                  for _ in range(modules)) for _ in range(layers))
    def forward(self, x):
        for layer in self.layers:
            outs = [m(x) for m in layer]
            x = outs[0]
            for o in outs[1:]: x = x + o
        return x

class Inception(nn.Module):
    def __init__(self, c):
        super().__init__()
        q = c // 4
        self.b1 = nn.Sequential(nn.Conv2d(c, q, 1), nn.ReLU())
        self.b2 = nn.Sequential(nn.Conv2d(c, q, 1), nn.ReLU(), nn.Conv2d(q, q, 3, padding=1), nn.ReLU())
        self.b3 = nn.Sequential(nn.Conv2d(c, q, 1), nn.ReLU(), nn.Conv2d(q, q, 5, padding=2), nn.ReLU())
        self.b4 = nn.Sequential(nn.MaxPool2d(3, 1, 1), nn.Conv2d(c, q, 1), nn.ReLU())
    def forward(self, x):
        return torch.cat([self.b1(x), self.b2(x), self.b3(x), self.b4(x)], 1)

def main():
    a = argparse.ArgumentParser()
    a.add_argument("out")
    a.add_argument("--batch", type=int, default=16)
    a.add_argument("--size", type=int, default=32)
    a.add_argument("--channels", type=int, default=32)
    a.add_argument("--only", choices=["pathnet", "inception"])
    o = a.parse_args()
    os.makedirs(o.out, exist_ok=True)
    torch.manual_seed(0)
    x = torch.randn(o.batch, o.channels, o.size, o.size)
    for name, m in [("pathnet", PathNet(o.channels)), ("inception", nn.Sequential(*[Inception(o.channels) for _ in range(3)]))]:
        if o.only and o.only != name: continue
        torch.onnx.export(m.eval(), x, os.path.join(o.out, name + ".onnx"), opset_version=13, input_names=["x"], output_names=["y"])
        print(os.path.join(o.out, name + ".onnx"))

main()
