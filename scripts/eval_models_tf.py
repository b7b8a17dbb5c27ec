#!/usr/bin/env python3
"""The evaluation models (models/eval_models.h) in TensorFlow 2, over the exact weights of a
`graphi model NAME --size S` file, for the training benchmark (scripts/bench_train.sh). Runs in
the TensorFlow venv (scripts/tf_venv.sh); needs numpy only besides TensorFlow.

  .venv-tf/bin/python scripts/eval_models_tf.py MODEL.graphi BATCH.npz [--steps N] [--lr LR]
      [--warmup W] [--jit] [--intra K] [--inter K]          -> one JSON object on stdout

The training step is one tf.function (forward, tf.GradientTape, SGD as assign_sub), optionally
compiled with XLA (jit_compile=True). The same math as graphi's graph and the PyTorch module:
LSTM cells unrolled (the Python loop unrolls inside the traced function, as TF 1 graphs did),
the PhasedLSTM time gate with tf.floor and tf.where, convolutions in TensorFlow's preferred CPU
layout NHWC (weights transposed from graphi's OIHW; the classifier's rows permuted so the
NCHW flatten order is kept), pools padded symmetrically with -inf as PyTorch pads (TF's 'SAME'
pads stride-2 pools on one side only, which would change the windows).
"""
import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from eval_graphi_file import GOOGLENET_BLOCKS, dims, model_kind, read_graphi  # noqa: E402

ALPHA = 0.001


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("batch")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--jit", action="store_true", help="tf.function(jit_compile=True) (XLA)")
    ap.add_argument("--intra", type=int, default=os.cpu_count())
    ap.add_argument("--inter", type=int, default=1)
    args = ap.parse_args()

    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(args.intra)
    tf.config.threading.set_inter_op_parallelism_threads(args.inter)

    weights, header = read_graphi(args.model)
    name = model_kind(header)
    with np.load(args.batch) as z:
        batch = {k: z[k] for k in z.files}
    d = dims(name, weights, batch)
    conv_model = name in ("pathnet", "googlenet")

    def tf_weight(k, v):
        if conv_model and v.ndim == 4:  # OIHW -> HWIO
            return v.transpose(2, 3, 1, 0)
        if conv_model and k == "fc/W" and name == "pathnet":
            s = d["image"] // 8  # rows in NCHW flatten order (c, h, w) -> NHWC order (h, w, c)
            c = d["filters"]
            return v.reshape(c, s, s, -1).transpose(1, 2, 0, 3).reshape(c * s * s, -1)
        return v

    V = {k: tf.Variable(tf_weight(k, v), name=k.replace("/", "_"))
         for k, v in weights.items() if v.dtype == np.float32 and v.ndim >= 1}
    variables = list(V.values())

    def conv(p, x, stride=1):
        W = V[p + "/W"]
        k = int(W.shape[0])
        pad = k // 2
        return tf.nn.relu(tf.nn.conv2d(x, W, stride, [[0, 0], [pad, pad], [pad, pad], [0, 0]])
                          + V[p + "/b"])

    def max_pool(x, k, s, pad):
        if pad:
            x = tf.pad(x, [[0, 0], [pad, pad], [pad, pad], [0, 0]], constant_values=-np.inf)
        return tf.nn.max_pool2d(x, k, s, "VALID")

    def forward_rnn(x, times):
        H = d["hidden"]
        xs = tf.unstack(x, axis=0)
        ts = [tf.reshape(t, [-1, 1]) for t in tf.unstack(times, axis=0)] if times is not None else None
        h = None
        for l in range(d["layers"]):
            W, R, b = V[f"l{l}/W"], V[f"l{l}/R"], V[f"l{l}/b"]
            if ts is not None:
                tau, shift, r_on = V[f"l{l}/tau"], V[f"l{l}/shift"], V[f"l{l}/r_on"]
                r_half = r_on * 0.5
            h = c = None
            for t in range(len(xs)):
                g = tf.matmul(xs[t], W) + b
                if h is not None:
                    g = g + tf.matmul(h, R)
                gi, go, gf, gc = tf.split(g, 4, axis=1)
                i, o, gg = tf.sigmoid(gi), tf.sigmoid(go), tf.tanh(gc)
                c_new = i * gg if c is None else tf.sigmoid(gf) * c + i * gg
                h_new = o * tf.tanh(c_new)
                if ts is None:
                    h, c = h_new, c_new
                else:
                    u = (ts[t] - shift) / tau
                    phi = u - tf.floor(u)
                    up = (phi * 2.0) / r_on
                    k = tf.where(phi < r_half, up, tf.where(phi < r_on, 2.0 - up, phi * ALPHA))
                    if c is None:
                        c, h = k * c_new, k * h_new
                    else:
                        keep = 1.0 - k
                        c, h = k * c_new + keep * c, k * h_new + keep * h
                xs[t] = h
        return tf.matmul(h, V["fc/W"]) + V["fc/b"]

    def forward_pathnet(x):
        for l in range(3):
            s = None
            for m in range(6):
                y = max_pool(conv(f"l{l}/m{m}/conv", x), 2, 2, 0)
                s = y if s is None else s + y
            x = s
        return tf.matmul(tf.reshape(x, [x.shape[0], -1]), V["fc/W"]) + V["fc/b"]

    def forward_googlenet(x):
        x = max_pool(conv("stem/conv1", x, 2), 3, 2, 1)
        x = max_pool(conv("stem/conv3", conv("stem/conv2", x)), 3, 2, 1)
        for i, blk in enumerate(GOOGLENET_BLOCKS):
            p = f"inc{i}"
            x = tf.concat([conv(p + "/b1", x), conv(p + "/b2b", conv(p + "/b2a", x)),
                           conv(p + "/b3b", conv(p + "/b3a", x)),
                           conv(p + "/b4", max_pool(x, 3, 1, 1))], axis=3)
            if blk[6]:
                x = max_pool(x, 3, 2, 1)
        x = tf.reduce_mean(x, axis=[1, 2])
        return tf.matmul(x, V["fc/W"]) + V["fc/b"]

    if conv_model:
        inputs = [tf.constant(batch["x"].transpose(0, 2, 3, 1))]
        fwd = forward_pathnet if name == "pathnet" else forward_googlenet
    else:
        inputs = [tf.constant(batch["x"]),
                  tf.constant(batch["times"]) if name == "phased-lstm" else None]
        fwd = forward_rnn
    labels = tf.constant(batch["labels"])
    lr = args.lr

    @tf.function(jit_compile=args.jit)
    def step(*xs):
        with tf.GradientTape() as tape:
            logits = fwd(*xs)
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        grads = tape.gradient(loss, variables)
        for v, g in zip(variables, grads):
            v.assign_sub(lr * g)
        return loss

    steps = []
    for _ in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        loss = float(step(*inputs).numpy())
        steps.append({"loss": loss, "ms": (time.perf_counter() - t0) * 1e3})
    print(json.dumps({"framework": "tensorflow", "version": tf.__version__, "model": name,
                      "jit": args.jit, "intra": args.intra, "inter": args.inter,
                      "warmup": args.warmup, "steps": steps}))


if __name__ == "__main__":
    main()
