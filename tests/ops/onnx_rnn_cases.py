#!/usr/bin/python3
"""Converts the ONNX backend test cases of LSTM, GRU and RNN (Debian's libonnx-testdata) into
files the C++ test reads without protobuf: per case a directory with input_N.npy / output_N.npy
and case.json:

  {"op": "LSTM", "attrs": {"hidden_size": 3, ...},
   "inputs": ["input_0.npy", "input_1.npy", "", ...],   # per node input slot; "" = absent
   "outputs": [null, "output_0.npy"]}                    # per node output slot; null = absent

String-list attributes (activations) become one comma-separated string, as graphi's attributes
have no string lists. Usage: onnx_rnn_cases.py DATA_DIR OUT_DIR. Exit status 0 on success, 77
when python3-onnx is missing, 78 when DATA_DIR has no cases (libonnx-testdata missing).
"""
import glob
import json
import os
import sys

PATTERNS = ("test_lstm_*", "test_gru_*", "test_rnn_*", "test_simple_rnn_*")


def main():
    if len(sys.argv) != 3:
        print("usage: onnx_rnn_cases.py DATA_DIR OUT_DIR", file=sys.stderr)
        return 2
    data_dir, out_dir = sys.argv[1], sys.argv[2]
    try:
        import numpy as np
        import onnx
        from onnx import numpy_helper
    except ImportError as e:
        print("onnx_rnn_cases: python3-onnx not available: %s" % e, file=sys.stderr)
        return 77
    cases = sorted(set(d for p in PATTERNS for d in glob.glob(os.path.join(data_dir, p))))
    cases = [d for d in cases if not d.endswith("_expanded")]
    if not cases:
        print("onnx_rnn_cases: no LSTM/GRU/RNN cases under %s" % data_dir, file=sys.stderr)
        return 78
    os.makedirs(out_dir, exist_ok=True)
    for case in cases:
        model = onnx.load(os.path.join(case, "model.onnx"))
        graph = model.graph
        if len(graph.node) != 1:
            print("onnx_rnn_cases: %s has %d nodes, skipped" % (case, len(graph.node)), file=sys.stderr)
            continue
        node = graph.node[0]
        attrs = {}
        for a in node.attribute:
            v = onnx.helper.get_attribute_value(a)
            if isinstance(v, bytes):
                v = v.decode()
            elif isinstance(v, list) and v and isinstance(v[0], bytes):
                v = ",".join(x.decode() for x in v)
            elif isinstance(v, list):
                v = list(v)
            attrs[a.name] = v
        graph_inputs = [i.name for i in graph.input]
        graph_outputs = [o.name for o in graph.output]
        dst = os.path.join(out_dir, os.path.basename(case))
        os.makedirs(dst, exist_ok=True)
        data = os.path.join(case, "test_data_set_0")

        def convert(kind, index):
            t = onnx.TensorProto()
            with open(os.path.join(data, "%s_%d.pb" % (kind, index)), "rb") as f:
                t.ParseFromString(f.read())
            name = "%s_%d.npy" % (kind, index)
            np.save(os.path.join(dst, name), numpy_helper.to_array(t))
            return name

        inputs = [convert("input", graph_inputs.index(n)) if n else "" for n in node.input]
        outputs = [convert("output", graph_outputs.index(n)) if n else None for n in node.output]
        with open(os.path.join(dst, "case.json"), "w") as f:
            json.dump({"op": node.op_type, "attrs": attrs, "inputs": inputs, "outputs": outputs}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
