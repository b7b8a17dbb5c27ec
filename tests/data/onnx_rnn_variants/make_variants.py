#!/usr/bin/python3
"""Recurrent models as users export or build them, for tests/graph/test_onnx_rnn_variants.cpp.

Two sources:
- PyTorch 1.13 (torch.onnx.export): nn.LSTM / nn.GRU / nn.RNN (tanh, relu) with batch_first,
  bidirectional, 1-3 layers, bias=False, with and without h0/c0 inputs, returning only the
  output or only h_n, dynamic batch/sequence axes, opsets 9/11/13/14/17; LSTMCell/GRUCell/
  RNNCell applied in a Python loop; stacked RNN -> Linear -> LogSoftmax. The reference is
  PyTorch's own output.
- onnx.helper: LSTM/GRU/RNN nodes with the options exporters other than PyTorch write
  (peepholes, clip, input_forget, reverse/bidirectional, uneven sequence_lens, layout = 1,
  initial states, optional outputs named '', explicit activations, linear_before_reset 0/1,
  odd hidden sizes, batch 1/7, sequence 1). The reference is `onnx_rnn` below, a numpy
  implementation written from the ONNX operator specification (float64).

For each model NAME it writes NAME.onnx, the inputs NAME.in<i>.npy and the reference outputs
NAME.out<i>.npy (graph input/output order), and one line of MANIFEST (`NAME dim=value ...`, the
values of symbolic dims, given to graphi as --dim). Models graphi refuses go to gaps/NAME.onnx
with a line `NAME<TAB>text the error must contain` in gaps/EXPECTED; malformed nodes, which
must be rejected as invalid, go to gaps/NAME.onnx and gaps/INVALID the same way. PyTorch exports that
torch itself refuses are listed in gaps/EXPORT_REFUSED (nothing for graphi to run).

Run: /usr/bin/python3 tests/data/onnx_rnn_variants/make_variants.py [NAME ...]
     (with names: only those files; MANIFEST and gaps/EXPECTED are always rewritten)
     make_variants.py --selftest   checks onnx_rnn against torch and ONNX's backend test data
     make_variants.py --check PATH/TO/graphi [NAME ...]   runs the committed files through
     `graphi run` (default passes on 1 and 2 threads, and --no-fuse) and the gaps, and reports
"""
import io
import os
import sys
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
GAPS = os.path.join(HERE, "gaps")

# ---------------------------------------------------------------------------------------------
# The ONNX LSTM/GRU/RNN operators in numpy, from the operator specification (opset 14).


def _act(name, alpha, beta):
    n = name.lower()
    if n == "sigmoid":
        return lambda x: 1.0 / (1.0 + np.exp(-x))
    if n == "tanh":
        return np.tanh
    if n == "relu":
        return lambda x: np.maximum(x, 0.0)
    if n == "hardsigmoid":
        a = 0.2 if alpha is None else alpha
        b = 0.5 if beta is None else beta
        return lambda x: np.clip(a * x + b, 0.0, 1.0)
    if n == "leakyrelu":
        a = 0.01 if alpha is None else alpha
        return lambda x: np.where(x >= 0, x, a * x)
    if n == "affine":
        a = 1.0 if alpha is None else alpha
        b = 0.0 if beta is None else beta
        return lambda x: a * x + b
    if n == "scaledtanh":
        a = 1.0 if alpha is None else alpha
        b = 1.0 if beta is None else beta
        return lambda x: a * np.tanh(b * x)
    if n == "thresholdedrelu":
        a = 1.0 if alpha is None else alpha
        return lambda x: np.where(x > a, x, 0.0)
    if n == "elu":
        a = 1.0 if alpha is None else alpha
        return lambda x: np.where(x >= 0, x, a * (np.exp(x) - 1.0))
    if n == "softsign":
        return lambda x: x / (1.0 + np.abs(x))
    if n == "softplus":
        return lambda x: np.log1p(np.exp(x))
    raise ValueError(name)


_TAKES_ALPHA = {"hardsigmoid", "leakyrelu", "affine", "scaledtanh", "thresholdedrelu", "elu"}
_TAKES_BETA = {"hardsigmoid", "affine", "scaledtanh"}
_ACT_NAMES = {"sigmoid", "tanh", "relu", "softsign", "softplus"} | _TAKES_ALPHA


def _activations(kind, names, alphas, betas, num_dir):
    """Per direction, the list of activation functions. activation_alpha/beta are consumed in
    order by the activations that take them (as ONNX Runtime does)."""
    per = {"LSTM": 3, "GRU": 2, "RNN": 1}[kind]
    default = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"],
               "RNN": ["Tanh"]}[kind]
    if not names:
        names = default * num_dir
    elif len(names) == per and num_dir == 2:
        names = names * 2
    ai, bi = 0, 0
    fs = []
    for n in names:
        a = b = None
        if n.lower() in _TAKES_ALPHA and alphas and ai < len(alphas):
            a = alphas[ai]
            ai += 1
        if n.lower() in _TAKES_BETA and betas and bi < len(betas):
            b = betas[bi]
            bi += 1
        fs.append(_act(n, a, b))
    return [fs[d * per:(d + 1) * per] for d in range(num_dir)]


def onnx_rnn(kind, X, W, R, B=None, seq_lens=None, init_h=None, init_c=None, P=None,
             direction="forward", layout=0, clip=None, input_forget=0, linear_before_reset=0,
             activations=None, alpha=None, beta=None):
    """Returns Y, Y_h (and Y_c for LSTM) as float32, per the ONNX operator definition."""
    f64 = lambda a: None if a is None else np.asarray(a, np.float64)
    X, W, R, B, init_h, init_c, P = map(f64, (X, W, R, B, init_h, init_c, P))
    if layout == 1:
        X = X.transpose(1, 0, 2)
        init_h = None if init_h is None else init_h.transpose(1, 0, 2)
        init_c = None if init_c is None else init_c.transpose(1, 0, 2)
    T, Bt, _ = X.shape
    D = W.shape[0]
    G = {"LSTM": 4, "GRU": 3, "RNN": 1}[kind]
    H = R.shape[2]
    lens = np.full(Bt, T) if seq_lens is None else np.clip(np.asarray(seq_lens), 0, T)
    acts = _activations(kind, activations, alpha, beta, D)
    cl = (lambda v: np.clip(v, -clip, clip)) if clip else (lambda v: v)
    Y = np.zeros((T, D, Bt, H))
    Yh = np.zeros((D, Bt, H))
    Yc = np.zeros((D, Bt, H))
    for d in range(D):
        rev = direction == "reverse" or d == 1
        Wb = B[d, :G * H] if B is not None else np.zeros(G * H)
        Rb = B[d, G * H:] if B is not None else np.zeros(G * H)
        for b in range(Bt):
            h = init_h[d, b] if init_h is not None else np.zeros(H)
            c = init_c[d, b] if init_c is not None else np.zeros(H)
            L = int(lens[b])
            steps = range(L - 1, -1, -1) if rev else range(L)
            for t in steps:
                x = X[t, b]
                gx = W[d] @ x + Wb
                if kind == "LSTM":
                    f, g, hh = acts[d]
                    gh = R[d] @ h + Rb
                    gi, go, gf, gc = [(gx + gh)[k * H:(k + 1) * H] for k in range(4)]
                    pi, po, pf = (P[d, :H], P[d, H:2 * H], P[d, 2 * H:]) if P is not None else (0, 0, 0)
                    i = f(cl(gi + pi * c))
                    fg = 1.0 - i if input_forget else f(cl(gf + pf * c))
                    ct = g(cl(gc))
                    c = fg * c + i * ct
                    o = f(cl(go + po * c))
                    h = o * hh(c)
                elif kind == "GRU":
                    f, g = acts[d]
                    Rz, Rr, Rh = R[d, :H], R[d, H:2 * H], R[d, 2 * H:]
                    z = f(cl(gx[:H] + Rz @ h + Rb[:H]))
                    r = f(cl(gx[H:2 * H] + Rr @ h + Rb[H:2 * H]))
                    if linear_before_reset:
                        n = g(cl(gx[2 * H:] + r * (Rh @ h + Rb[2 * H:])))
                    else:
                        n = g(cl(gx[2 * H:] + Rh @ (r * h) + Rb[2 * H:]))
                    h = (1.0 - z) * n + z * h
                else:
                    (f,) = acts[d]
                    h = f(cl(gx + R[d] @ h + Rb))
                Y[t, d, b] = h
            Yh[d, b] = h
            Yc[d, b] = c
    if layout == 1:
        Y = Y.transpose(2, 0, 1, 3)
        Yh = Yh.transpose(1, 0, 2)
        Yc = Yc.transpose(1, 0, 2)
    outs = [Y, Yh] + ([Yc] if kind == "LSTM" else [])
    return [o.astype(np.float32) for o in outs]


