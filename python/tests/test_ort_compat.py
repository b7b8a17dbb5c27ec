"""graphi.Session's onnxruntime-style API (get_inputs, get_outputs, run(output_names,
input_feed)) against onnxruntime.InferenceSession itself on models of the ONNX zoo
(tests/data/onnx_zoo): same metadata, same outputs (1e-4 of the output's scale + 1e-5).

Needs onnxruntime (the venv, scripts/bench_venv.sh); ctest entry python/venv.
"""
import os
import unittest

import numpy as np

import graphi

try:
    import onnxruntime as ort
except ImportError:
    ort = None

HERE = os.path.dirname(os.path.abspath(__file__))
ZOO = os.path.join(HERE, "..", "..", "tests", "data", "onnx_zoo")

# Static-shape zoo models: float and int64 inputs, one and several outputs.
MODELS = ["text_cnn_op13", "gru_classifier_op17", "activations_op17", "encoder_layer_masked_op13",
          "index_ops_op17", "lstm_dropout_op13"]


def inputs_of(name, count):
    return [np.load(os.path.join(ZOO, "%s.in%d.npy" % (name, i))) for i in range(count)]


def close(test, got, want, what):
    test.assertEqual(got.shape, want.shape, what)
    test.assertEqual(got.dtype, want.dtype, what)
    if want.dtype.kind in "iu":
        np.testing.assert_array_equal(got, want, what)
    else:
        scale = float(np.max(np.abs(want))) if want.size else 0.0
        err = float(np.max(np.abs(got.astype(np.float64) - want))) if want.size else 0.0
        test.assertLessEqual(err, 1e-5 + 1e-4 * scale, what)


@unittest.skipIf(ort is None, "onnxruntime is not installed (scripts/bench_venv.sh)")
class OrtCompatTest(unittest.TestCase):
    def sessions(self, name):
        path = os.path.join(ZOO, name + ".onnx")
        return graphi.Session(path), ort.InferenceSession(path, providers=["CPUExecutionProvider"])

    def test_metadata_matches_onnxruntime(self):
        for name in MODELS:
            with self.subTest(model=name):
                g, o = self.sessions(name)
                for mine, theirs in ((g.get_inputs(), o.get_inputs()),
                                     (g.get_outputs(), o.get_outputs())):
                    self.assertEqual([a.name for a in mine], [a.name for a in theirs])
                    self.assertEqual([a.type for a in mine], [a.type for a in theirs])
                    self.assertEqual([a.shape for a in mine], [a.shape for a in theirs])

    def test_run_matches_onnxruntime(self):
        for name in MODELS:
            with self.subTest(model=name):
                g, o = self.sessions(name)
                feed = {a.name: x for a, x in zip(o.get_inputs(),
                                                  inputs_of(name, len(o.get_inputs())))}
                want = o.run(None, feed)
                got = g.run(None, feed)  # every output, in the model's order
                self.assertIsInstance(got, list)
                self.assertEqual(len(got), len(want))
                for a, x, y in zip(o.get_outputs(), got, want):
                    close(self, x, y, a.name)
                # A subset in another order, as ORT users ask for it.
                names = [a.name for a in o.get_outputs()][::-1][:2]
                got = g.run(names, feed)
                want = o.run(names, feed)
                for n, x, y in zip(names, got, want):
                    close(self, x, y, n)

    def test_unknown_output_name_is_an_error(self):
        g, o = self.sessions("text_cnn_op13")
        feed = {a.name: x for a, x in zip(o.get_inputs(), inputs_of("text_cnn_op13", 1))}
        with self.assertRaises(graphi.Error) as e:
            g.run(["no_such_output"], feed)
        self.assertIn("no_such_output", str(e.exception))
        self.assertIn("text_cnn_op13.onnx", str(e.exception))
        with self.assertRaises(TypeError):
            g.run("probs", feed)  # a bare str, not a list of names


class OrtStyleWithoutOrtTest(unittest.TestCase):
    """The same API checked against the committed PyTorch outputs (runs without onnxruntime)."""

    def test_run_none_and_subset(self):
        name = "activations_op17"
        g = graphi.Session(os.path.join(ZOO, name + ".onnx"))
        feed = {a.name: x for a, x in zip(g.get_inputs(), inputs_of(name, len(g.inputs)))}
        outs = g.run(None, feed)
        self.assertEqual(len(outs), len(g.outputs))
        for i, x in enumerate(outs):
            close(self, x, np.load(os.path.join(ZOO, "%s.out%d.npy" % (name, i))), str(i))
        last = g.get_outputs()[-1].name
        (x,) = g.run([last], feed)
        close(self, x, np.load(os.path.join(ZOO, "%s.out%d.npy" % (name, len(outs) - 1))), last)
        self.assertEqual(g.get_inputs()[0].type, "tensor(float)")


