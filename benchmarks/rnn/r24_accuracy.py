#!/usr/bin/python3
# Accuracy of storing the recurrent weight R with a 16-bit significand (fp32 rounded to its top
# 24 bits) for LSTM / GRU(lbr) hidden 1024, batch 1, 100 steps, PyTorch-style init.
import numpy as np
def round24(a):
    u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = ((u + 0x80) & 0xFFFFFF00).astype(np.uint32)  # round half up on the dropped byte
    return u.view(np.float32)
sig = lambda x: 1 / (1 + np.exp(-x))
def lstm(W, R, b, x, H, dt):
    h = np.zeros(H, dt); c = np.zeros(H, dt); out = []
    for t in range(x.shape[0]):
        g = (W @ x[t] + R @ h + b).astype(dt)
        i, f, gg, o = sig(g[:H]), sig(g[H:2*H]), np.tanh(g[2*H:3*H]), sig(g[3*H:])
        c = (f * c + i * gg).astype(dt); h = (o * np.tanh(c)).astype(dt); out.append(h)
    return np.array(out)
def gru(W, R, bw, br, x, H, dt):
    h = np.zeros(H, dt); out = []
    for t in range(x.shape[0]):
        gx = W @ x[t] + bw; gh = R @ h + br
        r = sig(gx[:H] + gh[:H]); z = sig(gx[H:2*H] + gh[H:2*H]); n = np.tanh(gx[2*H:] + r * gh[2*H:])
        h = ((1 - z) * n + z * h).astype(dt); out.append(h)
    return np.array(out)
H, T = 1024, 100
for seed in (0, 1):
    rng = np.random.default_rng(seed); k = 1 / np.sqrt(H)
    x = rng.standard_normal((T, H))
    for cell, G in (("LSTM", 4), ("GRU", 3)):
        W = rng.uniform(-k, k, (G * H, H)); R = rng.uniform(-k, k, (G * H, H))
        b = rng.uniform(-k, k, G * H); b2 = rng.uniform(-k, k, G * H)
        f = (lambda R_, dt: lstm(W.astype(dt), R_, b.astype(dt), x.astype(dt), H, dt)) if cell == "LSTM" else \
            (lambda R_, dt: gru(W.astype(dt), R_, b.astype(dt), b2.astype(dt), x.astype(dt), H, dt))
        ref = f(R, np.float64)
        e32 = np.abs(f(R.astype(np.float32), np.float32) - ref).max()
        e24 = np.abs(f(round24(R), np.float32) - ref).max()
        print(f"seed {seed} {cell} h{H}: max abs err of h vs float64: fp32 R {e32:.2e}, 24-bit R {e24:.2e}")
