"""graphi: run ONNX / .graphi models on graphi's dataflow engine from Python.

    import numpy as np, graphi
    s = graphi.Session("model.onnx", executors=2, threads=1, scheduler="cpf")
    out = s.run({"x": np.zeros((4, 16), np.float32)})   # dict name -> ndarray
    s.inputs, s.outputs    # [TensorInfo(name, dtype, shape), ...]

Input arrays (see python/README.md):
- float32 / int32 / int64 arrays that are C-contiguous, aligned and in native byte order are
  read in place (the engine copies them once into its own buffers); they are never modified.
- Non-contiguous or unaligned arrays of those dtypes (slices, transposes) are copied to a
  contiguous array first; same values, one extra copy.
- An input the .onnx file declares BOOL (a padding mask) takes a numpy bool array (or float32
  0/1); graphi carries it as float32 0/1. Outputs declared BOOL come back as numpy bool arrays.
- Any other dtype (float64, float16, bool, ...) or non-native byte order is an error naming the
  input and the dtype the model expects: graphi never casts silently (a float64 -> float32 cast
  would lose precision without anyone noticing). Convert explicitly: x.astype(np.float32).
- Anything that is not an ndarray (lists, scalars, objects with __array__) goes through
  numpy.asarray first and is then checked as above.

Errors raise graphi.Error (a RuntimeError) with the engine's message, which names the file,
input or node; e.code is "invalid_argument", "invalid_graph", "unsupported", "io_error",
"out_of_memory" or "internal". run() releases the GIL; one Session may be used from several
threads (the runs are serialized by the engine). A thread inside run() holds a reference to the
Session, so `del s` (or dropping the last other reference) while runs are in flight or waiting
cancels nothing: they all complete normally and the Session is freed after the last one returns.
"""
import collections as _collections
import os as _os
import threading as _threading

import numpy as _np


def _libgomp_loaded():
    try:
        with open("/proc/self/maps") as f:
            return "libgomp" in f.read()
    except OSError:
        return True  # cannot tell: leave the environment alone


# libgomp reads GOMP_SPINCOUNT once, when it is loaded (with the extension below, unless another
# package loaded it first). Its default spin (~7.5 ms on a Zen 4 core) keeps a core busy after
# every op, which on a machine with other load is the core the other team thread needs; graphi
# uses engine/omp_oversubscription.h's kGompSpinCount (~0.25 ms) unless the user chose
# OMP_WAIT_POLICY or GOMP_SPINCOUNT or set GRAPHI_OMP_SPIN=libgomp. The variable is only set
# while the extension loads: os.environ is as it was afterwards.
_SPIN_SET = (
    "OMP_WAIT_POLICY" not in _os.environ
    and "GOMP_SPINCOUNT" not in _os.environ
    and _os.environ.get("GRAPHI_OMP_SPIN") != "libgomp"
    and not _libgomp_loaded()
)
if _SPIN_SET:
    _os.environ["GOMP_SPINCOUNT"] = "10000"
try:
    from . import _graphi
finally:
    if _SPIN_SET:
        del _os.environ["GOMP_SPINCOUNT"]

__all__ = ["Session", "TrainingSession", "Error", "TensorInfo", "NodeArg", "__version__"]

__version__ = _graphi.__version__  # the library's version (CMake project version)

Error = _graphi.Error

TensorInfo = _collections.namedtuple("TensorInfo", ["name", "dtype", "shape"])
TensorInfo.__doc__ = ("Name, numpy dtype name ('float32', 'int32', 'int64', or 'bool' / "
                      "'float16' / 'bfloat16' for a value the .onnx file declares BOOL / FLOAT16 "
                      "/ BFLOAT16) and shape of a tensor.")

NodeArg = _collections.namedtuple("NodeArg", ["name", "shape", "type"])
NodeArg.__doc__ = ("What onnxruntime's get_inputs()/get_outputs() return: name, shape (list) "
                   "and ONNX type string such as 'tensor(float)'.")