# ---------------------------------------------------------------------------------------------
# onnx.helper models.

MANIFEST = []  # (name, dims)
EXPECTED = []  # (name, text)
EXPORT_REFUSED = []  # (name, torch's message)


def _rng(seed):
    return np.random.default_rng(seed)


def helper_case(name, kind, T, Bt, I, H, seed, direction="forward", layout=0, bias=True,
                peephole=False, seq_lens=None, seq_lens_input=False, seq_lens_dtype=np.int32,
                init_h=False, init_c=False, states_as_inputs=True, outputs=("Y", "Y_h", "Y_c"),
                attrs=None, opset=14, hidden_attr=True, weights_as_inputs=False, dtype=np.float32,
                ir3=False, gap=None):
    """One LSTM/GRU/RNN node. outputs: the node's output names ('' = absent) are `Y`, `Y_h`,
    `Y_c` in order; the non-empty ones are the graph outputs."""
    attrs = dict(attrs or {})
    rng = _rng(seed)
    D = 2 if direction == "bidirectional" else 1
    G = {"LSTM": 4, "GRU": 3, "RNN": 1}[kind]
    f32 = lambda *s: rng.uniform(-0.6, 0.6, size=s).astype(dtype)
    X = f32(Bt, T, I) if layout == 1 else f32(T, Bt, I)
    W, R = f32(D, G * H, I), f32(D, G * H, H)
    Bv = f32(D, 2 * G * H) if bias else None
    Pv = f32(D, 3 * H) if peephole else None
    sshape = (Bt, D, H) if layout == 1 else (D, Bt, H)
    h0 = f32(*sshape) if init_h else None
    c0 = f32(*sshape) if init_c else None
    lens = None if seq_lens is None else np.asarray(seq_lens, seq_lens_dtype)
    inits, graph_inputs, feeds = [], [], []

    def add_input(nm, arr, as_input):
        if arr is None:
            return ""
        if as_input:
            et = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE,
                  np.dtype(np.int32): TensorProto.INT32,
                  np.dtype(np.int64): TensorProto.INT64}[arr.dtype]
            graph_inputs.append(helper.make_tensor_value_info(nm, et, list(arr.shape)))
            feeds.append(arr)
        else:
            inits.append(numpy_helper.from_array(arr, nm))
        return nm

    wi = weights_as_inputs
    node_inputs = [add_input("X", X, True), add_input("W", W, wi), add_input("R", R, wi),
                   add_input("B", Bv, wi), add_input("sequence_lens", lens, seq_lens_input),
                   add_input("initial_h", h0, states_as_inputs)]
    if kind == "LSTM":
        node_inputs += [add_input("initial_c", c0, states_as_inputs), add_input("P", Pv, wi)]
    while node_inputs and node_inputs[-1] == "":
        node_inputs.pop()
    outs = list(outputs[:3 if kind == "LSTM" else 2])
    while outs and outs[-1] == "":
        outs.pop()
    if hidden_attr:
        attrs["hidden_size"] = H
    if direction != "forward":
        attrs["direction"] = direction
    if layout:
        attrs["layout"] = layout
    node = helper.make_node(kind, node_inputs, outs, name=name + "_node", **attrs)
    # A gap may use an activation ONNX does not define: its outputs only need shapes.
    known = not gap or all(a.lower() in _ACT_NAMES for a in attrs.get("activations", []))
    ref = onnx_rnn(kind, X, W, R, Bv, lens, h0, c0, Pv, direction=direction, layout=layout,
                   clip=attrs.get("clip"), input_forget=attrs.get("input_forget", 0),
                   linear_before_reset=attrs.get("linear_before_reset", 0),
                   activations=attrs.get("activations") if known else None,
                   alpha=attrs.get("activation_alpha"), beta=attrs.get("activation_beta"))
    ref_by_name = dict(zip(["Y", "Y_h", "Y_c"], ref))
    graph_outputs = [helper.make_tensor_value_info(o, TensorProto.DOUBLE if dtype == np.float64
                                                   else TensorProto.FLOAT,
                                                   list(ref_by_name[o].shape))
                     for o in outs if o]
    g = helper.make_graph([node], name, graph_inputs, graph_outputs, inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="make_variants")
    model.ir_version = 7
    if ir3:  # IR 3: every initializer is also listed as a graph input
        model.ir_version = 3
        for init in inits:
            model.graph.input.append(helper.make_tensor_value_info(init.name, init.data_type,
                                                         list(init.dims)))
    onnx.checker.check_model(model)
    return model, feeds, [ref_by_name[o] for o in outs if o], {}, gap


