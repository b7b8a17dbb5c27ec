#!/usr/bin/python3
"""PyTorch peer of graphi's RNN benchmark (issue 4), driven by run_all.py over stdin/stdout.

Started as `OPENBLAS_NUM_THREADS=T /usr/bin/python3 torch_peer.py --threads T`. Debian's
PyTorch runs nn.LSTM / nn.GRU on whatever libblas.so.3 points to; with libopenblas0-pthread
that is OpenBLAS, which then uses T threads of its own. The fair setting is therefore
torch.set_num_threads(1) (2 torch threads on top of 2 OpenBLAS threads oversubscribe the
cores); `run ... INTRA` lets the orchestrator measure torch.set_num_threads(T) too.

Commands (one per line), each answered by one JSON line:
  prepare CELL H B S DIR     loads DIR/{W,R,B,X}.npy (ONNX layout, written by graphi_bench_rnn),
                             builds nn.LSTM / nn.GRU (input = hidden = H, one layer) with those
                             weights, exports DIR/model.onnx with torch.onnx.export (for the ONNX
                             Runtime peer; only when missing or older than W.npy), and answers the
                             max abs difference of its Y to DIR/Y_graphi_t<T>.npy
  run CELL H B S BUDGET_MS MIN_SAMPLES INTRA
                             times module(X) under torch.no_grad() with torch.set_num_threads(INTRA)
                             for BUDGET_MS (at least MIN_SAMPLES samples), after one warm-up
  quit
CELL is lstm or gru (PyTorch's GRU is the linear-before-reset variant).
"""
import argparse
import json
import os
import sys
import time


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def blas_libraries():
    """Shared libraries mapped into this process whose name mentions BLAS (after a matmul)."""
    libs = set()
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6 and "blas" in os.path.basename(parts[5]).lower():
                libs.add(os.path.realpath(parts[5]))
    return sorted(libs)


# Gate blocks: PyTorch block k takes ONNX block PERM[k]. LSTM: ONNX (i, o, f, c), PyTorch
# (i, f, g, o). GRU: ONNX (z, r, h), PyTorch (r, z, n).
PERM = {"lstm": [0, 2, 3, 1], "gru": [1, 0, 2]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, required=True)
    args = ap.parse_args()
    try:
        import numpy as np
        import torch
    except Exception as e:  # reported by the orchestrator as "torch unavailable"
        emit({"kind": "error", "message": f"cannot import torch/numpy: {e}"})
        return 1
    torch.set_num_threads(1)
    a = torch.randn(256, 256)
    (a @ a).sum().item()  # loads the BLAS
    emit({"kind": "ready", "torch": torch.__version__, "blas": blas_libraries(),
          "openblas_num_threads": os.environ.get("OPENBLAS_NUM_THREADS", ""),
          "torch_threads": torch.get_num_threads()})

    models = {}  # (cell, H, B, S) -> (module, X)

    def reorder(m, cell, h):
        g = len(PERM[cell])
        blocks = np.split(m, g, axis=0)
        return np.ascontiguousarray(np.concatenate([blocks[p] for p in PERM[cell]], axis=0))

    def build(cell, h, b, s, d):
        W = np.load(os.path.join(d, "W.npy"))[0]
        R = np.load(os.path.join(d, "R.npy"))[0]
        Bv = np.load(os.path.join(d, "B.npy"))[0]
        X = np.load(os.path.join(d, "X.npy"))
        g = len(PERM[cell])
        mod = (torch.nn.LSTM if cell == "lstm" else torch.nn.GRU)(h, h, num_layers=1)
        mod.eval()
        with torch.no_grad():
            mod.weight_ih_l0.copy_(torch.from_numpy(reorder(W, cell, h)))
            mod.weight_hh_l0.copy_(torch.from_numpy(reorder(R, cell, h)))
            mod.bias_ih_l0.copy_(torch.from_numpy(reorder(Bv[: g * h], cell, h)))
            mod.bias_hh_l0.copy_(torch.from_numpy(reorder(Bv[g * h:], cell, h)))
        return mod, torch.from_numpy(X)

    for line in sys.stdin:
        parts = line.split()
        if not parts:
            continue
        cmd = parts[0]
        if cmd == "quit":
            break
        cell, h, b, s = parts[1], int(parts[2]), int(parts[3]), int(parts[4])
        key = (cell, h, b, s)
        if cmd == "prepare":
            d = parts[5]
            mod, X = build(cell, h, b, s, d)
            models[key] = (mod, X)
            onnx_path = os.path.join(d, "model.onnx")
            w_path = os.path.join(d, "W.npy")
            t0 = time.time()
            exported = False
            if not os.path.exists(onnx_path) or os.path.getmtime(onnx_path) < os.path.getmtime(w_path):
                import warnings
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    with torch.no_grad():
                        torch.onnx.export(mod, (X,), onnx_path + ".tmp", input_names=["X"],
                                          output_names=["Y"], opset_version=14)
                os.replace(onnx_path + ".tmp", onnx_path)
                exported = True
            with torch.no_grad():
                Y = mod(X)[0].numpy()
            ref = np.load(os.path.join(d, f"Y_graphi_t{args.threads}.npy"))
            diff = float(np.max(np.abs(Y.reshape(-1) - ref.reshape(-1)))) if Y.size == ref.size else float("inf")
            emit({"kind": "prepare", "max_abs_diff": diff, "exported": exported,
                  "export_s": round(time.time() - t0, 2)})
        elif cmd == "run":
            budget_ms, min_samples, intra = float(parts[5]), int(parts[6]), int(parts[7])
            mod, X = models[key]
            torch.set_num_threads(intra)
            samples = []
            with torch.no_grad():
                mod(X)  # warm-up
                start = time.perf_counter()
                while len(samples) < 2000 and (len(samples) < min_samples or
                                               (time.perf_counter() - start) * 1e3 < budget_ms):
                    t0 = time.perf_counter()
                    mod(X)
                    samples.append((time.perf_counter() - t0) * 1e3)
            torch.set_num_threads(1)
            emit({"kind": "run", "torch": samples, "intra": intra})
        else:
            emit({"kind": "error", "message": f"unknown command {cmd!r}"})
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