try:
    import onnx  # builds the model (Debian's python3-onnx; absent from some interpreters)
except ImportError:
    onnx = None


@unittest.skipIf(onnx is None, "onnx is not installed")
class BoolValuesTest(unittest.TestCase):
    """Inputs and outputs an .onnx file declares BOOL: numpy bool arrays in and out (graphi
    carries them as float32 0/1), against numpy and, where installed, onnxruntime."""

    def setUp(self):
        import tempfile
        from onnx import TensorProto, helper, numpy_helper
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "bool_io.onnx")
        g = helper.make_graph(
            [helper.make_node("Where", ["mask", "x", "zero"], ["y"]),
             helper.make_node("Not", ["mask"], ["not_mask"]),
             helper.make_node("Greater", ["x", "zero"], ["positive"])], "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
             helper.make_tensor_value_info("mask", TensorProto.BOOL, [2, 3])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3]),
             helper.make_tensor_value_info("not_mask", TensorProto.BOOL, [2, 3]),
             helper.make_tensor_value_info("positive", TensorProto.BOOL, [2, 3])],
            [numpy_helper.from_array(np.array(0, np.float32), "zero")])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 7
        with open(self.path, "wb") as f:
            f.write(m.SerializeToString())
        self.x = np.array([[1, -2, 3], [-4, 5, -6]], np.float32)
        self.mask = np.array([[True, False, True], [False, True, True]])

    def tearDown(self):
        self.dir.cleanup()

    def test_bool_in_and_out(self):
        s = graphi.Session(self.path)
        self.assertEqual([t.dtype for t in s.inputs], ["float32", "bool"])
        self.assertEqual([a.type for a in s.get_outputs()],
                         ["tensor(float)", "tensor(bool)", "tensor(bool)"])
        out = s.run({"x": self.x, "mask": self.mask})
        np.testing.assert_array_equal(out["y"], np.where(self.mask, self.x, 0))
        self.assertEqual(out["not_mask"].dtype, np.bool_)
        np.testing.assert_array_equal(out["not_mask"], ~self.mask)
        np.testing.assert_array_equal(out["positive"], self.x > 0)
        # float32 0/1 for a mask is accepted as it is; any other dtype is an error naming it.
        again = s.run({"x": self.x, "mask": self.mask.astype(np.float32)})
        np.testing.assert_array_equal(again["y"], out["y"])
        with self.assertRaises(graphi.Error) as e:
            s.run({"x": self.x, "mask": self.mask.astype(np.int64)})
        self.assertIn("input 'mask'", str(e.exception))
        self.assertIn("declares it BOOL", str(e.exception))

    @unittest.skipIf(ort is None, "onnxruntime is not installed (scripts/bench_venv.sh)")
    def test_bool_matches_onnxruntime(self):
        g = graphi.Session(self.path)
        o = ort.InferenceSession(self.path, providers=["CPUExecutionProvider"])
        for mine, theirs in ((g.get_inputs(), o.get_inputs()), (g.get_outputs(), o.get_outputs())):
            self.assertEqual([a.type for a in mine], [a.type for a in theirs])
        feed = {"x": self.x, "mask": self.mask}
        for a, x, y in zip(o.get_outputs(), g.run(None, feed), o.run(None, feed)):
            close(self, x, y, a.name)


