#!/usr/bin/env python3
"""Writes losses.json for tests/models/test_eval_models.cpp: for each evaluation model at size
small, `graphi model NAME --size small --batch-npz` (the seeded weights and batch graphi's test
builds in process), then 20 SGD steps (lr 0.01) of the PyTorch module of
scripts/eval_models_torch.py on those exact weights, recording PyTorch's loss at every step.

  /work/main/.venv/bin/python tests/data/training/eval_models/make_eval_fixtures.py build/graphi
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
STEPS, SEED = 20, 1
# Batch per model, reduced from the models' 64 (googlenet 32): on the shared 2-core machine
# (load average ~26 while this was written) one step at full batch took 4-60 s, so 20 steps of
# four models would take most of an hour of ctest. The graph, sizes and weights are the small
# models'; only the batch dimension is smaller.
BATCH = {"lstm": 16, "phased-lstm": 16, "pathnet": 16, "googlenet": 2, "lstm-fused": 16}
# Learning rates that make the loss move well beyond the 1e-3 tolerance within 20 steps while
# it falls smoothly (the RNNs learn slowly at 0.01; at 0.01 PathNet's summed modules diverge
# and GoogleNet's loss jumps around chaotically, so that float32 rounding differences between
# any two implementations grow past 1e-3 within 20 steps).
LR = {"lstm": 0.5, "phased-lstm": 0.5, "pathnet": 0.001, "googlenet": 0.0002, "lstm-fused": 0.5}
# "lstm-fused": the lstm model as `graphi train --fuse-rnn` trains it (one nn.LSTM, b_ih and b_hh
# trained apart: eval_models_torch.py --variant fused).
VARIANT = {"lstm-fused": ("lstm", "fused")}


def main():
    graphi = os.path.abspath(sys.argv[1])
    only = sys.argv[2:]  # optional: regenerate these models only, keep the others
    path = os.path.join(HERE, "losses.json")
    out = json.load(open(path)) if only and os.path.exists(path) else {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, batch in BATCH.items():
            if only and name not in only:
                continue
            kind, variant = VARIANT.get(name, (name, "cells"))
            model, data = os.path.join(tmp, name + ".graphi"), os.path.join(tmp, name + ".npz")
            subprocess.run([graphi, "model", kind, "--size", "small", "--batch", str(batch),
                            "--seed", str(SEED), "--batch-npz", data, "-o", model], check=True,
                           stdout=subprocess.DEVNULL)
            res = subprocess.run([sys.executable, os.path.join(ROOT, "scripts",
                                                               "eval_models_torch.py"),
                                  "train", model, data, "--steps", str(STEPS), "--lr", str(LR[name]),
                                  "--threads", "1", "--variant", variant], check=True, capture_output=True, text=True)
            js = json.loads(res.stdout)
            out[name] = {"batch": batch, "seed": SEED, "lr": LR[name], "torch": js["version"],
                         "variant": variant,
                         "losses": [s["loss"] for s in js["steps"]]}
            print(name, out[name]["losses"][0], "->", out[name]["losses"][-1])
    out["_note"] = ("PyTorch losses per SGD step on the weights and batch of `graphi model NAME "
                    "--size small --batch B --seed 1`; batches reduced (see make_eval_fixtures.py) "
                    "to keep the ctest short on a shared 2-core machine.")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
