"""ONNX Runtime fp32 LSTM and DynamicQuantizeLSTM (int8) timing and accuracy for
scripts/bench_rnn_bf16.sh (one round per call), on the weights and input graphi_bench_rnn --bf16
--dump DIR wrote.

    <venv>/bin/python ort_lowp_lstm_time.py --dump DIR/lstm_h1024_b1_s100 --threads 2 \
        --budget-ms 2000

Builds a one-node ONNX LSTM from W.npy, R.npy, B.npy (X.npy is the input), and its int8 copy: a
com.microsoft DynamicQuantizeLSTM node with s8 W and R (transposed to [D, in, 4H]), one
symmetric scale per output row (gate x unit, max |w| / 127, zero point 0), as
onnxruntime.quantization.quantize_dynamic(op_types_to_quantize=["LSTM"], per_channel=True,
weight_type=QInt8) writes it (built here with numpy: quantize_dynamic needs ml_dtypes, which the
bench venv lacks); the kernel quantizes x and h to u8 per step. Both run with the
CPUExecutionProvider (sequential, intra-op threads = T, all graph optimizations), taking turns
of a tenth of the budget each with a pause between (not sample by sample: see the timing loop),
for the budget. Prints one JSON line: medians, samples, and the max / mean |Y - graphi fp32 Y|
of ORT fp32, ORT DynamicQuantizeLSTM and graphi int8 (Y_graphi_fp32.npy, Y_graphi_int8.npy).
"""
import argparse
import json
import os
import statistics
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


def session(model_bytes, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])


def errors(y, ref):
    d = np.abs(np.asarray(y, np.float64).reshape(ref.shape) - ref)
    return {"max": float(d.max()), "mean": float(d.mean())}


def quantize_rows(M):
    """[D, 4H, K] fp32 -> ([D, K, 4H] s8, [D, 4H] scales): symmetric per row, zero point 0."""
    scale = np.abs(M).max(axis=2) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.round(M / scale[:, :, None]), -127, 127).astype(np.int8)
    return np.ascontiguousarray(q.transpose(0, 2, 1)), scale.astype(np.float32)


def dynamic_quantize_lstm_model(W, R, Bv, T, B, I, H):
    Wq, Ws = quantize_rows(W)
    Rq, Rs = quantize_rows(R)
    zp = np.zeros(Ws.shape, np.int8)
    node = helper.make_node(
        "DynamicQuantizeLSTM",
        ["X", "Wq", "Rq", "B", "", "", "", "", "W_scale", "W_zp", "R_scale", "R_zp"], ["Y"],
        domain="com.microsoft", hidden_size=H)
    graph = helper.make_graph(
        [node], "lstm_dq", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [T, B, I])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(Wq, "Wq"), numpy_helper.from_array(Rq, "Rq"),
         numpy_helper.from_array(Bv, "B"), numpy_helper.from_array(Ws, "W_scale"),
         numpy_helper.from_array(zp, "W_zp"), numpy_helper.from_array(Rs, "R_scale"),
         numpy_helper.from_array(zp.copy(), "R_zp")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    return model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--budget-ms", type=float, default=2000)
    a = ap.parse_args()
    ld = lambda n: np.load(os.path.join(a.dump, n))  # noqa: E731
    W, R, Bv, X = ld("W.npy"), ld("R.npy"), ld("B.npy"), ld("X.npy")
    y32 = ld("Y_graphi_fp32.npy").astype(np.float64)
    y8 = ld("Y_graphi_int8.npy").astype(np.float64)
    T, B, I = X.shape
    H = R.shape[2]
    node = helper.make_node("LSTM", ["X", "W", "R", "B"], ["Y"], hidden_size=H)
    graph = helper.make_graph(
        [node], "lstm", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [T, B, I])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(W, "W"), numpy_helper.from_array(R, "R"),
         numpy_helper.from_array(Bv, "B")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    qmodel = dynamic_quantize_lstm_model(W, R, Bv, T, B, I, H)
    ops = [(n.domain, n.op_type) for n in qmodel.graph.node]
    if ("com.microsoft", "DynamicQuantizeLSTM") not in ops:
        raise SystemExit("quantize_dynamic made no DynamicQuantizeLSTM node: %s" % ops)
    sess = [session(model.SerializeToString(), a.threads),
            session(qmodel.SerializeToString(), a.threads)]
    outs = [s.run(["Y"], {"X": X})[0] for s in sess]  # warm-up and accuracy
    # Turns of ~1/10 of the budget each, a pause between: two sessions' intra-op pools on the
    # same cores must not take turns sample by sample (the idle pool's threads still spin after
    # their session's run and take the cores from the other: 7.4 ms per DynamicQuantizeLSTM
    # h1024 b1 run that way against 3.4 alone, session 33).
    ms = [[], []]
    turn_s = max(a.budget_ms / 10.0, 20.0) / 1e3
    start = time.perf_counter()
    i = 0
    while i < 2 or (time.perf_counter() - start) * 1e3 < a.budget_ms:
        for j in range(2):
            k = (i + j) % 2
            time.sleep(0.05)  # the other pool's threads stop spinning and sleep
            sess[k].run(["Y"], {"X": X})  # the turn's warm-up
            t_turn = time.perf_counter()
            while True:
                t0 = time.perf_counter()
                sess[k].run(["Y"], {"X": X})
                ms[k].append((time.perf_counter() - t0) * 1e3)
                if time.perf_counter() - t_turn >= turn_s and len(ms[k]) >= 3 * (i + 1):
                    break
        i += 1
        if i >= 200:
            break
    print(json.dumps({
        "ort": ort.__version__, "ops": ["%s:%s" % o for o in ops],
        "ort_fp32_median_ms": statistics.median(ms[0]),
        "ort_dq_median_ms": statistics.median(ms[1]),
        "err_ort_fp32": errors(outs[0], y32), "err_ort_dq": errors(outs[1], y32),
        "err_graphi_int8": errors(y8, y32),
        "samples_fp32": ms[0], "samples_dq": ms[1]}))


if __name__ == "__main__":
    main()
