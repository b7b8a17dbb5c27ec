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
STEPS, LR, SEED = 20, 0.01, 1
# Batch per model: the model's own, except googlenet (one step of the full 32-image batch at
# 128x128 takes seconds on the shared 2-core machine; 4 images keep the test near a minute).
BATCH = {"lstm": 64, "phased-lstm": 64, "pathnet": 64, "googlenet": 4}


def main():
    graphi = os.path.abspath(sys.argv[1])
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, batch in BATCH.items():
            model, data = os.path.join(tmp, name + ".graphi"), os.path.join(tmp, name + ".npz")
            subprocess.run([graphi, "model", name, "--size", "small", "--batch", str(batch),
                            "--seed", str(SEED), "--batch-npz", data, "-o", model], check=True,
                           stdout=subprocess.DEVNULL)
            res = subprocess.run([sys.executable, os.path.join(ROOT, "scripts",
                                                               "eval_models_torch.py"),
                                  "train", model, data, "--steps", str(STEPS), "--lr", str(LR),
                                  "--threads", "2"], check=True, capture_output=True, text=True)
            js = json.loads(res.stdout)
            out[name] = {"batch": batch, "seed": SEED, "lr": LR, "torch": js["version"],
                         "losses": [s["loss"] for s in js["steps"]]}
            print(name, out[name]["losses"][0], "->", out[name]["losses"][-1])
    out["_note"] = ("PyTorch losses per SGD step on the weights and batch of `graphi model NAME "
                    "--size small --batch B --seed 1`; googlenet at batch 4 (not 32) to keep "
                    "the ctest short on a shared 2-core machine.")
    with open(os.path.join(HERE, "losses.json"), "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
