"""Serving graphi models on Ray Serve (docs/SERVING.md).

    from ray import serve
    import graphi.serve
    app = graphi.serve.app("model.onnx", replicas=2, cores_per_replica=1)
    serve.run(app, route_prefix="/")          # HTTP POST / on Serve's proxy

One graphi.Session per replica. Each replica claims its own cores on its machine before it
opens the Session (a lock file per core slot, held for the process's life and released by the
kernel when the process dies, so a replica Ray restarts takes the slot of the one that died):
two replicas never share a core. The Session runs graphi's placement on those cores
(scheduler "cpf", 1 executor x cores_per_replica threads, pinned, cpuset = the slot's cores).

Requests (JSON, POST):
    {"id": "r42", "attempt": 0,
     "inputs": {"x": {"dtype": "float32", "shape": [100, 1, 256], "b64": "<raw bytes>"}
                 or "x": [[...nested lists...]]},
     "outputs": ["h"]}                       # optional: which outputs to return (default all)
Response: {"id", "attempt", "pid", "replayed": bool,
           "outputs": {name: {"dtype", "shape", "b64"}}, "batch": padded run size (batching)}; a bad request is HTTP 400 with
{"error": message} (the message names the input); a failed run is HTTP 500.

Exactly-once bookkeeping: a request id already answered by this replica is answered again
from a bounded cache ("replayed": true) instead of being run again, so a client retry after a
lost response is idempotent by id. Inference has no side effects, so a retry whose first
attempt died with its replica is simply run again (by the replica that takes it). With
ledger_dir set, every answer is appended to <ledger_dir>/<pid>.log ("id attempt run|replay"),
so a benchmark can count answers on the server side (scripts/bench_serve.sh).

Dynamic batching (models with a symbolic batch dimension, batch_dim="N"): requests that
arrive together are stacked along axis 0 into one run (Ray Serve's @serve.batch), padded to
the next power of two up to max_batch_size; one Session per padded size, opened on first use.
"""
import asyncio
import base64
import collections
import fcntl
import json
import logging
import os
import time

import numpy as np

import graphi

log = logging.getLogger("graphi.serve")

_DTYPES = {"float32": np.float32, "int32": np.int32, "int64": np.int64}
_RUN_SIZE = "\0batch"  # key of a batched run's padded size in a request's outputs


class RequestError(ValueError):
    """A request the server cannot accept (HTTP 400)."""


def decode_array(name, spec):
    """An input of a request as an ndarray: {"dtype", "shape", "b64"} or nested lists."""
    if isinstance(spec, dict):
        dtype = spec.get("dtype", "float32")
        if dtype not in _DTYPES:
            raise RequestError("input '%s': dtype '%s' is not supported (float32, int32, int64)"
                               % (name, dtype))
        try:
            shape = tuple(int(d) for d in spec["shape"])
            raw = base64.b64decode(spec["b64"], validate=True)
        except (KeyError, TypeError, ValueError) as e:
            raise RequestError("input '%s': needs 'shape' (list of ints) and 'b64' (base64 of "
                               "the raw little-endian values): %s" % (name, e)) from None
        a = np.frombuffer(raw, dtype=_DTYPES[dtype])
        if a.size != int(np.prod(shape, dtype=np.int64)):
            raise RequestError("input '%s': %d values for shape %s" % (name, a.size, list(shape)))
        return a.reshape(shape)
    try:
        return np.asarray(spec, dtype=np.float32)
    except (TypeError, ValueError) as e:
        raise RequestError("input '%s': not a numeric array: %s" % (name, e)) from None


def encode_array(a):
    a = np.ascontiguousarray(a)
    return {"dtype": str(a.dtype), "shape": list(a.shape),
            "b64": base64.b64encode(a.tobytes()).decode("ascii")}


def claim_cores(cores_per_replica, lock_dir=None, wait_s=60.0):
    """Claims a free slot of `cores_per_replica` cores among the cores this process may use:
    returns (slot, cores, fd). The slot stays claimed while the returned fd is open (an
    flock, released by the kernel when the process dies). Waits up to wait_s for a slot
    (a replica being replaced may still hold one); raises RuntimeError when none frees."""
    allowed = sorted(os.sched_getaffinity(0))
    slots = len(allowed) // cores_per_replica
    if slots < 1:
        raise RuntimeError("graphi.serve: cores_per_replica=%d but this process may use %d "
                           "cores (%s)" % (cores_per_replica, len(allowed), allowed))
    lock_dir = lock_dir or os.path.join("/tmp", "graphi-serve-cores-%d" % os.getuid())
    os.makedirs(lock_dir, exist_ok=True)
    deadline = time.monotonic() + wait_s
    while True:
        for slot in range(slots):
            cores = allowed[slot * cores_per_replica:(slot + 1) * cores_per_replica]
            path = os.path.join(lock_dir, "cores-%s.lock" % "-".join(map(str, cores)))
            fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            os.ftruncate(fd, 0)
            os.write(fd, b"%d\n" % os.getpid())
            return slot, cores, fd
        if time.monotonic() > deadline:
            raise RuntimeError("graphi.serve: all %d slots of %d cores in %s are held by other "
                               "replicas; more replicas than cores_per_replica allows" % (
                                   slots, cores_per_replica, lock_dir))
        time.sleep(0.2)


