"""The CNN benchmark of issue 18: graphi beside ONNX Runtime and PyTorch, same run.

Runs in the benchmarks' venv (.venv: onnxruntime and torch 2 from PyPI) with graphi's Python
module on PYTHONPATH (build/python). Each peer lives in its own worker process (three OpenMP
runtimes never share one), and the driver interleaves them: every round times every peer
setting of one (model, batch, threads) case once, in a fresh shuffled order; the table shows medians
over rounds. The rounds of one (model, batch, threads) case run together, so each worker keeps
one session alive (see LiveSession). A measurement is the mean time of one run over a block of runs sized to last
about --block seconds, after warm-up runs.

Peer settings:
- graphi: at 1 thread 1x1; at 2 threads "auto" (the split graphi chooses itself over the
  machine's 2 cores: plan="auto"; the headline number) and the fixed splits 1x2 (one executor,
  a team of 2) and 2x1 (two executors of 1 thread, cpf scheduler);
- ORT: all graph optimizations, sequential execution with intra_op threads = T; at 2 threads
  also the parallel executor (inter_op 2, intra_op 1); best of them is the peer's number;
- PyTorch: eager under inference_mode and TorchScript (trace + freeze) in NCHW, eager in
  channels_last for 4-D inputs (--all-torch: TorchScript in channels_last too),
  torch.set_num_threads(T); best of them is the peer's number.

Every peer's output is compared with PyTorch eager's (max abs difference in the table).

  .venv/bin/python benchmarks/cnn/bench_cnn.py --models-dir build/bench/cnn --rounds 5
"""
import argparse
import csv
import json
import multiprocessing as mp
import os
import random
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import roofline_probe  # noqa: E402 (benchmarks/roofline_probe.py)


# ---------------------------------------------------------------------------------------------
# Workers: each holds its sessions and answers ("time", key, block) and ("output", key).

def _time_block(fn, block_s):
    fn()
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-6)
    n = max(1, min(2000, int(block_s / one)))
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


class LiveSession:
    """At most one session alive per worker: the thread pools of idle sessions (graphi's
    pinned teams, ORT's spinning intra-op pools) would otherwise compete with the timed one on
    a 2-core machine. Switching sessions re-creates them (not timed)."""

    def __init__(self, make):
        self.make, self.specs, self.key, self.obj = make, {}, None, None

    def open(self, key, spec):
        self.specs[key] = spec
        return self.get(key)

    def get(self, key):
        if key != self.key:
            self.obj = self.key = None
            self.obj = self.make(*self.specs[key])
            self.key = key
        return self.obj


def _graphi_worker(conn, build_dir):
    sys.path.insert(0, os.path.join(build_dir, "python"))
    import graphi

    def make(path, x, setting):
        if setting == "auto":
            return graphi.Session(path, plan="auto"), x
        e, t = (int(v) for v in setting.split("x"))
        return graphi.Session(path, executors=e, threads=t,
                              scheduler="cpf" if e > 1 else "sequential"), x

    live = LiveSession(make)
    while True:
        msg = conn.recv()
        if msg[0] == "quit":
            return
        try:
            if msg[0] == "open":
                _, key, path, x, setting = msg
                s, _ = live.open(key, (path, x, setting))
                conn.send(("ok", s.config))
            elif msg[0] == "time":
                s, x = live.get(msg[1])
                conn.send(("ok", _time_block(lambda: s.run([x]), msg[2])))
            elif msg[0] == "output":
                s, x = live.get(msg[1])
                conn.send(("ok", list(s.run([x]).values())[0]))
        except Exception as e:  # reported in the table, never fatal
            conn.send(("error", str(e).splitlines()[0][:200] if str(e) else repr(e)))


