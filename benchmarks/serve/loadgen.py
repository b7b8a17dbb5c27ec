"""Open-loop HTTP load generator for scripts/bench_serve.sh (a process of its own).

    loadgen.py --url http://127.0.0.1:PORT/ --rate 20 --seconds 60 --model M --out records.jsonl

Request i is due at start + i / rate whatever the answers so far (open loop: a slow server
makes requests pile up instead of slowing the generator down); its latency runs from that due
time to the answer, so queueing shows. Each request carries a unique id ("<run>-<i>") and an
attempt number; a failed attempt (connection error, HTTP 5xx, timeout) is retried with the
same id after a backoff, up to --attempts, and every attempt is recorded. Every answer is
checked against a local graphi.Session on the same input (inputs are drawn from a pool of 8,
so the references are computed once). Writes one JSON line per request:
    {"id", "due", "latency_ms", "attempts": [[attempt, status, pid, replayed, t_end], ...],
     "ok", "answers", "max_err"}
Bounded: the last request is due at --seconds; answers are awaited at most --drain s more.
"""
import argparse
import asyncio
import base64
import json
import os
import sys
import time

import numpy as np

import graphi


def make_pool(model, outputs, n=8, dims=None):
    s = graphi.Session(model, dims=dims, executors=1, threads=1, pin=False)
    pool = []
    for k in range(n):
        rng = np.random.default_rng(k)
        feed = {t.name: rng.uniform(-1, 1, t.shape).astype(np.float32) for t in s.inputs}
        want = s.run(feed)
        enc = {name: {"dtype": "float32", "shape": list(a.shape),
                      "b64": base64.b64encode(a.tobytes()).decode("ascii")}
               for name, a in feed.items()}
        pool.append((json.dumps(enc), {o: want[o] for o in outputs}))
    return pool


async def main_async(args):
    import aiohttp

    outputs = args.outputs.split(",")
    pool = make_pool(args.model, outputs, dims=json.loads(args.dims) if args.dims else None)
    records = []
    n = int(args.rate * args.seconds)
    timeout = aiohttp.ClientTimeout(total=args.timeout)
    conn = aiohttp.TCPConnector(limit=0, force_close=False)
    loop = asyncio.get_running_loop()

    async def one(i, due_loop, due_wall):
        rid = "%s-%d" % (args.run, i)
        inputs_json, want = pool[i % len(pool)]
        rec = {"id": rid, "due": due_wall, "attempts": [], "ok": False, "answers": 0,
               "max_err": None, "latency_ms": None}
        for attempt in range(args.attempts):
            body = '{"id": "%s", "attempt": %d, "outputs": %s, "inputs": %s}' % (
                rid, attempt, json.dumps(outputs), inputs_json)
            status, pid, replayed = None, None, None
            try:
                async with http.post(args.url, data=body,
                                     headers={"Content-Type": "application/json"}) as resp:
                    status = resp.status
                    payload = await resp.read()
                if status == 200:
                    reply = json.loads(payload)
                    pid, replayed = reply.get("pid"), reply.get("replayed")
                    if reply.get("batch"):
                        rec["batch"] = reply["batch"]
                    if reply.get("id") != rid:
                        status = "wrong id %r" % reply.get("id")
                    else:
                        err = 0.0
                        for o in outputs:
                            spec = reply["outputs"][o]
                            got = np.frombuffer(base64.b64decode(spec["b64"]), np.float32)
                            err = max(err, float(np.max(np.abs(got.reshape(spec["shape"]) -
                                                               want[o]))))
                        rec["max_err"] = err
            except asyncio.TimeoutError:
                status = "timeout"
            except aiohttp.ClientError as e:
                status = type(e).__name__
            rec["attempts"].append([attempt, status, pid, replayed, time.time()])
            if status == 200:
                rec["answers"] += 1
                rec["ok"] = True
                rec["latency_ms"] = (loop.time() - due_loop) * 1e3
                break
            if isinstance(status, int) and 400 <= status < 500:
                break  # the request itself is wrong: a retry cannot help
            await asyncio.sleep(min(2.0, 0.05 * 2 ** attempt))
        records.append(rec)

    async with aiohttp.ClientSession(connector=conn, timeout=timeout) as http:
        start_loop = loop.time() + 0.2
        start_wall = time.time() + 0.2
        tasks = []
        for i in range(n):
            due = start_loop + i / args.rate
            delay = due - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(i, due, start_wall + i / args.rate)))
        done, pending = await asyncio.wait(tasks, timeout=args.drain)
        for t in pending:
            t.cancel()
    with open(args.out, "w") as f:
        for r in sorted(records, key=lambda r: int(r["id"].rsplit("-", 1)[1])):
            f.write(json.dumps(r) + "\n")
    print("loadgen: %d requests due, %d recorded, %d answered, %d unanswered at the deadline"
          % (n, len(records), sum(r["ok"] for r in records), len(pending)), file=sys.stderr)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--rate", type=float, required=True)
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--dims", default="")
    ap.add_argument("--outputs", required=True, help="comma-separated output names to ask for")
    ap.add_argument("--run", default="r")
    ap.add_argument("--attempts", type=int, default=6)
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--drain", type=float, default=30.0)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    if not args.url.startswith(("http://127.", "http://localhost")):
        sys.exit("loadgen: loopback addresses only, got %s" % args.url)
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())
