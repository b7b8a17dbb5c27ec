"""PyTorch front end: run an nn.Module on graphi.

    import torch, graphi.torch
    f = graphi.torch.compile(model, (torch.randn(5, 4, 8),), executors=2, scheduler="cpf")
    y, h, c = f(torch.randn(5, 4, 8))

compile() exports the module with torch.onnx.export (opset 17, eval mode, no dynamic axes: the
input shapes are fixed to those of example_inputs) to a temporary file, opens a graphi.Session
on it and deletes the file. PyTorch is imported only when compile() is called, so `import graphi`
works without it.
"""
import inspect as _inspect
import os as _os
import shutil as _shutil
import tempfile as _tempfile
import warnings as _warnings

# 17: LayerNormalization is one op, and scatter_add keeps duplicate indices (at 14 PyTorch 1.13
# exports it as ScatterElements into zeros plus Add, which drops them).
ONNX_OPSET = 17


def _flatten(x):
    """Tensors of a (possibly nested) tuple/list, in order (how torch.onnx.export flattens)."""
    if isinstance(x, (tuple, list)):
        out = []
        for v in x:
            out.extend(_flatten(v))
        return out
    return [x]


def _input_names(module, example_inputs):
    """Names of the flattened example inputs, from the parameters of module.forward: "x", or
    "hx_0", "hx_1" for the tensors of a tuple argument; "arg0", ... where forward has *args."""
    try:
        params = [p for p in _inspect.signature(module.forward).parameters.values()
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
    from . import Error
    err = Error(message)
    err.code = code
    return err


def _retitled(err, tmp_path, label):
    """graphi.Error `err` with the temporary file's path replaced by `label` (the file is gone
    by the time the user reads the message)."""
    from . import Error
    new = Error(str(err).replace(tmp_path, label))
    new.code = getattr(err, "code", "internal")
    return new


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
        import torch
        tensors = _flatten(args)
        if len(tensors) != len(self.input_names):
            raise TypeError("compiled module: %d inputs given, it was compiled with %d" %
                            (len(tensors), len(self.input_names)))
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
        except Exception as e:  # graphi.Error: name the module, not the deleted file
            from . import Error
            if isinstance(e, Error) and self._tmp_path:
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
    import torch
    from . import Error, Session

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
    tmp = _tempfile.mkdtemp(prefix="graphi_torch_")
    path = _os.path.join(tmp, "model.onnx")
    try:
        # Under no_grad, nn.MultiheadAttention and nn.TransformerEncoderLayer take PyTorch's fused
        # fast path, which torch.onnx.export cannot export (aten::_native_multi_head_attention).
        # The exporter's UserWarnings (batch size of LSTM exports, prim::Constant shape
        # inference) and the tracer's warnings are about the temporary ONNX file, not the user's
        # module: not shown.
        with torch.enable_grad(), _warnings.catch_warnings():
            _warnings.simplefilter("ignore", UserWarning)
            _warnings.simplefilter("ignore", torch.jit.TracerWarning)  # tracing forward()
            torch.onnx.export(module, example_inputs, path, input_names=input_names,
                              output_names=output_names, opset_version=ONNX_OPSET)
        try:
            session = Session(path, **session_options)
        except Error as e:
            raise _retitled(e, path, label) from None
    finally:
        _shutil.rmtree(tmp, ignore_errors=True)
    return CompiledModule(session, input_names, output_names, label, path)