_ONNX_TYPE = {"float32": "tensor(float)", "int32": "tensor(int32)", "int64": "tensor(int64)",
              "bool": "tensor(bool)", "float16": "tensor(float16)", "bfloat16": "tensor(bfloat16)"}


def _node_arg(info):
    shape = list(info.shape) if info.shape is not None else None
    return NodeArg(info.name, shape, _ONNX_TYPE.get(info.dtype, "tensor(%s)" % info.dtype))


_DTYPES = {"float32": _np.dtype(_np.float32), "int32": _np.dtype(_np.int32),
           "int64": _np.dtype(_np.int64)}


def _prepare(path, name, value, info):
    """The array handed to the engine for input `name`: `value` itself when usable as is,
    a contiguous copy when only the layout is wrong; graphi.Error for any other dtype."""
    a = value if isinstance(value, _np.ndarray) else _np.asarray(value)
    if info is not None and info.dtype == "bool":
        if a.dtype not in (_np.dtype(_np.bool_), _np.dtype(_np.float32)):
            err = Error("%s: input '%s': dtype %s is not supported; the model declares it BOOL: "
                        "pass a numpy bool array (or float32 0/1)" % (path, name, a.dtype))
            err.code = "invalid_argument"
            raise err
        return _np.ascontiguousarray(a, dtype=_np.float32)  # graphi's bools: float32 0/1
    if info is not None and info.dtype in ("float16", "bfloat16"):
        # Declared FLOAT16 / BFLOAT16: graphi computes in float32, so numpy float16 (or
        # ml_dtypes' bfloat16) converts exactly, and float32 is taken as it is.
        if a.dtype.name not in (info.dtype, "float32") or not a.dtype.isnative:
            err = Error("%s: input '%s': dtype %s is not supported; the model declares it %s: "
                        "pass a numpy %s (or float32) array" % (
                            path, name, a.dtype, info.dtype.upper(), info.dtype))
            err.code = "invalid_argument"
            raise err
        return _np.ascontiguousarray(a, dtype=_np.float32)
    if a.dtype not in _DTYPES.values() or not a.dtype.isnative:
        want = " (the model expects %s)" % info.dtype if info is not None else ""
        err = Error("%s: input '%s': dtype %s is not supported%s; graphi accepts float32, "
                    "int32 and int64 in native byte order and never casts silently, convert "
                    "with .astype()" % (path, name,
                                        a.dtype.str if not a.dtype.isnative else a.dtype, want))
        err.code = "invalid_argument"
        raise err
    if not (a.flags.c_contiguous and a.flags.aligned):
        a = _np.ascontiguousarray(a)  # a copy: the caller's array is untouched
        if not a.flags.aligned:
            a = a.copy()
    return a


def _round_to_bfloat16(a):
    """float32 array -> float32 array of the nearest bfloat16 values (ties to even; NaN kept),
    as graph/float16.h rounds: what a BFLOAT16 output holds."""
    bits = a.view(_np.uint32)
    r = ((bits + _np.uint32(0x7FFF) + ((bits >> 16) & _np.uint32(1))) &
         _np.uint32(0xFFFF0000)).view(_np.float32)
    return _np.where(_np.isnan(a), a, r)


def _memory_size(v, path):
    """max_memory as bytes (0 = no explicit limit): an int, or "512M" / "2G" / "1.5GiB"."""
    if v is None:
        return 0
    units = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10, "M": 1 << 20,
             "MB": 1 << 20, "MIB": 1 << 20, "G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30,
             "T": 1 << 40, "TB": 1 << 40, "TIB": 1 << 40}
    try:
        if isinstance(v, str):
            s = v.strip()
            k = len(s)
            while k > 0 and not (s[k - 1].isdigit() or s[k - 1] == "."):
                k -= 1
            n = int(float(s[:k]) * units[s[k:].strip().upper()])
        else:
            n = int(v)
        if n < 1:
            raise ValueError
    except (ValueError, KeyError, TypeError):
        err = Error("%s: session options: max_memory must be a positive number of bytes or a "
                    "size such as '512M' or '2G', got %r" % (path, v))
        err.code = "invalid_argument"
        raise err
    return n


