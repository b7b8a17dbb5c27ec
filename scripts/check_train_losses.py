#!/usr/bin/env python3
"""Issue 13's first check at every size: each evaluation model (docs/EVALUATION.md) trains N SGD
steps (default 20) in graphi and in PyTorch from the same seeded weights and batch, at the
models' full batch (64; GoogleNet 32), and the losses of every step are compared (within 1e-3
relative: the issue's tolerance).

  scripts/check_train_losses.sh [--sizes small,medium,large] [--models lstm,...] [--steps 20]

Per model and size: `graphi model NAME --size S --batch-npz` (weights and batch), `graphi train`
(1 x all cores, sequential) and scripts/eval_models_torch.py (same module op for op, all cores),
both with the model's learning rate below. A size that does not fit in memory (the estimate of
bench_train.py) or whose first graphi step is slower than --step-budget-s is a row saying so.

Learning rates: the ctest's (tests/data/training/eval_models/make_eval_fixtures.py), where the
loss falls smoothly; at rates where training is chaotic (PathNet at 0.01: the loss jumps 8 ->
126 -> 4) any two float32 implementations drift apart by more than 1e-3 within a few steps,
which says nothing about the gradients. --lr overrides them for every model.
"""
import argparse
import json
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_train import mem_available_bytes, training_bytes  # noqa: E402

MODELS = ["lstm", "phased-lstm", "pathnet", "googlenet"]
SIZES = ["small", "medium", "large"]
LR = {"lstm": 0.5, "phased-lstm": 0.5, "pathnet": 0.001, "googlenet": 0.0002}
TOLERANCE = 1e-3


def losses_of(cmd, timeout):
    """The losses and step times of one training process, and its peak resident memory (GiB)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    timer = threading.Timer(timeout, p.kill)
    timer.start()
    out = p.stdout.read()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if not timer.is_alive():
        raise subprocess.TimeoutExpired(cmd, timeout, out)
    timer.cancel()
    if p.returncode != 0:
        raise subprocess.CalledProcessError(p.returncode, cmd, out)
    js = json.loads(out)
    return ([s["loss"] for s in js["steps"]], [s["ms"] for s in js["steps"]],
            usage.ru_maxrss / 2**20)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graphi", required=True)
    ap.add_argument("--torch-python", required=True)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--sizes", default="small,medium")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--lr", type=float, default=0, help="one rate for every model")
    ap.add_argument("--step-budget-s", type=float, default=60.0,
                    help="skip a size whose first graphi step takes longer")
    ap.add_argument("--workdir", default=os.path.join(HERE, "..", "build", "check_train_losses"))
    ap.add_argument("--json-out", default="")
    args = ap.parse_args()
    cores = os.cpu_count() or 1
    os.makedirs(args.workdir, exist_ok=True)
    rows = []
    for size in args.sizes.split(","):
        for name in args.models.split(","):
            if name not in MODELS or size not in SIZES:
                sys.exit(f"check_train_losses: unknown model '{name}' or size '{size}' "
                         f"(models {', '.join(MODELS)}; sizes {', '.join(SIZES)})")
            lr = args.lr or LR[name]
            row = {"model": name, "size": size, "lr": lr}
            rows.append(row)
            need = training_bytes(name, size)
            if need > 0.8 * mem_available_bytes():
                row["skipped"] = (f"needs ~{need / 2**30:.1f} GiB, "
                                  f"{mem_available_bytes() / 2**30:.1f} GiB available")
                print(f"{name} {size}: skipped ({row['skipped']})", flush=True)
                continue
            base = os.path.join(args.workdir, f"{name}-{size}")
            model, batch = base + ".graphi", base + ".npz"
            subprocess.run([args.graphi, "model", name, "--size", size, "--batch-npz", batch,
                            "-o", model], check=True, stdout=subprocess.DEVNULL, timeout=600)
            graphi = [args.graphi, "train", model, "--batch-from", batch, "--threads",
                      str(cores), "--lr", str(lr), "--json"]
            # One step first: the budget check (a large size may take minutes per step here).
            t0 = time.time()
            _, first_ms, _ = losses_of(graphi + ["--steps", "1"], 3600)
            if first_ms[0] > args.step_budget_s * 1e3:
                row["skipped"] = (f"one graphi step takes {first_ms[0] / 1e3:.0f} s here, over "
                                  f"the --step-budget-s {args.step_budget_s:.0f}")
                print(f"{name} {size}: skipped ({row['skipped']})", flush=True)
                continue
            print(f"{name} {size}: {args.steps} steps at lr {lr} (first graphi step "
                  f"{first_ms[0] / 1e3:.1f} s)...", flush=True)
            timeout = max(600.0, 20 * args.steps * first_ms[0] / 1e3)
            g, g_ms, g_gib = losses_of(graphi + ["--steps", str(args.steps)], timeout)
            t, t_ms, t_gib = losses_of([args.torch_python, os.path.join(HERE, "eval_models_torch.py"),
                                 "train", model, batch, "--steps", str(args.steps), "--lr",
                                 str(lr), "--threads", str(cores)], timeout)
            rel = [abs(a - b) / max(abs(b), 1e-12) for a, b in zip(g, t)]
            row.update({"graphi": g, "pytorch": t, "rel_diff": rel,
                        "max_rel_diff": max(rel), "worst_step": rel.index(max(rel)) + 1,
                        "graphi_step_ms": sorted(g_ms)[len(g_ms) // 2],
                        "pytorch_step_ms": sorted(t_ms)[len(t_ms) // 2],
                        "graphi_peak_gib": g_gib, "pytorch_peak_gib": t_gib,
                        "estimate_gib": need / 2**30,
                        "wall_s": time.time() - t0})
            print(f"{name} {size}: loss {t[0]:.6f} -> {t[-1]:.6f} (PyTorch), graphi "
                  f"{g[-1]:.6f}; max relative difference {max(rel):.1e} at step "
                  f"{row['worst_step']}", flush=True)
    print()
    print(f"| model | size | lr | PyTorch loss, step 1 -> {args.steps} | graphi loss, step "
          f"{args.steps} | max rel. diff (step) | within {TOLERANCE:g} | graphi / PyTorch "
          "median step ms | peak memory GiB (graphi / PyTorch) |")
    print("| --- | --- | ---: | --- | ---: | --- | --- | --- | --- |")
    for r in rows:
        if "skipped" in r:
            print(f"| {r['model']} | {r['size']} | {r['lr']:g} | not run: {r['skipped']} | | | | "
                  "| |")
            continue
        ok = "yes" if r["max_rel_diff"] <= TOLERANCE else "**no**"
        print(f"| {r['model']} | {r['size']} | {r['lr']:g} | {r['pytorch'][0]:.6f} -> "
              f"{r['pytorch'][-1]:.6f} | {r['graphi'][-1]:.6f} | {r['max_rel_diff']:.1e} "
              f"({r['worst_step']}) | {ok} | {r['graphi_step_ms']:.0f} / "
              f"{r['pytorch_step_ms']:.0f} | {r['graphi_peak_gib']:.1f} / "
              f"{r['pytorch_peak_gib']:.1f} |")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(rows, f, indent=1)
    bad = [r for r in rows if "skipped" not in r and r["max_rel_diff"] > TOLERANCE]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
