#!/usr/bin/python3
"""Tests of the graphi Python package (ctest: python/graphi).

Run by hand: PYTHONPATH=build/python /usr/bin/python3 -m unittest -v test_graphi  (from
python/tests). The references are PyTorch's own outputs: the .npy files committed next to the
ONNX fixtures (tests/data/onnx/gen_onnx_fixtures.py), and for graphi.torch the module itself.
"""
import os
import re
import subprocess
import sys
import threading
import time
import unittest

import numpy as np

import graphi

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.environ.get("GRAPHI_TEST_DATA",
                      os.path.join(HERE, "..", "..", "tests", "data", "onnx"))

try:
    import torch
except ImportError:  # the package itself must work without PyTorch
    torch = None


def fixture(name):
    """(model path, [inputs], [PyTorch outputs]) of tests/data/onnx/<name>.*"""
    def load(kind):
        out, i = [], 0
        while os.path.exists(os.path.join(DATA, "%s.%s%d.npy" % (name, kind, i))):
            out.append(np.load(os.path.join(DATA, "%s.%s%d.npy" % (name, kind, i))))
            i += 1
        return out
    return os.path.join(DATA, name + ".onnx"), load("in"), load("out")


def max_rel_error(got, want):
    """max |got - want| / max(1, |want|) over all elements."""
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    return float(np.max(np.abs(got - want) / np.maximum(1.0, np.abs(want))))