def helper_cases():
    C = {}

    def add(name, *a, **k):
        C[name] = lambda: helper_case(name, *a, **k)

    # LSTM options.
    add("h_lstm_peephole", "LSTM", 5, 3, 4, 5, 1, peephole=True, init_h=True, init_c=True)
    add("h_lstm_peephole_bi", "LSTM", 4, 2, 3, 6, 2, peephole=True, direction="bidirectional")
    add("h_lstm_clip", "LSTM", 6, 2, 4, 5, 3, attrs={"clip": 0.35}, init_h=True)
    add("h_lstm_clip_peephole_rev", "LSTM", 5, 3, 4, 5, 4, peephole=True, direction="reverse",
        attrs={"clip": 0.5}, init_h=True, init_c=True)
    add("h_lstm_input_forget", "LSTM", 5, 2, 3, 4, 5, attrs={"input_forget": 1})
    add("h_lstm_reverse", "LSTM", 5, 3, 4, 5, 6, direction="reverse", init_h=True, init_c=True)
    add("h_lstm_bidi_h33", "LSTM", 4, 2, 5, 33, 7, direction="bidirectional", init_h=True,
        init_c=True)
    add("h_lstm_seqlens", "LSTM", 6, 4, 3, 5, 8, seq_lens=[6, 3, 1, 4], init_h=True, init_c=True)
    add("h_lstm_seqlens_bi_input", "LSTM", 5, 4, 3, 5, 9, seq_lens=[2, 5, 4, 1],
        seq_lens_input=True, direction="bidirectional", init_h=True, init_c=True)
    add("h_lstm_seqlens_rev_i64", "LSTM", 5, 3, 3, 4, 10, seq_lens=[5, 2, 3],
        seq_lens_dtype=np.int64, direction="reverse", peephole=True)
    add("h_lstm_layout1", "LSTM", 4, 3, 3, 5, 11, layout=1, init_h=True, init_c=True)
    add("h_lstm_layout1_bi_seqlens", "LSTM", 5, 3, 4, 5, 12, layout=1, direction="bidirectional",
        seq_lens=[5, 1, 3], init_h=True, init_c=True)
    add("h_lstm_only_yh", "LSTM", 4, 2, 3, 5, 13, outputs=("", "Y_h"))
    add("h_lstm_only_yc", "LSTM", 4, 2, 3, 5, 14, outputs=("", "", "Y_c"), init_c=True)
    add("h_lstm_y_and_yc", "LSTM", 4, 2, 3, 5, 15, outputs=("Y", "", "Y_c"))
    add("h_lstm_explicit_acts", "LSTM", 4, 2, 3, 5, 16,
        attrs={"activations": ["Sigmoid", "Tanh", "Tanh"]})
    add("h_lstm_explicit_acts_bi", "LSTM", 4, 2, 3, 5, 17, direction="bidirectional",
        attrs={"activations": ["Sigmoid", "Tanh", "Tanh", "Sigmoid", "Tanh", "Tanh"]})
    add("h_lstm_b7_seq1", "LSTM", 1, 7, 4, 33, 18, init_h=True, init_c=True)
    add("h_lstm_b1_seq1_nobias", "LSTM", 1, 1, 3, 5, 19, bias=False)
    add("h_lstm_states_const", "LSTM", 3, 2, 3, 5, 20, init_h=True, init_c=True,
        states_as_inputs=False)
    add("h_lstm_no_hidden_attr", "LSTM", 3, 2, 3, 5, 21, hidden_attr=False, opset=7)
    add("h_lstm_opset7", "LSTM", 4, 2, 3, 5, 22, peephole=True, opset=7)
    add("h_lstm_weights_inputs", "LSTM", 4, 3, 3, 5, 24, peephole=True, weights_as_inputs=True,
        seq_lens=[4, 2, 3], direction="bidirectional")
    add("h_gru_weights_inputs", "GRU", 4, 2, 3, 5, 39, weights_as_inputs=True,
        attrs={"linear_before_reset": 1}, init_h=True)
    add("h_lstm_peephole_nobias_only_yc", "LSTM", 4, 2, 3, 5, 29, peephole=True, bias=False,
        outputs=("", "", "Y_c"))
    add("h_lstm_input_forget_peephole_bi_seqlens", "LSTM", 5, 3, 3, 5, 80, peephole=True,
        direction="bidirectional", seq_lens=[5, 3, 1], attrs={"input_forget": 1, "clip": 0.8},
        init_h=True, init_c=True)
    add("h_lstm_h65_b7", "LSTM", 3, 7, 8, 65, 81, init_h=True, init_c=True, seq_lens=[3, 1, 2,
                                                                                       3, 3, 2, 1])
    add("h_gru_h47_bi_b7_layout1", "GRU", 3, 7, 6, 47, 82, layout=1, direction="bidirectional",
        init_h=True, attrs={"linear_before_reset": 1})
    add("h_gru_lbr0_clip_layout1_seqlens", "GRU", 5, 3, 4, 5, 83, layout=1, init_h=True,
        seq_lens=[2, 5, 4], attrs={"clip": 0.3})
    add("h_rnn_sigmoid_clip_bi", "RNN", 4, 3, 3, 6, 84, direction="bidirectional",
        attrs={"activations": ["Sigmoid", "Sigmoid"], "clip": 0.5}, init_h=True)
    add("h_lstm_opset6", "LSTM", 4, 2, 3, 5, 25, opset=6, init_h=True, init_c=True)
    add("h_gru_opset18_layout1", "GRU", 4, 2, 3, 5, 26, opset=18, layout=1,
        attrs={"linear_before_reset": 1}, seq_lens=[4, 2])
    add("h_lstm_ir3_inputs_initializers", "LSTM", 3, 2, 3, 5, 27, ir3=True, opset=9,
        peephole=True, init_h=True, init_c=True, states_as_inputs=False)
    add("h_rnn_hardsigmoid_ir3", "RNN", 3, 2, 3, 5, 28, ir3=True, opset=9,
        attrs={"activations": ["HardSigmoid"], "activation_alpha": [0.3],
               "activation_beta": [0.4]})
    add("h_lstm_zero_len", "LSTM", 4, 3, 3, 5, 23, seq_lens=[4, 0, 2], init_h=True, init_c=True)
    # GRU.
    add("h_gru_lbr0", "GRU", 5, 3, 4, 5, 30, init_h=True)
    add("h_gru_lbr1", "GRU", 5, 3, 4, 5, 31, init_h=True, attrs={"linear_before_reset": 1})
    add("h_gru_lbr0_bi_seqlens", "GRU", 5, 4, 3, 5, 32, direction="bidirectional",
        seq_lens=[5, 2, 4, 1])
    add("h_gru_lbr1_rev_clip", "GRU", 5, 2, 3, 6, 33, direction="reverse",
        attrs={"linear_before_reset": 1, "clip": 0.4}, init_h=True)
    add("h_gru_layout1", "GRU", 4, 3, 3, 5, 34, layout=1, init_h=True,
        attrs={"linear_before_reset": 1})
    add("h_gru_h33_b7", "GRU", 3, 7, 4, 33, 35)
    add("h_gru_only_yh", "GRU", 4, 2, 3, 5, 36, outputs=("", "Y_h"), seq_lens=[2, 4])
    add("h_gru_seq1_b1", "GRU", 1, 1, 3, 5, 37, bias=False, attrs={"linear_before_reset": 1})
    add("h_gru_explicit_acts", "GRU", 4, 2, 3, 5, 38, attrs={"activations": ["sigmoid", "tanh"]})
    # RNN.
    add("h_rnn_tanh", "RNN", 5, 3, 4, 5, 40, init_h=True)
    add("h_rnn_relu", "RNN", 5, 3, 4, 5, 41, attrs={"activations": ["Relu"]}, init_h=True)
    add("h_rnn_relu_tanh_bi", "RNN", 5, 2, 3, 5, 42, direction="bidirectional",
        attrs={"activations": ["Relu", "Tanh"]}, seq_lens=[3, 5])
    add("h_rnn_sigmoid_rev", "RNN", 4, 2, 3, 5, 43, direction="reverse",
        attrs={"activations": ["Sigmoid"]})
    add("h_rnn_clip_layout1", "RNN", 4, 3, 3, 33, 44, layout=1, attrs={"clip": 0.3},
        init_h=True)
    add("h_rnn_only_yh_seqlens", "RNN", 5, 7, 3, 5, 45, outputs=("", "Y_h"),
        seq_lens=[5, 1, 2, 3, 4, 5, 2])
    # Activations the fused kernels do not run: the importer unrolls these nodes into plain ops.
    add("h_lstm_hardsigmoid", "LSTM", 4, 2, 3, 5, 50,
        attrs={"activations": ["HardSigmoid", "Tanh", "Tanh"], "activation_alpha": [0.2],
               "activation_beta": [0.5]})
    add("h_lstm_hardsigmoid_keras", "LSTM", 5, 3, 4, 6, 55, init_h=True, init_c=True,
        attrs={"activations": ["HardSigmoid", "Tanh", "Tanh"]})
    add("h_lstm_relu_acts", "LSTM", 4, 2, 3, 5, 51,
        attrs={"activations": ["Sigmoid", "Relu", "Relu"]})
    add("h_lstm_acts_bi_all_options", "LSTM", 5, 3, 4, 5, 56, layout=1, peephole=True,
        direction="bidirectional", seq_lens=[5, 2, 4], seq_lens_input=True, init_h=True,
        init_c=True, attrs={"activations": ["HardSigmoid", "Softsign", "Elu",
                                            "Sigmoid", "ScaledTanh", "Tanh"],
                            "activation_alpha": [0.25, 0.9, 1.5],
                            "activation_beta": [0.45, 0.8], "clip": 1.5})
    add("h_lstm_acts_input_forget_rev", "LSTM", 4, 2, 3, 5, 57, direction="reverse",
        attrs={"activations": ["HardSigmoid", "Tanh", "Softplus"], "input_forget": 1},
        outputs=("", "Y_h", "Y_c"))
    add("h_gru_leakyrelu", "GRU", 4, 2, 3, 5, 52,
        attrs={"activations": ["Sigmoid", "LeakyRelu"], "activation_alpha": [0.1]})
    add("h_gru_hardsigmoid_lbr1_bi_seqlens", "GRU", 5, 3, 3, 6, 58, direction="bidirectional",
        seq_lens=[1, 5, 3], init_h=True,
        attrs={"activations": ["HardSigmoid", "Tanh", "HardSigmoid", "Softsign"],
               "linear_before_reset": 1})
    add("h_gru_affine_clip_layout1", "GRU", 4, 2, 3, 5, 59, layout=1,
        attrs={"activations": ["Sigmoid", "Affine"], "activation_alpha": [0.7],
               "activation_beta": [0.05], "clip": 2.0}, outputs=("", "Y_h"))
    add("h_gru_relu_candidate_lbr0_rev", "GRU", 4, 3, 3, 5, 64, direction="reverse",
        attrs={"activations": ["Sigmoid", "Relu"]}, init_h=True, seq_lens=[4, 1, 3])
    add("h_rnn_leakyrelu", "RNN", 4, 2, 3, 5, 53,
        attrs={"activations": ["LeakyRelu"], "activation_alpha": [0.1]})
    add("h_rnn_affine", "RNN", 4, 2, 3, 5, 54,
        attrs={"activations": ["Affine"], "activation_alpha": [0.5], "activation_beta": [0.1]})
    add("h_rnn_thresholded_elu_bi", "RNN", 4, 2, 3, 5, 60, direction="bidirectional",
        seq_lens=[4, 2], attrs={"activations": ["ThresholdedRelu", "Elu"],
                                 "activation_alpha": [0.1, 0.5]})
    add("h_rnn_elu_bi_one_list", "RNN", 4, 2, 3, 5, 62, direction="bidirectional",
        attrs={"activations": ["Elu"]}, init_h=True)
    add("h_lstm_hardsigmoid_bi_one_list", "LSTM", 4, 2, 3, 5, 63, direction="bidirectional",
        attrs={"activations": ["HardSigmoid", "Tanh", "Tanh"]}, seq_lens=[4, 3])
    add("h_rnn_tanh_alpha_ignored", "RNN", 4, 2, 3, 5, 61,
        attrs={"activations": ["Tanh"], "activation_alpha": [3.0]})
    # Refused: an activation ONNX does not define, float64 data.
    add("h_lstm_unknown_activation", "LSTM", 3, 2, 3, 5, 70,
        attrs={"activations": ["Sigmoid", "Tanh", "Swish"]}, gap=True)
    add("h_rnn_affine_no_alpha", "RNN", 3, 2, 3, 5, 72, attrs={"activations": ["Affine"]},
        gap=True)
    add("h_rnn_bi_one_list_alpha", "RNN", 3, 2, 3, 5, 73, direction="bidirectional",
        attrs={"activations": ["LeakyRelu"], "activation_alpha": [0.2]}, gap=True)
    add("h_gru_double", "GRU", 3, 2, 3, 5, 71, dtype=np.float64, gap=True)
    return C


