"""This machine's roofline, measured now: the RNN benchmark's probe (graphi_bench_rnn --serve,
command "roofline": FMA GFLOP/s, L2 and L3 GB/s on `threads` cores). Shared by the Python
benchmarks that print a bound beside their ratios (benchmarks/cnn, benchmarks/torch)."""
import json
import os
import subprocess


def probe(build_dir, threads):
    """The probe's dict (fma_gflops, l2_gbs, l3_gbs, ...), or None when graphi_bench_rnn is not
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