class FixtureTest(unittest.TestCase):
    def check(self, name, **opts):
        path, ins, want = fixture(name)
        self.assertTrue(ins and want, "missing fixture files for " + name)
        s = graphi.Session(path, **opts)
        self.assertEqual(len(s.inputs), len(ins))
        self.assertEqual([o.name for o in s.outputs], list(s.run(
            {t.name: a for t, a in zip(s.inputs, ins)}).keys()))
        out = s.run({t.name: a for t, a in zip(s.inputs, ins)})
        self.assertEqual(len(out), len(want))
        for (oname, got), w, info in zip(out.items(), want, s.outputs):
            self.assertEqual(got.shape, w.shape, oname)
            self.assertEqual(got.shape, tuple(info.shape), oname)
            self.assertEqual(got.dtype, np.float32, oname)
            self.assertLess(max_rel_error(got, w), 1e-4, "%s output %s" % (name, oname))
        # The list form (input order) gives the same values.
        out2 = s.run(list(ins))
        for k in out:
            np.testing.assert_array_equal(out[k], out2[k])
        return s

    def test_mlp(self):
        s = self.check("mlp")
        self.assertEqual(s.inputs, [graphi.TensorInfo("x", "float32", (4, 16))])
        self.assertEqual(s.outputs[0].name, "probs")
        self.assertIsInstance(s.config, str)

    def test_mlp_without_passes(self):
        s = self.check("mlp", optimize=False)
        self.assertEqual(s.passes, "")

    def test_lstm_2layer_bidir(self):
        s = self.check("lstm_2layer_bidir")
        self.assertEqual([o.name for o in s.outputs], ["y", "h", "c"])

    def test_lstm_2layer_bidir_parallel(self):
        self.check("lstm_2layer_bidir", executors=2, threads=1, scheduler="cpf", pin=False)

    def test_lstm_bf16_weights(self):
        # bf16 weights (docs/RNN_KERNELS.md): within the documented 1e-2 of the fp32 fixture
        # (ONNX Runtime's outputs), and not bit-identical to it (the option took effect).
        path, ins, want = fixture("lstm_2layer_bidir")
        s = graphi.Session(path, rnn_weights="bf16")
        out = s.run({t.name: a for t, a in zip(s.inputs, ins)})
        errs = [float(np.max(np.abs(np.asarray(g, np.float64) - w)))
                for g, w in zip(out.values(), want)]
        self.assertLess(max(errs), 1e-2)
        self.assertGreater(max(errs), 1e-6)
        with self.assertRaises(graphi.Error) as cm:
            graphi.Session(path, rnn_weights="fp16")
        self.assertIn("rnn_weights", str(cm.exception))

    def test_lstm_int8_weights(self):
        # int8 weights (docs/RNN_KERNELS.md): within the documented 5e-2 of the fp32 fixture
        # (ONNX Runtime's outputs), and not identical to it.
        path, ins, want = fixture("lstm_2layer_bidir")
        s = graphi.Session(path, rnn_weights="int8")
        out = s.run({t.name: a for t, a in zip(s.inputs, ins)})
        errs = [float(np.max(np.abs(np.asarray(g, np.float64) - w)))
                for g, w in zip(out.values(), want)]
        self.assertLess(max(errs), 5e-2)
        self.assertGreater(max(errs), 1e-6)

    def test_int64_input(self):
        s = self.check("embed_lstm")  # token ids: int64 input, read in place
        self.assertEqual(s.inputs[0].dtype, "int64")

    def test_outputs_outlive_session(self):
        path, ins, want = fixture("mlp")
        s = graphi.Session(path)
        y = s.run([ins[0]])["probs"]
        del s
        import gc
        gc.collect()
        self.assertLess(max_rel_error(y, want[0]), 1e-4)

    def test_symbolic_dim(self):
        self.check("gru_dynamic_batch", dims={"batch": 4})

    def test_inputs_unchanged_and_outputs_owned(self):
        path, ins, want = fixture("mlp")
        x = ins[0].copy()
        before = x.copy()
        s = graphi.Session(path)
        y1 = s.run({"x": x})["probs"]
        np.testing.assert_array_equal(x, before)
        y1_copy = y1.copy()
        y2 = s.run({"x": x})["probs"]
        # Each run returns fresh arrays: the first result is not overwritten by the second.
        np.testing.assert_array_equal(y1, y1_copy)
        self.assertFalse(np.shares_memory(y1, y2))
        self.assertFalse(np.shares_memory(y1, x))
        # Read-only input arrays are accepted (graphi only reads them).
        x.flags.writeable = False
        np.testing.assert_array_equal(s.run({"x": x})["probs"], y1)

    def test_non_contiguous_input_is_copied(self):
        path, ins, want = fixture("mlp")
        s = graphi.Session(path)
        x = ins[0]
        # A transposed view of x.T: same values, Fortran order.
        xt = np.asfortranarray(x)
        self.assertFalse(xt.flags.c_contiguous)
        y = s.run({"x": xt})["probs"]
        self.assertLess(max_rel_error(y, want[0]), 1e-4)
        # A strided slice.
        big = np.zeros((8, 16), np.float32)
        big[::2] = x
        y = s.run({"x": big[::2]})["probs"]
        self.assertLess(max_rel_error(y, want[0]), 1e-4)
        np.testing.assert_array_equal(big[1::2], 0)

    def test_threads(self):
        path, ins, want = fixture("mlp")
        s = graphi.Session(path)
        errors = []

        def work():
            try:
                for _ in range(20):
                    y = s.run({"x": ins[0]})["probs"]
                    if max_rel_error(y, want[0]) >= 1e-4:
                        errors.append("wrong result")
            except Exception as e:  # noqa: BLE001 (reported below)
                errors.append(repr(e))
        ts = [threading.Thread(target=work) for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertEqual(errors, [])

    def test_del_while_running(self):
        # Threads inside run() hold a reference: `del s` cancels nothing, every run completes
        # and the Session is freed after the last one.
        import gc
        import weakref
        path, ins, want = fixture("mlp")
        s = graphi.Session(path, executors=2, scheduler="cpf", pin=False)
        alive = weakref.ref(s)
        errors, started = [], threading.Barrier(5)

        def work(run):
            started.wait()
            try:
                for _ in range(30):
                    if max_rel_error(run({"x": ins[0]})["probs"], want[0]) >= 1e-4:
                        errors.append("wrong result")
            except Exception as e:  # noqa: BLE001 (reported below)
                errors.append(repr(e))
        ts = [threading.Thread(target=work, args=(s.run,)) for _ in range(4)]
        for t in ts:
            t.start()
        started.wait()
        del s
        for t in ts:
            t.join()
        self.assertEqual(errors, [])
        del ts
        gc.collect()
        self.assertIsNone(alive())


class ErrorTest(unittest.TestCase):
    def setUp(self):
        self.path, self.ins, _ = fixture("mlp")
        self.s = graphi.Session(self.path)

    def assert_error(self, fn, *needles, code=None):
        with self.assertRaises(graphi.Error) as cm:
            fn()
        msg = str(cm.exception)
        for n in needles:
            self.assertIn(n, msg)
        if code is not None:
            self.assertEqual(cm.exception.code, code)
        self.assertIsInstance(cm.exception, RuntimeError)
        return msg

    def test_missing_file(self):
        missing = os.path.join(DATA, "no_such_model.onnx")
        self.assert_error(lambda: graphi.Session(missing), "no_such_model.onnx", code="io_error")

    def test_bad_file(self):
        # A .npy file is no model: a clear error naming it, no crash.
        bad = os.path.join(DATA, "mlp.in0.npy")
        self.assert_error(lambda: graphi.Session(bad), "mlp.in0.npy")

    def test_bad_options(self):
        self.assert_error(lambda: graphi.Session(self.path, scheduler="nope"), "nope")
        self.assert_error(lambda: graphi.Session(self.path, executors=0), "executors")

    def test_max_memory(self):
        # mlp.onnx is a few KiB: a 1 KiB budget refuses it before anything large is allocated,
        # naming the file and the limit; a generous one (int or size string) loads it.
        msg = self.assert_error(lambda: graphi.Session(self.path, max_memory=1024), "mlp.onnx",
                                "memory limit of 1.0 KiB", code="out_of_memory")
        self.assertIn("bytes", msg)
        self.assert_error(lambda: graphi.Session(self.path, max_memory="lots"), "max_memory",
                          code="invalid_argument")
        _, _, outs = fixture("mlp")
        for limit in (64 << 20, "64M", "0.5GiB"):
            s = graphi.Session(self.path, max_memory=limit)
            got = s.run({"x": self.ins[0]})
            self.assertLess(max_rel_error(got["probs"], outs[0]), 1e-4)

    def test_wrong_input_name(self):
        self.assert_error(lambda: self.s.run({"y": self.ins[0]}), "'y'",
                          code="invalid_argument")

    def test_missing_input(self):
        self.assert_error(lambda: self.s.run({}), "x", code="invalid_argument")

    def test_wrong_shape(self):
        x = np.zeros((3, 16), np.float32)
        self.assert_error(lambda: self.s.run({"x": x}), "'x'", code="invalid_argument")

    def test_wrong_count_in_list(self):
        self.assert_error(lambda: self.s.run([self.ins[0], self.ins[0]]), "2 inputs")

    def test_wrong_dtype(self):
        x64 = self.ins[0].astype(np.float64)
        before = x64.copy()
        msg = self.assert_error(lambda: self.s.run({"x": x64}), "mlp.onnx", "'x'", "float64",
                                "float32",
                                code="invalid_argument")
        self.assertIn("astype", msg)
        np.testing.assert_array_equal(x64, before)
        # A supported dtype the model does not expect: the engine's check names the input.
        xi = self.ins[0].astype(np.int32)
        self.assert_error(lambda: self.s.run({"x": xi}), "'x'", code="invalid_argument")
        # Non-native byte order is refused too (never reinterpreted).
        xb = self.ins[0].astype(">f4")
        self.assert_error(lambda: self.s.run({"x": xb}), "'x'", code="invalid_argument")

    def test_session_usable_after_error(self):
        with self.assertRaises(graphi.Error):
            self.s.run({"x": np.zeros((1, 2), np.float32)})
        _, _, want = fixture("mlp")
        y = self.s.run({"x": self.ins[0]})["probs"]
        self.assertLess(max_rel_error(y, want[0]), 1e-4)

    def test_type_errors(self):
        with self.assertRaises(TypeError):
            self.s.run(self.ins[0])  # a bare array is neither a dict nor a list



class TraceTest(unittest.TestCase):
    """Session.trace writes Chrome Trace Event JSON; scripts/plot_timeline.py draws it."""

    def setUp(self):
        import tempfile
        self.dir = tempfile.mkdtemp(prefix="graphi_trace_")

    def tearDown(self):
        import shutil
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_trace_writes_valid_json(self):
        import json
        path, ins, want = fixture("lstm_2layer_bidir")
        for opts in ({"executors": 1, "threads": 1, "scheduler": "sequential"},
                     {"executors": 2, "threads": 1, "scheduler": "cpf", "pin": False}):
            s = graphi.Session(path, optimize=False, **opts)
            self.assertFalse(s.tracing)
            with self.assertRaises(graphi.Error) as e:
                s.trace(os.path.join(self.dir, "none.json"))  # nothing traced yet
            self.assertEqual(e.exception.code, "invalid_argument")
            out_path = os.path.join(self.dir, "t%d.json" % opts["executors"])
            feed = {t.name: a for t, a in zip(s.inputs, ins)}
            n = s.trace(out_path, feed)
            self.assertFalse(s.tracing)  # switched on for that run only
            with open(out_path) as f:
                doc = json.load(f)
            ops = [ev for ev in doc["traceEvents"] if ev["ph"] == "X" and ev["cat"] == "op"]
            self.assertEqual(len(ops), n)
            self.assertEqual(len({ev["args"]["node"] for ev in ops}), n)  # each node once
            for ev in ops:
                for k in ("pid", "tid", "ts", "dur", "name"):
                    self.assertIn(k, ev)
                for k in ("op", "kernel", "inputs", "outputs", "level", "bytes_in", "bytes_out"):
                    self.assertIn(k, ev["args"])
            tracks = [ev["args"]["name"] for ev in doc["traceEvents"]
                      if ev["ph"] == "M" and ev["name"] == "thread_name"]
            self.assertEqual(sum(t.startswith("executor ") for t in tracks), opts["executors"])
            # tracing as a property: every run is recorded; results unchanged.
            s.tracing = True
            got = s.run(feed)
            for (name, g), w in zip(got.items(), want):
                self.assertLess(max_rel_error(g, w), 1e-4, name)
            self.assertEqual(s.trace(out_path), n)
        with self.assertRaises(graphi.Error) as e:
            s.trace(os.path.join(self.dir, "no", "such", "dir.json"))
        self.assertIn("dir.json", str(e.exception))

    def test_plot_timeline_draws_png_and_table(self):
        import json
        path, ins, _ = fixture("lstm_2layer_bidir")
        s = graphi.Session(path, optimize=False, executors=2, threads=1, scheduler="cpf", pin=False)
        trace = os.path.join(self.dir, "plot.json")
        s.trace(trace, {t.name: a for t, a in zip(s.inputs, ins)})
        png = os.path.join(self.dir, "timeline.png")
        script = os.path.join(HERE, "..", "..", "scripts", "plot_timeline.py")
        r = subprocess.run(["/usr/bin/python3", script, trace, "-o", png, "--table"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(png, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        # The table's totals per op type equal the sums over the trace's events.
        with open(trace) as f:
            ops = [ev for ev in json.load(f)["traceEvents"] if ev["ph"] == "X" and ev["cat"] == "op"]
        totals = {}
        for ev in ops:
            totals[ev["name"]] = totals.get(ev["name"], 0.0) + ev["dur"]
        rows = {}
        for line in r.stdout.splitlines():
            parts = line.split()
            if len(parts) == 7 and parts[0] in totals:
                rows[parts[0]] = (int(parts[1]), float(parts[2]))
        self.assertEqual(set(rows), set(totals))
        for op, total in totals.items():
            self.assertAlmostEqual(rows[op][1], total, delta=0.051)
            self.assertEqual(rows[op][0], sum(ev["name"] == op for ev in ops))
        # A file that is not a trace is a clear error naming it.
        bad = os.path.join(self.dir, "bad.json")
        with open(bad, "w") as f:
            f.write("{\"traceEvents\": 3}")
        r = subprocess.run(["/usr/bin/python3", script, bad, "-o", png], capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("bad.json", r.stderr)


class ImportTest(unittest.TestCase):
    def test_imports_without_torch(self):
        # torch made unimportable: graphi still imports and runs; only compile() needs it.
        code = ("import sys; sys.modules['torch'] = None\n"
                "import numpy as np, graphi\n"
                "s = graphi.Session(sys.argv[1])\n"
                "assert s.run([np.zeros((4, 16), np.float32)])['probs'].shape == (4, 10)\n"
                "try:\n"
                "    graphi.torch.compile(None, ())\n"
                "except ImportError:\n"
                "    print('ok')\n")
        r = subprocess.run([sys.executable, "-c", code, os.path.join(DATA, "mlp.onnx")],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "ok")


class DynamicShapesTest(unittest.TestCase):
    """A model with dims neither `dims` nor `input_shapes` fixes (dynamic axes) is compiled per
    input shape on run(), as onnxruntime runs any batch. References: PyTorch's committed outputs
    of the fixtures (a batch's rows are independent, so each slice of the batch must give the
    same rows) and numpy."""

    def test_batch_bound_from_the_arrays(self):
        path, ins, outs = fixture("gru_dynamic_batch")  # x [5, batch, 8]
        s = graphi.Session(path)
        self.assertEqual(s.inputs[0].shape, (5, "batch", 8))
        self.assertEqual(s.get_outputs()[1].shape, [1, "batch", 16])
        self.assertEqual(s.config, "")  # nothing compiled before the first run
        for rows in (slice(0, 4), slice(1, 2), slice(2, 4), slice(0, 4)):
            y = s.run({"x": ins[0][:, rows]})
            self.assertLess(max_rel_error(y["y"], outs[0][:, rows]), 1e-4)
            self.assertLess(max_rel_error(y["h"], outs[1][:, rows]), 1e-4)
        self.assertEqual(s.compiled_shapes,
                         [{"x": (5, 1, 8)}, {"x": (5, 2, 8)}, {"x": (5, 4, 8)}])
        self.assertNotEqual(s.config, "")
        # onnxruntime's call form and positional inputs go the same way.
        path, ins, outs = fixture("cnn_dynamic_batch")  # image [n, 1, 8, 8]
        s = graphi.Session(path)
        self.assertLess(max_rel_error(s.run(None, {"image": ins[0][1:]})[0], outs[0][1:]), 1e-4)
        self.assertLess(max_rel_error(s(ins[0][:1]), outs[0][:1]), 1e-4)

    def test_bounded_cache_and_errors(self):
        path, ins, outs = fixture("cnn_dynamic_batch")
        s = graphi.Session(path, max_shapes=2)
        with self.assertRaisesRegex(graphi.Error, "nothing compiled yet.*image"):
            s.trace(os.path.join(DATA, "never_written.json"))
        for n in (1, 2, 3, 1):
            s.run({"image": ins[0][:n]})
        self.assertEqual(s.compiled_shapes, [{"image": (3, 1, 8, 8)}, {"image": (1, 1, 8, 8)}])
        # A fixed dim or the rank differing from the file's names the input and both shapes.
        with self.assertRaisesRegex(graphi.Error, r"input 'image': shape \[2, 1, 8, 9\] does not "
                                    r"match the model's \['n', 1, 8, 8\]"):
            s.run({"image": np.zeros((2, 1, 8, 9), np.float32)})
        with self.assertRaisesRegex(graphi.Error, "input 'image': shape"):
            s.run({"image": np.zeros((8, 8), np.float32)})
        with self.assertRaisesRegex(graphi.Error, "dtype float64"):
            s.run({"image": np.zeros((2, 1, 8, 8))})
        with self.assertRaisesRegex(graphi.Error, "max_shapes must be at least 1"):
            graphi.Session(path, max_shapes=0)
        # Given dims compile at once, as before.
        s = graphi.Session(path, dims={"n": 2})
        self.assertEqual(s.inputs[0].shape, (2, 1, 8, 8))
        self.assertEqual(s.compiled_shapes, [{"image": (2, 1, 8, 8)}])

    def test_unnamed_dim(self):
        try:
            import onnx
            from onnx import helper, TensorProto
        except ImportError:
            self.skipTest("the onnx package is not installed")
        import tempfile
        g = helper.make_graph(
            [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("ReduceSum", ["r"], ["y"],
                                                                      keepdims=0)], "unnamed",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 3])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])])
        path = os.path.join(tempfile.mkdtemp(), "unnamed.onnx")
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
        s = graphi.Session(path)
        self.assertEqual(s.inputs[0].shape, (None, 3))
        for n in (1, 6):
            x = np.random.default_rng(n).standard_normal((n, 3)).astype(np.float32)
            self.assertAlmostEqual(float(s.run({"x": x})["y"]), float(np.maximum(x, 0).sum()),
                                   places=5)