# ---------------------------------------------------------------------------------------------
# PyTorch exports.


def torch_cases():
    import torch
    from torch import nn

    class Seq(nn.Module):
        """nn.LSTM/GRU/RNN; `ret` selects what forward returns; with states: h0 (and c0)
        are inputs."""

        def __init__(self, kind, I, H, ret="all", states=False, **kw):
            super().__init__()
            cls = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn_tanh": nn.RNN, "rnn_relu": nn.RNN}[kind]
            if kind == "rnn_relu":
                kw["nonlinearity"] = "relu"
            self.rnn = cls(I, H, **kw)
            self.lstm, self.ret, self.states = kind == "lstm", ret, states

        def forward(self, x, *s):
            if self.states:
                st = (s[0], s[1]) if self.lstm else s[0]
                y, hn = self.rnn(x, st)
            else:
                y, hn = self.rnn(x)
            if self.ret == "y":
                return y
            if self.ret == "h":
                return hn[0] if self.lstm else hn
            return (y, hn[0], hn[1]) if self.lstm else (y, hn)

    class CellLoop(nn.Module):
        """An LSTMCell/GRUCell/RNNCell applied in a Python loop over x[t] (seq-first); h0 (c0)
        are inputs unless zero."""

        def __init__(self, kind, I, H, zero=False, layers=1, batch_first=False, last_only=False):
            super().__init__()
            self.bf, self.last_only = batch_first, last_only
            cls = {"lstm": nn.LSTMCell, "gru": nn.GRUCell, "rnn_tanh": nn.RNNCell,
                   "rnn_relu": nn.RNNCell}[kind]
            kw = {"nonlinearity": "relu"} if kind == "rnn_relu" else {}
            self.cells = nn.ModuleList(cls(I if l == 0 else H, H, **kw) for l in range(layers))
            self.lstm, self.zero, self.H = kind == "lstm", zero, H

        def forward(self, x, *s):
            if self.bf:
                seq = [x[:, t] for t in range(x.shape[1])]
            else:
                seq = [x[t] for t in range(x.shape[0])]
            B = x.shape[0] if self.bf else x.shape[1]
            hs = []
            for l, cell in enumerate(self.cells):
                if self.zero:
                    h = torch.zeros(B, self.H)
                    c = torch.zeros(B, self.H)
                else:
                    h = s[0][l]
                    c = s[1][l] if self.lstm else None
                out = []
                for xt in seq:
                    if self.lstm:
                        h, c = cell(xt, (h, c))
                    else:
                        h = cell(xt, h)
                    out.append(h)
                seq = out
                hs.append(h)
            if self.last_only:
                return seq[-1]
            return torch.stack(seq, 1 if self.bf else 0), torch.stack(hs)

    class Classifier(nn.Module):
        """Stacked RNN -> Linear -> LogSoftmax, over every step or the last one."""

        def __init__(self, kind, I, H, layers, bidirectional, last, batch_first):
            super().__init__()
            cls = {"lstm": nn.LSTM, "gru": nn.GRU}[kind]
            self.rnn = cls(I, H, num_layers=layers, bidirectional=bidirectional,
                           batch_first=batch_first)
            self.fc = nn.Linear(H * (2 if bidirectional else 1), 4)
            self.last, self.bf = last, batch_first

        def forward(self, x):
            y, _ = self.rnn(x)
            if self.last:
                y = y[:, -1] if self.bf else y[-1]
            return torch.log_softmax(self.fc(y), dim=-1)

    class Siamese(nn.Module):
        """One nn.GRU applied to two inputs (two GRU nodes sharing weights), outputs compared."""

        def __init__(self):
            super().__init__()
            self.rnn = nn.GRU(3, 5, batch_first=True)

        def forward(self, a, b):
            _, ha = self.rnn(a)
            _, hb = self.rnn(b)
            return torch.abs(ha - hb).sum(-1), ha

    class LastValid(nn.Module):
        """nn.LSTM over padded batches, then each sequence's output at its last valid step
        (y[lengths - 1, arange(B)]) and a hand-made backward pass via torch.flip."""

        def __init__(self):
            super().__init__()
            self.fwd = nn.LSTM(3, 5)
            self.bwd = nn.GRU(3, 5)
            self.fc = nn.Linear(10, 2)

        def forward(self, x, lengths):
            y, _ = self.fwd(x)
            last = y[lengths - 1, torch.arange(x.shape[1])]
            yb, hb = self.bwd(torch.flip(x, [0]))
            return self.fc(torch.cat([last, hb[0]], 1)), torch.flip(yb, [0])

    class Packed(nn.Module):
        """pack_padded_sequence -> LSTM -> pad_packed_sequence (lengths an int64 input)."""

        def __init__(self, I, H, kind="lstm", enforce_sorted=False):
            super().__init__()
            self.rnn = (nn.LSTM if kind == "lstm" else nn.GRU)(I, H, bidirectional=True)
            self.sorted = enforce_sorted

        def forward(self, x, lengths):
            p = nn.utils.rnn.pack_padded_sequence(x, lengths, enforce_sorted=self.sorted)
            y, h = self.rnn(p)
            h = h[0] if isinstance(h, tuple) else h
            y, _ = nn.utils.rnn.pad_packed_sequence(y, total_length=x.shape[0])
            return y, h

    C = {}

    def seq_case(name, kind, I, H, T, Bt, opset, batch_first=False, states=False, ret="all",
                 dyn=(), run_T=None, run_B=None, fold=True, **kw):
        def make():
            torch.manual_seed(zlib.crc32(name.encode()) % 1000)
            m = Seq(kind, I, H, ret=ret, states=states, batch_first=batch_first, **kw).eval()
            L = m.rnn.num_layers * (2 if m.rnn.bidirectional else 1)

            def inputs(T_, B_):
                x = torch.randn(B_, T_, I) if batch_first else torch.randn(T_, B_, I)
                xs = [x]
                if states:
                    xs.append(torch.randn(L, B_, H) * 0.5)
                    if kind == "lstm":
                        xs.append(torch.randn(L, B_, H) * 0.5)
                return xs
            names = ["x", "h0", "c0"][:len(inputs(T, Bt))]
            axes = {}
            for n in names:
                a = {}
                if "batch" in dyn:
                    a[0 if (n == "x" and batch_first) else 1] = "batch"
                if "seq" in dyn and n == "x":
                    a[1 if batch_first else 0] = "seq"
                if a:
                    axes[n] = a
            return export(m, inputs(T, Bt), names, opset, axes,
                          inputs(run_T or T, run_B or Bt),
                          {"batch": run_B or Bt, "seq": run_T or T}, fold=fold)
        C[name] = make

    def export(m, example, names, opset, axes, run_inputs, dim_values, out_names=None,
               fold=True, training=None):
        with torch.no_grad():
            ref = m(*run_inputs)
        ref = list(ref) if isinstance(ref, (tuple, list)) else [ref]
        out_names = out_names or ["out%d" % k for k in range(len(ref))]
        for o in out_names:
            if axes:
                axes[o] = {}
        f = io.BytesIO()
        torch.onnx.export(m, tuple(example), f, input_names=names, output_names=out_names,
                          opset_version=opset, dynamic_axes=axes or None, do_constant_folding=fold,
                          training=training or torch.onnx.TrainingMode.EVAL)
        model = onnx.load_from_string(f.getvalue())
        used = set()
        for vi in model.graph.input:
            for d in vi.type.tensor_type.shape.dim:
                if d.dim_param:
                    used.add(d.dim_param)
        dims = {k: v for k, v in dim_values.items() if k in used}
        feeds = [t.numpy() for t in run_inputs]
        feeds = [feeds[k] for k, n in enumerate(names)
                 if n in {vi.name for vi in model.graph.input}]
        return model, feeds, [r.numpy() for r in ref], dims, None

    for kind in ("lstm", "gru", "rnn_tanh", "rnn_relu"):
        k = kind
        seq_case("pt_%s_base_op14" % k, kind, 4, 5, 5, 3, 14)
        seq_case("pt_%s_bf_bi_l2_states_op13" % k, kind, 3, 6, 4, 2, 13, batch_first=True,
                 bidirectional=True, num_layers=2, states=True)
        seq_case("pt_%s_l3_nobias_dyn_op11" % k, kind, 4, 5, 4, 2, 11, num_layers=3, bias=False,
                 dyn=("batch", "seq"), run_T=6, run_B=3)
        seq_case("pt_%s_bi_only_h_op9" % k, kind, 3, 5, 4, 3, 9, bidirectional=True, ret="h")
        seq_case("pt_%s_bf_only_y_dynb_op17" % k, kind, 5, 33, 3, 2, 17, batch_first=True,
                 ret="y", dyn=("batch",), run_B=7)
    seq_case("pt_lstm_b1_seq1_op14", "lstm", 4, 5, 1, 1, 14, states=True)
    seq_case("pt_gru_bf_bi_l3_dyn_op14", "gru", 3, 5, 4, 2, 14, batch_first=True,
             bidirectional=True, num_layers=3, dyn=("batch", "seq"), run_T=3, run_B=5)
    seq_case("pt_lstm_bi_l2_states_dyn_op11", "lstm", 3, 5, 4, 2, 11, bidirectional=True,
             num_layers=2, states=True, dyn=("batch", "seq"), run_T=6, run_B=3)
    seq_case("pt_lstm_bf_l2_states_dyn_op17", "lstm", 3, 5, 4, 2, 17, batch_first=True,
             num_layers=2, states=True, dyn=("batch",), run_B=1)
    seq_case("pt_lstm_bi_dyn_op9", "lstm", 3, 5, 4, 2, 9, bidirectional=True,
             dyn=("batch", "seq"), run_T=6, run_B=3)
    seq_case("pt_gru_bi_l2_states_nofold_op13", "gru", 3, 5, 4, 2, 13, bidirectional=True,
             num_layers=2, states=True, fold=False)
    seq_case("pt_gru_l2_dyn_seq1_b1_op14", "gru", 4, 5, 4, 2, 14, num_layers=2,
             dyn=("batch", "seq"), run_T=1, run_B=1)
    seq_case("pt_rnn_relu_bf_bi_states_op9", "rnn_relu", 3, 5, 4, 2, 9, batch_first=True,
             bidirectional=True, states=True)

    def cell_case(name, kind, I, H, T, Bt, opset, zero=False, layers=1, **kw):
        def make():
            torch.manual_seed(zlib.crc32(name.encode()) % 1000)
            m = CellLoop(kind, I, H, zero=zero, layers=layers, **kw).eval()

            def inputs():
                xs = [torch.randn(Bt, T, I) if kw.get("batch_first") else torch.randn(T, Bt, I)]
                if not zero:
                    xs.append(torch.randn(layers, Bt, H) * 0.5)
                    if kind == "lstm":
                        xs.append(torch.randn(layers, Bt, H) * 0.5)
                return xs
            ex = inputs()
            names = ["x", "h0", "c0"][:len(ex)]
            return export(m, ex, names, opset, {}, ex, {})
        C[name] = make

    cell_case("pt_cell_lstm_op14", "lstm", 4, 5, 5, 3, 14)
    cell_case("pt_cell_lstm_zero_l2_op11", "lstm", 3, 6, 4, 2, 11, zero=True, layers=2)
    cell_case("pt_cell_gru_op14", "gru", 4, 5, 5, 3, 14)
    cell_case("pt_cell_gru_zero_b1_op13", "gru", 3, 33, 4, 1, 13, zero=True)
    cell_case("pt_cell_rnn_tanh_op14", "rnn_tanh", 4, 5, 5, 3, 14)
    cell_case("pt_cell_rnn_relu_l2_op17", "rnn_relu", 3, 5, 4, 2, 17, layers=2)
    cell_case("pt_cell_gru_bf_op14", "gru", 4, 5, 5, 3, 14, batch_first=True)
    cell_case("pt_cell_lstm_last_h_zero_op13", "lstm", 4, 6, 5, 2, 13, zero=True,
              last_only=True)

    # Hand-written cells in a Python loop, as other frameworks' cells are ported: TensorFlow's
    # BasicLSTMCell ([x, h] @ kernel + bias, gates i, j, f, o, forget_bias added inside f's
    # sigmoid), a coupled input-forget LSTM (CIFG: c = f * c + (1 - f) * j, no input gate), and
    # GRU / RNN cells with an extra constant in a pre-activation. The fusion pass must turn each
    # layer into one sequence op (the constant folds into the bias; CIFG is input_forget = 1).
    class HandLoop(nn.Module):
        def __init__(self, variant, I, H, layers):
            super().__init__()
            gates = {"tf_forget_bias": 4, "lstm_sub_const": 4, "coupled": 3,
                     "tf_cifg_peephole": 3, "gru_const": 3, "rnn_const": 1}[variant]
            self.v, self.H = variant, H
            self.ins = [I if l == 0 else H for l in range(layers)]
            self.kernel = nn.ParameterList(
                nn.Parameter(torch.randn((I if l == 0 else H) + H, gates * H) * 0.4)
                for l in range(layers))
            self.bias = nn.ParameterList(nn.Parameter(torch.randn(gates * H) * 0.2)
                                         for _ in range(layers))
            if variant == "lstm_sub_const":
                self.register_buffer("offset", torch.rand(H))
            if variant == "tf_cifg_peephole":  # w_f_diag, w_o_diag per layer
                self.peep = nn.Parameter(torch.randn(layers, 2, H) * 0.5)

        def step(self, l, x, h, c):
            H, v = self.H, self.v
            gates = torch.cat([x, h], 1) @ self.kernel[l] + self.bias[l]
            if v == "tf_forget_bias":
                i, j, f, o = gates.split(H, 1)
                c = c * torch.sigmoid(f + 1.0) + torch.sigmoid(i) * torch.tanh(j)
                return torch.tanh(c) * torch.sigmoid(o), c
            if v == "lstm_sub_const":  # constants subtracted: a scalar from f, a vector from o
                i, j, f, o = gates.split(H, 1)
                c = c * torch.sigmoid(f - 0.75) + torch.sigmoid(i) * torch.tanh(j)
                return torch.tanh(c) * torch.sigmoid(o - self.offset), c
            if v == "tf_cifg_peephole":  # TF's CoupledInputForgetGateLSTMCell, peepholes on
                j, f, o = gates.split(H, 1)
                f = torch.sigmoid(f + 1.0 + self.peep[l, 0] * c)
                c = f * c + (1 - f) * torch.tanh(j)
                return torch.sigmoid(o + self.peep[l, 1] * c) * torch.tanh(c), c
            if v == "coupled":
                j, f, o = gates.split(H, 1)
                f = torch.sigmoid(f)
                c = f * c + (1 - f) * torch.tanh(j)
                return torch.sigmoid(o) * torch.tanh(c), c
            if v == "gru_const":  # Keras-style GRU with a constant added to z's pre-activation
                xz, xr, xn = (x @ self.kernel[l][:self.ins[l]] + self.bias[l]).split(H, 1)
                hz, hr, hn = (h @ self.kernel[l][self.ins[l]:]).split(H, 1)
                z = torch.sigmoid(xz + hz + 1.0)
                r = torch.sigmoid(xr + hr)
                n = torch.tanh(xn + r * hn)
                return (1 - z) * n + z * h, c
            return torch.tanh(gates + 0.5), c

        def forward(self, x, h0, c0):
            seq = [x[t] for t in range(x.shape[0])]
            hs, cs = [], []
            for l in range(len(self.kernel)):
                h, c = h0[l], c0[l]
                out = []
                for xt in seq:
                    h, c = self.step(l, xt, h, c)
                    out.append(h)
                seq = out
                hs.append(h)
                cs.append(c)
            if self.v in ("gru_const", "rnn_const"):
                return torch.stack(seq), torch.stack(hs)
            return torch.stack(seq), torch.stack(hs), torch.stack(cs)

    def hand_case(variant, Bt, layers, I=4, H=5, T=5, opset=14):
        name = "pt_cell_%s_b%d_l%d_op%d" % (variant, Bt, layers, opset)

        def make():
            torch.manual_seed(zlib.crc32(name.encode()) % 1000)
            m = HandLoop(variant, I, H, layers).eval()
            ex = [torch.randn(T, Bt, I), torch.randn(layers, Bt, H) * 0.5,
                  torch.randn(layers, Bt, H) * 0.5]
            names = ["x", "h0", "c0"]
            return export(m, ex, names, opset, {}, ex, {})
        C[name] = make

    for v in ("tf_forget_bias", "coupled", "tf_cifg_peephole"):
        for Bt, layers in ((1, 1), (3, 1), (1, 2), (3, 2)):
            hand_case(v, Bt, layers)
    hand_case("lstm_sub_const", 3, 2)
    hand_case("gru_const", 3, 1)
    hand_case("rnn_const", 1, 2)

    # Hand-written cells that resemble LSTM/GRU/RNN cells but differ: the fusion pass must fuse
    # them only when the result is the same (the references are PyTorch's own outputs).
    class OddCell(nn.Module):
        def __init__(self, variant, I, H):
            super().__init__()
            g = {"lstm_forget_bias": 4, "lstm_coupled": 4, "lstm_coupled_half": 4,
                 "lstm_no_tanh_h": 4,
                 "lstm_clamp_c": 4, "lstm_layernorm": 4, "gru_swapped_z": 3,
                 "gru_untied": 3, "rnn_extra_tanh": 1, "rnn_masked": 1, "lstm_swapped_gates": 4,
                 "rnn_sigmoid_hand": 1}[variant]
            self.v, self.H = variant, H
            self.ih = nn.Linear(I, g * H)
            self.hh = nn.Linear(H, g * H)
            self.hh2 = nn.Linear(H, g * H)  # untied: odd steps use this one
            self.ln = nn.LayerNorm(4 * H)

        def forward(self, x, h0, c0, lengths):
            H, v = self.H, self.v
            h, c = h0, c0
            ys = []
            for t in range(x.shape[0]):
                hh = self.hh2 if (v == "gru_untied" and t % 2) else self.hh
                if v.startswith("lstm"):
                    gates = self.ih(x[t]) + hh(h)
                    if v == "lstm_layernorm":
                        gates = self.ln(gates)
                    i, f, g, o = gates.chunk(4, 1)
                    if v == "lstm_swapped_gates":
                        i, f = f, i
                    i, o = torch.sigmoid(i), torch.sigmoid(o)
                    f = torch.sigmoid(f + 1.0) if v == "lstm_forget_bias" else torch.sigmoid(f)
                    g = torch.tanh(g)
                    c = f * c + (1 - f) * g if v == "lstm_coupled" else f * c + i * g
                    if v == "lstm_coupled_half":  # not 1 - f: no input_forget LSTM computes it
                        c = f * c + (0.5 - f) * g
                    if v == "lstm_clamp_c":
                        c = torch.clamp(c, -0.5, 0.5)
                    h = o * c if v == "lstm_no_tanh_h" else o * torch.tanh(c)
                elif v.startswith("gru"):
                    gx, gh = self.ih(x[t]), hh(h)
                    z = torch.sigmoid(gx[:, :H] + gh[:, :H])
                    r = torch.sigmoid(gx[:, H:2 * H] + gh[:, H:2 * H])
                    n = torch.tanh(gx[:, 2 * H:] + r * gh[:, 2 * H:])
                    h = (1 - z) * h + z * n if v == "gru_swapped_z" else (1 - z) * n + z * h
                else:
                    pre = self.ih(x[t]) + hh(h)
                    hn = torch.sigmoid(pre) if v == "rnn_sigmoid_hand" else torch.tanh(pre)
                    if v == "rnn_extra_tanh":
                        hn = torch.tanh(hn * 2.0)
                    if v == "rnn_masked":
                        m = (t < lengths).float().unsqueeze(1)
                        hn = m * hn + (1 - m) * h
                    h = hn
                ys.append(h)
            return torch.stack(ys), h

    def odd_case(variant, opset=14):
        def make():
            torch.manual_seed(zlib.crc32(variant.encode()) % 1000)
            m = OddCell(variant, 4, 5).eval()
            x = torch.randn(5, 3, 4)
            h0, c0 = torch.randn(3, 5) * 0.5, torch.randn(3, 5) * 0.5
            lengths = torch.tensor([5, 2, 4])
            names = ["x", "h0", "c0", "lengths"]
            return export(m, [x, h0, c0, lengths], names, opset, {}, [x, h0, c0, lengths], {})
        C["pt_oddcell_" + variant + "_op%d" % opset] = make

    for v in ("lstm_forget_bias", "lstm_coupled", "lstm_coupled_half", "lstm_no_tanh_h",
              "lstm_clamp_c", "lstm_layernorm", "lstm_swapped_gates", "gru_swapped_z",
              "gru_untied", "rnn_extra_tanh", "rnn_masked", "rnn_sigmoid_hand"):
        odd_case(v)

    def clf_case(name, kind, layers, bidirectional, last, batch_first, opset):
        def make():
            torch.manual_seed(zlib.crc32(name.encode()) % 1000)
            m = Classifier(kind, 4, 6, layers, bidirectional, last, batch_first).eval()
            x = torch.randn(2, 5, 4) if batch_first else torch.randn(5, 2, 4)
            return export(m, [x], ["x"], opset, {}, [x], {})
        C[name] = make

    clf_case("pt_clf_lstm_l2_last_op14", "lstm", 2, False, True, False, 14)
    clf_case("pt_clf_gru_bi_l2_bf_all_op13", "gru", 2, True, False, True, 13)
    clf_case("pt_clf_lstm_bi_l3_bf_last_op17", "lstm", 3, True, True, True, 17)

    def last_valid():
        torch.manual_seed(9)
        m = LastValid().eval()
        x = torch.randn(6, 4, 3)
        lengths = torch.tensor([6, 2, 5, 1])
        return export(m, [x, lengths], ["x", "lengths"], 14, {}, [x, lengths], {})
    C["pt_lstm_last_valid_step_flip_op14"] = last_valid

    def siamese():
        torch.manual_seed(8)
        m = Siamese().eval()
        a, b = torch.randn(2, 4, 3), torch.randn(2, 6, 3)
        return export(m, [a, b], ["a", "b"], 14, {}, [a, b], {})
    C["pt_siamese_gru_shared_weights_op14"] = siamese

    def packed(lens, opset, **kw):
        def make():
            torch.manual_seed(3)
            m = Packed(3, 5, **kw).eval()
            x = torch.randn(max(lens), len(lens), 3)
            lengths = torch.tensor(lens, dtype=torch.int64)
            return export(m, [x, lengths], ["x", "lengths"], opset, {}, [x, lengths], {})
        return make
    C["pt_packed_lstm_bi_op14"] = packed([5, 2, 4], 14)
    C["pt_packed_lstm_bi_b7_ties_op11"] = packed([3, 6, 3, 1, 6, 2, 3], 11)
    C["pt_packed_gru_bi_sorted_op14"] = packed([5, 4, 2], 14, kind="gru", enforce_sorted=True)

    def proj():
        torch.manual_seed(4)
        m = Seq("lstm", 4, 6, proj_size=3).eval()
        x = torch.randn(5, 2, 4)
        return export(m, [x], ["x"], 14, {}, [x], {})
    C["pt_lstm_proj_size_op14"] = proj

    def double():
        torch.manual_seed(5)
        m = Seq("lstm", 3, 4).double().eval()
        x = torch.randn(4, 2, 3, dtype=torch.float64)
        model, feeds, refs, dims, _ = export(m, [x], ["x"], 14, {}, [x], {})
        return model, feeds, refs, dims, True
    C["pt_lstm_double_op14"] = double

    def dropout_training():
        torch.manual_seed(6)
        m = Seq("lstm", 3, 4, num_layers=2, dropout=0.3).train()
        x = torch.randn(4, 2, 3)
        model, feeds, refs, dims, _ = export(m, [x], ["x"], 14, {}, [x], {},
                                             training=torch.onnx.TrainingMode.TRAINING)
        return model, feeds, refs, dims, True
    C["pt_lstm_dropout_training_op14"] = dropout_training

    def quantized():
        torch.manual_seed(7)
        m = torch.quantization.quantize_dynamic(Seq("lstm", 3, 4).eval(), {nn.LSTM},
                                                dtype=torch.qint8)
        x = torch.randn(4, 2, 3)
        return export(m, [x], ["x"], 14, {}, [x], {})
    C["pt_lstm_dynamic_quantized_op14"] = quantized
    return C


