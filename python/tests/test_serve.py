"""graphi.serve without Ray: the request format, the core slots, the replica's answers, replays
and ledger, and batching. (Ray Serve itself runs in scripts/bench_serve.sh.) Expected outputs are
the PyTorch fixtures of tests/data/onnx (cnn*.out0.npy), not graphi's own."""
import base64
import json
import os
import tempfile
import unittest

import numpy as np

from graphi import serve

DATA = os.environ.get("GRAPHI_TEST_DATA", os.path.join(os.path.dirname(__file__), "..", "..",
                                                       "tests", "data", "onnx"))


def b64(a):
    a = np.ascontiguousarray(a, np.float32)
    return {"dtype": "float32", "shape": list(a.shape),
            "b64": base64.b64encode(a.tobytes()).decode()}


def decoded(spec):
    return np.frombuffer(base64.b64decode(spec["b64"]), spec["dtype"]).reshape(spec["shape"])


def rel_err(got, want):
    return float(np.max(np.abs(got - want)) / max(1.0, float(np.max(np.abs(want)))))


class DecodeTest(unittest.TestCase):
    def test_b64_and_lists(self):
        a = np.arange(6, dtype=np.float32).reshape(2, 3)
        np.testing.assert_array_equal(serve.decode_array("x", b64(a)), a)
        np.testing.assert_array_equal(serve.decode_array("x", [[0, 1, 2], [3, 4, 5]]), a)

    def test_errors_name_the_input(self):
        with self.assertRaisesRegex(serve.RequestError, "input 'x': 5 values for shape \\[2, 3\\]"):
            serve.decode_array("x", {"dtype": "float32", "shape": [2, 3],
                                     "b64": base64.b64encode(b"\0" * 20).decode()})
        with self.assertRaisesRegex(serve.RequestError, "input 'y': dtype 'float64'"):
            serve.decode_array("y", {"dtype": "float64", "shape": [1], "b64": ""})
        with self.assertRaisesRegex(serve.RequestError, "input 'z': needs 'shape'"):
            serve.decode_array("z", {"dtype": "float32", "b64": "AAAA"})


class CoreSlotTest(unittest.TestCase):
    def test_slots_exclusive_and_freed(self):
        allowed = sorted(os.sched_getaffinity(0))
        if len(allowed) < 2:
            self.skipTest("needs 2 allowed cores")
        with tempfile.TemporaryDirectory() as d:
            s0, c0, fd0 = serve.claim_cores(1, d, wait_s=0)
            s1, c1, fd1 = serve.claim_cores(1, d, wait_s=0)
            self.assertNotEqual(c0, c1)
            self.assertEqual({s0, s1}, {0, 1})
            if len(allowed) == 2:
                with self.assertRaisesRegex(RuntimeError, "all 2 slots of 1 cores"):
                    serve.claim_cores(1, d, wait_s=0)
            os.close(fd0)  # as when the process dies: the slot is free again
            s2, c2, fd2 = serve.claim_cores(1, d, wait_s=0)
            self.assertEqual(c2, c0)
            os.close(fd1)
            os.close(fd2)

    def test_too_many_cores(self):
        n = len(os.sched_getaffinity(0))
        with self.assertRaisesRegex(RuntimeError, "cores_per_replica=%d" % (n + 1)):
            serve.claim_cores(n + 1, tempfile.gettempdir(), wait_s=0)


class ReplicaTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.ledger = os.path.join(self.tmp.name, "ledger")

    def tearDown(self):
        self.tmp.cleanup()

    def replica(self, model, **kw):
        r = serve.GraphiReplica(os.path.join(DATA, model), 1, ledger_dir=self.ledger,
                                lock_dir=os.path.join(self.tmp.name, "locks"), **kw)
        self.addCleanup(r.close)
        return r

    def test_answers_match_pytorch_and_replays_by_id(self):
        r = self.replica("cnn.onnx")
        x = np.load(os.path.join(DATA, "cnn.in0.npy"))
        want = np.load(os.path.join(DATA, "cnn.out0.npy"))
        body = json.dumps({"id": "a", "inputs": {"image": b64(x)}}).encode()
        status, reply = r.handle(body)
        self.assertEqual(status, 200, reply)
        self.assertEqual((reply["id"], reply["replayed"], reply["pid"]), ("a", False, os.getpid()))
        self.assertLess(rel_err(decoded(reply["outputs"]["logits"]), want), 1e-4)
        self.assertEqual(r.runs, 1)
        # The same id again (a client retry after a lost answer): answered from the cache.
        retry = json.dumps({"id": "a", "attempt": 1, "inputs": {"image": b64(x)}}).encode()
        status, again = r.handle(retry)
        self.assertEqual((status, again["replayed"], again["attempt"]), (200, True, 1))
        self.assertEqual(again["outputs"], reply["outputs"])
        self.assertEqual(r.runs, 1)
        # Nested lists work too; a new id runs again.
        status, lists = r.handle(json.dumps({"id": "b", "inputs": {"image": x.tolist()},
                                             "outputs": ["logits"]}).encode())
        self.assertEqual(status, 200)
        self.assertLess(rel_err(decoded(lists["outputs"]["logits"]), want), 1e-4)
        self.assertEqual(r.runs, 2)
        r.close()
        with open(os.path.join(self.ledger, "%d.log" % os.getpid())) as f:
            self.assertEqual(f.read().split("\n"), ["a 0 run", "a 1 replay", "b 0 run", ""])

    def test_bad_requests_are_400_naming_the_field(self):
        r = self.replica("cnn.onnx")
        cases = [(b"not json", "body is not JSON"),
                 (b'{"id": 1}', "'inputs'"),
                 (b'{"inputs": {"img": [1]}}', "unknown input 'img'; the model's inputs are image"),
                 (b'{"inputs": {}}', "missing input\\(s\\) image"),
                 (json.dumps({"inputs": {"image": b64(np.zeros((2, 1, 8, 8)))},
                              "outputs": ["probs"]}).encode(), "unknown output 'probs'"),
                 (json.dumps({"inputs": {"image": b64(np.zeros((1, 1, 8, 8)))}}).encode(),
                  "image")]
        for body, msg in cases:
            status, reply = r.handle(body)
            self.assertEqual(status, 400, (body[:40], reply))
            self.assertRegex(reply["error"], msg)
        self.assertEqual(r.runs, 0)

    def test_batching_stacks_and_pads(self):
        r = self.replica("cnn_dynamic_batch.onnx", batch_dim="n", max_batch_size=4)
        x = np.load(os.path.join(DATA, "cnn_dynamic_batch.in0.npy"))      # 3 samples
        want = np.load(os.path.join(DATA, "cnn_dynamic_batch.out0.npy"))
        outs = r.run_batch([{"image": x[i:i + 1]} for i in range(3)])      # padded to 4
        self.assertEqual(r.runs, 1)
        self.assertEqual(sorted(r._sessions), [1, 4])
        for i, o in enumerate(outs):
            self.assertEqual(o["logits"].shape, (1, 10))
            self.assertLess(rel_err(o["logits"], want[i:i + 1]), 1e-4)
        status, reply = r.handle(json.dumps({"id": "c", "inputs": {"image": b64(x[:2])}}).encode())
        self.assertEqual((status, reply["batch"]), (200, 2))
        self.assertLess(rel_err(decoded(reply["outputs"]["logits"]), want[:2]), 1e-4)


if __name__ == "__main__":
    unittest.main()