class ExportPatternsTest(unittest.TestCase):
    """Patterns PyTorch's exporters write for slice assignment and torch.roll, with empty
    slices where a window covers a whole dim (Swin-3D's shifted-window masks): the constant
    ScatterND chain folds at import, an empty run-time Slice is dropped from the Concat it
    feeds, and anything else reading one is refused by name. Against numpy."""

    def setUp(self):
        try:
            import onnx  # noqa: F401
        except ImportError:
            self.skipTest("the onnx package is not installed")
        import tempfile
        self.dir = tempfile.mkdtemp()

    def save(self, nodes, inits, name, x_shape):
        import onnx
        from onnx import helper, TensorProto
        g = helper.make_graph(
            nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
        path = os.path.join(self.dir, name + ".onnx")
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
        return path

    @staticmethod
    def ints(name, v):
        from onnx import numpy_helper
        return numpy_helper.from_array(np.array(v, np.int64), name)

    def test_slice_assignment_of_a_constant_mask_folds(self):
        from onnx import helper, numpy_helper
        # mask = zeros(4, 6); mask[0:0] = 1 (an empty slice: no rows); mask[1:3, 2:] = 2;
        # y = x + mask.
        mask0 = numpy_helper.from_array(np.zeros((4, 6), np.float32), "mask0")
        idx_empty = numpy_helper.from_array(np.zeros((0, 1), np.int64), "idx_empty")
        upd_empty = numpy_helper.from_array(np.zeros((0, 6), np.float32), "upd_empty")
        idx = np.array([[r, c] for r in (1, 2) for c in range(2, 6)], np.int64).reshape(2, 4, 2)
        upd = numpy_helper.from_array(np.full((2, 4), 2.0, np.float32), "upd")
        nodes = [
            helper.make_node("ScatterND", ["mask0", "idx_empty", "upd_empty"], ["m1"]),
            helper.make_node("ScatterND", ["m1", "idx", "upd"], ["m2"]),
            helper.make_node("Add", ["x", "m2"], ["y"]),
        ]
        path = self.save(nodes, [mask0, idx_empty, upd_empty,
                                 numpy_helper.from_array(idx, "idx"), upd], "mask", [4, 6])
        x = np.arange(24, dtype=np.float32).reshape(4, 6)
        want = x.copy()
        want[1:3, 2:] += 2.0
        got = graphi.Session(path).run([x])["y"]
        np.testing.assert_array_equal(got, want)

    def test_roll_by_zero_drops_the_empty_slice(self):
        from onnx import helper
        # torch.roll(x, 0, dim=1) as the TorchScript exporter writes it:
        # Concat(x[:, -0:], x[:, :-0]) = Concat(x[:, 0:0], x[:, 0:]) along dim 1, then the same
        # with the empty piece in the middle of three.
        big = 2 ** 62
        nodes = [
            helper.make_node("Slice", ["x", "s0", "e0", "ax"], ["a"]),
            helper.make_node("Slice", ["x", "s0", "eb", "ax"], ["b"]),
            helper.make_node("Concat", ["a", "b"], ["r"], axis=1),
            helper.make_node("Concat", ["r", "a", "b"], ["y"], axis=1),
        ]
        inits = [self.ints("s0", [0]), self.ints("e0", [0]), self.ints("eb", [big]),
                 self.ints("ax", [1])]
        path = self.save(nodes, inits, "roll0", [2, 3, 4])
        x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
        got = graphi.Session(path).run([x])["y"]
        np.testing.assert_array_equal(got, np.concatenate([x, x], axis=1))

    def test_split_with_empty_pieces(self):
        from onnx import helper
        # tf2onnx's Keras GRU(reset_after=False) cell: Split(x, [H, H, 0]) on the last axis, the
        # empty third piece unused; Split(x, [0, 4, 0]) is x itself. Reading an empty piece is
        # refused by name.
        nodes = [helper.make_node("Split", ["x", "sz"], ["a", "b", "c"], axis=-1),
                 helper.make_node("Add", ["a", "b"], ["ab"]),
                 helper.make_node("Split", ["x", "s4"], ["d", "e", "f"], axis=1),
                 helper.make_node("Concat", ["ab", "e"], ["y"], axis=1)]
        path = self.save(nodes, [self.ints("sz", [2, 2, 0]), self.ints("s4", [0, 4, 0])],
                         "split0", [3, 4])
        x = np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32)
        np.testing.assert_array_equal(graphi.Session(path).run([x])["y"],
                                      np.concatenate([x[:, :2] + x[:, 2:], x], axis=1))
        nodes[1] = helper.make_node("Add", ["a", "c"], ["ab"])
        path = self.save(nodes, [self.ints("sz", [2, 2, 0]), self.ints("s4", [0, 4, 0])],
                         "split0_read", [3, 4])
        with self.assertRaisesRegex(graphi.Error, r"input 'c' is empty \(a zero-length dim"):
            graphi.Session(path)

    def test_batch_norm_with_run_time_statistics(self):
        from onnx import helper, numpy_helper
        # tf2onnx's Keras LayerNormalization: the mean and variance come from the graph, scale
        # and B are constants, one of them also from the graph here.
        rng = np.random.default_rng(3)
        scale = rng.standard_normal(5).astype(np.float32)
        nodes = [helper.make_node("ReduceMean", ["x"], ["m"], axes=[0, 2], keepdims=0),
                 helper.make_node("ReduceMean", ["x"], ["mk"], axes=[0, 2], keepdims=1),
                 helper.make_node("Sub", ["x", "mk"], ["d"]),
                 helper.make_node("Mul", ["d", "d"], ["d2"]),
                 helper.make_node("ReduceMean", ["d2"], ["v"], axes=[0, 2], keepdims=0),
                 helper.make_node("Abs", ["m"], ["b"]),
                 helper.make_node("BatchNormalization", ["x", "scale", "b", "m", "v"], ["y"],
                                  epsilon=1e-3)]
        path = self.save(nodes, [numpy_helper.from_array(scale, "scale")], "bn_stats", [4, 5, 3])
        x = rng.standard_normal((4, 5, 3)).astype(np.float32)
        m = x.mean(axis=(0, 2))
        v = ((x - m[None, :, None]) ** 2).mean(axis=(0, 2))
        want = ((x - m[None, :, None]) / np.sqrt(v[None, :, None] + 1e-3) * scale[None, :, None]
                + np.abs(m)[None, :, None])
        np.testing.assert_allclose(graphi.Session(path).run([x])["y"], want, rtol=1e-5, atol=1e-5)

    def test_eye_like_and_constant_one_hot_fold(self):
        from onnx import helper, TensorProto
        # XLNet's EyeLike (of a run-time value: only its shape counts) and Canine's OneHot of
        # constants feeding Tile's repeats (which must be constant) are evaluated at import.
        nodes = [helper.make_node("EyeLike", ["x"], ["e"], k=1),
                 helper.make_node("Add", ["x", "e"], ["xe"]),
                 helper.make_node("OneHot", ["idx", "depth", "vals"], ["oh"], axis=-1),
                 helper.make_node("ReduceSum", ["oh", "ax0"], ["reps"], keepdims=0),
                 helper.make_node("Cast", ["reps"], ["reps64"], to=TensorProto.INT64),
                 helper.make_node("Tile", ["xe", "reps64"], ["y"])]
        inits = [self.ints("idx", [1, -1]), self.ints("depth", [2]),
                 self.ints("vals", [1, 2]), self.ints("ax0", [0])]
        path = self.save(nodes, inits, "eye_onehot", [3, 4])
        x = np.random.default_rng(4).standard_normal((3, 4)).astype(np.float32)
        # one_hot([1, -1], 2) with off 1, on 2 = [[1, 2], [1, 2]]: repeats [2, 4].
        want = np.tile(x + np.eye(3, 4, k=1, dtype=np.float32), (2, 4))
        np.testing.assert_array_equal(graphi.Session(path).run([x])["y"], want)

    def test_constant_scatter_elements_fold(self):
        from onnx import helper, numpy_helper
        # PyTorch 2's select_scatter on constants (BEiT's relative-position index): folded at
        # import, with negative indices and reduction 'add'.
        data = np.arange(12, dtype=np.float32).reshape(3, 4)
        idx = np.array([[1, -1], [0, 2], [3, 3]], np.int64)
        upd = np.array([[10, 20], [30, 40], [50, 60]], np.float32)
        nodes = [helper.make_node("ScatterElements", ["d", "i", "u"], ["s"], axis=1),
                 helper.make_node("ScatterElements", ["d", "i", "u"], ["a"], axis=1,
                                  reduction="add"),
                 helper.make_node("Add", ["x", "s"], ["xs"]),
                 helper.make_node("Add", ["xs", "a"], ["y"])]
        inits = [numpy_helper.from_array(data, "d"), numpy_helper.from_array(idx, "i"),
                 numpy_helper.from_array(upd, "u")]
        path = self.save(nodes, inits, "scatter_elements", [3, 4])
        s_ref, a_ref = data.copy(), data.copy()
        for r in range(3):
            for k in range(2):
                c = idx[r, k] % 4
                s_ref[r, c] = upd[r, k]
                a_ref[r, c] += upd[r, k]
        x = np.random.default_rng(5).standard_normal((3, 4)).astype(np.float32)
        sess = graphi.Session(path, optimize=False)
        np.testing.assert_allclose(sess.run([x])["y"], x + s_ref + a_ref, rtol=1e-6)

    def test_if_on_a_run_time_condition_selects_a_branch(self):
        import onnx
        from onnx import helper, TensorProto, numpy_helper
        # torch.cond(x.sum() > 0, x * 2, x - 1) as ONNX: both branches run, a Where selects.
        two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
        one = numpy_helper.from_array(np.array(1.0, np.float32), "one")
        then_g = helper.make_graph([helper.make_node("Mul", ["x", "two"], ["t"])], "then", [],
                                   [helper.make_tensor_value_info("t", TensorProto.FLOAT, [3, 4])],
                                   [two])
        else_g = helper.make_graph([helper.make_node("Sub", ["x", "one"], ["e"])], "else", [],
                                   [helper.make_tensor_value_info("e", TensorProto.FLOAT, [3, 4])],
                                   [one])
        zero = numpy_helper.from_array(np.array(0.0, np.float32), "zero")
        nodes = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
                 helper.make_node("Greater", ["s", "zero"], ["c"]),
                 helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)]
        path = self.save(nodes, [zero], "cond", [3, 4])
        s = graphi.Session(path)
        x = np.abs(np.random.default_rng(1).standard_normal((3, 4))).astype(np.float32)
        np.testing.assert_array_equal(s.run([x])["y"], x * 2)
        np.testing.assert_array_equal(s.run([-x])["y"], -x - 1)
        # Branches whose outputs differ in shape cannot be selected between: refused by name.
        else_g2 = helper.make_graph(
            [helper.make_node("ReduceSum", ["x"], ["e2"], keepdims=1)], "else2", [],
            [helper.make_tensor_value_info("e2", TensorProto.FLOAT, [1, 1])])
        nodes[2] = helper.make_node("If", ["c"], ["y"], name="branch", then_branch=then_g,
                                    else_branch=else_g2)
        path = self.save(nodes, [zero], "cond_shapes", [3, 4])
        with self.assertRaises(Exception) as cm:
            graphi.Session(path)
        self.assertIn("'branch' (If)", str(cm.exception))
        self.assertIn("in the else_branch", str(cm.exception))

    def test_an_empty_slice_read_by_another_op_is_refused(self):
        from onnx import helper
        nodes = [
            helper.make_node("Slice", ["x", "s0", "e0", "ax"], ["a"], name="empty"),
            helper.make_node("Relu", ["a"], ["y"], name="act"),
        ]
        inits = [self.ints("s0", [2]), self.ints("e0", [2]), self.ints("ax", [0])]
        path = self.save(nodes, inits, "empty_relu", [4, 3])
        with self.assertRaises(Exception) as cm:
            graphi.Session(path)
        msg = str(cm.exception)
        self.assertIn("'act' (Relu)", msg)
        self.assertIn("an empty Slice or Split piece", msg)


