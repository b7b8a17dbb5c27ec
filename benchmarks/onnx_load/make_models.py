#!/usr/bin/python3
"""Generates the large ONNX models of the load comparison into OUTDIR (never commit them).

  /usr/bin/python3 benchmarks/onnx_load/make_models.py OUTDIR [--mlp-mb 210] [--nodes 168000]

big_mlp.onnx    an MLP of Gemm + Relu layers with ~MLP_MB MB of float32 weights (raw_data)
big_lstm.onnx   a 4-layer LSTM (hidden 1024) with ~100 MB of float32 weights
many_nodes.onnx a chain of ~NODES small element-wise nodes (Add/Mul/Relu/Tanh on [1, 16]):
                the shape of a model whose load is dominated by the node count
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def big_mlp(path, mb):
    width = 2560
    layers = max(1, int(mb * 2**20 // (width * width * 4)))
    rng = np.random.default_rng(0)
    nodes, inits = [], []
    x = "x"
    for k in range(layers):
        w = (rng.standard_normal((width, width), dtype=np.float32) * 0.02)
        b = np.zeros(width, np.float32)
        inits += [numpy_helper.from_array(w, "w%d" % k), numpy_helper.from_array(b, "b%d" % k)]
        nodes.append(helper.make_node("Gemm", [x, "w%d" % k, "b%d" % k], ["g%d" % k], transB=1))
        nodes.append(helper.make_node("Relu", ["g%d" % k], ["h%d" % k]))
        x = "h%d" % k
    g = helper.make_graph(nodes, "big_mlp",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, width])],
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, [4, width])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]), path)


def big_lstm(path, layers=4, hidden=1024, seq=8):
    rng = np.random.default_rng(1)
    nodes, inits = [], []
    x = "x"
    for k in range(layers):
        w = rng.standard_normal((1, 4 * hidden, hidden), dtype=np.float32) * 0.02
        r = rng.standard_normal((1, 4 * hidden, hidden), dtype=np.float32) * 0.02
        b = np.zeros((1, 8 * hidden), np.float32)
        inits += [numpy_helper.from_array(w, "W%d" % k), numpy_helper.from_array(r, "R%d" % k),
                  numpy_helper.from_array(b, "B%d" % k)]
        nodes.append(helper.make_node("LSTM", [x, "W%d" % k, "R%d" % k, "B%d" % k],
                                      ["y%d" % k], hidden_size=hidden))
        nodes.append(helper.make_node("Squeeze", ["y%d" % k, "axes1"], ["s%d" % k]))
        x = "s%d" % k
    inits.append(numpy_helper.from_array(np.array([1], np.int64), "axes1"))
    g = helper.make_graph(nodes, "big_lstm",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [seq, 1, hidden])],
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, [seq, 1, hidden])],
                          inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]), path)


def many_nodes(path, count):
    ops = ["Add", "Mul", "Relu", "Tanh"]
    nodes = []
    x = "x"
    c = numpy_helper.from_array(np.full((1, 16), 0.5, np.float32), "c")
    for k in range(count):
        op = ops[k % len(ops)]
        ins = [x, "c"] if op in ("Add", "Mul") else [x]
        nodes.append(helper.make_node(op, ins, ["v%d" % k], name="n%d" % k))
        x = "v%d" % k
    g = helper.make_graph(nodes, "many_nodes",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 16])], [c])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]), path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--mlp-mb", type=float, default=210)
    ap.add_argument("--nodes", type=int, default=168000)
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    big_mlp(os.path.join(a.outdir, "big_mlp.onnx"), a.mlp_mb)
    big_lstm(os.path.join(a.outdir, "big_lstm.onnx"))
    many_nodes(os.path.join(a.outdir, "many_nodes.onnx"), a.nodes)
    for f in sorted(os.listdir(a.outdir)):
        print("%-16s %8.1f MB" % (f, os.path.getsize(os.path.join(a.outdir, f)) / 2**20))


if __name__ == "__main__":
    main()
