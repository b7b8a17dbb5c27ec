"""Tests of the torch.compile backend "graphi" (python/graphi/torch.py, docs/PYTORCH.md).

Run under an interpreter with PyTorch 2 (the benchmarks' venv, scripts/bench_venv.sh); ctest
entry python/torch_backend. Every module's reference is eager PyTorch on the same inputs
(max |got - want| / max(1, |want|) <= 1e-4), and every test also checks that the graphs ran on
graphi (a Session per graph), not in eager PyTorch, except where a fallback is the point.

    PYTHONPATH=build/python GRAPHI_BIN=build/graphi .venv/bin/python -m unittest -v test_torch_backend
"""
import json
import logging
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

try:
    import torch
    HAVE_TORCH2 = int(torch.__version__.split(".")[0]) >= 2
except ImportError:
    torch = None
    HAVE_TORCH2 = False

import graphi

if HAVE_TORCH2:
    import graphi.torch  # noqa: F401  (registers the backend)
    import torch._dynamo
    nn = torch.nn

HERE = os.path.dirname(os.path.abspath(__file__))
ZOO = os.path.join(HERE, "..", "..", "tests", "data", "onnx_zoo")
GRAPHI_BIN = os.environ.get("GRAPHI_BIN", os.path.join(HERE, "..", "..", "build", "graphi"))


def max_rel_error(got, want):
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    if got.shape != want.shape:
        return float("inf")
    if got.size == 0:
        return 0.0
    return float(np.max(np.abs(got - want) / np.maximum(1.0, np.abs(want))))


def flat(x):
    return [t for v in x for t in flat(v)] if isinstance(x, (tuple, list)) else [x]


class no_mha_fastpath:
    """Turns off nn.TransformerEncoderLayer / nn.MultiheadAttention's fused inference fast path
    (which the ONNX exporter cannot map) for the block."""

    def __enter__(self):
        self.was = torch.backends.mha.get_fastpath_enabled()
        torch.backends.mha.set_fastpath_enabled(False)

    def __exit__(self, *exc):
        torch.backends.mha.set_fastpath_enabled(self.was)


def loaded_libgomps():
    with open("/proc/self/maps") as fh:
        return sorted({line.split()[-1] for line in fh if "libgomp" in line.split()[-1]})


def new_functions(before):
    return graphi.torch.graphs(before)