# ---------------------------------------------------------------------------------------------


def shorten(model, keep):
    """Short internal names, no doc strings (small files); structure untouched."""
    g = model.graph
    names = {k: k for k in keep}
    for init in g.initializer:
        names.setdefault(init.name, "w%d" % len(names))
    for n in g.node:
        for o in n.output:
            if o:
                names.setdefault(o, "v%d" % len(names))
    for init in g.initializer:
        init.name = names[init.name]
    for i, n in enumerate(g.node):
        n.name = n.name if n.name.endswith("_node") else "%s_%d" % (n.op_type, i)
        n.doc_string = ""
        n.input[:] = [names.get(v, v) for v in n.input]
        n.output[:] = [names.get(v, v) for v in n.output]
    for vi in list(g.input) + list(g.output):
        vi.name = names.get(vi.name, vi.name)
    del g.value_info[:]
    model.doc_string = ""
    onnx.checker.check_model(model)
    return model


def write(name, model, feeds, refs, dims, gap):
    keep = [vi.name for vi in model.graph.input] + [vi.name for vi in model.graph.output]
    model = shorten(model, keep)
    if gap:
        os.makedirs(GAPS, exist_ok=True)
        onnx.save(model, os.path.join(GAPS, name + ".onnx"))
        return
    onnx.save(model, os.path.join(HERE, name + ".onnx"))
    for k, a in enumerate(feeds):
        np.save(os.path.join(HERE, "%s.in%d.npy" % (name, k)), a)
    for k, a in enumerate(refs):
        np.save(os.path.join(HERE, "%s.out%d.npy" % (name, k)), np.asarray(a, np.float32))