class OmpSpinTest(unittest.TestCase):
    """The OpenMP spin-wait graphi gives libgomp while the extension loads (python/graphi/__init__)."""

    def child(self, code, **env_extra):
        env = {k: v for k, v in os.environ.items()
               if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "GRAPHI_OMP_SPIN")}
        env.update(env_extra)
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=120, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.split()

    def test_set_while_loading_only(self):
        code = "import os, graphi; print(graphi._SPIN_SET, os.environ.get('GOMP_SPINCOUNT'))"
        self.assertEqual(self.child(code), ["True", "None"])
        # The user's choices win and stay in the environment.
        self.assertEqual(self.child(code, GOMP_SPINCOUNT="777"), ["False", "777"])
        self.assertEqual(self.child(code, OMP_WAIT_POLICY="active")[0], "False")
        self.assertEqual(self.child(code, GRAPHI_OMP_SPIN="libgomp"), ["False", "None"])

    def test_idle_team_thread_stops_spinning(self):
        # After a run with a 2-thread team, the process sits idle for 0.3 s: with libgomp's
        # default the team's second thread would keep a core for ~300,000 pauses (7.5 ms on a
        # Zen 4 core, more on Intel); with graphi's 10,000 it sleeps after ~0.25-0.5 ms. (Measured
        # on the Zen 4 VM: 0.36-0.39 ms of process CPU time against 8.1-10.8 ms with
        # GRAPHI_OMP_SPIN=libgomp.) OpenBLAS (numpy's) gets one thread: its own idle workers spin
        # too and would be counted.
        import tempfile
        try:
            import onnx
            from onnx import helper, TensorProto
        except ImportError:
            self.skipTest("the onnx package is not installed")
        d = tempfile.mkdtemp()
        path = os.path.join(d, "matmul.onnx")
        g = helper.make_graph(
            [helper.make_node("MatMul", ["a", "b"], ["c"])], "mm",
            [helper.make_tensor_value_info("a", TensorProto.FLOAT, [256, 256]),
             helper.make_tensor_value_info("b", TensorProto.FLOAT, [256, 256])],
            [helper.make_tensor_value_info("c", TensorProto.FLOAT, [256, 256])])
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
        code = ("import sys, time, numpy as np, graphi\n"
                "if 'libgomp' not in open('/proc/self/maps').read():\n"
                "    print('no-libgomp'); sys.exit(0)\n"
                "s = graphi.Session(sys.argv[1], executors=1, threads=2)\n"
                "a = np.ones((256, 256), np.float32)\n"
                "for _ in range(5): s.run([a, a])\n"
                "t = time.process_time(); time.sleep(0.3)\n"
                "print('%.3f' % ((time.process_time() - t) * 1e3))\n")
        env = {k: v for k, v in os.environ.items()
               if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "GRAPHI_OMP_SPIN")}
        env["OPENBLAS_NUM_THREADS"] = "1"
        r = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True,
                           timeout=120, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        if r.stdout.strip() == "no-libgomp":
            self.skipTest("the extension does not use libgomp")
        self.assertLess(float(r.stdout), 4.0, "CPU ms used while idle for 300 ms")