class Session:
    """A loaded, compiled model.

    Session(path, executors=None, threads=None, scheduler=None, pin=True, optimize=True,
            dims=None, ring_capacity=1, cpuset="", plan="auto", tracing=False,
            rnn_weights=None, max_memory=None, input_shapes=None, override_initializers=None,
            batch_split=None)

    path: a .onnx or .graphi file. executors x threads: the engine's executor teams; None
    (default) takes the plan's split, giving one of them sets the other to 1.
    plan: "auto" (the plan `graphi profile` cached for this model and machine, else a quick
    choice from the graph and the topology, timed once against its contender for a model that
    runs <= 50 ms: GRAPHI_SPLIT_CHECK=off skips that), "none" (1x1 sequential) or a plan file
    from `graphi profile --plan-out`. Session.plan says what was chosen.
    scheduler: "sequential" (reference executor on the calling thread), "cpf"
    (critical-path first), "fifo" or "shared-queue"; None = cpf with several executors, else
    sequential. pin: pin each thread to its own core.
    optimize: apply the default graph passes (RNN cell fusion, GEMM fusion, ...).
    dims: values of symbolic ONNX dims, e.g. {"batch": 8}. cpuset: restrict pinning ("0-3").
    input_shapes: the shapes you will feed, by input name, e.g. {"X": (5, 4)}: symbolic dims
    that `dims` does not give, and unnamed ones (skl2onnx's batch dim), are taken from them.
    override_initializers: names of .onnx inputs that are also initializers
    (torch.onnx.export(keep_initializers_as_inputs=True)) that you want to feed. Unnamed ones
    stay constants (folded; feeding one is an error); a named one is in self.inputs, and run()
    with a dict uses the initializer when it is not given (as ONNX Runtime does).
    tracing: record every run op by op (see trace(); also a settable property).
    rnn_weights: "fp32" (None, default), "bf16" or "int8": store the fused LSTM/GRU/RNN weights
    in bf16 (fp32 accumulation) or int8 (per-column scales, u8 activations quantized per step,
    int32 accumulation); docs/RNN_KERNELS.md gives the accuracy.
    max_memory: memory budget, bytes (int) or a size string ("512M", "2G", "1.5GiB"; powers of
    1024). A model whose file, weights or planned memory exceed it is refused before the
    allocation (graphi.Error, code "out_of_memory", naming the file and the amounts). None: the
    memory the machine has available.
    max_shapes: for a model with input dims that neither `dims` nor `input_shapes` fixes (an
    export with dynamic axes): how many input shapes stay compiled at once (default 4). Such a
    Session is compiled on the first run() of each new set of input shapes, the dims bound from
    the arrays fed (as onnxruntime runs any batch size); the least recently used compilation is
    dropped beyond max_shapes. self.inputs / get_inputs() show the declared dims (a symbolic dim
    as its name, an unnamed one as None); Session.compiled_shapes lists what is compiled; an
    error in the model (an unsupported op) is raised by the first run() then, not here, and the
    file must stay where it is (each compilation reads it).
    batch_split: "auto" (None, default: unless GRAPHI_BATCH_SPLIT says otherwise), "off" or
    "on". A .onnx model whose inputs all carry a batch of N > 1 on dim 0 may run as N slices of
    one sample where it keeps its samples apart (docs/CNN.md, "Batches in slices"); "auto"
    measures both once per model, split and machine (cached) and keeps the faster.
    Session.config says which runs.
    Raises graphi.Error naming the file when it cannot be loaded.
    """

    def __init__(self, path, executors=None, threads=None, scheduler=None, pin=True,
                 optimize=True, dims=None, ring_capacity=1, cpuset="", plan="auto", tracing=False,
                 rnn_weights=None, max_memory=None, input_shapes=None,
                 override_initializers=None, max_shapes=4, batch_split=None):
        path = _os.fspath(path)
        limit = _memory_size(max_memory, path)
        self.path = path
        self._lazy = None  # a _ShapeCache when the model is compiled per input shape
        for name, v in (("executors", executors), ("threads", threads)):
            if v is not None and int(v) < 1:  # 0 means "the plan's" only below this API
                err = Error("%s: session options: %s must be at least 1, got %d (None: the "
                            "plan's split)" % (path, name, int(v)))
                err.code = "invalid_argument"
                raise err
        dims = {str(k): int(v) for k, v in (dims or {}).items()}
        overrides = [str(n) for n in (override_initializers or [])]
        args = dict(executors=executors, threads=threads, scheduler=scheduler, pin=pin,
                    optimize=optimize, dims=dims, ring_capacity=ring_capacity, cpuset=cpuset,
                    plan=plan, tracing=tracing, rnn_weights=rnn_weights, max_memory=max_memory,
                    override_initializers=overrides, batch_split=batch_split)
        try:
            self._s = _graphi.Session(path, 0 if executors is None else int(executors),
                                      0 if threads is None else int(threads),
                                      "" if scheduler is None else str(scheduler),
                                      bool(pin), bool(optimize), dims,
                                      int(ring_capacity), str(cpuset), _os.fspath(plan),
                                      "" if rnn_weights is None else str(rnn_weights), limit,
                                      {str(k): [int(d) for d in v]
                                       for k, v in (input_shapes or {}).items()},
                                      overrides,
                                      "" if batch_split is None else str(batch_split))
        except Error:
            self._lazy = _ShapeCache.for_unbound_dims(path, args, input_shapes, max_shapes)
            if self._lazy is None:
                raise
            self.inputs, self.outputs = self._lazy.inputs, self._lazy.outputs
            self._bool_outputs = []
            self._half_outputs = []
            self._bf16_outputs = []
            self._input_info = {t.name: t for t in self.inputs}
            self._tracing = bool(tracing)
            return
        # Declared BOOL / FLOAT16 / BFLOAT16 in the file: float32 (0/1 for bools) inside.
        declared = {n: "bool" for n in self._s.bool_values()}
        declared.update({n: "float16" for n in self._s.float16_values()})
        declared.update({n: "bfloat16" for n in self._s.bfloat16_values()})
        self.inputs = [TensorInfo(n, declared.get(n, d), s) for n, d, s in self._s.inputs()]
        self.outputs = [TensorInfo(n, declared.get(n, d), s) for n, d, s in self._s.outputs()]
        self._bool_outputs = [t.name for t in self.outputs if t.dtype == "bool"]
        # numpy has float16; bfloat16 outputs are float32 arrays of bfloat16 values (numpy has
        # no such dtype).
        self._half_outputs = [t.name for t in self.outputs if t.dtype == "float16"]
        self._bf16_outputs = [t.name for t in self.outputs if t.dtype == "bfloat16"]
        self._input_info = {t.name: t for t in self.inputs}
        self._tracing = False
        self.tracing = tracing

    @property
    def tracing(self):
        """Whether runs are recorded op by op (off by default: recording costs a little)."""
        return self._tracing

    @tracing.setter
    def tracing(self, on):
        if self._lazy is not None:
            self._lazy.set_tracing(bool(on))
        else:
            self._s.set_tracing(bool(on))
        self._tracing = bool(on)

    @property
    def compiled_shapes(self):
        """The input shapes compiled so far, least recently used first: [{input name: shape}].
        A model with static shapes has one, its own."""
        if self._lazy is not None:
            return [dict(k) for k in self._lazy.sessions]
        return [{t.name: tuple(t.shape) for t in self.inputs}]

    def trace(self, path, inputs=None):
        """Writes a run's timeline to `path` as Chrome Trace Event JSON (open it in
        https://ui.perfetto.dev or chrome://tracing; scripts/plot_timeline.py draws it).
        With `inputs` (as for run()) it runs the model once traced and writes that run;
        without, it writes the last run made while `tracing` was on. Returns the number of
        ops in the trace. Raises graphi.Error when there is no traced run or the file cannot
        be written (naming it)."""
        path = _os.fspath(path)
        if inputs is not None:
            was = self._tracing
            if not was:
                self.tracing = True
            try:
                self.run(inputs)
                return self._native_for("trace").write_trace(path)  # before switching off
            finally:
                if not was:
                    self.tracing = False
        return self._native_for("trace").write_trace(path)

    def _native_for(self, what):
        """The native session of the last run (a per-shape one for a lazily compiled model)."""
        if self._lazy is None:
            return self._s
        if self._lazy.last is None:
            err = Error("%s: %s: nothing compiled yet: the model has dims without sizes (%s), "
                        "compiled by the first run() from the arrays fed" % (
                            self.path, what, self._lazy.describe_unbound()))
            err.code = "invalid_argument"
            raise err
        return self._lazy.last._s

    @property
    def config(self):
        """The executor configuration actually used, e.g. '2x1 cpf on cores {0} {1}'; for a
        model compiled per input shape, the last run's ('' before the first)."""
        if self._lazy is not None and self._lazy.last is None:
            return ""
        return self._native_for("config").config()

    @property
    def plan(self):
        """How the split was chosen ('graphi: plan from cache FILE: 2x1 cpf', ...); '' when
        executors/threads were given or plan="none"."""
        if self._lazy is not None and self._lazy.last is None:
            return ""
        return self._native_for("plan").plan()

    @property
    def passes(self):
        """What the graph passes did ('' when optimize=False, or before the first run of a
        model compiled per input shape)."""
        if self._lazy is not None and self._lazy.last is None:
            return ""
        return self._native_for("passes").passes()

    def get_inputs(self):
        """onnxruntime.InferenceSession.get_inputs(): [NodeArg(name, shape, type)], shape a
        list of ints (graphi's shapes are concrete: symbolic dims are fixed by `dims`), type
        'tensor(float)', 'tensor(int32)' or 'tensor(int64)'."""
        return [_node_arg(t) for t in self.inputs]

    def get_outputs(self):
        """onnxruntime.InferenceSession.get_outputs(), as get_inputs()."""
        return [_node_arg(t) for t in self.outputs]

    def run(self, inputs, input_feed=None):
        """Runs the model once.

        graphi's form, run(inputs): `inputs` is a dict {input name: array} or a list/tuple of
        arrays in self.inputs order; returns {output name: ndarray} in output order.
        onnxruntime's form, run(output_names, input_feed): `input_feed` is a dict {input name:
        array}; returns a list of ndarrays in `output_names` order (None: every output).
        The arrays own their memory. Raises graphi.Error naming the input on a missing/unknown
        name or a wrong dtype/shape, and naming the output on an unknown output name."""
        if input_feed is not None or inputs is None:
            return self._run_ort(inputs, input_feed)
        if isinstance(inputs, dict):
            items = list(inputs.items())
        elif isinstance(inputs, (list, tuple)):
            if len(inputs) != len(self.inputs):
                err = Error("%s: run: %d inputs given, the model has %d (%s)" % (
                    self.path, len(inputs), len(self.inputs), ", ".join(t.name for t in self.inputs)))
                err.code = "invalid_argument"
                raise err
            items = [(t.name, v) for t, v in zip(self.inputs, inputs)]
        else:
            raise TypeError("Session.run: inputs must be a dict {name: array} or a list of "
                            "arrays, not %s" % type(inputs).__name__)
        if self._lazy is not None:
            for name, _ in items:
                if not isinstance(name, str):
                    raise TypeError("Session.run: input names must be str, not %s" %
                                    type(name).__name__)
            return self._lazy.session_for(items, self._tracing).run(dict(items))
        pairs = []
        for name, value in items:
            if not isinstance(name, str):
                raise TypeError("Session.run: input names must be str, not %s" %
                                type(name).__name__)
            pairs.append((name, _prepare(self.path, name, value, self._input_info.get(name))))
        out = dict(self._s.run(pairs))
        for name in self._bool_outputs:
            out[name] = out[name] != 0
        for name in self._half_outputs:
            out[name] = out[name].astype(_np.float16)
        for name in self._bf16_outputs:
            out[name] = _round_to_bfloat16(out[name])
        return out

    def _run_ort(self, output_names, input_feed):
        if not isinstance(input_feed, dict):
            raise TypeError("Session.run(output_names, input_feed): input_feed must be a dict "
                            "{name: array}, not %s" % type(input_feed).__name__)
        if isinstance(output_names, str):
            raise TypeError("Session.run(output_names, input_feed): output_names must be a list "
                            "of names or None, not a str")
        known = [t.name for t in self.outputs]
        names = known if output_names is None else list(output_names)
        for n in names:
            if n not in known:
                err = Error("%s: run: unknown output '%s'; the model's outputs are %s" % (
                    self.path, n, ", ".join(known)))
                err.code = "invalid_argument"
                raise err
        out = self.run(input_feed)
        return [out[n] for n in names]

    def __call__(self, *args, **kwargs):
        """s(x, y) or s(x=..., y=...): run() returning the outputs as a tuple (or the only
        output itself)."""
        if args and kwargs:
            raise TypeError("Session call: pass inputs positionally or by name, not both")
        out = self.run(dict(kwargs) if kwargs else list(args))
        vals = tuple(out.values())
        return vals[0] if len(vals) == 1 else vals

    def __repr__(self):
        return "graphi.Session(%r, inputs=%s, outputs=%s, config=%r)" % (
            self.path, self.inputs, self.outputs, self.config)