def all_cases():
    cases = dict(helper_cases())
    try:
        cases.update(torch_cases())
    except ImportError:
        print("torch not installed: PyTorch variants skipped", file=sys.stderr)
    return cases


# Expected refusals: name -> text graphi's error must contain (after the file name).
GAP_TEXT = {
    "h_lstm_unknown_activation": "node[0] 'h_lstm_unknown_activation_node' (LSTM): attribute "
                                 "'activations': 'Swish' is not supported",
    "h_rnn_affine_no_alpha": "node[0] 'h_rnn_affine_no_alpha_node' (RNN): attribute "
                             "'activations': 'Affine' without its "
                             "activation_alpha/activation_beta values is not supported",
    "h_rnn_bi_one_list_alpha": "node[0] 'h_rnn_bi_one_list_alpha_node' (RNN): attribute "
                               "'activations' lists one direction's functions for a "
                               "bidirectional RNN together with activation_alpha",
    "h_gru_double": "graph input 0 'X' has element type DOUBLE",
    "pt_lstm_double_op14": "graph input 0 'x' has element type DOUBLE",
}


def invalid_cases():
    """Malformed LSTM/GRU/RNN nodes (fused and unrolled paths): name -> (model, error text).
    graphi must reject each with kInvalidGraph and an error naming the node and the field."""
    rng = _rng(99)

    def model(name, kind, attrs, w, r, lens=None, x=(3, 2, 4), outs=("Y", "Y_h")):
        inits = [numpy_helper.from_array(rng.uniform(-1, 1, w).astype(np.float32), "W"),
                 numpy_helper.from_array(rng.uniform(-1, 1, r).astype(np.float32), "R")]
        ins = ["X", "W", "R"]
        if lens is not None:
            ins += ["", "L"]
            inits.append(numpy_helper.from_array(lens, "L"))
        node = helper.make_node(kind, ins, list(outs), name=name + "_node", **attrs)
        g = helper.make_graph([node], name,
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(x))],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
                               for o in outs], inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
        m.ir_version = 7
        return m

    hs = {"activations": ["HardSigmoid", "Tanh", "Tanh"]}
    return {
        "bad_lstm_hidden_mismatch": (
            model("bad_lstm_hidden_mismatch", "LSTM", {"hidden_size": 6}, (1, 20, 4), (1, 20, 5)),
            "input 1 (W) is float32[1, 20, 4], expected [1, 24, 4]"),
        "bad_lstm_hidden_mismatch_unrolled": (
            model("bad_lstm_hidden_mismatch_unrolled", "LSTM", dict(hs, hidden_size=6),
                  (1, 20, 4), (1, 20, 5)),
            "input 1 (W) is float32[1, 20, 4], expected float32[1, 24, 4]"),
        "bad_gru_float_lens": (
            model("bad_gru_float_lens", "GRU", {"hidden_size": 5}, (1, 15, 4), (1, 15, 5),
                  lens=np.array([1, 2], np.float32)),
            "input 4 (sequence_lens) must be int32 or int64, got float32[2]"),
        "bad_gru_float_lens_unrolled": (
            model("bad_gru_float_lens_unrolled", "GRU",
                  {"hidden_size": 5, "activations": ["HardSigmoid", "Tanh"]}, (1, 15, 4),
                  (1, 15, 5), lens=np.array([1, 2], np.float32)),
            "input 4 (sequence_lens) is float32[2], expected int32 or int64[2]"),
        "bad_rnn_three_outputs_unrolled": (
            model("bad_rnn_three_outputs_unrolled", "RNN",
                  {"hidden_size": 5, "activations": ["Elu"]}, (1, 5, 4), (1, 5, 5),
                  outs=("Y", "Y_h", "Y_c")),
            "RNN has 1 to 2 outputs (Y, Y_h), got 3"),
        "bad_lstm_bidi_one_direction_w_unrolled": (
            model("bad_lstm_bidi_one_direction_w_unrolled", "LSTM",
                  dict(hs, hidden_size=5, direction="bidirectional"), (1, 20, 4), (1, 20, 5)),
            "input 1 (W) is float32[1, 20, 4], expected float32[2, 20, 4]"),
        "bad_rnn_direction": (
            model("bad_rnn_direction", "RNN", {"hidden_size": 5, "direction": "sideways"},
                  (1, 5, 4), (1, 5, 5)),
            "attribute 'direction' must be forward, reverse or bidirectional, got 'sideways'"),
        "bad_lstm_activation_count": (
            model("bad_lstm_activation_count", "LSTM",
                  {"hidden_size": 5, "activations": ["HardSigmoid", "Tanh"]}, (1, 20, 4),
                  (1, 20, 5)),
            "attribute 'activations' has 2 names; LSTM needs 3 per direction"),
    }


