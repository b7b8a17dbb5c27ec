#!/usr/bin/python3
"""Independent numpy reference for graphi's LSTM and GRU models (used by tests/cli/test_cli.cpp).

Computes a stacked LSTM or GRU straight from the ONNX equations in float64, from weights saved
as .npy files named after the graph constants with '/' replaced by '_' (l0_W.npy, l0_R.npy,
l0_b.npy; GRU: l0_R_zr.npy + l0_R_h.npy, or l0_R.npy + l0_Rb.npy with --linear-before-reset).
Weight layout: W [in, G*H], R [H, G*H], column blocks in ONNX gate order (LSTM i,o,f,c; GRU z,r,h).

usage: lstm_numpy.py lstm|gru --weights DIR --x x.npy --h0 h0.npy [--c0 c0.npy]
                     [--linear-before-reset] --out DIR     (writes y.npy, h_n.npy [, c_n.npy])
"""
import argparse
import os

import numpy as np


def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def load(d, name):
    return np.load(os.path.join(d, name.replace("/", "_") + ".npy")).astype(np.float64)


def lstm(wdir, x, h0, c0):
    T, L, H = x.shape[0], h0.shape[0], h0.shape[2]
    layer_in = x
    h_n, c_n = h0.copy(), c0.copy()
    for l in range(L):
        W, R, b = load(wdir, f"l{l}/W"), load(wdir, f"l{l}/R"), load(wdir, f"l{l}/b")
        h, c = h0[l], c0[l]
        ys = []
        for t in range(T):
            g = layer_in[t] @ W + h @ R + b
            i, o, f, cc = (g[:, k * H:(k + 1) * H] for k in range(4))
            c = sigmoid(f) * c + sigmoid(i) * np.tanh(cc)
            h = sigmoid(o) * np.tanh(c)
            ys.append(h)
        layer_in = np.stack(ys)
        h_n[l], c_n[l] = h, c
    return {"y": layer_in, "h_n": h_n, "c_n": c_n}


def gru(wdir, x, h0, linear_before_reset):
    T, L, H = x.shape[0], h0.shape[0], h0.shape[2]
    layer_in = x
    h_n = h0.copy()
    for l in range(L):
        W, b = load(wdir, f"l{l}/W"), load(wdir, f"l{l}/b")
        h = h0[l]
        ys = []
        for t in range(T):
            gx = layer_in[t] @ W + b
            if linear_before_reset:
                gh = h @ load(wdir, f"l{l}/R") + load(wdir, f"l{l}/Rb")
                z = sigmoid(gx[:, :H] + gh[:, :H])
                r = sigmoid(gx[:, H:2 * H] + gh[:, H:2 * H])
                hh = np.tanh(gx[:, 2 * H:] + r * gh[:, 2 * H:])
            else:
                gzr = h @ load(wdir, f"l{l}/R_zr")
                z = sigmoid(gx[:, :H] + gzr[:, :H])
                r = sigmoid(gx[:, H:2 * H] + gzr[:, H:])
                hh = np.tanh(gx[:, 2 * H:] + (r * h) @ load(wdir, f"l{l}/R_h"))
            h = (1 - z) * hh + z * h
            ys.append(h)
        layer_in = np.stack(ys)
        h_n[l] = h
    return {"y": layer_in, "h_n": h_n}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("cell", choices=["lstm", "gru"])
    p.add_argument("--weights", required=True)
    p.add_argument("--x", required=True)
    p.add_argument("--h0", required=True)
    p.add_argument("--c0")
    p.add_argument("--linear-before-reset", action="store_true")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    x = np.load(a.x).astype(np.float64)
    h0 = np.load(a.h0).astype(np.float64)
    if a.cell == "lstm":
        outs = lstm(a.weights, x, h0, np.load(a.c0).astype(np.float64))
    else:
        outs = gru(a.weights, x, h0, a.linear_before_reset)
    os.makedirs(a.out, exist_ok=True)
    for name, v in outs.items():
        np.save(os.path.join(a.out, name + ".npy"), v.astype(np.float32))


if __name__ == "__main__":
    main()