@unittest.skipIf(torch is None, "PyTorch is not installed")
class TorchTest(unittest.TestCase):
    def compare(self, module, example, **opts):
        module.eval()
        f = graphi.torch.compile(module, example, **opts)
        with torch.no_grad():
            want = module(*example)
        flat_want = graphi.torch._flatten(want)
        got = f(*example)
        flat_got = graphi.torch._flatten(got)
        self.assertEqual(len(flat_got), len(flat_want))
        for g, w in zip(flat_got, flat_want):
            self.assertIsInstance(g, torch.Tensor)
            self.assertEqual(tuple(g.shape), tuple(w.shape))
            self.assertLess(max_rel_error(g.numpy(), w.numpy()), 1e-4)
        return f

    def test_mlp(self):
        torch.manual_seed(10)
        mlp = torch.nn.Sequential(torch.nn.Linear(12, 24), torch.nn.ReLU(),
                                  torch.nn.Linear(24, 5), torch.nn.Sigmoid())
        f = self.compare(mlp, (torch.randn(3, 12),))
        # A second call with new values (same shape) is still right.
        x = torch.randn(3, 12)
        with torch.no_grad():
            self.assertLess(max_rel_error(f(x).numpy(), mlp(x).numpy()), 1e-4)

    def test_lstm(self):
        torch.manual_seed(11)
        lstm = torch.nn.LSTM(6, 10, num_layers=2)
        f = self.compare(lstm, (torch.randn(4, 3, 6),), executors=2, scheduler="cpf", pin=False)
        self.assertEqual(len(f(torch.randn(4, 3, 6))), 3)  # y, h, c

    def test_unsupported_shape_is_an_error(self):
        torch.manual_seed(12)
        mlp = torch.nn.Sequential(torch.nn.Linear(4, 2))
        f = graphi.torch.compile(mlp, torch.randn(2, 4))
        with self.assertRaises(graphi.Error):
            f(torch.randn(3, 4))  # shapes are fixed at compile time