def main(argv):
    if "--selftest" in argv:
        return selftest()
    if "--check" in argv:
        k = argv.index("--check")
        return check(argv[k + 1], argv[:k] + argv[k + 2:])
    only = [a for a in argv if not a.startswith("-")]
    cases = all_cases()
    manifest, expected, refused = [], [], []
    for name in sorted(cases):
        write_it = not only or name in only
        try:
            model, feeds, refs, dims, gap = cases[name]()
        except Exception as e:  # torch.onnx.export refusing a module
            msg = str(e).strip().splitlines()[0].split(" Please ")[0] if str(e).strip() else ""
            refused.append((name, "%s: %s" % (type(e).__name__, msg)))
            continue
        if gap:
            expected.append((name, GAP_TEXT[name]))
        else:
            manifest.append((name, dims))
        if write_it:
            write(name, model, feeds, refs, dims, gap)
    with open(os.path.join(HERE, "MANIFEST"), "w") as f:
        for name, dims in manifest:
            f.write(" ".join([name] + ["%s=%d" % kv for kv in sorted(dims.items())]) + "\n")
    os.makedirs(GAPS, exist_ok=True)
    with open(os.path.join(GAPS, "INVALID"), "w") as f:
        for name, (model, text) in sorted(invalid_cases().items()):
            f.write("%s\t%s\n" % (name, text))
            if not only or name in only:
                onnx.save(model, os.path.join(GAPS, name + ".onnx"))
    with open(os.path.join(GAPS, "EXPECTED"), "w") as f:
        for name, text in expected:
            f.write("%s\t%s\n" % (name, text))
    with open(os.path.join(GAPS, "EXPORT_REFUSED"), "w") as f:
        f.write("# PyTorch modules torch.onnx.export (1.13) refuses; nothing for graphi to run.\n")
        for name, text in refused:
            f.write("%s\t%s\n" % (name, text))
    print("%d variants, %d gaps, %d refused by the exporter" %
          (len(manifest), len(expected), len(refused)))
    return 0