def _ort_worker(conn):
    import onnxruntime as ort

    def make(path, x, setting):  # setting: "seq:T" or "par:T"
        mode, t = setting.split(":")
        o = ort.SessionOptions()
        o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if mode == "seq":
            o.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            o.intra_op_num_threads = int(t)
            o.inter_op_num_threads = 1
        else:
            o.execution_mode = ort.ExecutionMode.ORT_PARALLEL
            o.intra_op_num_threads = 1
            o.inter_op_num_threads = int(t)
        s = ort.InferenceSession(path, o, providers=["CPUExecutionProvider"])
        return s, {s.get_inputs()[0].name: x}

    live = LiveSession(make)
    while True:
        msg = conn.recv()
        if msg[0] == "quit":
            return
        try:
            if msg[0] == "open":
                _, key, path, x, setting = msg
                live.open(key, (path, x, setting))
                conn.send(("ok", setting))
            elif msg[0] == "time":
                s, feed = live.get(msg[1])
                conn.send(("ok", _time_block(lambda: s.run(None, feed), msg[2])))
            elif msg[0] == "output":
                s, feed = live.get(msg[1])
                conn.send(("ok", s.run(None, feed)[0]))
        except Exception as e:
            conn.send(("error", str(e).splitlines()[0][:200]))


def _torch_worker(conn, models_dir):
    import torch
    sys.path.insert(0, HERE)
    import cnn_models
    specs = cnn_models.models()
    sessions = {}
    while True:
        msg = conn.recv()
        if msg[0] == "quit":
            return
        try:
            if msg[0] == "open":
                _, key, name, x, setting = msg  # "eager|script[-cl]:T"
                kind, t = setting.split(":")
                torch.set_num_threads(int(t))
                m = cnn_models.build(name, specs[name][0])
                m.load_state_dict(torch.load(os.path.join(models_dir, name + ".pt"),
                                             weights_only=True))
                xt = torch.from_numpy(x)
                if kind.endswith("-cl"):
                    m = m.to(memory_format=torch.channels_last)
                    xt = xt.contiguous(memory_format=torch.channels_last)
                with torch.inference_mode():
                    if kind.startswith("script"):
                        m = torch.jit.freeze(torch.jit.trace(m, (xt,)))
                        for _ in range(2):
                            m(xt)  # the profiling executor optimizes on the first runs
                    threads = int(t)

                    def run(m=m, xt=xt, threads=threads):
                        if torch.get_num_threads() != threads:
                            torch.set_num_threads(threads)
                        with torch.inference_mode():
                            return m(xt)
                sessions[key] = run
                conn.send(("ok", kind))
            elif msg[0] == "time":
                conn.send(("ok", _time_block(sessions[msg[1]], msg[2])))
            elif msg[0] == "output":
                y = sessions[msg[1]]()
                y = y[0] if isinstance(y, (tuple, list)) else y
                conn.send(("ok", y.contiguous().numpy().copy()))
        except Exception as e:
            conn.send(("error", str(e).splitlines()[0][:200]))


class Worker:
    def __init__(self, target, *args):
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=target, args=(child, *args), daemon=True)
        self.proc.start()

    def ask(self, *msg):
        self.conn.send(msg)
        return self.conn.recv()

    def close(self):
        try:
            self.conn.send(("quit",))
        except Exception:
            pass
        self.proc.join(5)


# ---------------------------------------------------------------------------------------------