@unittest.skipUnless(HAVE_TORCH2, "needs PyTorch 2 (the benchmarks' venv)")
class BackendTest(unittest.TestCase):
    def setUp(self):
        torch._dynamo.reset()
        self.n_before = len(graphi.torch._functions)

    def compile_and_compare(self, module, inputs, calls=2, on_graphi=True, **compile_kw):
        """torch.compile(module, backend="graphi") against eager on `calls` sets of inputs
        (`inputs` is a function returning a fresh tuple); returns the GraphiFunctions made."""
        module.eval()
        f = torch.compile(module, backend="graphi", **compile_kw)
        for _ in range(calls):
            xs = inputs()
            with torch.no_grad():
                want = flat(module(*xs))
                got = flat(f(*xs))
            self.assertEqual(len(got), len(want))
            for g, w in zip(got, want):
                self.assertIsInstance(g, torch.Tensor)
                self.assertEqual(g.dtype, w.dtype)
                self.assertLessEqual(max_rel_error(g.numpy(), w.numpy()), 1e-4)
        fns = new_functions(self.n_before)
        self.assertGreater(len(fns), 0, "the backend was never called")
        if on_graphi:
            for fn in fns:
                for sig, c in fn.compiled.items():
                    self.assertIsInstance(c, graphi.torch._Compiled, "%s ran eagerly: %s" % (sig, c))
        return fns

    def graphi_info(self, module, inputs):
        """`graphi info --json` of the graphs the backend exported for `module`."""
        with tempfile.TemporaryDirectory() as d:
            os.environ["GRAPHI_TORCH_SAVE"] = d
            try:
                torch._dynamo.reset()
                f = torch.compile(module.eval(), backend="graphi")
                with torch.no_grad():
                    f(*inputs())
            finally:
                del os.environ["GRAPHI_TORCH_SAVE"]
            infos = []
            for name in sorted(os.listdir(d)):
                r = subprocess.run([GRAPHI_BIN, "info", "--json", os.path.join(d, name)],
                                   capture_output=True, text=True, timeout=60)
                self.assertEqual(r.returncode, 0, r.stderr)
                infos.append(json.loads(r.stdout))
            return infos

    def test_mlp(self):
        torch.manual_seed(1)
        m = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 32), nn.GELU(),
                          nn.Linear(32, 5), nn.Softmax(-1))
        threads = torch.get_num_threads()
        self.compile_and_compare(m, lambda: (torch.randn(4, 12),), calls=3)
        # graphi's runs leave the calling thread's OpenMP thread count (this) alone: dynamo
        # guards on it and recompiled each graph when a 1-thread plan changed it.
        self.assertEqual(torch.get_num_threads(), threads)

    def test_half_and_bfloat16_modules(self):
        """A .half() / .bfloat16() module: graphi computes it in float32 and returns tensors of
        the module's dtype: eager PyTorch in float32 on the same (rounded) weights, rounded once
        (one step of the dtype: 2^-10, 2^-7)."""
        import copy
        for dtype, tol in ((torch.float16, 2.0 ** -10), (torch.bfloat16, 2.0 ** -7)):
            torch.manual_seed(5)
            m = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 6)).eval().to(dtype)
            x = torch.randn(4, 12).to(dtype)
            with torch.no_grad():
                want = copy.deepcopy(m).float()(x.float())
                got = torch.compile(m, backend="graphi")(x)
            self.assertEqual(got.dtype, dtype)
            self.assertLessEqual(max_rel_error(got.float().numpy(), want.numpy()), tol, str(dtype))
        for fn in new_functions(self.n_before):
            for sig, c in fn.compiled.items():
                self.assertIsInstance(c, graphi.torch._Compiled, "%s ran eagerly: %s" % (sig, c))

    def test_small_cnn(self):
        torch.manual_seed(2)
        m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, stride=2), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))
        m.eval()
        with torch.no_grad():  # non-trivial running statistics
            m[1].running_mean.uniform_(-0.5, 0.5)
            m[1].running_var.uniform_(0.5, 2.0)
        self.compile_and_compare(m, lambda: (torch.randn(2, 3, 16, 16),))

    def test_reparameterizable_blocks_run_as_one_conv(self):
        """RepVGG / MobileOne blocks in their training form (conv + BN branches and a BN of the
        input, summed before the ReLU): each block one convolution on graphi (conv_reparam)."""
        torch.manual_seed(4)

        def bn(c):
            b = nn.BatchNorm2d(c)
            with torch.no_grad():
                b.weight.uniform_(0.5, 1.5)
                b.bias.uniform_(-0.5, 0.5)
                b.running_mean.uniform_(-0.5, 0.5)
                b.running_var.uniform_(0.5, 2.0)
            return b

        class RepBlock(nn.Module):
            def __init__(self, cin, cout, stride, groups, kxk_branches):
                super().__init__()
                self.kxk = nn.ModuleList(
                    nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, groups=groups, bias=False),
                                  bn(cout)) for _ in range(kxk_branches))
                self.scale = nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride, 0, groups=groups, bias=False), bn(cout))
                self.identity = bn(cin) if cin == cout and stride == 1 else None

            def forward(self, x):
                y = self.scale(x)
                if self.identity is not None:
                    y = y + self.identity(x)
                for b in self.kxk:
                    y = y + b(x)
                return torch.relu(y)

        m = nn.Sequential(RepBlock(3, 16, 2, 1, 1), RepBlock(16, 16, 1, 1, 1),
                          RepBlock(16, 16, 1, 16, 4), RepBlock(16, 32, 2, 1, 2))
        inputs = lambda: (torch.randn(2, 3, 24, 24),)  # noqa: E731
        self.compile_and_compare(m, inputs)
        infos = self.graphi_info(m, inputs)
        ops = infos[0]["op_counts"]
        self.assertNotIn("Add", ops, ops)
        self.assertNotIn("Mul", ops, ops)
        convs = sum(n for op, n in ops.items() if "Conv" in op)
        self.assertEqual(convs, 4, ops)

    def test_lstm_classifier_runs_the_fused_lstm(self):
        torch.manual_seed(3)

        class LstmClassifier(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(50, 16)
                self.lstm = nn.LSTM(16, 32, num_layers=2, batch_first=True)
                self.fc = nn.Linear(32, 4)

            def forward(self, ids):
                y, _ = self.lstm(self.emb(ids))
                return torch.log_softmax(self.fc(y[:, -1]), -1)

        m = LstmClassifier()
        inputs = lambda: (torch.randint(0, 50, (3, 7)),)  # noqa: E731
        self.compile_and_compare(m, inputs)
        infos = self.graphi_info(m, inputs)
        self.assertEqual(len(infos), 1)
        self.assertEqual(infos[0]["op_counts"].get("LSTM"), 2, infos[0]["op_counts"])  # the fused sequence op
        self.assertNotIn("Loop", infos[0]["op_counts"])

    def test_gru_and_rnn_run_the_fused_ops(self):
        torch.manual_seed(4)

        class Recurrent(nn.Module):
            def __init__(self):
                super().__init__()
                self.gru = nn.GRU(8, 16, bidirectional=True)
                self.rnn = nn.RNN(32, 12, nonlinearity="tanh")

            def forward(self, x):
                y, h = self.gru(x)
                z, hz = self.rnn(y)
                return z, h, hz

        m = Recurrent()
        inputs = lambda: (torch.randn(6, 2, 8),)  # noqa: E731
        self.compile_and_compare(m, inputs)
        ops = self.graphi_info(m, inputs)[0]["op_counts"]
        self.assertEqual(ops.get("GRU"), 1, ops)
        self.assertEqual(ops.get("RNN"), 1, ops)

    def test_transformer_encoder_layer(self):
        torch.manual_seed(5)
        m = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, batch_first=True)
        inputs = lambda: (torch.randn(2, 6, 32),)  # noqa: E731
        with no_mha_fastpath():
            self.compile_and_compare(m, inputs)
        # With PyTorch's fused fast path (the default under no_grad) dynamo records one aten op
        # the ONNX exporter cannot map: the graph runs eagerly, and the log line says how to
        # avoid it.
        torch._dynamo.reset()
        self.n_before = len(graphi.torch._functions)
        with self.assertLogs("graphi.torch", level=logging.WARNING) as logs:
            self.compile_and_compare(m, inputs, on_graphi=False)
        self.assertEqual(len(logs.records), 1, logs.output)
        self.assertIn("aten::_transformer_encoder_layer_fwd", logs.output[0])
        self.assertIn("set_fastpath_enabled(False)", logs.output[0])

    def test_graph_break_print(self):
        torch.manual_seed(6)

        class Printing(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = nn.Linear(8, 8)
                self.b = nn.Linear(8, 3)

            def forward(self, x):
                h = torch.tanh(self.a(x))
                print("graph break")  # dynamo splits the graph here
                return self.b(h) * 2

        fns = self.compile_and_compare(Printing(), lambda: (torch.randn(5, 8),))
        self.assertGreaterEqual(len(fns), 2)  # two graphs, both on graphi

    def test_graph_break_data_dependent_branch(self):
        torch.manual_seed(7)

        class Branchy(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = nn.Linear(6, 6)
                self.b = nn.Linear(6, 2)
                self.c = nn.Linear(6, 2)

            def forward(self, x):
                h = self.a(x)
                if h.sum() > 0:  # data-dependent Python branch: a graph break
                    return self.b(h)
                return self.c(h).relu()

        m = Branchy()
        xs = [(torch.randn(3, 6) + s,) for s in (3.0, -3.0, 3.0, -3.0)]
        it = iter(xs)
        fns = self.compile_and_compare(m, lambda: next(it), calls=4)
        self.assertGreaterEqual(len(fns), 3)  # the head and both branches

    def test_unsupported_op_falls_back_with_one_log_line(self):
        torch.manual_seed(8)

        # graphi computes in float32, int32 and int64: a cast to float64 at run time is refused
        # (tests/graph/test_onnx_import.cpp checks the refusal). Not NonZero or Unique: dynamo
        # breaks the graph at data-dependent shapes, so graphi never sees them.
        class WithDouble(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(3, 3)

            def forward(self, x):
                return self.lin(x).double().relu().float()

        with self.assertLogs("graphi.torch", level=logging.WARNING) as logs:
            fns = self.compile_and_compare(WithDouble(), lambda: (torch.randn(2, 3, 3),),
                                           calls=3, on_graphi=False)
        self.assertEqual(len(logs.records), 1, logs.output)  # once, not per call
        self.assertIn("op Cast", logs.output[0])
        reasons = [c for fn in fns for c in fn.compiled.values()]
        self.assertTrue(all(isinstance(c, str) for c in reasons), reasons)

    def test_signature_cache_and_dynamic_shapes(self):
        torch.manual_seed(9)
        m = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        shapes = iter([2, 2, 3, 5, 3, 2])
        fns = self.compile_and_compare(m, lambda: (torch.randn(next(shapes), 4),), calls=6)
        sessions = [c for fn in fns for c in fn.compiled.values()]
        # One Session per batch size and graph: the static graph dynamo makes first (batch 2),
        # then its dynamic-batch graph (3, 5, and 2 again: dynamo routes 2 there too).
        self.assertIn(len(sessions), (3, 4))
        f = torch.compile(m, backend="graphi")
        n = len(sessions)
        with torch.no_grad():
            for b in (2, 3, 5, 2, 3, 5):
                f(torch.randn(b, 4))
        self.assertEqual(len([c for fn in new_functions(self.n_before)
                              for c in fn.compiled.values()]), n)  # all cached

    def test_changed_weights_recompile(self):
        torch.manual_seed(10)
        m = nn.Linear(5, 3).eval()
        f = torch.compile(m, backend="graphi")
        x = torch.randn(2, 5)
        with torch.no_grad():
            f(x)
            m.weight.mul_(-2.0)  # in place: the bound constants are stale
            got = f(x)
            self.assertLessEqual(max_rel_error(got.numpy(), m(x).numpy()), 1e-6)
            m.bias = nn.Parameter(torch.ones(3))  # a new Parameter object
            got = f(x)
            self.assertLessEqual(max_rel_error(got.numpy(), m(x).numpy()), 1e-6)

    def test_grad_mode_runs_eagerly(self):
        torch.manual_seed(11)
        m = nn.Linear(5, 3).train()
        f = torch.compile(m, backend="graphi")
        x = torch.randn(2, 5)
        y = f(x)  # autograd recording: eager, so backward works
        self.assertTrue(y.requires_grad)
        y.sum().backward()
        self.assertIsNotNone(m.weight.grad)

    def test_options_reach_the_session(self):
        torch.manual_seed(12)
        m = nn.Sequential(nn.Linear(8, 8), nn.Tanh())
        fns = self.compile_and_compare(m, lambda: (torch.randn(3, 8),),
                                       options={"executors": 2, "scheduler": "cpf", "pin": False})
        self.assertIn("cpf 2x1", list(fns[0].compiled.values())[0].session.config)

    def test_outputs_share_graphi_memory(self):
        torch.manual_seed(13)
        m = nn.Linear(4, 4).eval()
        f = torch.compile(m, backend="graphi")
        with torch.no_grad():
            y = f(torch.randn(2, 4))
        # torch.from_numpy over graphi's output array: the tensor does not own a copy, its
        # storage is the numpy array's buffer (a numpy view of it shares the address).
        self.assertEqual(y.numpy().__array_interface__["data"][0], y.data_ptr())
        self.assertTrue(y.is_contiguous())

    def test_zoo_modules(self):
        """The ONNX zoo's PyTorch modules (tests/data/onnx_zoo/make_zoo.py): transformer
        layers (fast path off, see test_transformer_encoder_layer), CNNs, LSTM/GRU classifiers;
        every graph on graphi."""
        sys.path.insert(0, ZOO)
        dont_write = sys.dont_write_bytecode
        sys.dont_write_bytecode = True
        try:
            import make_zoo
        finally:
            sys.path.pop(0)
            sys.dont_write_bytecode = dont_write
        names = ["encoder_layer_op17", "encoder_layer_masked_op13", "gpt_block_op17",
                 "text_cnn_op13", "mobilenetish_op13", "gru_classifier_op13", "lstm_dropout_op13",
                 "norms_op17", "decoder_layer_op17"]
        for name in names:
            make, inputs, _, _ = make_zoo.ZOO[name]
            with self.subTest(model=name):
                torch._dynamo.reset()
                self.n_before = len(graphi.torch._functions)
                torch.manual_seed(5)
                module = make()
                xs = inputs()
                with no_mha_fastpath():
                    self.compile_and_compare(module, lambda: tuple(xs), calls=1)


@unittest.skipUnless(HAVE_TORCH2, "needs PyTorch 2 (the benchmarks' venv)")
class OpenMpTest(unittest.TestCase):
    def test_graphi_imported_before_torch(self):
        """The other import order: Debian's libgomp is loaded first and serves PyTorch too."""
        code = ("import graphi, torch, graphi.torch\n"
                "torch.set_num_threads(2)\n"
                "lstm = torch.nn.LSTM(32, 32).eval(); x = torch.randn(10, 2, 32)\n"
                "f = torch.compile(lstm, backend='graphi', options={'threads': 2, 'pin': False})\n"
                "with torch.no_grad():\n"
                "    print(float((f(x)[0] - lstm(x)[0]).abs().max()))\n"
                "print(sorted({l.split()[-1] for l in open('/proc/self/maps') "
                "if 'libgomp' in l.split()[-1]}))\n")
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=300, env=dict(os.environ))
        self.assertEqual(r.returncode, 0, r.stderr)
        diff, libs = r.stdout.strip().splitlines()[-2:]
        self.assertLessEqual(float(diff), 1e-4)
        self.assertEqual(eval(libs), ["/usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0"])

    def test_two_openmp_runtimes_in_one_process(self):
        """The torch wheel bundles its own libgomp; graphi links Debian's. Eager PyTorch on 2
        threads and graphi on a 2-thread team, one after the other and at the same time from
        two Python threads, stay correct."""
        import threading
        torch.manual_seed(14)
        torch.set_num_threads(2)
        lstm = nn.LSTM(64, 64).eval()
        f = torch.compile(lstm, backend="graphi", options={"threads": 2, "pin": False})
        x = torch.randn(20, 4, 64)
        with torch.no_grad():
            want = lstm(x)[0]
            got = f(x)[0]
        self.assertLessEqual(max_rel_error(got.numpy(), want.numpy()), 1e-4)
        # The wheel's bundled libgomp and Debian's have the same SONAME (libgomp.so.1), so the
        # dynamic loader maps only the first one loaded and both libraries use it.
        self.assertEqual(len(loaded_libgomps()), 1, loaded_libgomps())
        errors = []

        def loop(fn):
            try:
                with torch.no_grad():
                    for _ in range(20):
                        e = max_rel_error(fn(x)[0].numpy(), want.numpy())
                        if e > 1e-4:
                            errors.append(e)
            except Exception as e:  # reported below
                errors.append(repr(e))
        ts = [threading.Thread(target=loop, args=(fn,)) for fn in (f, lstm)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertEqual(errors, [])


if __name__ == "__main__":
    unittest.main()