def check(graphi, only):
    """The committed variants through the CLI, as a user runs them."""
    import subprocess
    import tempfile
    bad = 0
    for line in open(os.path.join(HERE, "MANIFEST")):
        parts = line.split()
        if not parts or parts[0].startswith("#") or (only and parts[0] not in only):
            continue
        name = parts[0]
        model = onnx.load(os.path.join(HERE, name + ".onnx"))
        for flags in (["--threads", "1"], ["--threads", "2", "--no-pin"], ["--no-fuse"]):
            with tempfile.TemporaryDirectory() as out:
                cmd = [graphi, "run", os.path.join(HERE, name + ".onnx"), "--output-dir", out,
                       "--iterations", "1", "--warmup", "0"] + flags
                for d in parts[1:]:
                    cmd += ["--dim", d]
                inits = {i.name for i in model.graph.initializer}
                runtime = [vi for vi in model.graph.input if vi.name not in inits]
                for k, vi in enumerate(runtime):
                    cmd += ["--input", "%s=%s" % (vi.name, os.path.join(HERE, "%s.in%d.npy" % (name, k)))]
                r = subprocess.run(cmd, capture_output=True, text=True)
                msg = ""
                if r.returncode != 0:
                    msg = "exit %d: %s" % (r.returncode, r.stderr.strip().splitlines()[-1:])
                else:
                    for k, vi in enumerate(model.graph.output):
                        want = np.load(os.path.join(HERE, "%s.out%d.npy" % (name, k)))
                        got = np.load(os.path.join(out, vi.name.replace("/", "_") + ".npy"))
                        tol = 1e-5 + 1e-4 * float(np.abs(want).max())
                        if got.shape != want.shape:
                            msg += " out%d shape %s vs %s" % (k, got.shape, want.shape)
                        elif not np.abs(got - want).max() <= tol:
                            msg += " out%d err %.3g (tol %.3g)" % (k, np.abs(got - want).max(), tol)
                if msg:
                    bad += 1
                print("%-40s %-22s %s" % (name, " ".join(flags), msg or "ok"))
    for line in open(os.path.join(GAPS, "EXPECTED")):
        name, text = line.rstrip("\n").split("\t")
        path = os.path.join(GAPS, name + ".onnx")
        r = subprocess.run([graphi, "run", path, "--iterations", "1"], capture_output=True,
                           text=True)
        ok = r.returncode == 1 and path in r.stderr and text in r.stderr
        bad += 0 if ok else 1
        print("%-40s %-22s %s" % (name, "gap", "ok" if ok else "NOT REFUSED AS EXPECTED"),
              r.stderr.strip().splitlines()[-1:] if not ok else "")
    for line in open(os.path.join(GAPS, "INVALID")):
        name, text = line.rstrip("\n").split("\t")
        path = os.path.join(GAPS, name + ".onnx")
        r = subprocess.run([graphi, "run", path, "--iterations", "1"], capture_output=True,
                           text=True)
        ok = r.returncode == 1 and path in r.stderr and text in r.stderr
        bad += 0 if ok else 1
        print("%-40s %-22s %s" % (name, "invalid", "ok" if ok else "NOT REJECTED AS EXPECTED"),
              r.stderr.strip().splitlines()[-1:] if not ok else "")
    print("%d failures" % bad)
    return 1 if bad else 0


def selftest():
    """onnx_rnn against torch's nn.LSTM/GRU/RNN (ONNX gate order) and ONNX's backend test
    data (libonnx-testdata), so the reference is not checked only against itself."""
    import torch
    from torch import nn
    torch.manual_seed(0)
    worst = 0.0
    for kind, cls, G, perm in (("LSTM", nn.LSTM, 4, [0, 3, 1, 2]), ("GRU", nn.GRU, 3, [1, 0, 2]),
                               ("RNN", nn.RNN, 1, [0])):
        m = cls(3, 4, bidirectional=True).eval()
        x = torch.randn(5, 2, 3)
        with torch.no_grad():
            y, hn = m(x)

        def reorder(w):  # torch gate order -> ONNX gate order
            return np.concatenate([w[p * 4:(p + 1) * 4] for p in perm])
        W = np.stack([reorder(getattr(m, "weight_ih_l0" + s).detach().numpy()) for s in ("", "_reverse")])
        R = np.stack([reorder(getattr(m, "weight_hh_l0" + s).detach().numpy()) for s in ("", "_reverse")])
        B = np.stack([np.concatenate([reorder(getattr(m, "bias_ih_l0" + s).detach().numpy()),
                                      reorder(getattr(m, "bias_hh_l0" + s).detach().numpy())])
                      for s in ("", "_reverse")])
        out = onnx_rnn(kind, x.numpy(), W, R, B, direction="bidirectional",
                       linear_before_reset=1)
        want = y.numpy().reshape(5, 2, 2, 4).transpose(0, 2, 1, 3)
        worst = max(worst, np.abs(out[0] - want).max())
        hn = hn[0] if kind == "LSTM" else hn
        worst = max(worst, np.abs(out[1] - hn.numpy()).max())
    print("torch: max abs error %.2e" % worst)
    assert worst < 1e-5
    base = "/usr/share/libonnx-testdata/data/node"
    checked = 0
    if os.path.isdir(base):
        for case in sorted(os.listdir(base)):
            if not any(k in case for k in ("lstm", "gru", "rnn")):
                continue
            model = onnx.load(os.path.join(base, case, "model.onnx"))
            node = model.graph.node[0]
            data = os.path.join(base, case, "test_data_set_0")
            ins = {}
            for k, vi in enumerate(model.graph.input):
                t = onnx.TensorProto()
                t.ParseFromString(open(os.path.join(data, "input_%d.pb" % k), "rb").read())
                ins[vi.name] = numpy_helper.to_array(t)
            a = {at.name: helper.get_attribute_value(at) for at in node.attribute}
            get = lambda k: ins.get(node.input[k]) if len(node.input) > k and node.input[k] else None
            out = onnx_rnn(node.op_type, get(0), get(1), get(2), get(3), get(4), get(5),
                           get(6) if node.op_type == "LSTM" else None,
                           get(7) if node.op_type == "LSTM" else None,
                           direction=a.get("direction", b"forward").decode(),
                           layout=a.get("layout", 0), clip=a.get("clip"),
                           linear_before_reset=a.get("linear_before_reset", 0))
            byname = dict(zip(["Y", "Y_h", "Y_c"], out))
            for k, vi in enumerate(model.graph.output):
                slot = list(node.output).index(vi.name)
                t = onnx.TensorProto()
                t.ParseFromString(open(os.path.join(data, "output_%d.pb" % k), "rb").read())
                want = numpy_helper.to_array(t)
                got = byname[["Y", "Y_h", "Y_c"][slot]]
                err = np.abs(got - want).max()
                assert err < 1e-5, (case, k, err)
            checked += 1
        print("ONNX backend cases: %d match" % checked)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