@unittest.skipIf(torch is None, "PyTorch is not installed")
class BatchSplitTest(unittest.TestCase):
    """A batch in one-sample slices (docs/CNN.md, "Batches in slices"): the outputs against
    PyTorch's with the split on, off and chosen, on a CNN exported at batch 4 whose traced
    view(4, ...) constants carry the batch; a model that mixes its samples runs whole."""

    def setUp(self):
        import tempfile
        self.dir = tempfile.mkdtemp(prefix="graphi_batch_split_")
        self.env = dict(os.environ)
        os.environ["GRAPHI_CACHE_DIR"] = self.dir  # verdicts of this test only

    def tearDown(self):
        import shutil
        os.environ.clear()
        os.environ.update(self.env)
        shutil.rmtree(self.dir, ignore_errors=True)

    def export(self, module, x, name):
        path = os.path.join(self.dir, name + ".onnx")
        module.eval()
        graphi.torch._export_onnx(module, (x,), path, ["x"], ["y"])
        with torch.no_grad():
            return path, module(x).numpy()

    def test_shuffle_cnn_in_slices_matches_torch(self):
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
                self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1, groups=2)
                self.fc = torch.nn.Linear(8 * 4 * 4, 5)

            def forward(self, x):
                b, _, h, w = x.shape
                y = torch.relu(self.conv(x))
                # ShuffleNet's channel shuffle: traced with b = 4 in the constants.
                y = y.view(b, 2, 4, h, w).transpose(1, 2).reshape(b, 8, h, w)
                y = torch.nn.functional.max_pool2d(torch.relu(self.conv2(y)), 2)
                return torch.softmax(self.fc(y.view(b, -1)), dim=1)

        torch.manual_seed(21)
        x = torch.randn(4, 3, 8, 8)
        path, want = self.export(Net(), x, "shuffle")
        for mode in ("on", "off", "auto"):
            s = graphi.Session(path, batch_split=mode)
            got = s.run({"x": x.numpy()})["y"]
            self.assertEqual(got.shape, (4, 5))
            self.assertLess(np.abs(got - want).max(), 1e-5, mode)
            if mode == "on":
                self.assertIn("batch 4 in slices of 1", s.config)
            if mode == "off":
                self.assertNotIn("slices", s.config)
        # The verdict is cached for the next Session of this model and split, unless other
        # processes held the CPUs while it was measured (then it is measured again next time:
        # a parallel ctest's other lane can do that; a few more tries).
        cache = os.path.join(self.dir, "batch_split.json")
        for _ in range(5):
            if os.path.exists(cache):
                break
            time.sleep(0.2)
            graphi.Session(path, batch_split="auto")
        if not os.path.exists(cache):
            self.skipTest("every measurement was disturbed by other processes")
        with open(cache) as f:
            self.assertIn('"slices"', f.read())

    def test_a_model_that_mixes_samples_runs_whole(self):
        class Mix(torch.nn.Module):
            def forward(self, x):
                return torch.softmax(x * 2.0, dim=0)  # across the batch

        x = torch.randn(4, 6)
        path, want = self.export(Mix(), x, "mix")
        s = graphi.Session(path, batch_split="on")
        self.assertNotIn("slices", s.config)
        self.assertLess(np.abs(s.run({"x": x.numpy()})["y"] - want).max(), 1e-6)

    def test_unknown_policy_is_an_error(self):
        x = torch.randn(2, 3)
        path, _ = self.export(torch.nn.ReLU(), x, "relu")
        with self.assertRaises(graphi.Error) as e:
            graphi.Session(path, batch_split="sometimes")
        self.assertIn("sometimes", str(e.exception))