def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models-dir", required=True)
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--block", type=float, default=0.15, help="seconds per measurement")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--models", default="", help="comma-separated names (default: all)")
    ap.add_argument("--csv", default="")
    ap.add_argument("--raw-json", default="",
                    help="also write every timed block (seconds per run, round by round) here")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--all-torch", action="store_true",
                    help="also TorchScript + channels_last (slow to set up; rarely the best)")
    args = ap.parse_args()

    sys.path.insert(0, HERE)
    import cnn_models
    specs = cnn_models.models()
    # Default: every model but the "common" and "volumetric" groups (224x224 and 3-D
    # architectures: slow; `--models common,volumetric` or their names select them).
    wanted = args.models.split(",") if args.models else []
    if wanted:
        names = [n for n in specs if n in wanted or specs[n][3] in wanted]
    else:
        names = [n for n in specs if specs[n][3] not in ("common", "volumetric")]
    threads = [int(t) for t in args.threads.split(",")]
    batches = [int(b) for b in args.batches.split(",")]

    workers = {"graphi": Worker(_graphi_worker, args.build_dir), "ort": Worker(_ort_worker),
               "torch": Worker(_torch_worker, args.models_dir)}
    cases = []  # (model, batch, threads, peer, setting)
    for n in names:
        four_d = len(specs[n][1]) == 3
        for b in batches:
            for t in threads:
                g = ["1x1"] if t == 1 else ["auto", "1x2", "2x1"]
                o = [f"seq:{t}"] + ([f"par:{t}"] if t > 1 else [])
                p = [f"eager:{t}", f"script:{t}"]
                if four_d:
                    p += [f"eager-cl:{t}"] + ([f"script-cl:{t}"] if args.all_torch else [])
                cases += [(n, b, t, "graphi", s) for s in g]
                cases += [(n, b, t, "ort", s) for s in o]
                cases += [(n, b, t, "torch", s) for s in p]

    # The FMA peak per thread count, probed before and after the timed cases (the best of the
    # two): with a model's FLOPs it bounds the time of any implementation doing the direct
    # convolutions' multiplies.
    probes = {t: roofline_probe.probe(args.build_dir, t) for t in threads}
    peak = {t: p["fma_gflops"] if p else None for t, p in probes.items()}
    # Its memory read rate: what weights that do not stay in the cache between runs stream at.
    dram = {t: p.get("dram_gbs") if p else None for t, p in probes.items()}
    # The cores' cache-line round trip, before and after (a VM's host may move its vCPUs: the
    # Zen 5 guest swung between ~110 and ~520 ns, and every team barrier with it).
    xcore = {t: [p.get("xcore_ns")] if p else [] for t, p in probes.items()}
    info, errors, ref, diff = {}, {}, {}, {}
    times = {c: [] for c in cases}
    rng = random.Random(args.seed)
    groups = list(dict.fromkeys(c[:3] for c in cases))
    xcore_case = {}
    for gi, grp in enumerate(groups):
        n, b, t = grp
        mine = [c for c in cases if c[:3] == grp]
        path = os.path.join(args.models_dir, f"{n}_b{b}.onnx")
        x = np.load(os.path.join(args.models_dir, f"{n}_b{b}.in0.npy"))
        for c in mine:
            peer, s = c[3], c[4]
            if peer == "graphi":
                # graphi measures at open (batch in slices, conv algorithms): after the previous
                # peer's spinning threads have gone to sleep, as before a timed block.
                time.sleep(0.2)
            st, v = workers[peer].ask("open", c, n if peer == "torch" else path, x, s)
            if st == "ok":
                info[c] = v
                st, v = workers[peer].ask("output", c)
            if st != "ok":
                errors[c] = v
                continue
            if peer == "torch" and s.startswith("eager:"):
                ref[(n, b)] = v
            diff[c] = v
        live = [c for c in mine if c not in errors]
        # The vCPUs' placement while this case runs (0.5 s): its cache-line round trip.
        if t > 1:
            p = roofline_probe.probe(args.build_dir, t)
            if p and p.get("xcore_ns"):
                xcore_case[grp] = p["xcore_ns"]
        # Same run, interleaved: every round times each setting of this case once, shuffled.
        for _ in range(args.rounds):
            rng.shuffle(live)
            for c in live:
                # Let the previous peer's thread pool stop spinning (ONNX Runtime's and
                # libgomp's spin after a run), so it does not steal a core from this block.
                time.sleep(0.02)
                st, v = workers[c[3]].ask("time", c, args.block)
                if st == "ok":
                    times[c].append(v)
                else:
                    errors[c] = v
        print(f"bench_cnn: {gi + 1}/{len(groups)} {n} batch {b} threads {t} done",
              file=sys.stderr, flush=True)
    for c, y in list(diff.items()):
        r = ref.get((c[0], c[1]))
        diff[c] = float(np.max(np.abs(y - r))) if r is not None and r.shape == y.shape \
            else float("nan")
    for w in workers.values():
        w.close()
    for t in threads:
        p = roofline_probe.probe(args.build_dir, t)
        again = p["fma_gflops"] if p else None
        if p:
            xcore[t].append(p.get("xcore_ns"))
        if again and (not peak[t] or again > peak[t]):
            peak[t] = again
        if p and p.get("dram_gbs") and (not dram[t] or p["dram_gbs"] > dram[t]):
            dram[t] = p["dram_gbs"]
    graphi = os.path.join(args.build_dir, "graphi")
    minfo = {(n, b): roofline_probe.model_info(graphi,
                                               os.path.join(args.models_dir, f"{n}_b{b}.onnx"))
             or {} for n in names for b in batches}
    gflop = {k: v["flops"] / 1e9 for k, v in minfo.items() if v.get("flops")}

    med = {c: statistics.median(v) for c, v in times.items() if v}
    rows = []
    for n in names:
        for b in batches:
            for t in threads:
                def best(peer):
                    cs = [c for c in med if c[:4] == (n, b, t, peer)]
                    return min(cs, key=lambda c: med[c]) if cs else None
                # graphi's own choice spans all cores; at 1 thread it is 1x1.
                g_auto = (n, b, t, "graphi", "auto" if t > 1 else "1x1")
                bo, bt = best("ort"), best("torch")
                peers = [c for c in (bo, bt) if c]
                bp = min(peers, key=lambda c: med[c]) if peers else None
                row = {"model": n, "batch": b, "threads": t,
                       "graphi_auto_ms": med.get(g_auto, float("nan")) * 1e3,
                       "graphi_config": info.get(g_auto, errors.get(g_auto, "")),
                       "ort_ms": med[bo] * 1e3 if bo else float("nan"),
                       "ort_setting": bo[4] if bo else "unavailable",
                       "torch_ms": med[bt] * 1e3 if bt else float("nan"),
                       "torch_setting": bt[4] if bt else "unavailable",
                       "speedup_vs_best_peer": (med[bp] / med[g_auto]) if bp and g_auto in med
                       else float("nan"),
                       "graphi_maxdiff": diff.get(g_auto, float("nan")),
                       "xcore_ns": xcore_case.get((n, b, t), float("nan"))}
                # The same ratio per round (every setting of a round is timed within seconds
                # of the others; the host's speed drifts by up to ~1.4x over minutes): the
                # best peer setting of round r / graphi's own choice in round r, median over r.
                peer_cs = [c for c in times if c[:3] == (n, b, t) and c[3] != "graphi"]
                ga = times.get(g_auto, [])
                rr = [min(times[c][r] for c in peer_cs) / ga[r] for r in range(len(ga))
                      if peer_cs and all(len(times[c]) > r for c in peer_cs)]
                row["speedup_per_round"] = statistics.median(rr) if rr else float("nan")
                for s in ("1x1", "1x2", "2x1"):
                    c = (n, b, t, "graphi", s)
                    row[f"graphi_{s}_ms"] = med[c] * 1e3 if c in med else float("nan")
                # The plan choice (issue 18): the best fixed split's time / auto's (>= 1: auto
                # is at least as fast as the better of 1x2 and 2x1).
                splits = [row[f"graphi_{s}_ms"] for s in ("1x2", "2x1")
                          if row[f"graphi_{s}_ms"] == row[f"graphi_{s}_ms"]]
                row["auto_vs_best_split"] = (min(splits) / row["graphi_auto_ms"]
                                             if t > 1 and splits else float("nan"))
                # The bound: all FLOPs at the probed FMA peak; best peer / bound is the largest
                # speed-up over the best peer that an implementation doing every multiply of the
                # direct convolution could show here (Winograd does fewer and can go below it).
                gf, pk = gflop.get((n, b)), peak.get(t)
                row["gflop"] = gf if gf else float("nan")
                row["fma_peak_gflops"] = pk if pk else float("nan")
                row["bound_ms"] = gf / pk * 1e3 if gf and pk else float("nan")
                best_peer_ms = med[bp] * 1e3 if bp else float("nan")
                row["best_peer_vs_bound"] = best_peer_ms / row["bound_ms"]
                # The weights read once from memory at the probed rate: what a run pays besides
                # its FLOPs when they do not stay in the cache from one run to the next and are
                # not read while the cores compute (a batch-1 run of 20+ MB of weights and more
                # activations on a guest's share of a 32 MiB L3).
                wb, dg = minfo[(n, b)].get("parameter_bytes"), dram.get(t)
                row["weights_mib"] = wb / 2**20 if wb else float("nan")
                row["dram_gbs"] = dg if dg else float("nan")
                row["weights_from_memory_ms"] = wb / (dg * 1e9) * 1e3 if wb and dg \
                    else float("nan")
                rows.append(row)

    hdr = (f"{'model':22} {'b':>2} {'t':>2} {'graphi':>9} {'1x2':>8} {'2x1':>8} {'ORT':>9} "
           f"{'torch':>9} {'x best':>7} {'x rnd':>6} {'auto/split':>10} {'bound':>8} {'max x':>6} "
           f"{'wts':>6} "
           f"{'maxdiff':>8} {'xcore':>6}  graphi config / best settings")
    print(hdr)
    for r in rows:
        print(f"{r['model']:22} {r['batch']:>2} {r['threads']:>2} {r['graphi_auto_ms']:9.3f} "
              f"{r['graphi_1x2_ms']:8.3f} {r['graphi_2x1_ms']:8.3f} {r['ort_ms']:9.3f} "
              f"{r['torch_ms']:9.3f} {r['speedup_vs_best_peer']:7.2f} "
              f"{r['speedup_per_round']:6.2f} "
              f"{r['auto_vs_best_split']:10.2f} {r['bound_ms']:8.3f} "
              f"{r['best_peer_vs_bound']:6.2f} {r['weights_from_memory_ms']:6.3f} "
              f"{r['graphi_maxdiff']:8.1e} {r['xcore_ns']:6.0f}  {r['graphi_config']} / ort "
              f"{r['ort_setting']}, "
              f"torch {r['torch_setting']}")
    print("x best: best peer's time / graphi's own choice (goal >= 1.30); x rnd: the same "
          "ratio within each round (best peer setting of the round / graphi's), median over "
          "rounds; auto/split: the "
          "faster of graphi 1x2 and 2x1 / graphi's own choice (goal >= 1.00, noise ~5%)")
    print("bound: the model's FLOPs (graphi info) at this machine's FMA peak, probed before and "
          "after the run (" + ", ".join(f"{t} thread(s) {peak[t]:.0f} GFLOP/s" if peak[t] else
                                        f"{t} thread(s) not probed" for t in threads) +
          "); max x = best peer / bound: the largest speed-up over the best peer that an "
          "implementation doing all of the direct convolutions' multiplies could show here "
          "(below 1.30: the goal needs more than the FMA peak, or fewer multiplies: Winograd)")
    print("wts: the model's weights (graphi info) read once from memory at the probed rate (" +
          ", ".join(f"{t} thread(s) {dram[t]:.0f} GB/s" if dram[t] else f"{t} thread(s) not probed"
                    for t in threads) +
          "), ms: what a run pays besides bound when they do not stay in the cache between runs "
          "and are not read while the cores compute")
    trips = [f"{t} thread(s) " + " / ".join(f"{v:.0f}" for v in xcore[t] if v)
             for t in threads if any(xcore[t])]
    if trips:
        print("xcore: the cores' cache-line round trip (ns) just before the case's rounds (a VM "
              "host moves its vCPUs; the Zen 5 guest's swung between ~110 and ~1050 ns, and "
              "small ops' team barriers with it); before / after the whole run: " +
              "; ".join(trips))
    for c, e in errors.items():
        print(f"error: {c}: {e}")
    if args.raw_json:
        with open(args.raw_json, "w") as f:
            json.dump([{"model": c[0], "batch": c[1], "threads": c[2], "peer": c[3],
                        "setting": c[4], "seconds_per_run": v} for c, v in times.items()], f,
                      indent=1)
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            w.writeheader()
            w.writerows(rows)


if __name__ == "__main__":
    main()
