"""This machine's roofline, measured now: the RNN benchmark's probe (graphi_bench_rnn --serve,
command "roofline": FMA GFLOP/s, L2, L3 and memory GB/s on `threads` cores). Shared by the Python
benchmarks that print a bound beside their ratios (benchmarks/cnn, benchmarks/torch,
scripts/bench_train.py), with the model's work from `graphi info`."""
import json
import os
import subprocess


def probe(build_dir, threads):
    """The probe's dict (fma_gflops, l2_gbs, l3_gbs, dram_gbs, ...), or None when graphi_bench_rnn is not
    built or does not answer."""
    exe = os.path.join(build_dir, "benchmarks", "graphi_bench_rnn")
    if not os.path.exists(exe):
        return None
    try:
        out = subprocess.run([exe, "--serve", "--threads", str(threads)], input="roofline\n",
                             capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        if '"roofline"' in line:
            return json.loads(line)
    return None


def fma_peak_gflops(build_dir, threads):
    """This machine's FMA rate on `threads` cores, measured now; None when not probed."""
    r = probe(build_dir, threads)
    return r["fma_gflops"] if r else None


def model_info(graphi, path):
    """`graphi info --json` of the model (flops: the ops' cost hints, parameter_bytes, ...); None
    when graphi cannot tell."""
    try:
        out = subprocess.run([graphi, "info", path, "--json"], capture_output=True, text=True,
                             timeout=120).stdout
        return json.loads(out)
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def model_gflop(graphi, path):
    """The model's floating point work per run, GFLOP; None when graphi cannot tell."""
    info = model_info(graphi, path)
    return info["flops"] / 1e9 if info and "flops" in info else None