@unittest.skipIf(onnx is None, "onnx is not installed")
class Float16ValuesTest(unittest.TestCase):
    """A model in FLOAT16 (weights, inputs, outputs, a Cast to FLOAT16): graphi computes in
    float32 and takes / returns numpy float16, against numpy in float32 with the file's float16
    weights and, where installed, onnxruntime."""

    def setUp(self):
        import tempfile
        from onnx import TensorProto, helper, numpy_helper
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "float16_io.onnx")
        rng = np.random.default_rng(3)
        self.w = rng.standard_normal((8, 4)).astype(np.float16)
        self.b = rng.standard_normal(4).astype(np.float16)
        g = helper.make_graph(
            [helper.make_node("MatMul", ["x", "w"], ["xw"]),
             helper.make_node("Add", ["xw", "b"], ["pre"]),
             helper.make_node("Relu", ["pre"], ["y"]),
             helper.make_node("Cast", ["z"], ["zh"], to=TensorProto.FLOAT16)], "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [2, 8]),
             helper.make_tensor_value_info("z", TensorProto.FLOAT, [5])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [2, 4]),
             helper.make_tensor_value_info("zh", TensorProto.FLOAT16, [5])],
            [numpy_helper.from_array(self.w, "w"), numpy_helper.from_array(self.b, "b")])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 7
        with open(self.path, "wb") as f:
            f.write(m.SerializeToString())
        self.x = rng.standard_normal((2, 8)).astype(np.float16)
        self.z = np.array([1 / 3, 65519, 65520, 1e-8, -2.5e-5], np.float32)

    def tearDown(self):
        self.dir.cleanup()

    def test_float16_in_and_out(self):
        s = graphi.Session(self.path)
        self.assertEqual([t.dtype for t in s.inputs], ["float16", "float32"])
        self.assertEqual([a.type for a in s.get_outputs()], ["tensor(float16)"] * 2)
        out = s.run({"x": self.x, "z": self.z})
        self.assertEqual(out["y"].dtype, np.float16)
        want = np.maximum(self.x.astype(np.float32) @ self.w.astype(np.float32) +
                          self.b.astype(np.float32), 0)
        # float32 arithmetic, then one rounding to float16: within one float16 step of numpy's.
        np.testing.assert_allclose(out["y"].astype(np.float32), want, rtol=2 ** -10, atol=1e-6)
        # A Cast to FLOAT16 rounds as numpy's astype(float16) does (to nearest even, overflow to
        # inf, underflow to 0 or a subnormal).
        np.testing.assert_array_equal(out["zh"], self.z.astype(np.float16))
        # float32 for a FLOAT16 input is taken as it is; any other dtype is an error naming it.
        again = s.run({"x": self.x.astype(np.float32), "z": self.z})
        np.testing.assert_array_equal(again["y"], out["y"])
        with self.assertRaises(graphi.Error) as e:
            s.run({"x": self.x.astype(np.float64), "z": self.z})
        self.assertIn("input 'x'", str(e.exception))
        self.assertIn("declares it FLOAT16", str(e.exception))

    def test_bfloat16_outputs_hold_bfloat16_values(self):
        from onnx import TensorProto, helper
        path = os.path.join(self.dir.name, "bfloat16_io.onnx")
        w = helper.make_tensor("w", TensorProto.BFLOAT16, [3], [1 / 3, 257.0, 1.0])
        g = helper.make_graph(
            [helper.make_node("Mul", ["x", "w"], ["y"])], "g",
            [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [3])],
            [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [3])], [w])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 7
        with open(path, "wb") as f:
            f.write(m.SerializeToString())
        s = graphi.Session(path)
        self.assertEqual([t.dtype for t in s.inputs + s.outputs], ["bfloat16"] * 2)
        # bfloat16 weights: 1/3 -> 0.333984375, 257 -> 256 (a tie, to even). y = x * w in
        # float32, then bfloat16: 1 + 2^-8 lies halfway between 1 and 1 + 2^-7 -> 1 (even).
        y = s.run({"x": np.array([1.0, 3.0, 1 + 2 ** -8], np.float32)})["y"]
        self.assertEqual(y.dtype, np.float32)
        np.testing.assert_array_equal(y, np.array([0.333984375, 768.0, 1.0], np.float32))

    @unittest.skipIf(ort is None, "onnxruntime is not installed (scripts/bench_venv.sh)")
    def test_float16_matches_onnxruntime(self):
        g = graphi.Session(self.path)
        o = ort.InferenceSession(self.path, providers=["CPUExecutionProvider"])
        for mine, theirs in ((g.get_inputs(), o.get_inputs()), (g.get_outputs(), o.get_outputs())):
            self.assertEqual([a.type for a in mine], [a.type for a in theirs])
        feed = {"x": self.x, "z": self.z}
        for a, x, y in zip(o.get_outputs(), g.run(None, feed), o.run(None, feed)):
            self.assertEqual(x.dtype, y.dtype, a.name)
            # ONNX Runtime may round inside the MatMul: a few float16 steps apart at most.
            np.testing.assert_allclose(x.astype(np.float32), y.astype(np.float32), rtol=4e-3,
                                       atol=4e-3, err_msg=a.name)


