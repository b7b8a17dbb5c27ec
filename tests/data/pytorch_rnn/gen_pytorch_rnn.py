#!/usr/bin/python3
"""Generates the PyTorch RNN fixtures that tests/ops/test_pytorch_rnn.cpp compares graphi with.

Usage: gen_pytorch_rnn.py [OUT_DIR]   (default: this script's directory)
Exit status 0 on success, 77 when torch (python3-torch) or numpy is missing.

Per case a directory OUT_DIR/<case>/ with case.json and .npy files (float32 unless noted):

  nn.LSTM / nn.GRU / nn.RNN cases ("kind": "torch"):
    case.json      {"mode": "LSTM"|"GRU"|"RNN_TANH"|"RNN_RELU", "input_size", "hidden_size",
                    "num_layers", "bidirectional", "batch_first", "bias", "seq", "batch",
                    "lengths": bool, "h0": bool}
    <key>.npy      every tensor of module.state_dict() under its PyTorch name
                   (weight_ih_l0, weight_hh_l0_reverse, bias_ih_l1, ...)
    input.npy      [T, B, I] ([B, T, I] if batch_first)
    lengths.npy    int64 [B], when "lengths" (uneven; run through pack_padded_sequence with
                   enforce_sorted=False, padded back with pad_packed_sequence(total_length=T))
    h0.npy, c0.npy [L*D, B, H], when "h0" (c0 for LSTM only)
    output.npy     [T, B, D*H] ([B, T, D*H] if batch_first), zeros beyond each length
    h_n.npy, c_n.npy  [L*D, B, H] (c_n for LSTM only)

  PhasedLSTM cases ("kind": "phased_lstm"): torch has no PhasedLSTM, so phased_lstm() below
  implements it from Neil, Pfeiffer, Liu, "Phased LSTM" (NIPS 2016), eqs. (6)-(11), in float64,
  on ONNX-layout weights (gate order i, o, f, c), as an independent reference for graphi's
  PhasedLSTM op (ops/phased_lstm.h):
    case.json      {"hidden_size", "input_size", "seq", "batch", "direction", "alpha",
                    "lengths": bool, "h0": bool}
    X [T,B,I], W [D,4H,I], R [D,4H,H], B [D,8H], times [T,B], tau/shift/r_on [D,H],
    lengths int64 [B] (if "lengths"), initial_h/initial_c [D,B,H] (if "h0"),
    Y [T,D,B,H], Y_h, Y_c [D,B,H]

Everything is seeded (torch.manual_seed / numpy RandomState per case), so a rerun with the same
torch gives the same files.
"""
import json
import os
import sys

TORCH_CASES = [
    # name, mode, input, hidden, layers, bidirectional, batch_first, bias, seq, batch,
    # lengths (None = full), h0
    ("lstm_1l_uni_b1", "LSTM", 5, 8, 1, False, False, True, 5, 1, None, False),
    ("lstm_2l_bi_b4_lens_h0", "LSTM", 6, 10, 2, True, False, True, 7, 4, [7, 3, 5, 1], True),
    ("lstm_3l_uni_b10_lens_h0_bf", "LSTM", 8, 12, 3, False, True, True, 6, 10,
     [6, 2, 4, 6, 1, 3, 5, 5, 2, 6], True),
    ("lstm_2l_bi_b10_bf", "LSTM", 7, 9, 2, True, True, True, 4, 10, None, False),
    ("lstm_3l_bi_b4_lens", "LSTM", 5, 8, 3, True, False, True, 5, 4, [2, 5, 4, 1], False),
    ("lstm_1l_bi_b4_nobias_h0", "LSTM", 6, 8, 1, True, False, False, 4, 4, None, True),
    ("gru_1l_uni_b1", "GRU", 5, 8, 1, False, False, True, 5, 1, None, False),
    ("gru_2l_bi_b4_lens_h0", "GRU", 6, 10, 2, True, False, True, 7, 4, [7, 3, 5, 1], True),
    ("gru_3l_uni_b10_lens_h0_bf", "GRU", 8, 12, 3, False, True, True, 6, 10,
     [6, 2, 4, 6, 1, 3, 5, 5, 2, 6], True),
    ("gru_2l_bi_b10_bf", "GRU", 7, 9, 2, True, True, True, 4, 10, None, False),
    ("gru_3l_bi_b1_h0", "GRU", 5, 8, 3, True, False, True, 5, 1, None, True),
    ("rnn_tanh_2l_bi_b4_lens", "RNN_TANH", 5, 8, 2, True, False, True, 5, 4, [5, 2, 3, 4], True),
    ("rnn_relu_1l_uni_b10_bf", "RNN_RELU", 6, 8, 1, False, True, True, 4, 10, None, False),
]

