"""PyTorch front end: run an nn.Module on graphi.

    import torch, graphi.torch
    f = graphi.torch.compile(model, (torch.randn(5, 4, 8),), executors=2, scheduler="cpf")
    y, h, c = f(torch.randn(5, 4, 8))

compile() exports the module with torch.onnx.export (opset 17, eval mode, no dynamic axes: the
input shapes are fixed to those of example_inputs) to a temporary file, opens a graphi.Session
on it and deletes the file. PyTorch is imported only when compile() is called, so `import graphi`
works without it.
"""
import os
import shutil
import tempfile

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


class CompiledModule:
    """A module compiled for graphi: call it with torch tensors (same shapes and dtypes as the
    example inputs); returns a torch tensor, or a flat tuple of tensors when the module has
    several outputs (nested outputs such as LSTM's (y, (h, c)) come back flat: (y, h, c))."""

    def __init__(self, session, input_names, output_names):
        self.session = session
        self.input_names = input_names    # names given to the exported inputs, in order
        self.output_names = output_names

    def __call__(self, *args):
        import torch
        tensors = _flatten(args)
        if len(tensors) != len(self.input_names):
            raise TypeError("compiled module: %d inputs given, it was compiled with %d" %
                            (len(tensors), len(self.input_names)))
        used = {t.name for t in self.session.inputs}  # the exporter drops unused inputs
        feed = {}
        for name, t in zip(self.input_names, tensors):
            if name not in used:
                continue
            if not isinstance(t, torch.Tensor):
                raise TypeError("compiled module: input %s is a %s, not a torch.Tensor" %
                                (name, type(t).__name__))
            feed[name] = t.detach().cpu().numpy()  # shares memory; graphi only reads it
        out = self.session.run(feed)
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
    from . import Session

    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    example_inputs = tuple(example_inputs)
    flat = _flatten(example_inputs)
    input_names = ["input_%d" % i for i in range(len(flat))]
    with torch.no_grad():
        n_out = len(_flatten(module(*example_inputs)))
    output_names = ["output_%d" % i for i in range(n_out)]
    tmp = tempfile.mkdtemp(prefix="graphi_torch_")
    try:
        path = os.path.join(tmp, "model.onnx")
        # Under no_grad, nn.MultiheadAttention and nn.TransformerEncoderLayer take PyTorch's fused
        # fast path, which torch.onnx.export cannot export (aten::_native_multi_head_attention).
        with torch.enable_grad():
            torch.onnx.export(module, example_inputs, path, input_names=input_names,
                              output_names=output_names, opset_version=ONNX_OPSET)
        session = Session(path, **session_options)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return CompiledModule(session, input_names, output_names)
