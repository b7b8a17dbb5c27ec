"""Serving graphi on Ray Serve, measured (scripts/bench_serve.sh runs it; docs/SERVING.md).

    bench_serve.py --ray-address 127.0.0.1:PORT --http-port P --model M --outputs h \
        [--seconds 60] [--rate 20] [--cores 2] [--out DIR]

Three phases against one Ray cluster on loopback, each with a load generator in a process of
its own (benchmarks/serve/loadgen.py, open loop at --rate requests/s for --seconds):
  1 replica   x cores cores (graphi team of `cores` threads)
  2 replicas  x cores/2 cores each (each replica its own cores)
  2 replicas, kill: at half time one replica's process (its PID from Ray's state API) gets
              SIGKILL; Ray Serve starts a new replica; the client retries failed attempts with
              the same request id.
Per phase: throughput, p50/p99 latency (from each request's due time), failed requests, and
the exactly-once count on both sides: every id answered exactly once on the client, and every
answer the client got is in the server's ledger (each replica appends "id attempt run|replay"
per answer), server executions beyond the answers being those of attempts that died with the
killed replica. The kill phase also reports the p99 in the window around the kill and the
time until the deployment has 2 running replicas again.
"""
import argparse
import glob
import json
import os
import signal
import statistics
import subprocess
import sys
import time

import ray
from ray import serve

import graphi.serve

DEPLOYMENT = "GraphiModel"
APP = "graphi"


def pctl(values, q):
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, int(round(q * (len(v) - 1))))]


def replica_actors():
    """ALIVE replica actors of the deployment, from Ray's state API: [(actor id, pid)]."""
    from ray.util.state import list_actors
    acts = list_actors(filters=[("state", "=", "ALIVE")], detail=True, limit=1000,
                       raise_on_missing_output=False)
    out = []
    for a in acts:
        cls = a.get("class_name", "") if isinstance(a, dict) else a.class_name
        if cls.startswith("ServeReplica:") and cls.endswith(":" + DEPLOYMENT):
            pid = a.get("pid") if isinstance(a, dict) else a.pid
            aid = a.get("actor_id") if isinstance(a, dict) else a.actor_id
            out.append((aid, pid))
    return out


def running_replicas():
    st = serve.status()
    app = st.applications.get(APP)
    if app is None or DEPLOYMENT not in app.deployments:
        return 0, "absent"
    d = app.deployments[DEPLOYMENT]
    counts = d.replica_states or {}
    return int(counts.get("RUNNING", 0)), str(d.status)