@unittest.skipIf(onnx is None, "onnx is not installed")
class QdqModelTest(unittest.TestCase):
    """A QDQ-format quantized model (int8 weights per output column, an int32 bias, uint8
    activations through QuantizeLinear -> DequantizeLinear pairs, as ONNX Runtime's
    quantize_static writes them; its MatMul in int8): against numpy's evaluation of the same
    definitions (np.rint rounds half to even, as QuantizeLinear does) and, where installed,
    onnxruntime."""

    def setUp(self):
        import tempfile
        from onnx import TensorProto, helper, numpy_helper
        self.dir = tempfile.TemporaryDirectory()
        rng = np.random.default_rng(7)
        self.wq = rng.integers(-127, 128, (16, 8)).astype(np.int8)
        self.ws = (rng.random(8) * 0.02 + 0.005).astype(np.float32)  # per output column
        self.bq = rng.integers(-500, 500, 8).astype(np.int32)
        self.xs, self.xz = np.float32(0.03), np.uint8(120)
        self.ys, self.yz = np.float32(0.05), np.uint8(100)
        self.bs = (self.xs * self.ws).astype(np.float32)
        inits = [numpy_helper.from_array(v, n) for v, n in (
            (self.wq, "wq"), (self.ws, "ws"), (np.zeros(8, np.int8), "wz"), (self.bq, "bq"),
            (self.bs, "bs"), (np.zeros(8, np.int32), "bz"), (np.array(self.xs), "xs"),
            (np.array(self.xz), "xz"), (np.array(self.ys), "ys"), (np.array(self.yz), "yz"))]
        nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
                 helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
                 helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"], axis=1),
                 helper.make_node("DequantizeLinear", ["bq", "bs", "bz"], ["b"], axis=0),
                 helper.make_node("MatMul", ["xd", "w"], ["mm"]),
                 helper.make_node("Add", ["mm", "b"], ["pre"]),
                 helper.make_node("Relu", ["pre"], ["r"]),
                 helper.make_node("QuantizeLinear", ["r", "ys", "yz"], ["rq"]),
                 helper.make_node("DequantizeLinear", ["rq", "ys", "yz"], ["y"])]
        self.path = self.save(nodes, inits, "qdq")
        self.x = (rng.standard_normal((4, 16)) * 2).astype(np.float32)
        self.nodes, self.inits = nodes, inits

    def save(self, nodes, inits, name):
        from onnx import TensorProto, helper
        g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                          [4, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
                              inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 7
        path = os.path.join(self.dir.name, name + ".onnx")
        with open(path, "wb") as f:
            f.write(m.SerializeToString())
        return path

    def tearDown(self):
        self.dir.cleanup()

    @staticmethod
    def qdq(v, s, z, lo, hi):
        q = np.clip(np.rint((v / s).astype(np.float32)) + int(z), lo, hi)
        return ((q - int(z)) * s).astype(np.float32)

    def test_qdq_matches_its_definition(self):
        xd = self.qdq(self.x, self.xs, self.xz, 0, 255)
        w = (self.wq.astype(np.float32) * self.ws).astype(np.float32)
        b = (self.bq.astype(np.float32) * self.bs).astype(np.float32)
        r = np.maximum(xd @ w + b, 0)
        want = self.qdq(r, self.ys, self.yz, 0, 255)
        got = graphi.Session(self.path).run({"x": self.x})["y"]
        # Away from a rounding boundary of the output's step the results are equal; the MatMul's
        # summation order may move a value across one: at most one step (0.05) there.
        diff = np.abs(got - want)
        self.assertLessEqual(float(diff.max()), float(self.ys) * 1.001)
        self.assertGreaterEqual(float(np.mean(diff == 0)), 0.95)

    def test_matmul_of_pairs_runs_in_int8(self):
        """QuantizeLinear -> DequantizeLinear of x, then MatMul by DequantizeLinear'd int8
        weights: Int8MatMul, the same integers summed exactly in int32 and scaled once (what
        numpy computes here in int64), not the float32 sum of the dequantized values."""
        from onnx import TensorProto, helper
        nodes = self.nodes[:5]
        g = helper.make_graph(nodes, "qdq_mm",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
                              [helper.make_tensor_value_info("mm", TensorProto.FLOAT, [4, 8])],
                              self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 7
        path = os.path.join(self.dir.name, "qdq_mm.onnx")
        with open(path, "wb") as f:
            f.write(m.SerializeToString())
        q = np.clip(np.rint((self.x / self.xs).astype(np.float32)) + int(self.xz), 0, 255)
        acc = (q.astype(np.int64) - int(self.xz)) @ self.wq.astype(np.int64)
        want = acc.astype(np.float32) * (self.xs * self.ws)
        np.testing.assert_array_equal(graphi.Session(path).run({"x": self.x})["mm"], want)

    def test_blocked_weight_scales_fold(self):
        """Opset 21's blocked DequantizeLinear (a scale per 8 rows of each column) on int8
        weights folds at import to what numpy computes."""
        from onnx import TensorProto, helper, numpy_helper
        ws = (np.random.default_rng(9).random((2, 8)) * 0.02 + 0.005).astype(np.float32)
        nodes = [helper.make_node("DequantizeLinear", ["wq", "ws"], ["w"], axis=0, block_size=8),
                 helper.make_node("MatMul", ["x", "w"], ["y"])]
        g = helper.make_graph(nodes, "blocked",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
                              [numpy_helper.from_array(self.wq, "wq"),
                               numpy_helper.from_array(ws, "ws")])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
        m.ir_version = 10
        path = os.path.join(self.dir.name, "blocked.onnx")
        with open(path, "wb") as f:
            f.write(m.SerializeToString())
        w = (self.wq.astype(np.float32) * np.repeat(ws, 8, axis=0)).astype(np.float32)
        got = graphi.Session(path).run({"x": self.x})["y"]
        np.testing.assert_allclose(got, self.x @ w, rtol=1e-5, atol=1e-6)

    def test_integer_tensors_at_run_time_are_refused_by_name(self):
        from onnx import helper
        nodes = list(self.nodes)
        nodes[-1] = helper.make_node("Cast", ["rq"], ["y"], to=1)  # reads the uint8 value
        path = self.save(nodes, self.inits, "qdq_cast")
        with self.assertRaises(graphi.Error) as e:
            graphi.Session(path)
        self.assertIn("QuantizeLinear", str(e.exception))
        self.assertIn("integer tensors at run time are not supported", str(e.exception))

    @unittest.skipIf(ort is None, "onnxruntime is not installed (scripts/bench_venv.sh)")
    def test_qdq_matches_onnxruntime(self):
        o = ort.InferenceSession(self.path, providers=["CPUExecutionProvider"])
        want = o.run(None, {"x": self.x})[0]
        got = graphi.Session(self.path).run({"x": self.x})["y"]
        self.assertLessEqual(float(np.abs(got - want).max()), float(self.ys) * 1.001)


def lstm_reference(x, w, r, b, h0, c0, reverse=False):
    """ONNX LSTM (gates i, o, f, c; default activations) in float64, one direction."""
    hidden = r.shape[1]
    sig = lambda v: 1.0 / (1.0 + np.exp(-v))  # noqa: E731
    h, c = h0.astype(np.float64), c0.astype(np.float64)
    y = np.zeros((x.shape[0],) + h.shape)
    for t in (range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])):
        g = x[t] @ w.T.astype(np.float64) + h @ r.T.astype(np.float64) + b[:4 * hidden] + \
            b[4 * hidden:]
        i, o = sig(g[:, :hidden]), sig(g[:, hidden:2 * hidden])
        f, cc = sig(g[:, 2 * hidden:3 * hidden]), np.tanh(g[:, 3 * hidden:])
        c = f * c + i * cc
        h = o * np.tanh(c)
        y[t] = h
    return y, h, c