PHASED_CASES = [
    # name, input, hidden, seq, batch, direction, alpha, lengths, h0
    ("phased_fwd_b1", 5, 8, 7, 1, "forward", 0.001, None, False),
    ("phased_bi_b4_lens_h0", 6, 16, 7, 4, "bidirectional", 0.001, [7, 3, 5, 1], True),
    ("phased_rev_b10_alpha", 4, 12, 5, 10, "reverse", 0.05, [5, 1, 2, 5, 4, 3, 5, 2, 1, 4], True),
]


def save(np, path, array, dtype=None):
    a = np.ascontiguousarray(array, dtype=dtype if dtype else array.dtype)
    np.save(path, a)


def torch_case(torch, np, out_dir, seed, spec):
    (name, mode, inp, hid, layers, bidir, bf, bias, seq, batch, lengths, h0) = spec
    torch.manual_seed(seed)
    cls = {"LSTM": torch.nn.LSTM, "GRU": torch.nn.GRU}.get(mode)
    kwargs = dict(input_size=inp, hidden_size=hid, num_layers=layers, bias=bias,
                  batch_first=bf, bidirectional=bidir)
    if cls is None:
        cls = torch.nn.RNN
        kwargs["nonlinearity"] = "tanh" if mode == "RNN_TANH" else "relu"
    module = cls(**kwargs).eval()
    d = 2 if bidir else 1
    x = torch.randn(batch, seq, inp) if bf else torch.randn(seq, batch, inp)
    state = None
    if h0:
        hx = torch.randn(layers * d, batch, hid) * 0.5
        state = (hx, torch.randn(layers * d, batch, hid) * 0.5) if mode == "LSTM" else hx
    with torch.no_grad():
        if lengths is not None:
            lens = torch.tensor(lengths, dtype=torch.int64)
            packed = torch.nn.utils.rnn.pack_padded_sequence(x, lens, batch_first=bf,
                                                             enforce_sorted=False)
            out_p, final = module(packed, state)
            out, _ = torch.nn.utils.rnn.pad_packed_sequence(out_p, batch_first=bf,
                                                            total_length=seq)
        else:
            out, final = module(x, state)
    case = os.path.join(out_dir, name)
    os.makedirs(case, exist_ok=True)
    for key, t in module.state_dict().items():
        save(np, os.path.join(case, key + ".npy"), t.numpy(), np.float32)
    save(np, os.path.join(case, "input.npy"), x.numpy(), np.float32)
    if lengths is not None:
        save(np, os.path.join(case, "lengths.npy"), np.array(lengths), np.int64)
    if h0:
        if mode == "LSTM":
            save(np, os.path.join(case, "h0.npy"), state[0].numpy(), np.float32)
            save(np, os.path.join(case, "c0.npy"), state[1].numpy(), np.float32)
        else:
            save(np, os.path.join(case, "h0.npy"), state.numpy(), np.float32)
    save(np, os.path.join(case, "output.npy"), out.numpy(), np.float32)
    if mode == "LSTM":
        save(np, os.path.join(case, "h_n.npy"), final[0].numpy(), np.float32)
        save(np, os.path.join(case, "c_n.npy"), final[1].numpy(), np.float32)
    else:
        save(np, os.path.join(case, "h_n.npy"), final.numpy(), np.float32)
    meta = {"kind": "torch", "mode": mode, "input_size": inp, "hidden_size": hid,
            "num_layers": layers, "bidirectional": bidir, "batch_first": bf, "bias": bias,
            "seq": seq, "batch": batch, "lengths": lengths is not None, "h0": h0}
    with open(os.path.join(case, "case.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)


def phased_lstm(torch, x, w, r, b, times, tau, shift, r_on, alpha, lens, h0, c0, reverse):
    """One direction of a Phased LSTM, float64 torch tensors, ONNX layouts (gate order i, o, f,
    c). Returns Y [T, B, H], h_T, c_T. Steps t >= lens[b] leave the state unchanged and Y 0; a
    reverse direction runs t = lens[b]-1 .. 0 (ONNX's sequence_lens semantics)."""
    seq, batch, _ = x.shape
    hid = r.shape[1]
    wi, wo, wf, wc = w.split(hid, 0)
    ri, ro, rf, rc = r.split(hid, 0)
    wb, rb = b[:4 * hid], b[4 * hid:]
    bi, bo, bf, bc = (wb + rb).split(hid, 0)
    y = torch.zeros(seq, batch, hid, dtype=torch.float64)
    h_out = torch.zeros(batch, hid, dtype=torch.float64)
    c_out = torch.zeros(batch, hid, dtype=torch.float64)
    for n in range(batch):
        h = h0[n].clone()
        c = c0[n].clone()
        steps = range(int(lens[n]))
        for t in (reversed(steps) if reverse else steps):
            xt = x[t, n]
            # Plain LSTM update (eqs. 1-5 of the paper, no peepholes).
            i = torch.sigmoid(wi @ xt + ri @ h + bi)
            f = torch.sigmoid(wf @ xt + rf @ h + bf)
            o = torch.sigmoid(wo @ xt + ro @ h + bo)
            c_tilde = f * c + i * torch.tanh(wc @ xt + rc @ h + bc)
            h_tilde = o * torch.tanh(c_tilde)
            # Time gate (eqs. 6-7): phi = ((t - s) mod tau) / tau, floor modulo.
            phi = torch.remainder(times[t, n] - shift, tau) / tau
            k = torch.where(phi < 0.5 * r_on, 2.0 * phi / r_on,
                            torch.where(phi < r_on, 2.0 - 2.0 * phi / r_on, alpha * phi))
            # Eqs. 8-11: blend the proposal with the previous state.
            c = k * c_tilde + (1.0 - k) * c
            h = k * h_tilde + (1.0 - k) * h
            y[t, n] = h
        h_out[n] = h
        c_out[n] = c
    return y, h_out, c_out


def phased_case(torch, np, out_dir, seed, spec):
    (name, inp, hid, seq, batch, direction, alpha, lengths, h0) = spec
    rng = np.random.RandomState(seed)
    d = 2 if direction == "bidirectional" else 1
    bound = 1.0 / np.sqrt(hid)
    f32 = lambda a: np.asarray(a, dtype=np.float32)
    x = f32(rng.randn(seq, batch, inp))
    w = f32(rng.uniform(-bound, bound, (d, 4 * hid, inp)))
    r = f32(rng.uniform(-bound, bound, (d, 4 * hid, hid)))
    b = f32(rng.uniform(-bound, bound, (d, 8 * hid)))
    # Irregular increasing timestamps per batch entry.
    times = f32(np.cumsum(rng.uniform(0.2, 2.0, (seq, batch)), axis=0))
    tau = f32(np.exp(rng.uniform(np.log(0.5), np.log(6.0), (d, hid))))
    shift = f32(rng.uniform(0.0, 1.0, (d, hid)) * tau)
    r_on = f32(rng.uniform(0.1, 0.7, (d, hid)))
    lens = np.array(lengths if lengths is not None else [seq] * batch, dtype=np.int64)
    ih = f32(rng.randn(d, batch, hid) * 0.5) if h0 else np.zeros((d, batch, hid), np.float32)
    ic = f32(rng.randn(d, batch, hid) * 0.5) if h0 else np.zeros((d, batch, hid), np.float32)
    T = lambda a: torch.from_numpy(a.astype(np.float64))
    ys, hs, cs = [], [], []
    for k in range(d):
        reverse = direction == "reverse" or k == 1
        y, hn, cn = phased_lstm(torch, T(x), T(w[k]), T(r[k]), T(b[k]), T(times), T(tau[k]),
                                T(shift[k]), T(r_on[k]), alpha, lens, T(ih[k]), T(ic[k]), reverse)
        ys.append(y)
        hs.append(hn)
        cs.append(cn)
    case = os.path.join(out_dir, name)
    os.makedirs(case, exist_ok=True)
    arrays = {"X": x, "W": w, "R": r, "B": b, "times": times, "tau": tau, "shift": shift,
              "r_on": r_on, "Y": torch.stack(ys, 1).numpy(), "Y_h": torch.stack(hs, 0).numpy(),
              "Y_c": torch.stack(cs, 0).numpy()}
    if lengths is not None:
        save(np, os.path.join(case, "lengths.npy"), lens, np.int64)
    if h0:
        arrays["initial_h"] = ih
        arrays["initial_c"] = ic
    for key, a in arrays.items():
        save(np, os.path.join(case, key + ".npy"), a, np.float32)
    meta = {"kind": "phased_lstm", "input_size": inp, "hidden_size": hid, "seq": seq,
            "batch": batch, "direction": direction, "alpha": alpha,
            "lengths": lengths is not None, "h0": h0}
    with open(os.path.join(case, "case.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    try:
        import numpy as np
        import torch
    except ImportError as e:
        print("gen_pytorch_rnn: torch or numpy not available: %s" % e, file=sys.stderr)
        return 77
    torch.set_num_threads(1)
    os.makedirs(out_dir, exist_ok=True)
    for seed, spec in enumerate(TORCH_CASES, start=1):
        torch_case(torch, np, out_dir, seed, spec)
    for seed, spec in enumerate(PHASED_CASES, start=101):
        phased_case(torch, np, out_dir, seed, spec)
    print("gen_pytorch_rnn: %d cases in %s (torch %s)" %
          (len(TORCH_CASES) + len(PHASED_CASES), out_dir, torch.__version__))
    return 0


if __name__ == "__main__":
    sys.exit(main())
