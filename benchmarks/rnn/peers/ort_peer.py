"""ONNX Runtime peer of graphi's RNN benchmark (issue 4), driven by run_all.py over stdin/stdout.

    <venv>/bin/python ort_peer.py --threads T

Runs ONNX Runtime's Python package (`onnxruntime` from PyPI, pinned in
scripts/requirements-bench.txt and installed into the benchmarks' virtual environment by
scripts/bench_venv.sh): the API users call. ORT's CPU LSTM/GRU kernels are DeepCPU's
implementation. Session options: CPUExecutionProvider, sequential execution mode, intra-op
threads = T, inter-op threads = 1, all graph optimizations.

Commands (one per line), each answered by one JSON line:
  prepare CELL H B S DIR   creates the session for DIR/model.onnx (exported from PyTorch by
                           torch_peer.py), runs it on DIR/X.npy and answers the max abs
                           difference of its Y to DIR/Y_graphi_t<T>.npy
  run CELL H B S BUDGET_MS MIN_SAMPLES
                           times `session.run(['Y'], {'X': x})` for BUDGET_MS (at least
                           MIN_SAMPLES samples) after one warm-up
  quit
"""
import argparse
import json
import os
import sys
import time


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, required=True)
    args = ap.parse_args()
    try:
        import numpy as np
        import onnxruntime as ort
    except Exception as e:  # reported by the orchestrator as "ORT unavailable"
        emit({"kind": "error", "message": f"cannot import onnxruntime/numpy ({sys.executable}): {e}"})
        return 1
    emit({"kind": "ready", "onnxruntime": ort.__version__, "python": sys.executable})
    sessions = {}  # (cell, H, B, S) -> (session, feeds)
    for line in sys.stdin:
        parts = line.split()
        if not parts:
            continue
        cmd = parts[0]
        if cmd == "quit":
            break
        key = tuple(parts[1:5])
        if cmd == "prepare":
            d = parts[5]
            so = ort.SessionOptions()
            so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            so.intra_op_num_threads = args.threads
            so.inter_op_num_threads = 1
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            sess = ort.InferenceSession(os.path.join(d, "model.onnx"), so,
                                        providers=["CPUExecutionProvider"])
            feeds = {"X": np.load(os.path.join(d, "X.npy"))}
            sessions[key] = (sess, feeds)
            y = sess.run(["Y"], feeds)[0]
            ref = np.load(os.path.join(d, f"Y_graphi_t{args.threads}.npy"))
            diff = (float(np.max(np.abs(y.reshape(-1) - ref.reshape(-1))))
                    if y.size == ref.size else float("inf"))
            emit({"kind": "prepare", "max_abs_diff": diff})
        elif cmd == "run":
            budget_ms, min_samples = float(parts[5]), int(parts[6])
            if key not in sessions:
                emit({"kind": "error", "message": f"run before prepare: {' '.join(key)}"})
                return 1
            sess, feeds = sessions[key]
            sess.run(["Y"], feeds)  # warm-up
            samples = []
            start = time.perf_counter()
            while len(samples) < 2000 and (len(samples) < min_samples or
                                           (time.perf_counter() - start) * 1e3 < budget_ms):
                t0 = time.perf_counter()
                sess.run(["Y"], feeds)
                samples.append((time.perf_counter() - t0) * 1e3)
            emit({"kind": "run", "ort": samples})
        else:
            emit({"kind": "error", "message": f"unknown command {cmd!r}"})
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