@unittest.skipIf(onnx is None, "onnx is not installed")
class DynamicQuantizeLstmTest(unittest.TestCase):
    """ONNX Runtime's com.microsoft DynamicQuantizeLSTM (what quantize_dynamic writes for an
    LSTM): int8 weights with a scale per gate row (symmetric) or uint8 ones with one scale and
    zero point per direction, dequantized at import; by default the fused kernel runs them in
    int8 with x and h quantized per step (as ORT does), with rnn_weights="fp32" in float32.
    Against a float64 numpy LSTM on the dequantized weights and, where installed, onnxruntime."""
    T, B, I, H = 12, 3, 10, 16

    def build(self, per_row, bidirectional, w_input=False, scale_shape=None):
        from onnx import TensorProto, helper, numpy_helper
        rng = np.random.default_rng(11)
        D, G = (2 if bidirectional else 1), 4 * self.H
        w = rng.standard_normal((D, G, self.I)) * 0.3
        r = rng.standard_normal((D, G, self.H)) * 0.3
        qs = {}
        for name, m in (("W", w), ("R", r)):
            if per_row:  # ORT's per-channel QInt8: max |w| / 127 per gate row, zero point 0
                s = np.abs(m).max(axis=2) / 127.0
                q = np.clip(np.rint(m / s[:, :, None]), -127, 127).astype(np.int8)
                z = np.zeros(s.shape, np.int8)
            else:  # uint8 with a zero point, one per direction
                lo, hi = m.min(axis=(1, 2)), m.max(axis=(1, 2))
                s = (hi - lo) / 255.0
                z = np.rint(-lo / s).astype(np.uint8)
                q = np.clip(np.rint(m / s[:, None, None]) + z[:, None, None], 0, 255).astype(
                    np.uint8)
            s = s.astype(np.float32)
            shape_q = np.ascontiguousarray(q.transpose(0, 2, 1))  # [D, K, 4H]
            deq = ((q.astype(np.float32) - (z[:, :, None] if per_row else z[:, None, None])) *
                   (s[:, :, None] if per_row else s[:, None, None]))
            qs[name] = (shape_q, s if scale_shape is None else s.reshape(scale_shape), z, deq)
        b = (rng.standard_normal((D, 8 * self.H)) * 0.1).astype(np.float32)
        inits = [numpy_helper.from_array(b, "B")]
        for name in ("W", "R"):
            q, s, z, _ = qs[name]
            if not (w_input and name == "W"):
                inits.append(numpy_helper.from_array(q, name + "q"))
            inits += [numpy_helper.from_array(s, name + "_scale"),
                      numpy_helper.from_array(z, name + "_zp")]
        node = helper.make_node(
            "DynamicQuantizeLSTM",
            ["x", "Wq", "Rq", "B", "", "h0", "c0", "", "W_scale", "W_zp", "R_scale", "R_zp"],
            ["Y", "Y_h", "Y_c"], domain="com.microsoft", hidden_size=self.H,
            direction="bidirectional" if bidirectional else "forward", name="lstm_quant")
        f = TensorProto.FLOAT
        ins = [helper.make_tensor_value_info("x", f, [self.T, self.B, self.I]),
               helper.make_tensor_value_info("h0", f, [D, self.B, self.H]),
               helper.make_tensor_value_info("c0", f, [D, self.B, self.H])]
        if w_input:
            # a run-time W (graphi has no integer inputs: a float one stands in)
            ins.append(helper.make_tensor_value_info("Wq", f, list(qs["W"][0].shape)))
        outs = [helper.make_tensor_value_info(n, f, None) for n in ("Y", "Y_h", "Y_c")]
        model = helper.make_model(helper.make_graph([node], "dq_lstm", ins, outs, inits),
                                  opset_imports=[helper.make_opsetid("", 14),
                                                 helper.make_opsetid("com.microsoft", 1)])
        model.ir_version = 8
        path = os.path.join(self.dir.name, "dq_lstm_%d_%d.onnx" % (per_row, bidirectional))
        with open(path, "wb") as fh:
            fh.write(model.SerializeToString())
        feed = {"x": rng.standard_normal((self.T, self.B, self.I)).astype(np.float32),
                "h0": (rng.standard_normal((D, self.B, self.H)) * 0.5).astype(np.float32),
                "c0": (rng.standard_normal((D, self.B, self.H)) * 0.5).astype(np.float32)}
        refs = [lstm_reference(feed["x"], qs["W"][3][d], qs["R"][3][d], b[d], feed["h0"][d],
                               feed["c0"][d], reverse=d == 1) for d in range(D)]
        want = [np.stack([rf[0] for rf in refs], 1), np.stack([rf[1] for rf in refs]),
                np.stack([rf[2] for rf in refs])]
        return path, feed, want

    def setUp(self):
        import tempfile
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def test_matches_float_reference(self):
        for per_row in (True, False):
            for bidirectional in (False, True):
                what = "per_row %s bidirectional %s" % (per_row, bidirectional)
                path, feed, want = self.build(per_row, bidirectional)
                exact = graphi.Session(path, rnn_weights="fp32").run(None, feed)
                for got, w in zip(exact, want):
                    self.assertEqual(got.shape, w.shape, what)
                    self.assertLessEqual(float(np.abs(got - w).max()), 1e-5, what)
                # int8 (the default): the bound of docs/RNN_KERNELS.md
                for got, w in zip(graphi.Session(path).run(None, feed), want):
                    err = np.abs(got - w)
                    self.assertLessEqual(float(err.max()), 2e-2, what)
                    self.assertLessEqual(float(err.mean()), 2e-3, what)
                    self.assertGreater(float(err.max()), 0.0, what + ": not run in int8")

    def test_refusals_name_node_and_input(self):
        path, _, _ = self.build(True, False, w_input=True)
        with self.assertRaises(graphi.Error) as e:
            graphi.Session(path)
        self.assertIn("node[0] 'lstm_quant' (DynamicQuantizeLSTM)", str(e.exception))
        self.assertIn("input 1 (W) is computed at run time", str(e.exception))
        path, _, _ = self.build(True, False, scale_shape=(4 * self.H, 1))
        with self.assertRaises(graphi.Error) as e:
            graphi.Session(path)
        self.assertIn("input 8 (W_scale) is FLOAT[64, 1]", str(e.exception))

    @unittest.skipIf(ort is None, "onnxruntime is not installed (scripts/bench_venv.sh)")
    def test_close_to_onnxruntime(self):
        for per_row in (True, False):
            path, feed, want = self.build(per_row, True)
            theirs = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feed)
            ours = graphi.Session(path).run(None, feed)
            for o, g, w in zip(theirs, ours, want):
                # both quantize x and h per step; graphi per block of units, ORT per tensor
                self.assertLessEqual(float(np.abs(g - w).max()),
                                     2.0 * float(np.abs(o - w).max()) + 1e-3)


