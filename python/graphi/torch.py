"""PyTorch front ends (docs/PYTORCH.md).

PyTorch 2 backend: `import graphi.torch` registers the torch.compile backend "graphi".

    import torch, graphi.torch
    model = torch.compile(model, backend="graphi")                 # default graphi Session
    model = torch.compile(model, backend="graphi", options={"threads": 2})  # Session keywords
    with torch.no_grad():
        y = model(x)

Each FX graph dynamo hands the backend is exported with PyTorch's TorchScript ONNX exporter
(dynamo=False: it works offline, needs no onnxscript, and maps nn.LSTM/GRU/RNN to ONNX's
LSTM/GRU/RNN operators, which graphi's importer turns into its fused sequence ops), with the
module's parameters and buffers baked in as initializers, and opened as a graphi.Session. One
Session per input signature (shapes, dtypes, Python scalars), made on the first call with that
signature. A graph graphi cannot run (an op the exporter or graphi refuses) runs eagerly, with
one log line naming the op. Calls with autograd recording (grad mode on and a parameter or
input that requires grad) run eagerly too: graphi only does inference. Outputs are torch
tensors over graphi's output arrays (torch.from_numpy, no copy).

`import graphi.torch` also sets torch._dynamo.config.allow_rnn = True: without it dynamo stops
the graph at every nn.LSTM/GRU/RNN and runs them in eager PyTorch.

Export path (any PyTorch with torch.onnx, also Debian's 1.13, which has no torch.compile):

    f = graphi.torch.compile(model, (torch.randn(5, 4, 8),), executors=2, scheduler="cpf")
    y, h, c = f(torch.randn(5, 4, 8))

compile() exports the module with torch.onnx.export (opset 17, eval mode, no dynamic axes: the
input shapes are fixed to those of example_inputs) to a temporary file, opens a graphi.Session
on it and deletes the file.
"""
import inspect
import logging
import os
import re
import shutil
import tempfile
import warnings
import weakref

import torch

from . import Error, Session

# 17: LayerNormalization is one op, and scatter_add keeps duplicate indices (at 14 PyTorch 1.13
# exports it as ScatterElements into zeros plus Add, which drops them).
ONNX_OPSET = 17

log = logging.getLogger("graphi.torch")

_TORCH_MAJOR = int(torch.__version__.split(".")[0])


def _flatten(x):
    """Tensors of a (possibly nested) tuple/list, in order (how torch.onnx.export flattens)."""
    if isinstance(x, (tuple, list)):
        out = []
        for v in x:
            out.extend(_flatten(v))
        return out
    return [x]


def _export_onnx(module, args, path, input_names, output_names):
    """torch.onnx.export with the TorchScript exporter (PyTorch 2 defaults to the dynamo
    exporter, which needs onnxscript), opset ONNX_OPSET, constants folded; the exporter's
    deprecation and batch-size notes are silenced."""
    kw = {"dynamo": False} if _TORCH_MAJOR >= 2 else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, args, path, input_names=input_names,
                          output_names=output_names, opset_version=ONNX_OPSET,
                          do_constant_folding=True, **kw)