class PackageTest(unittest.TestCase):
    """What a new user sees first: the version and the package's namespace."""

    def test_version_is_the_cmake_project_version(self):
        cmake = os.path.join(HERE, "..", "..", "CMakeLists.txt")
        with open(cmake) as f:
            m = re.search(r"project\(graphi VERSION ([0-9.]+)", f.read())
        self.assertIsNotNone(m)
        self.assertEqual(graphi.__version__, m.group(1))

    def test_namespace_shows_no_implementation_modules(self):
        public = [n for n in dir(graphi) if not n.startswith("_")]
        for private in ("os", "collections", "np", "numpy"):
            self.assertNotIn(private, public)
        for name in ("Session", "Error", "TensorInfo", "torch"):
            self.assertIn(name, public)


@unittest.skipIf(torch is None, "PyTorch is not installed")
class TorchMessagesTest(unittest.TestCase):
    """graphi.torch.compile speaks torch: argument names of forward(), the module's name, never
    the deleted temporary ONNX file, no numpy advice, no exporter warnings."""

    def setUp(self):
        torch.manual_seed(13)
        self.lstm = torch.nn.LSTM(8, 16, num_layers=2).eval()  # forward(input, hx=None)

    def test_exporter_warnings_are_not_shown(self):
        import warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            graphi.torch.compile(self.lstm, (torch.randn(5, 4, 8),))
        self.assertEqual([str(w.message)[:80] for w in caught], [])

    def test_wrong_dtype_names_the_argument_in_torch_terms(self):
        f = graphi.torch.compile(self.lstm, (torch.randn(5, 4, 8),))
        self.assertEqual(f.input_names, ["input"])
        with self.assertRaises(graphi.Error) as cm:
            f(torch.randn(5, 4, 8, dtype=torch.float64))
        msg = str(cm.exception)
        self.assertIn("graphi.torch.compile(LSTM)", msg)
        self.assertIn("argument 'input'", msg)
        self.assertIn("torch.float64", msg)
        self.assertIn(".to(torch.float32)", msg)
        for bad in ("input_0", ".astype", ".onnx", "graphi_torch_"):
            self.assertNotIn(bad, msg)

    def test_wrong_shape_names_the_argument(self):
        f = graphi.torch.compile(self.lstm, (torch.randn(5, 4, 8),))
        with self.assertRaises(graphi.Error) as cm:
            f(torch.randn(3, 4, 8))
        msg = str(cm.exception)
        self.assertIn("argument 'input' has shape (3, 4, 8)", msg)
        self.assertIn("(5, 4, 8)", msg)
        self.assertNotIn(".onnx", msg)

    def test_tuple_arguments_are_named_after_forward(self):
        x, h0, c0 = torch.randn(5, 4, 8), torch.zeros(2, 4, 16), torch.zeros(2, 4, 16)
        f = graphi.torch.compile(self.lstm, (x, (h0, c0)))
        self.assertEqual(f.input_names, ["input", "hx_0", "hx_1"])
        with torch.no_grad():
            want = self.lstm(x, (h0, c0))[0]
        self.assertLess(max_rel_error(f(x, (h0, c0))[0].numpy(), want.numpy()), 1e-4)

    def test_unsupported_op_names_the_module_not_the_temporary_file(self):
        class Nonzero(torch.nn.Module):
            def forward(self, x):
                return torch.nonzero(x)
        with self.assertRaises(graphi.Error) as cm:
            graphi.torch.compile(Nonzero(), (torch.randn(3),))
        msg = str(cm.exception)
        self.assertIn("graphi.torch.compile(Nonzero)", msg)
        self.assertIn("NonZero", msg)
        self.assertNotIn("graphi_torch_", msg)
        self.assertNotIn("model.onnx", msg)


