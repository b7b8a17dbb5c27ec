"""ONNX Runtime fp32 LSTM timing for scripts/bench_rnn_bf16.sh (one round per call).

    <venv>/bin/python ort_fp32_lstm_time.py --hidden 1024 --batch 1 --seq 100 --threads 2 \
        --budget-ms 2000 [--cell lstm|gru]

Builds a one-node ONNX LSTM (or GRU, linear_before_reset = 1) with the onnx package (input =
hidden, weights uniform in +-1/sqrt(H) as the C++ bench draws them; the values do not change the
time), runs it with onnxruntime's CPUExecutionProvider (sequential, intra-op threads = T, all
graph optimizations), one warm-up, then samples for the budget; prints one JSON line with the
samples (ms) and their median.
"""
import argparse
import json
import statistics
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hidden", type=int, required=True)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=100)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--budget-ms", type=float, default=2000)
    ap.add_argument("--cell", choices=["lstm", "gru"], default="lstm")
    a = ap.parse_args()
    H, B, T = a.hidden, a.batch, a.seq
    G = 4 if a.cell == "lstm" else 3
    rng = np.random.default_rng(H * 7 + B)
    bound = 1.0 / np.sqrt(H)
    W = rng.uniform(-bound, bound, (1, G * H, H)).astype(np.float32)
    R = rng.uniform(-bound, bound, (1, G * H, H)).astype(np.float32)
    Bv = rng.uniform(-bound, bound, (1, 2 * G * H)).astype(np.float32)
    X = rng.uniform(-1, 1, (T, B, H)).astype(np.float32)
    attrs = {"hidden_size": H}
    if a.cell == "gru":
        attrs["linear_before_reset"] = 1
    node = helper.make_node(a.cell.upper(), ["X", "W", "R", "B"], ["Y"], **attrs)
    graph = helper.make_graph(
        [node], "rnn", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [T, B, H])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(W, "W"), numpy_helper.from_array(R, "R"),
         numpy_helper.from_array(Bv, "B")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    sess.run(["Y"], {"X": X})
    ms = []
    start = time.perf_counter()
    while len(ms) < 5 or (time.perf_counter() - start) * 1e3 < a.budget_ms:
        t0 = time.perf_counter()
        sess.run(["Y"], {"X": X})
        ms.append((time.perf_counter() - t0) * 1e3)
        if len(ms) >= 2000:
            break
    print(json.dumps({"ort": ort.__version__, "median_ms": statistics.median(ms), "samples": ms}))


if __name__ == "__main__":
    main()