class _ShapeCache:
    """The compiled Sessions of a model whose input dims are bound per run (dynamic axes)."""

    def __init__(self, path, args, signature, max_shapes):
        self.path, self.args = path, args
        self.max_shapes = int(max_shapes)
        if self.max_shapes < 1:
            err = Error("%s: session options: max_shapes must be at least 1, got %d" % (
                path, self.max_shapes))
            err.code = "invalid_argument"
            raise err
        ins, outs, _ = signature
        self.inputs = [TensorInfo(n, d, s) for n, d, s in ins]
        self.outputs = [TensorInfo(n, d, s) for n, d, s in outs]
        self.sessions = _collections.OrderedDict()  # key -> Session, least recent first
        self.last = None
        self._lock = _threading.Lock()  # run() may be called from several threads

    @classmethod
    def for_unbound_dims(cls, path, args, input_shapes, max_shapes):
        """A cache when the file declares input dims that neither dims nor input_shapes fix;
        None when it does not (then the open's error stands)."""
        try:
            sig = _graphi.read_signature(path, args["override_initializers"])
        except Error:
            return None
        if not sig[2] or input_shapes:
            return None
        dims = args["dims"]
        unbound = [d for _, _, shape in sig[0] for d in (shape or ())
                   if d is None or (isinstance(d, str) and d not in dims)]
        return cls(path, args, sig, max_shapes) if unbound else None

    def describe_unbound(self):
        return ", ".join("%s%s" % (t.name, list(t.shape)) for t in self.inputs
                         if any(not isinstance(d, int) for d in (t.shape or ())))

    def session_for(self, items, tracing):
        """The Session compiled for the shapes of `items` ((name, array) pairs), made on first
        use. A rank or a fixed dim that differs from the file's declaration is an error naming
        the input; so is a symbolic dim fed two different sizes (by the compiled session)."""
        declared = {t.name: t for t in self.inputs}
        shapes = {}
        for name, value in items:
            info = declared.get(name)
            shape = tuple(int(d) for d in _np.shape(value))
            if info is not None and info.shape is not None:
                if len(shape) != len(info.shape) or any(
                        isinstance(d, int) and d != s for d, s in zip(info.shape, shape)):
                    err = Error("%s: input '%s': shape %s does not match the model's %s" % (
                        self.path, name, list(shape), list(info.shape)))
                    err.code = "invalid_argument"
                    raise err
            shapes[name] = shape
        key = tuple(sorted(shapes.items()))
        with self._lock:
            s = self.sessions.get(key)
            if s is None:
                s = Session(self.path, **dict(self.args, input_shapes=shapes, tracing=tracing))
                self.sessions[key] = s
                while len(self.sessions) > self.max_shapes:
                    self.sessions.popitem(last=False)
            else:
                self.sessions.move_to_end(key)
            self.last = s
        return s

    def set_tracing(self, on):
        for s in self.sessions.values():
            s.tracing = on