def check_manifest_models(test, folder):
    """Runs every model a fixture MANIFEST lists (NAME [dim=value ...]; blank and '#' lines
    skipped) through graphi.Session on its committed inputs and compares each output with the
    committed reference: integers exactly, floats within 1e-4 of the output's scale + 1e-5.
    Returns how many models ran."""
    count = 0
    with open(os.path.join(folder, "MANIFEST")) as f:
        lines = f.readlines()
    for line in lines:
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        name = parts[0]
        dims = {k: int(v) for k, v in (p.split("=") for p in parts[1:])}
        with test.subTest(model=name):
            s = graphi.Session(os.path.join(folder, name + ".onnx"), dims=dims or None)
            ins = [np.load(os.path.join(folder, "%s.in%d.npy" % (name, i)))
                   for i in range(len(s.inputs))]
            out = s.run(ins)
            for i, info in enumerate(s.outputs):
                want = np.load(os.path.join(folder, "%s.out%d.npy" % (name, i)))
                got = out[info.name]
                test.assertEqual(got.shape, want.shape)
                if want.dtype.kind in "iu":
                    np.testing.assert_array_equal(got, want)
                else:
                    scale = float(np.max(np.abs(want))) if want.size else 0.0
                    err = float(np.max(np.abs(got.astype(np.float64) - want)))
                    test.assertLessEqual(err, 1e-5 + 1e-4 * scale, info.name)
        count += 1
    return count


ZOO = os.path.join(HERE, "..", "..", "tests", "data", "onnx_zoo")


class ZooTest(unittest.TestCase):
    """The ONNX model zoo (tests/data/onnx_zoo/make_zoo.py): every model through
    graphi.Session with its MANIFEST dims, against PyTorch's committed outputs (1e-4 of the
    output's scale + 1e-5; integer outputs exactly); two zoo modules through graphi.torch."""

    def test_every_zoo_model(self):
        count = check_manifest_models(self, ZOO)
        self.assertGreaterEqual(count, 50)

    @unittest.skipIf(torch is None, "PyTorch is not installed")
    def test_zoo_modules_through_graphi_torch(self):
        sys.path.insert(0, ZOO)
        dont_write = sys.dont_write_bytecode
        sys.dont_write_bytecode = True  # no __pycache__ in the source tree
        try:
            import make_zoo
        finally:
            sys.path.pop(0)
            sys.dont_write_bytecode = dont_write
        for name in ("encoder_layer_masked_op13", "gpt_block_op14", "text_cnn_op13"):
            make, inputs, _, _ = make_zoo.ZOO[name]
            with self.subTest(model=name):
                torch.manual_seed(5)
                module = make().eval()
                xs = inputs()
                f = graphi.torch.compile(module, tuple(xs))
                with torch.no_grad():
                    want = module(*xs)
                got = f(*xs)
                self.assertLess(max_rel_error(got.numpy(), want.numpy()), 1e-4)


RNN_VARIANTS = os.path.join(HERE, "..", "..", "tests", "data", "onnx_rnn_variants")


class RnnVariantsTest(unittest.TestCase):
    """Recurrent models users export or build (tests/data/onnx_rnn_variants/make_variants.py)
    through graphi.Session, against PyTorch's outputs or a numpy ONNX-spec implementation
    (1e-4 of the output's scale + 1e-5); the known gaps raise graphi.Error naming what fails."""

    def test_every_variant(self):
        count = check_manifest_models(self, RNN_VARIANTS)
        self.assertGreaterEqual(count, 100)

    def test_gaps_are_refused(self):
        with open(os.path.join(RNN_VARIANTS, "gaps", "EXPECTED")) as f:
            lines = f.readlines()
        for line in lines:
            name, text = line.rstrip("\n").split("\t")
            with self.subTest(model=name):
                with self.assertRaises(graphi.Error) as e:
                    graphi.Session(os.path.join(RNN_VARIANTS, "gaps", name + ".onnx"))
                self.assertIn(text, str(e.exception))

if __name__ == "__main__":
    unittest.main()