def _input_names(module, example_inputs):
    """Names of the flattened example inputs, from the parameters of module.forward: "x", or
    "hx_0", "hx_1" for the tensors of a tuple argument; "arg0", ... where forward has *args."""
    try:
        params = [p for p in inspect.signature(module.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names = []
    for i, arg in enumerate(example_inputs):
        base = params[i].name if i < len(params) else "arg%d" % i
        n = len(_flatten(arg))
        names.extend([base] if n == 1 and not isinstance(arg, (tuple, list)) else
                     ["%s_%d" % (base, k) for k in range(n)])
    return names


def _error(message, code="invalid_argument"):
    err = Error(message)
    err.code = code
    return err


def _retitled(err, tmp_path, label):
    """graphi.Error `err` with the temporary file's path replaced by `label` (the file is gone
    by the time the user reads the message)."""
    return _error(str(err).replace(tmp_path, label), getattr(err, "code", "internal"))


class CompiledModule:
    """A module compiled for graphi: call it with torch tensors (same shapes and dtypes as the
    example inputs); returns a torch tensor, or a flat tuple of tensors when the module has
    several outputs (nested outputs such as LSTM's (y, (h, c)) come back flat: (y, h, c))."""

    def __init__(self, session, input_names, output_names, label="", tmp_path=""):
        self.session = session
        self.input_names = input_names    # names given to the exported inputs, in order
        self.output_names = output_names
        self.label = label                # "graphi.torch.compile(LSTM)", for messages
        self._tmp_path = tmp_path         # the deleted export, replaced by label in messages

    def __call__(self, *args):
        tensors = _flatten(args)
        if len(tensors) != len(self.input_names):
            raise TypeError("%s: %d inputs given, it was compiled with %d" %
                            (self.label, len(tensors), len(self.input_names)))
        infos = {t.name: t for t in self.session.inputs}  # the exporter drops unused inputs
        feed = {}
        for name, t in zip(self.input_names, tensors):
            if name not in infos:
                continue
            if not isinstance(t, torch.Tensor):
                raise TypeError("%s: argument '%s' is a %s, not a torch.Tensor" %
                                (self.label, name, type(t).__name__))
            want = infos[name]
            got_dtype = str(t.dtype).replace("torch.", "")
            if got_dtype != want.dtype:
                raise _error("%s: argument '%s' is a torch.%s tensor, the module was compiled "
                             "for torch.%s (as its example input); graphi never casts silently: "
                             "convert it with .to(torch.%s)" % (self.label, name, got_dtype,
                                                                want.dtype, want.dtype))
            if tuple(t.shape) != tuple(want.shape):
                raise _error("%s: argument '%s' has shape %s, the module was compiled for %s "
                             "(the example input's shape); compile again with an example of "
                             "this shape" % (self.label, name, tuple(t.shape), tuple(want.shape)))
            feed[name] = t.detach().cpu().numpy()  # shares memory; graphi only reads it
        try:
            out = self.session.run(feed)
        except Error as e:  # name the module, not the deleted file
            if self._tmp_path:
                raise _retitled(e, self._tmp_path, self.label) from None
            raise
        res = tuple(torch.from_numpy(out[n]) for n in self.output_names)
        return res[0] if len(res) == 1 else res

    @property
    def config(self):
        return self.session.config


def compile(module, example_inputs, **session_options):  # noqa: A001 (mirrors torch.compile)
    """Exports `module` with `example_inputs` (a tensor or a tuple of tensors) and returns a
    CompiledModule running it on graphi. session_options are graphi.Session's keywords
    (executors, threads, scheduler, pin, optimize, cpuset, ...). Raises graphi.Error when graphi
    cannot load or compile the exported graph (e.g. an unsupported op, named in the message)."""
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    example_inputs = tuple(example_inputs)
    flat = _flatten(example_inputs)
    input_names = _input_names(module, example_inputs)
    if len(input_names) != len(flat):
        input_names = ["arg%d" % i for i in range(len(flat))]
    with torch.no_grad():
        n_out = len(_flatten(module(*example_inputs)))
    output_names = ["output_%d" % i for i in range(n_out)]
    label = "graphi.torch.compile(%s)" % type(module).__name__
    tmp = tempfile.mkdtemp(prefix="graphi_torch_")
    path = os.path.join(tmp, "model.onnx")
    try:
        # Under no_grad, nn.MultiheadAttention and nn.TransformerEncoderLayer take PyTorch's fused
        # fast path, which torch.onnx.export cannot export (aten::_native_multi_head_attention).
        # _export_onnx silences the exporter's and the tracer's warnings: they are about the
        # temporary ONNX file, not the user's module.
        with torch.enable_grad():
            _export_onnx(module, example_inputs, path, input_names, output_names)
        try:
            session = Session(path, **session_options)
        except Error as e:
            raise _retitled(e, path, label) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return CompiledModule(session, input_names, output_names, label, path)


# ---- the torch.compile backend ------------------------------------------------------------

def _unsupported_op(err):
    """The op an export or graphi error names ('aten::foo', an ONNX op type), or None."""
    text = str(err)
    for pattern in (r"operator '([\w:.]+)'",               # torch.onnx: Exporting the operator 'aten::x'
                    r"(aten::\w+)",
                    r"\bop(?: type)? '([\w.:]+)'",         # graphi: ... op 'X' ...
                    r"\(([A-Z]\w+)\)",                     # graphi: node 'n' (OpType)
                    r"\b([A-Z][A-Za-z0-9]+): (?:unsupported|not supported)"):
        m = re.search(pattern, text)
        if m:
            return m.group(1)
    return None


class _Bound(torch.nn.Module):
    """The dynamo graph with its parameters, buffers and Python scalars bound: forward takes
    only the graph's tensor inputs, so the exporter writes the weights as initializers (and
    folds what depends on them only, such as the LSTM gate reordering) instead of inputs."""

    def __init__(self, gm, args, const_idx, tensor_idx):
        super().__init__()
        self.gm = gm
        self.fixed = [None if (i in const_idx or i in tensor_idx) else a
                      for i, a in enumerate(args)]
        self.const_idx = sorted(const_idx)
        self.tensor_idx = tensor_idx
        for i in self.const_idx:
            self.register_buffer("const_%d" % i, args[i].detach())

    def forward(self, *xs):
        a = list(self.fixed)
        for i in self.const_idx:
            a[i] = getattr(self, "const_%d" % i)
        for i, x in zip(self.tensor_idx, xs):
            a[i] = x
        return tuple(_flatten(self.gm(*a)))


class _Compiled:
    """One graphi Session for one input signature."""

    def __init__(self, session, input_pos, output_names, saved):
        self.session = session
        self.input_pos = input_pos        # [(graph argument index, ONNX input name)]
        self.output_names = output_names
        order = [t.name for t in session.outputs]
        self.output_pos = [order.index(n) for n in output_names]  # in the native run's result
        # Values declared FLOAT16 / BFLOAT16 (a .half() or .bfloat16() module): graphi computes
        # them in float32, so such inputs go in as float32 and such outputs come back converted.
        narrow = {t.name: t.dtype for t in session.inputs + session.outputs
                  if t.dtype in ("float16", "bfloat16")}
        self.float_inputs = {n for _, n in input_pos if n in narrow}
        self.output_casts = [getattr(torch, narrow[n]) if n in narrow else None
                             for n in output_names]
        self.onnx_path = saved            # where the ONNX file was kept (GRAPHI_TORCH_SAVE), or None


class GraphiFunction:
    """What the "graphi" backend returns for one dynamo graph: runs it on graphi Sessions made
    per input signature, eagerly where graphi cannot run it (see the module's docstring).
    `compiled` maps each signature seen to a _Compiled or to the reason it runs eagerly."""

    def __init__(self, gm, example_inputs, options=None):
        self.gm = gm
        self.options = dict(options or {})
        self.compiled = {}
        self._grad_logged = False
        # Parameters and buffers of the module: passed by dynamo as graph inputs on every call
        # (the same objects while the module is unchanged); bound as constants, and checked by
        # identity and version on every call so that new or changed weights recompile.
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        self.const_idx = set()
        for i, a in enumerate(example_inputs):
            src = ""
            if i < len(placeholders):
                ga = placeholders[i].meta.get("grapharg")
                src = str(getattr(getattr(ga, "source", None), "name", "")) if ga else ""
            if isinstance(a, torch.nn.Parameter) or "._buffers[" in src:
                self.const_idx.add(i)
        self.names = [n.name for n in placeholders]
        self._dyn_idx = [i for i in range(len(example_inputs)) if i not in self.const_idx]
        self._consts = None   # [(index, tensor, version)] the Sessions were built with
        _functions.append(weakref.ref(self))

    def _signature(self, args):
        # Python ints/floats/bools (dynamo's symbolic sizes among them) are part of the graph's
        # constants, hence of the signature.
        return tuple((a.shape, a.dtype, a.device.type) if isinstance(a, torch.Tensor) else a
                     for a in (args[i] for i in self._dyn_idx))

    def _consts_changed(self, args):
        if self._consts is None:
            return True
        for i, t, v in self._consts:
            a = args[i]
            if a is not t or a._version != v:
                return True
        return False

    def __call__(self, *args):
        if torch.is_grad_enabled() and any(isinstance(a, torch.Tensor) and a.requires_grad
                                           for a in args):
            if not self._grad_logged:
                log.info("graphi: a graph runs eagerly while autograd records (call the model "
                         "under torch.no_grad() or torch.inference_mode() to run it on graphi)")
                self._grad_logged = True
            return self.gm(*args)
        if self._consts_changed(args):
            self.compiled.clear()
            self._consts = [(i, args[i], args[i]._version) for i in sorted(self.const_idx)]
        sig = self._signature(args)
        c = self.compiled.get(sig)
        if c is None:
            c = self.compiled[sig] = self._compile(args)
        if not isinstance(c, _Compiled):
            return self.gm(*args)
        # Straight to the native run: the signature fixes the dtypes graphi accepted when it
        # built the Session, and the native run checks layout and dtype again anyway.
        feed = []
        for i, name in c.input_pos:
            t = args[i]
            if t.requires_grad:
                t = t.detach()
            if name in c.float_inputs:
                t = t.float()  # a copy
            elif not t.is_contiguous():
                t = t.contiguous()
            feed.append((name, t.numpy()))  # shares memory; graphi only reads it
        out = c.session._s.run(feed)
        return tuple(torch.from_numpy(out[k][1]) if cast is None else
                     torch.from_numpy(out[k][1]).to(cast)
                     for k, cast in zip(c.output_pos, c.output_casts))

    def _compile(self, args):
        """A _Compiled for these arguments, or the reason (a str) they run eagerly."""
        tensor_idx = [i for i, a in enumerate(args)
                      if i not in self.const_idx and isinstance(a, torch.Tensor)]
        for i in tensor_idx:
            a = args[i]
            if a.device.type != "cpu" or a.layout != torch.strided:
                return self._eager("input %s is a %s %s tensor" % (self.names[i], a.device.type,
                                                                    a.layout), None)
        bound = _Bound(self.gm, args, self.const_idx, tensor_idx)
        xs = tuple(args[i] for i in tensor_idx)
        input_names = ["in%d_%s" % (k, self.names[i]) for k, i in enumerate(tensor_idx)]
        tmp = tempfile.mkdtemp(prefix="graphi_torch_")
        try:
            path = os.path.join(tmp, "graph.onnx")
            try:
                with torch.no_grad():
                    n_out = len(bound(*xs))
                    output_names = ["out%d" % k for k in range(n_out)]
                    _export_onnx(bound, xs, path, input_names, output_names)
            except Exception as e:  # the exporter refuses an op
                return self._eager("torch.onnx.export: %s" % str(e).strip().splitlines()[0],
                                   _unsupported_op(e))
            saved = _save_copy(path)
            try:
                session = Session(path, **self.options)
            except Error as e:
                return self._eager(str(e).strip().splitlines()[0], _unsupported_op(e))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        used = {t.name for t in session.inputs}  # the exporter drops inputs the graph ignores
        input_pos = [(i, n) for i, n in zip(tensor_idx, input_names) if n in used]
        log.debug("graphi: compiled a graph of %d nodes for %s (%s)", len(self.gm.graph.nodes),
                  [tuple(args[i].shape) for i in tensor_idx], session.config)
        return _Compiled(session, input_pos, output_names, saved)

    def _eager(self, why, op):
        hint = ""
        if op in _FASTPATH_OPS:
            hint = ("; PyTorch's fused transformer fast path, traced because the model ran under "
                    "no_grad: torch.backends.mha.set_fastpath_enabled(False) lets graphi run it")
        log.warning("graphi: running a graph eagerly, graphi cannot run op %s (%s)%s",
                    op or "?", why, hint)
        return "op %s: %s" % (op or "?", why)


# nn.TransformerEncoderLayer / nn.MultiheadAttention's inference fast path: single aten ops the
# ONNX exporter has no mapping for.
_FASTPATH_OPS = ("aten::_transformer_encoder_layer_fwd", "aten::_native_multi_head_attention")

_functions = []  # weak references to every GraphiFunction made in this process


def graphs(since=0):
    """The GraphiFunctions (one per dynamo graph) still alive among those made since the
    `since`-th (len(graphi.torch._functions) before a compile); each has `.compiled`, a dict
    {input signature: _Compiled (its .session is the graphi.Session) or the reason the graph
    runs eagerly}. They live as long as dynamo's cache holds them (torch._dynamo.reset())."""
    return [f for f in (r() for r in _functions[since:]) if f is not None]
_save_counter = [0]


def _save_copy(path):
    """Keeps a copy of an exported graph in $GRAPHI_TORCH_SAVE (when set), e.g. to look at it
    with `graphi info`; returns the copy's path or None."""
    folder = os.environ.get("GRAPHI_TORCH_SAVE")
    if not folder:
        return None
    os.makedirs(folder, exist_ok=True)
    _save_counter[0] += 1
    dest = os.path.join(folder, "graph_%d_%d.onnx" % (os.getpid(), _save_counter[0]))
    shutil.copyfile(path, dest)
    return dest


def backend(gm, example_inputs, options=None, **_):
    """The torch.compile backend "graphi": returns a GraphiFunction for dynamo's FX graph.
    `options` (torch.compile(..., options={...})) are graphi.Session's keywords."""
    return GraphiFunction(gm, example_inputs, options)


if _TORCH_MAJOR >= 2:
    from torch._dynamo import register_backend as _register_backend
    import torch._dynamo.config as _dynamo_config

    _register_backend(backend, name="graphi")
    # Without it dynamo breaks the graph at every nn.LSTM/GRU/RNN and runs them eagerly.
    _dynamo_config.allow_rnn = True