class TrainingSession:
    """A model's training step (docs/TRAINING.md): forward, loss, gradients and the optimizer's
    in-place weight update run as one graph on graphi's engine.

    TrainingSession(path, loss="ce", label_input="labels", prediction="", optimizer="sgd",
                    lr=0.1, momentum=0.0, weight_decay=0.0, executors=1, threads=1,
                    scheduler="sequential", pin=True)

    loss: "ce" (softmax cross-entropy of the prediction [N, C] against int64 labels [N], mean
    over the batch), "mse" (against a float32 target of the prediction's shape) or "value" (the
    prediction is the loss). prediction: "" = the model's first output. Every float32 constant
    of rank >= 1 the prediction depends on is trained. Raises graphi.Error naming the file, or
    the op and node without a gradient rule.
    """

    def __init__(self, path, loss="ce", label_input="labels", prediction="", optimizer="sgd",
                 lr=0.1, momentum=0.0, weight_decay=0.0, executors=1, threads=1,
                 scheduler="sequential", pin=True):
        path = _os.fspath(path)
        self._s = _graphi.TrainingSession(path, str(loss), str(label_input), str(prediction),
                                          str(optimizer), float(lr), float(momentum),
                                          float(weight_decay), int(executors), int(threads),
                                          str(scheduler), bool(pin))
        self.path = path
        self.inputs = [TensorInfo(n, d, s) for n, d, s in self._s.inputs()]
        self._input_info = {t.name: t for t in self.inputs}

    def train_step(self, inputs):
        """One step on a batch {input name: array} (the model's inputs and the label input).
        Returns the loss as a float (computed before this step's update)."""
        if not isinstance(inputs, dict):
            raise TypeError("TrainingSession.train_step: inputs must be a dict {name: array}")
        pairs = [(str(n), _prepare(self.path, n, v, self._input_info.get(n))) for n, v in inputs.items()]
        return float(self._s.train_step(pairs))

    def weights(self):
        """{weight name: ndarray}: copies of the current weights."""
        return dict(self._s.weights())

    @property
    def steps(self):
        return self._s.steps()

    def save(self, path):
        """Writes the model with the current weights as a .graphi file (graphi.Session loads it)."""
        self._s.save(_os.fspath(path))


def __getattr__(name):
    """graphi.torch is imported on first use (it imports PyTorch and registers the torch.compile
    backend "graphi"), so `import graphi` works without PyTorch and stays fast."""
    if name == "torch":
        import importlib
        return importlib.import_module(".torch", __name__)
    raise AttributeError("module 'graphi' has no attribute %r" % name)


def __dir__():
    """dir(graphi) lists the lazily imported graphi.torch too, without importing PyTorch."""
    return sorted(set(globals()) | {"torch"})