class GraphiReplica:
    """The deployment's class (graphi.serve.app wraps it in serve.deployment)."""

    def __init__(self, model, cores_per_replica=1, batch_dim=None, max_batch_size=1,
                 ledger_dir=None, lock_dir=None, session_options=None, replay_cache=4096):
        self.model = os.fspath(model)
        self.slot, self.cores, self._lock_fd = claim_cores(cores_per_replica, lock_dir)
        cpuset = ",".join(map(str, self.cores))
        self.options = dict(executors=1, threads=len(self.cores), scheduler="cpf", pin=True,
                            cpuset=cpuset)
        self.options.update(session_options or {})
        self.batch_dim = batch_dim
        self.max_batch_size = max(1, int(max_batch_size))
        self._sessions = {}
        self.session = self._session(1 if batch_dim else None)
        self.input_info = {t.name: t for t in self.session.inputs}
        self.output_names = [t.name for t in self.session.outputs]
        self._replies = collections.OrderedDict()  # id -> response body (bounded, LRU)
        self._replay_cache = int(replay_cache)
        self._ledger = None
        if ledger_dir:
            os.makedirs(ledger_dir, exist_ok=True)
            self._ledger = os.open(os.path.join(ledger_dir, "%d.log" % os.getpid()),
                                   os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o644)
        self.pid = os.getpid()
        self.runs = 0
        # graphi's run releases the GIL; one thread keeps the event loop free meanwhile.
        from concurrent.futures import ThreadPoolExecutor
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="graphi-run")
        log.info("graphi.serve: replica pid %d, slot %d, cores %s, %s", self.pid, self.slot,
                 cpuset, self.session.config)

    def _session(self, batch):
        s = self._sessions.get(batch)
        if s is None:
            dims = {self.batch_dim: batch} if self.batch_dim else None
            s = self._sessions[batch] = graphi.Session(self.model, dims=dims, **self.options)
        return s

    # ---- one request ----------------------------------------------------------------------

    def parse(self, body):
        """(id, attempt, feed, wanted output names) of a request body (bytes)."""
        try:
            req = json.loads(body)
        except ValueError as e:
            raise RequestError("body is not JSON: %s" % e) from None
        if not isinstance(req, dict) or not isinstance(req.get("inputs"), dict):
            raise RequestError("body must be a JSON object with 'inputs': {name: array}")
        rid = req.get("id")
        attempt = int(req.get("attempt", 0))
        feed = {}
        for name, spec in req["inputs"].items():
            if name not in self.input_info:
                raise RequestError("unknown input '%s'; the model's inputs are %s" % (
                    name, ", ".join(self.input_info)))
            feed[name] = decode_array(name, spec)
        missing = [n for n in self.input_info if n not in feed]
        if missing:
            raise RequestError("missing input(s) %s" % ", ".join(missing))
        wanted = req.get("outputs") or self.output_names
        for n in wanted:
            if n not in self.output_names:
                raise RequestError("unknown output '%s'; the model's outputs are %s" % (
                    n, ", ".join(self.output_names)))
        return rid, attempt, feed, wanted

    def run_feed(self, feed):
        out = self.session.run(feed)
        self.runs += 1  # runs done (tests, health)
        return out

    def run_batch(self, feeds):
        """One run for several requests' feeds stacked along axis 0 (padded to a power of 2)."""
        rows = [next(iter(f.values())).shape[0] for f in feeds]
        total = sum(rows)
        size = 1
        while size < total:
            size *= 2
        s = self._session(size)
        stacked = {}
        for name in self.input_info:
            parts = [f[name] for f in feeds]
            pad = size - total
            if pad:
                parts.append(np.zeros((pad,) + parts[0].shape[1:], parts[0].dtype))
            stacked[name] = np.concatenate(parts, axis=0)
        out = s.run(stacked)
        self.runs += 1
        res, at = [], 0
        for r in rows:
            part = {k: v[at:at + r] for k, v in out.items()}
            part[_RUN_SIZE] = size  # reported to the client as "batch"
            res.append(part)
            at += r
        return res

    def replay(self, rid, attempt):
        """The answer already given to request `rid` (marked replayed), or None."""
        if rid is None or rid not in self._replies:
            return None
        self.record(rid, attempt, "replay")
        return dict(self._replies[rid], attempt=attempt, replayed=True)

    def answer(self, rid, attempt, out, wanted):
        """The response body for run outputs `out`; remembered for replays and recorded."""
        reply = {"id": rid, "attempt": attempt, "pid": self.pid, "replayed": False,
                 "outputs": {n: encode_array(out[n]) for n in wanted}}
        if _RUN_SIZE in out:
            reply["batch"] = out[_RUN_SIZE]
        self.remember(rid, reply)
        self.record(rid, attempt, "run")
        return reply

    def handle(self, body):
        """(HTTP status, response dict) for a request body, run on the calling thread (the
        deployment does the same steps with the run on its run thread)."""
        try:
            rid, attempt, feed, wanted = self.parse(body)
        except RequestError as e:
            return 400, {"error": str(e)}
        reply = self.replay(rid, attempt)
        if reply is not None:
            return 200, reply
        try:
            out = self.run_batch([feed])[0] if self.batch_dim else self.run_feed(feed)
        except graphi.Error as e:
            return (400 if getattr(e, "code", "") == "invalid_argument" else 500), {
                "error": str(e), "id": rid}
        return 200, self.answer(rid, attempt, out, wanted)

    def record(self, rid, attempt, kind):
        if self._ledger is not None:
            os.write(self._ledger, ("%s %d %s\n" % (rid, attempt, kind)).encode())

    def remember(self, rid, body):
        if rid is None:
            return
        self._replies[rid] = body
        if len(self._replies) > self._replay_cache:
            self._replies.popitem(last=False)

    def health(self):
        """Raises when the replica cannot serve (Ray Serve's check_health)."""
        if self.session is None:
            raise RuntimeError("graphi.serve: the Session is closed")
        if self._pool._shutdown:
            raise RuntimeError("graphi.serve: the run thread is stopped")

    def close(self):
        """Graceful shutdown: waits for the run in flight, frees the Sessions, releases the
        cores."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        self._sessions.clear()
        self.session = None
        if self._ledger is not None:
            os.close(self._ledger)
            self._ledger = None
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None


def app(model, replicas=1, cores_per_replica=1, batch_dim=None, max_batch_size=8,
        batch_wait_timeout_s=0.002, ledger_dir=None, lock_dir=None, session_options=None,
        name="GraphiModel", max_ongoing_requests=16, graceful_shutdown_timeout_s=10.0,
        health_check_period_s=2.0, health_check_timeout_s=10.0):
    """A Ray Serve application serving `model` (.onnx or .graphi) with `replicas` replicas of
    `cores_per_replica` cores each (Ray reserves that many CPUs per replica, so a cluster
    places replicas only where cores are free). Bind it with serve.run(app(...))."""
    from ray import serve
    from starlette.responses import JSONResponse

    batching = bool(batch_dim) and max_batch_size > 1

    class Deployment:
        def __init__(self):
            self.r = GraphiReplica(model, cores_per_replica, batch_dim,
                                   max_batch_size if batching else 1, ledger_dir, lock_dir,
                                   session_options)

        async def _run_one(self, feed):
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self.r._pool, self.r.run_feed, feed)

        @serve.batch(max_batch_size=max_batch_size, batch_wait_timeout_s=batch_wait_timeout_s)
        async def _run_batched(self, feeds):
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self.r._pool, self.r.run_batch, feeds)

        async def __call__(self, request):
            r = self.r
            body = await request.body()
            try:
                rid, attempt, feed, wanted = r.parse(body)
            except RequestError as e:
                return JSONResponse({"error": str(e)}, status_code=400)
            reply = r.replay(rid, attempt)
            if reply is not None:
                return JSONResponse(reply)
            try:
                out = await (self._run_batched(feed) if batching else self._run_one(feed))
            except graphi.Error as e:
                code = 400 if getattr(e, "code", "") == "invalid_argument" else 500
                return JSONResponse({"error": str(e), "id": rid}, status_code=code)
            return JSONResponse(r.answer(rid, attempt, out, wanted))

        def check_health(self):
            self.r.health()

        def __del__(self):
            r = getattr(self, "r", None)
            if r is not None:
                r.close()

    Deployment.__name__ = Deployment.__qualname__ = name
    dep = serve.deployment(
        Deployment, name=name, num_replicas=replicas,
        ray_actor_options={"num_cpus": cores_per_replica},
        max_ongoing_requests=max_ongoing_requests,
        graceful_shutdown_timeout_s=graceful_shutdown_timeout_s,
        health_check_period_s=health_check_period_s,
        health_check_timeout_s=health_check_timeout_s)
    return dep.bind()