def wait_running(n, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        k, status = running_replicas()
        if k >= n and status.endswith("HEALTHY"):
            return True
        time.sleep(0.2)
    return False


def analyse(records, ledger_dir, seconds, killed_pid=None, kill_time=None, recovered_at=None):
    n = len(records)
    ok = [r for r in records if r["ok"]]
    lat = [r["latency_ms"] for r in ok]
    answers = {}
    for r in records:
        answers[r["id"]] = answers.get(r["id"], 0) + r["answers"]
    retried = [r for r in records if len(r["attempts"]) > 1]
    server = {}  # id -> [(attempt, kind, pid)]
    for path in glob.glob(os.path.join(ledger_dir, "*.log")):
        pid = int(os.path.basename(path).split(".")[0])
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 3:
                    server.setdefault(parts[0], []).append((int(parts[1]), parts[2], pid))
    # Every answer the client got must be in the server's ledger: same id, attempt and pid.
    unmatched = 0
    for r in ok:
        a = r["attempts"][-1]
        if not any(e[0] == a[0] and e[2] == a[2] for e in server.get(r["id"], [])):
            unmatched += 1
    executions = sum(len(v) for v in server.values())
    by_id = {r["id"]: r for r in records}

    def delivered(rid, e):  # the server's answer e = (attempt, kind, pid) reached the client
        r = by_id.get(rid)
        return bool(r and r["ok"] and r["attempts"][-1][0] == e[0] and
                    r["attempts"][-1][2] == e[2])
    extra = [(rid, e) for rid, v in server.items() for e in v if not delivered(rid, e)]
    extra_not_killed = [x for x in extra if x[1][2] != killed_pid]
    res = {
        "requests": n, "answered": len(ok), "failed": n - len(ok),
        "answered_twice": sum(1 for v in answers.values() if v > 1),
        "throughput": len(ok) / seconds,
        "p50": pctl(lat, 0.5), "p99": pctl(lat, 0.99), "max": max(lat) if lat else float("nan"),
        "retried_requests": len(retried),
        "retry_attempts": sum(len(r["attempts"]) - 1 for r in records),
        "server_executions": executions,
        "server_ids": len(server),
        "client_answers_missing_on_server": unmatched,
        "server_answers_not_delivered": len(extra),
        "of_those_not_from_killed_replica": len(extra_not_killed),
        "replays": sum(1 for v in server.values() for e in v if e[1] == "replay"),
        "max_err": max((r["max_err"] for r in ok if r["max_err"] is not None), default=None),
        "pids": sorted({r["attempts"][-1][2] for r in ok}),
        "mean_batch": (statistics.mean(r["batch"] for r in ok if r.get("batch"))
                       if any(r.get("batch") for r in ok) else None),
    }
    if kill_time is not None:
        lo, hi = kill_time - 2.0, (recovered_at or kill_time) + 2.0
        win = [r["latency_ms"] for r in ok if lo <= r["due"] <= hi]
        res.update({"window_s": [round(lo - kill_time, 1), round(hi - kill_time, 1)],
                    "window_requests": len(win), "window_p50": pctl(win, 0.5),
                    "window_p99": pctl(win, 0.99), "window_max": max(win) if win else None,
                    "recovery_s": (recovered_at - kill_time) if recovered_at else None,
                    "killed_pid": killed_pid,
                    "failed_attempts": sum(1 for r in records for a in r["attempts"]
                                           if a[1] != 200)})
    return res


def phase(args, name, replicas, kill):
    ledger = os.path.join(args.out, name.replace(" ", "_"), "ledger")
    os.makedirs(ledger, exist_ok=True)
    cores = args.cores // replicas
    t0 = time.time()
    serve.run(graphi.serve.app(args.model, replicas=replicas, cores_per_replica=cores,
                               ledger_dir=ledger, lock_dir=os.path.join(args.out, "locks"),
                               batch_dim=args.batch_dim or None,
                               max_batch_size=args.max_batch_size),
              name=APP, route_prefix="/", blocking=False)
    if not wait_running(replicas, args.deploy_timeout):
        raise RuntimeError("%s: %d replicas not running after %.0f s" % (
            name, replicas, args.deploy_timeout))
    deploy_s = time.time() - t0
    pids_before = replica_actors()
    rec_path = os.path.join(args.out, name.replace(" ", "_"), "records.jsonl")
    cmd = [sys.executable, os.path.join(os.path.dirname(__file__), "loadgen.py"),
           "--url", "http://127.0.0.1:%d/" % args.http_port, "--rate", str(args.rate),
           "--seconds", str(args.seconds), "--model", args.model, "--outputs", args.outputs,
           "--run", name.replace(" ", "_"), "--out", rec_path]
    if args.batch_dim:
        cmd += ["--dims", json.dumps({args.batch_dim: 1})]
    gen = subprocess.Popen(cmd)
    killed_pid = kill_time = recovered_at = None
    try:
        if kill:
            time.sleep(0.2 + args.seconds / 2)
            actors = replica_actors()
            if len(actors) < 2:
                raise RuntimeError("kill: %d replica actors alive, want 2" % len(actors))
            killed_pid = actors[0][1]
            kill_time = time.time()
            os.kill(killed_pid, signal.SIGKILL)
            print("  killed replica pid %d (actor %s) at t = %.1f s" % (
                killed_pid, actors[0][0][:12], kill_time - t0 - deploy_s), flush=True)
            time.sleep(0.5)  # let the controller see the death before polling its state
            deadline = time.time() + args.deploy_timeout
            while time.time() < deadline:
                alive = [p for _, p in replica_actors()]
                k, status = running_replicas()
                if (len(alive) >= 2 and killed_pid not in alive and k >= 2 and
                        status.endswith("HEALTHY")):
                    recovered_at = time.time()
                    break
                time.sleep(0.1)
        rc = gen.wait(timeout=args.seconds + 120)
    finally:
        if gen.poll() is None:
            gen.kill()
    if rc != 0:
        raise RuntimeError("%s: load generator exited with %d" % (name, rc))
    with open(rec_path) as f:
        records = [json.loads(line) for line in f]
    res = analyse(records, ledger, args.seconds, killed_pid, kill_time, recovered_at)
    res.update({"phase": name, "replicas": replicas, "cores_per_replica": cores,
                "deploy_s": deploy_s, "pids_before": [p for _, p in pids_before],
                "pids_after": [p for _, p in replica_actors()]})
    serve.delete(APP)
    time.sleep(1.0)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ray-address", required=True)
    ap.add_argument("--http-port", type=int, required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--outputs", required=True)
    ap.add_argument("--label", default="")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--rate", type=float, default=20)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--deploy-timeout", type=float, default=120)
    ap.add_argument("--phases", default="1,2,kill")
    ap.add_argument("--batch-dim", default="",
                    help="the model's symbolic batch dim: requests are batched (Serve's @serve.batch)")
    ap.add_argument("--max-batch-size", type=int, default=8)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    ray.init(address=args.ray_address, log_to_driver=False)
    serve.start(http_options={"host": "127.0.0.1", "port": args.http_port})
    with open("/proc/loadavg") as fh:
        load0 = " ".join(fh.read().split()[:3])
    print("model %s (%s); %d cores; open loop %.1f req/s for %.0f s per phase; ray %s; "
          "load average %s" % (args.label or args.model, args.model, args.cores, args.rate,
                               args.seconds, ray.__version__, load0), flush=True)
    results = []
    plan = {"1": ("1 replica", 1, False), "2": ("2 replicas", 2, False),
            "kill": ("2 replicas kill", 2, True)}
    for key in args.phases.split(","):
        name, replicas, kill = plan[key]
        print("phase: %s" % name, flush=True)
        res = phase(args, name, replicas, kill)
        results.append(res)
        print("  " + json.dumps(res), flush=True)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    with open("/proc/loadavg") as fh:
        load1 = " ".join(fh.read().split()[:3])
    print("\n%-16s %9s %8s %8s %8s %7s %7s %8s %8s %9s" % (
        "phase", "answered", "req/s", "p50 ms", "p99 ms", "failed", "twice", "retries",
        "re-runs", "max err"))
    for r in results:
        print("%-16s %4d/%-4d %8.1f %8.1f %8.1f %7d %7d %8d %8d %9.1e" % (
            r["phase"], r["answered"], r["requests"], r["throughput"], r["p50"], r["p99"],
            r["failed"], r["answered_twice"], r["retry_attempts"],
            r["server_answers_not_delivered"], r["max_err"] or 0.0))
    for r in results:
        if r.get("mean_batch"):
            print("%s: dynamic batching, mean padded run size %.2f requests' rows" % (
                r["phase"], r["mean_batch"]))
    for r in results:
        if "killed_pid" in r:
            print("kill: replica pid %s killed; %s running again after %s s; window %s s around "
                  "the kill: %d requests, p50 %.1f ms, p99 %.1f ms, max %.1f ms; failed attempts "
                  "%d (retried with the same id), client answers missing from the server ledger "
                  "%d, server answers not delivered %d (%d not from the killed replica)" % (
                      r["killed_pid"], r["pids_after"],
                      "%.1f" % r["recovery_s"] if r["recovery_s"] is not None else "NOT",
                      r["window_s"], r["window_requests"], r["window_p50"], r["window_p99"],
                      r["window_max"] or float("nan"), r["failed_attempts"],
                      r["client_answers_missing_on_server"], r["server_answers_not_delivered"],
                      r["of_those_not_from_killed_replica"]))
    print("load average at the end: %s" % load1)
    bad = [r["phase"] for r in results
           if r["failed"] or r["answered_twice"] or r["client_answers_missing_on_server"]
           or r["of_those_not_from_killed_replica"] or (r["max_err"] or 0) > 1e-4
           or ("recovery_s" in r and r["recovery_s"] is None)]
    print("exactly once, zero failed, outputs within 1e-4, replica restarted: %s" % (
        "yes" if not bad else "NO (%s)" % ", ".join(bad)))
    serve.shutdown()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