def dynamic_quantize_linear(x):
    """ONNX DynamicQuantizeLinear in numpy (np.rint rounds half to even)."""
    lo, hi = min(0.0, float(np.nanmin(x))), max(0.0, float(np.nanmax(x)))
    scale = np.float32((np.float32(hi) - np.float32(lo)) / np.float32(255))
    if scale == 0:
        scale = np.float32(1)
    zp = np.float32(np.rint(np.clip(np.float32(-lo) / scale, 0, 255)))
    q = np.clip(np.rint((x / scale).astype(np.float32)) + zp, 0, 255)
    return np.nan_to_num(q, nan=0.0).astype(np.int64), scale, zp


@unittest.skipIf(onnx is None, "onnx is not installed")
class DynamicQuantizeModelTest(unittest.TestCase):
    """What ONNX Runtime's quantize_dynamic writes for MatMul and Conv (DynamicQuantizeLinear ->
    MatMulInteger / ConvInteger -> Cast -> Mul by the scales' product), and its fused
    com.microsoft.DynamicQuantizeMatMul: the MatMuls exactly as numpy evaluates the definitions
    (integer products summed in int64, the scales in float32 in the chain's order), the
    convolution to float32 rounding, and, where installed, against onnxruntime."""

    def setUp(self):
        import tempfile
        self.dir = tempfile.TemporaryDirectory()
        rng = np.random.default_rng(3)
        self.x = (rng.standard_normal((2, 5, 24)) * 1.5).astype(np.float32)
        self.w1 = rng.integers(-128, 128, (24, 70)).astype(np.int8)        # per column scale
        self.s1 = (rng.random(70) * 0.01 + 0.001).astype(np.float32)
        self.w2 = rng.integers(0, 256, (24, 9)).astype(np.uint8)           # zero point 128
        self.s2 = np.float32(0.004)
        self.b1 = rng.standard_normal(70).astype(np.float32)
        self.img = rng.standard_normal((1, 4, 9, 9)).astype(np.float32)
        self.wc = rng.integers(-127, 128, (6, 4, 3, 3)).astype(np.int8)
        self.sc = np.float32(0.003)

    def tearDown(self):
        self.dir.cleanup()

    def save(self, nodes, inits, ins, outs, name, ms=False):
        from onnx import helper
        opsets = [helper.make_opsetid("", 14)] + ([helper.make_opsetid("com.microsoft", 1)]
                                                  if ms else [])
        m = helper.make_model(helper.make_graph(nodes, name, ins, outs, inits),
                              opset_imports=opsets)
        m.ir_version = 8
        path = os.path.join(self.dir.name, name + ".onnx")
        with open(path, "wb") as f:
            f.write(m.SerializeToString())
        return path

    def matmul_model(self, extra_reader=None):
        from onnx import TensorProto, helper, numpy_helper
        f = TensorProto.FLOAT
        inits = [numpy_helper.from_array(v, n) for v, n in (
            (self.w1, "w1"), (self.s1, "s1"), (np.zeros(70, np.int8), "z1"), (self.b1, "b1"),
            (self.w2, "w2"), (np.array(self.s2), "s2"), (np.array(128, np.uint8), "z2"))]
        nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
                 helper.make_node("Mul", ["xs", "s1"], ["p1"]),
                 helper.make_node("MatMulInteger", ["xq", "w1", "xz", "z1"], ["a1"]),
                 helper.make_node("Cast", ["a1"], ["c1"], to=f),
                 helper.make_node("Mul", ["c1", "p1"], ["m1"]),
                 helper.make_node("Add", ["m1", "b1"], ["y1"]),
                 helper.make_node("Mul", ["s2", "xs"], ["p2"]),  # the other operand order
                 helper.make_node("MatMulInteger", ["xq", "w2", "xz", "z2"], ["a2"]),
                 helper.make_node("Cast", ["a2"], ["c2"], to=f),
                 helper.make_node("Mul", ["p2", "c2"], ["y2"])]
        outs = [helper.make_tensor_value_info("y1", f, [2, 5, 70]),
                helper.make_tensor_value_info("y2", f, [2, 5, 9])]
        if extra_reader:
            nodes.append(helper.make_node(extra_reader, ["a1"], ["r"]))
            outs.append(helper.make_tensor_value_info("r", TensorProto.INT32, None))
        return self.save(nodes, inits, [helper.make_tensor_value_info("x", f, [2, 5, 24])], outs,
                         "dq_matmul" + (extra_reader or ""))

    def want_matmul(self):
        q, xs, xz = dynamic_quantize_linear(self.x)
        a1 = (q - int(xz)) @ self.w1.astype(np.int64)
        a2 = (q - int(xz)) @ (self.w2.astype(np.int64) - 128)
        y1 = a1.astype(np.float32) * (xs * self.s1) + self.b1
        y2 = (xs * self.s2) * a2.astype(np.float32)
        return y1.astype(np.float32), y2.astype(np.float32)

    def test_matmul_chain_exact(self):
        got = graphi.Session(self.matmul_model()).run(None, {"x": self.x})
        for g, w in zip(got, self.want_matmul()):
            np.testing.assert_array_equal(g, w)

    def test_fused_contrib_op_exact(self):
        from onnx import TensorProto, helper, numpy_helper
        f = TensorProto.FLOAT
        inits = [numpy_helper.from_array(v, n) for v, n in (
            (self.w1, "w1"), (self.s1, "s1"), (np.zeros(70, np.int8), "z1"), (self.b1, "b1"))]
        node = helper.make_node("DynamicQuantizeMatMul", ["x", "w1", "s1", "z1", "b1"], ["y"],
                                domain="com.microsoft")
        path = self.save([node], inits, [helper.make_tensor_value_info("x", f, [2, 5, 24])],
                         [helper.make_tensor_value_info("y", f, [2, 5, 70])], "dq_fused", ms=True)
        got = graphi.Session(path).run(None, {"x": self.x})[0]
        q, xs, xz = dynamic_quantize_linear(self.x)
        acc = (q - int(xz)) @ self.w1.astype(np.int64)
        np.testing.assert_array_equal(got, acc.astype(np.float32) * (xs * self.s1) + self.b1)

    def conv_model(self):
        from onnx import TensorProto, helper, numpy_helper
        f = TensorProto.FLOAT
        inits = [numpy_helper.from_array(v, n) for v, n in (
            (self.wc, "wc"), (np.array(self.sc), "sc"), (np.array(0, np.int8), "zc"))]
        nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
                 helper.make_node("Mul", ["xs", "sc"], ["p"]),
                 helper.make_node("ConvInteger", ["xq", "wc", "xz", "zc"], ["a"], pads=[1, 1, 1, 1],
                                  strides=[2, 2], kernel_shape=[3, 3]),
                 helper.make_node("Cast", ["a"], ["c"], to=f),
                 helper.make_node("Mul", ["c", "p"], ["y"])]
        return self.save(nodes, inits, [helper.make_tensor_value_info("x", f, [1, 4, 9, 9])],
                         [helper.make_tensor_value_info("y", f, [1, 6, 5, 5])], "dq_conv")

    def test_conv_chain(self):
        got = graphi.Session(self.conv_model()).run(None, {"x": self.img})[0]
        q, xs, xz = dynamic_quantize_linear(self.img)
        qp = np.pad(q - int(xz), ((0, 0), (0, 0), (1, 1), (1, 1)))
        acc = np.zeros((1, 6, 5, 5), np.int64)
        for oy in range(5):
            for ox in range(5):
                patch = qp[0, :, 2 * oy:2 * oy + 3, 2 * ox:2 * ox + 3]
                acc[0, :, oy, ox] = np.tensordot(self.wc.astype(np.int64), patch, 3)
        want = acc.astype(np.float32) * (xs * self.sc)
        self.assertLessEqual(float(np.abs(got - want).max()), 1e-5 * float(np.abs(want).max()))

    def test_refusals_name_the_node(self):
        with self.assertRaises(graphi.Error) as e:
            graphi.Session(self.matmul_model(extra_reader="Identity"))
        self.assertIn("(DynamicQuantizeLinear): its output 'a1' feeds node[10]", str(e.exception))
        self.assertIn("(Identity)", str(e.exception))
        # uint8 weights whose difference to a zero point of 0 leaves int8
        self.w2 = np.full((24, 9), 200, np.uint8)
        path = self.matmul_model()
        import onnx
        m = onnx.load(path)
        for t in m.graph.initializer:
            if t.name == "z2":
                t.CopyFrom(onnx.numpy_helper.from_array(np.array(0, np.uint8), "z2"))
        onnx.save(m, path)
        with self.assertRaises(graphi.Error) as e:
            graphi.Session(path)
        self.assertIn("minus its zero point is 200, outside int8", str(e.exception))

    @unittest.skipIf(ort is None, "onnxruntime is not installed (scripts/bench_venv.sh)")
    def test_matches_onnxruntime(self):
        path = self.matmul_model()
        theirs = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": self.x})
        ours = graphi.Session(path).run(None, {"x": self.x})
        for o, g in zip(theirs, ours):
            np.testing.assert_allclose(g, o, rtol=1e-6, atol=1e-6)
        path = self.conv_model()
        o = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": self.img})[0]
        g = graphi.Session(path).run(None, {"x": self.img})[0]
        self.assertLessEqual(float(np.abs(g - o).max()), 1e-5 * float(np.abs(o).max()))


if __name__ == "__main__":
    unittest.main()
