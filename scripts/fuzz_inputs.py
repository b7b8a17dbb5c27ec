#!/usr/bin/python3
"""Malformed-input fuzzer for the `graphi` command line.

Builds mutants of seed files (ONNX models from tests/data, .graphi files written by
`graphi model`, and .npy inputs), runs `graphi info` / `graphi run` on each with a timeout and
classifies what happened:

  error      exit 1 or 2 with a message that names the mutant file (good)
  unnamed    exit 1 or 2, but the message does not name the file (weak: reported, not fatal)
  ok         exit 0 (fine for mutations that may keep the file valid, e.g. a flipped weight byte)
  lenient    exit 0 for an .onnx file the ONNX checker refuses (reported for review, not fatal)
  accepted   exit 0 for a mutation that must be rejected (a wrong answer given silently: bad)
  crash      killed by a signal, abort, sanitizer report, uncaught exception or odd exit code (bad)
  huge-alloc an allocation above the limit (sanitizer report or peak RSS above --max-rss-mb) (bad)
  hang       no exit within --timeout seconds (bad)

Deterministic for a given --seed and --count. Bad mutants are kept (with a .txt holding the
command line and stderr) in --keep-dir (default: a fresh temporary directory). Exit status 1 if
any bad outcome was seen, else 0.

  /usr/bin/python3 scripts/fuzz_inputs.py --graphi build/graphi --seed 1 --count 200

Standard library, numpy and onnx only.
"""

import argparse
import concurrent.futures
import copy
import json
import os
import random
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, AttributeProto, numpy_helper

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BAD = ("accepted", "crash", "huge-alloc", "hang")

# --------------------------------------------------------------------------------------------
# Seeds


class Seed:
    def __init__(self, path, kind, dims=(), inputs=()):
        self.path = path          # model file (.onnx / .graphi) or the model an .npy feeds
        self.kind = kind          # "onnx" or "graphi"
        self.dims = list(dims)    # ["batch=3", ...] for --dim
        self.inputs = list(inputs)  # [(input name, .npy path or None, shape, dtype)]
        self.data = open(path, "rb").read()


def manifest_dims(folder):
    dims = {}
    path = os.path.join(folder, "MANIFEST")
    if os.path.exists(path):
        for line in open(path):
            parts = line.split()
            if parts:
                dims[parts[0]] = [p for p in parts[1:] if "=" in p]
    return dims


def onnx_graph_inputs(model):
    inits = {t.name for t in model.graph.initializer}
    out = []
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else -1 for d in tt.shape.dim]
        out.append((vi.name, tt.elem_type, shape))
    return out


QUICK_SEEDS = {
    "mlp", "lstm_2layer_bidir", "cnn_dynamic_batch", "gru_dynamic_batch", "embed_lstm",
    "layernorm_gelu_mlp", "mha_op13", "encoder_layer_op13", "text_cnn_op13",
    "gru_classifier_op13", "gpt_block_op17", "h_gru_lbr1", "h_lstm_clip", "h_lstm_bidi_h33"}


def collect_seeds(work, graphi, quick):
    seeds = []
    folders = ["tests/data/onnx_zoo", "tests/data/onnx_rnn_variants", "tests/data/onnx"]
    for folder in folders:
        full = os.path.join(REPO, folder)
        if not os.path.isdir(full):
            continue
        dims = manifest_dims(full)
        files = sorted(f for f in os.listdir(full) if f.endswith(".onnx"))
        # Small models run fast; the biggest ones add little the small ones do not cover.
        files = [f for f in files if os.path.getsize(os.path.join(full, f)) < 200_000]
        if quick:
            # A fixed list, so the ctest's mutants do not change when fixtures are added.
            files = [f for f in files if f[:-5] in QUICK_SEEDS]
        for f in files:
            path = os.path.join(full, f)
            stem = f[:-5]
            try:
                model = onnx.load(path)
            except Exception:
                continue
            inputs = []
            sym = {}
            for k, (name, elem, shape) in enumerate(onnx_graph_inputs(model)):
                npy = os.path.join(full, "%s.in%d.npy" % (stem, k))
                if os.path.exists(npy):
                    # The fixture's input fixes the symbolic dims (folders without a MANIFEST).
                    real = list(np.load(npy, mmap_mode="r").shape)
                    vi = next(v for v in model.graph.input if v.name == name)
                    for d, r in zip(vi.type.tensor_type.shape.dim, real):
                        if d.dim_param:
                            sym.setdefault(d.dim_param, r)
                    if len(real) == len(shape):
                        shape = real
                inputs.append((name, npy if os.path.exists(npy) else None, shape, elem))
            seed_dims = dims.get(stem) or ["%s=%d" % kv for kv in sorted(sym.items())]
            seeds.append(Seed(path, "onnx", seed_dims, inputs))
    specs = [["lstm", "--input", "4", "--hidden", "8", "--seq", "3"],
             ["gru", "--input", "3", "--hidden", "5", "--seq", "2", "--layers", "2"],
             ["lstm", "--input", "2", "--hidden", "4", "--seq", "2", "--batch", "2"]]
    for k, spec in enumerate(specs):
        path = os.path.join(work, "seed%d.graphi" % k)
        r = subprocess.run([graphi, "model"] + spec + ["--seed", "1", "-o", path],
                           capture_output=True, text=True)
        if r.returncode == 0:
            hdr = read_graphi(open(path, "rb").read())[0]
            inputs = [(i["name"], None, i["shape"], 1) for i in hdr.get("inputs", [])]
            seeds.append(Seed(path, "graphi", [], inputs))
    return seeds


# --------------------------------------------------------------------------------------------
# Byte-level mutations (any file type)


def m_truncate(rng, data):
    cut = rng.choice([0, 1, 4, 8, 16, 31, 32, 33, 64, len(data) // 2, len(data) - 1,
                      rng.randrange(len(data))])
    return data[:max(0, min(cut, len(data) - 1))]


def m_flip(rng, data):
    b = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        i = rng.randrange(len(b))
        b[i] = rng.choice([b[i] ^ (1 << rng.randrange(8)), 0, 0xff, 0x80, rng.randrange(256)])
    return bytes(b)


def m_splice(rng, data):
    i = rng.randrange(len(data))
    j = min(len(data), i + rng.randint(1, 64))
    if rng.random() < 0.5:
        return data[:i] + data[j:]                    # delete a chunk
    return data[:i] + data[i:j] * rng.randint(2, 4) + data[j:]   # duplicate a chunk


BYTE_MUTATORS = [("truncate", m_truncate), ("flip", m_flip), ("splice", m_splice)]

# --------------------------------------------------------------------------------------------
# ONNX-aware mutations: each edits a ModelProto; must_fail says whether the result has to be
# refused (True) or may legitimately run (False).

HUGE_DIMS = [[-1], [-7, 4], [0, -1], [1 << 40], [1 << 31, 1 << 31, 1 << 31], [(1 << 62), 4],
             [(1 << 63) - 1], [3037000500, 3037000500], [1 << 20, 1 << 20, 1 << 20]]


def used_initializers(m):
    used = set()
    for n in m.graph.node:
        used.update(n.input)
    return [t for t in m.graph.initializer if t.name in used]


def o_init_dims(rng, m):
    inits = used_initializers(m)
    if not inits:
        return None
    t = rng.choice(inits)
    choice = rng.randrange(4)
    if choice == 0:
        t.dims.append(rng.choice([2, 3, 7]))          # more elements than data
    elif choice == 1 and len(t.dims) > 0:
        t.dims[rng.randrange(len(t.dims))] += rng.choice([1, 5, 100])
    elif choice == 2:
        del t.dims[:]
        t.dims.extend(rng.choice(HUGE_DIMS))
    else:
        del t.dims[:]
        t.dims.extend([rng.choice([-1, -100, -(1 << 62)])] + [1] * rng.randrange(3))
    return "initializer '%s' dims" % t.name


def o_init_dtype(rng, m):
    inits = used_initializers(m)
    if not inits:
        return None
    t = rng.choice(inits)
    t.data_type = rng.choice([0, 2, 3, 4, 5, 8, 9, 10, 11, 12, 13, 14, 16, 17, 99, 1000])
    return "initializer '%s' data_type" % t.name


def o_init_short_raw(rng, m):
    inits = [t for t in used_initializers(m) if len(t.raw_data) > 0]
    if not inits:
        return None
    t = rng.choice(inits)
    t.raw_data = t.raw_data[:rng.randrange(len(t.raw_data))]
    return "initializer '%s' raw_data" % t.name


def o_init_typed_short(rng, m):
    """Move an initializer from raw_data to a typed field with too few (or too many) values."""
    inits = [t for t in used_initializers(m)
             if t.data_type in (TensorProto.FLOAT, TensorProto.INT64) and len(t.raw_data) >= 8]
    if not inits:
        return None
    t = rng.choice(inits)
    arr = numpy_helper.to_array(t).ravel()
    n = rng.choice([0, max(0, arr.size - 1), arr.size + 3])
    vals = np.resize(arr, n) if arr.size else np.zeros(n, arr.dtype)
    t.raw_data = b""
    if t.data_type == TensorProto.FLOAT:
        t.float_data.extend(vals.astype(np.float32).tolist())
    else:
        t.int64_data.extend(vals.astype(np.int64).tolist())
    return "initializer '%s' typed data count" % t.name


def o_external(rng, m):
    inits = used_initializers(m)
    if not inits:
        return None
    t = rng.choice(inits)
    t.raw_data = b""
    del t.float_data[:]
    del t.int64_data[:]
    t.data_location = TensorProto.EXTERNAL
    loc = rng.choice(["../../etc/passwd", "/etc/passwd", "missing_weights.bin", "",
                      "../" * 12 + "etc/shadow", "weights/../../x.bin"])
    e = t.external_data.add()
    e.key = "location"
    e.value = loc
    if rng.random() < 0.5:
        e = t.external_data.add()
        e.key = "offset"
        e.value = rng.choice(["0", "-5", "99999999999999999999", "abc"])
        e = t.external_data.add()
        e.key = "length"
        e.value = rng.choice(["16", "-1", str(1 << 62)])
    return "initializer '%s' external_data" % t.name


def o_missing_init(rng, m):
    inits = used_initializers(m)
    if not inits:
        return None
    t = rng.choice(inits)
    name = t.name
    m.graph.initializer.remove(t)
    for vi in list(m.graph.input):
        if vi.name == name:
            m.graph.input.remove(vi)
    return "missing initializer '%s'" % name


def all_values(m):
    vals = [vi.name for vi in m.graph.input] + [t.name for t in m.graph.initializer]
    for n in m.graph.node:
        vals.extend(o for o in n.output if o)
    return vals


def o_duplicate(rng, m):
    nodes = list(m.graph.node)
    choice = rng.randrange(3)
    if choice == 0 and len(nodes) >= 2:
        a, b = rng.sample(range(len(nodes)), 2)
        if not nodes[a].output or not nodes[b].output:
            return None
        nodes[b].output[0] = nodes[a].output[0]
        return "duplicate output '%s'" % nodes[a].output[0]
    if choice == 1 and m.graph.initializer:
        t = copy.deepcopy(rng.choice(m.graph.initializer))
        m.graph.initializer.append(t)
        return "duplicate initializer '%s'" % t.name
    if m.graph.input:
        vi = copy.deepcopy(m.graph.input[0])
        m.graph.input.append(vi)
        return "duplicate input '%s'" % vi.name
    return None


def downstream(nodes, i):
    """Indices of the nodes that depend on node i (i included)."""
    produced = set(o for o in nodes[i].output if o)
    out = {i}
    for j in range(i + 1, len(nodes)):
        if any(x in produced for x in nodes[j].input):
            out.add(j)
            produced.update(o for o in nodes[j].output if o)
    return out


def o_cycle(rng, m):
    """Node i reads the output of a node that depends on i: a real cycle."""
    nodes = list(m.graph.node)
    cand = [i for i, n in enumerate(nodes) if n.input]
    if not cand:
        return None
    i = rng.choice(cand)
    later = [j for j in sorted(downstream(nodes, i)) if nodes[j].output and nodes[j].output[0]]
    j = rng.choice(later)
    k = rng.randrange(len(nodes[i].input))
    nodes[i].input[k] = nodes[j].output[0]
    return "cycle: node %d input %d <- node %d" % (i, k, j)


def o_unsorted(rng, m):
    """Nodes out of topological order (ONNX requires order; refusing or sorting are both fine)."""
    if len(m.graph.node) < 2:
        return None
    nodes = list(m.graph.node)
    rng.shuffle(nodes)
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    return "nodes shuffled"


def o_int_values(rng, m):
    """Absurd values in integer constants (Reshape shapes, Slice bounds, Expand/Tile/
    ConstantOfShape sizes, Gather indices, axes...)."""
    tensors = [t for t in m.graph.initializer if t.data_type in (6, 7)]
    for n in m.graph.node:
        if n.op_type == "Constant":
            tensors.extend(a.t for a in n.attribute if a.type == AttributeProto.TENSOR and
                           a.t.data_type in (6, 7))
    tensors = [t for t in tensors if 0 < int(np.prod(t.dims)) <= 64]
    if not tensors:
        return None
    t = rng.choice(tensors)
    arr = numpy_helper.to_array(t).copy().ravel()
    big = [-1, -2, 0, 1 << 31, (1 << 31) - 1, -(1 << 31), 1 << 40, (1 << 62), -(1 << 63),
           (1 << 63) - 1, 3037000500, 99]
    for _ in range(rng.randint(1, max(1, arr.size))):
        v = rng.choice(big)
        if t.data_type == 6:
            v = int(np.clip(v, -(1 << 31), (1 << 31) - 1))
        arr[rng.randrange(arr.size)] = v
    new = numpy_helper.from_array(arr.reshape(tuple(t.dims)), t.name)
    t.CopyFrom(new)
    return "int constant '%s' = %s" % (t.name, arr.tolist()[:6])


def o_undefined(rng, m):
    nodes = [n for n in m.graph.node if n.input]
    choice = rng.randrange(3)
    if choice == 0 and nodes:
        n = rng.choice(nodes)
        n.input[rng.randrange(len(n.input))] = "no_such_value_%d" % rng.randrange(100)
        return "node '%s' undefined input" % n.name
    if choice == 1 and m.graph.output:
        m.graph.output[rng.randrange(len(m.graph.output))].name = "no_such_output"
        return "undefined graph output"
    if nodes:
        n = rng.choice(nodes)
        n.input[rng.randrange(len(n.input))] = ""
        return "node '%s' empty input name" % n.name
    return None


def o_attr_type(rng, m):
    nodes = [n for n in m.graph.node if n.attribute]
    if not nodes:
        return None
    n = rng.choice(nodes)
    a = rng.choice(n.attribute)
    choice = rng.randrange(6)
    if choice == 0:       # declared type disagrees with the field that is set
        a.type = rng.choice([AttributeProto.FLOAT, AttributeProto.INT, AttributeProto.STRING,
                             AttributeProto.TENSOR, AttributeProto.INTS, AttributeProto.GRAPH,
                             AttributeProto.FLOATS, AttributeProto.STRINGS, 0])
    elif choice == 1:     # a different field with a matching type
        name = a.name
        n.attribute.remove(a)
        n.attribute.append(rng.choice([
            onnx.helper.make_attribute(name, "seven"),
            onnx.helper.make_attribute(name, 7.5),
            onnx.helper.make_attribute(name, [1.0, 2.0]),
            onnx.helper.make_attribute(name, [b"a", b"b"]),
            onnx.helper.make_attribute(name, 1 << 62),
            onnx.helper.make_attribute(name, -(1 << 62)),
            onnx.helper.make_attribute(name, [1 << 40, -(1 << 40), 0])]))
    elif choice == 2:     # absurd integer values
        if a.type == AttributeProto.INT:
            a.i = rng.choice([-1, -(1 << 63), (1 << 63) - 1, 1 << 31, 0, 10 ** 12])
        elif a.type == AttributeProto.INTS:
            del a.ints[:]
            a.ints.extend(rng.choice([[], [-1], [1 << 62, 1 << 62], [0] * 9, [-(1 << 63)]]))
        elif a.type == AttributeProto.FLOAT:
            a.f = rng.choice([float("nan"), float("inf"), -1e30, 0.0])
        else:
            return None
    elif choice == 3:     # duplicate attribute
        n.attribute.append(copy.deepcopy(a))
    elif choice == 4:     # attribute removed
        n.attribute.remove(a)
        return "node '%s' (%s) attribute '%s' removed" % (n.name, n.op_type, a.name)
    else:                 # unknown attribute
        n.attribute.append(onnx.helper.make_attribute("bogus_attr", 3))
    return "node '%s' (%s) attribute '%s'" % (n.name, n.op_type, a.name)


def o_empty(rng, m):
    choice = rng.randrange(4)
    if choice == 0:
        del m.graph.node[:]
        return "no nodes"
    if choice == 1:
        del m.graph.output[:]
        return "no outputs"
    if choice == 2:
        m.graph.Clear()
        return "empty graph"
    m.ClearField("graph")
    return "no graph"


def o_opset(rng, m):
    choice = rng.randrange(5)
    if choice == 0:
        del m.opset_import[:]
        return "no opset_import"
    if choice == 1:
        for o in m.opset_import:
            o.version = rng.choice([0, 1, 5, 99, 1 << 40, -3])
        return "absurd opset version"
    if choice == 2:
        for o in m.opset_import:
            o.domain = rng.choice(["com.example", "ai.onnx.ml", "ai.onnx"])
        return "opset domain"
    if choice == 3:
        m.ir_version = rng.choice([0, 1, 2, 99, -1])
        return "ir_version"
    o = m.opset_import.add()
    o.domain = ""
    o.version = 13
    return "duplicate default-domain opset"


def o_input_type(rng, m):
    inits = {t.name for t in m.graph.initializer}
    ins = [vi for vi in m.graph.input if vi.name not in inits]
    if not ins:
        return None
    vi = rng.choice(ins)
    tt = vi.type.tensor_type
    choice = rng.randrange(5)
    if choice == 0:
        tt.elem_type = rng.choice([0, 2, 8, 9, 10, 11, 14, 16, 99])
    elif choice == 1 and len(tt.shape.dim):
        d = tt.shape.dim[rng.randrange(len(tt.shape.dim))]
        d.dim_value = rng.choice([0, -1, -(1 << 40), 1 << 40, 1 << 62, (1 << 63) - 1])
    elif choice == 2:
        tt.shape.dim.add().dim_value = rng.choice([1, 2, 1 << 33])
    elif choice == 3:
        tt.ClearField("shape")
    else:
        vi.type.ClearField("tensor_type")
        vi.type.sequence_type.elem_type.tensor_type.elem_type = 1
    return "input '%s' type" % vi.name


def o_node(rng, m):
    if not m.graph.node:
        return None
    n = rng.choice(m.graph.node)
    choice = rng.randrange(6)
    if choice == 0:
        n.op_type = rng.choice(["NoSuchOp", "", "Loop", "If", "lstm"])
    elif choice == 1:
        del n.output[:]
    elif choice == 2:
        n.input.extend(n.input[:1] * rng.randint(1, 6))   # too many inputs
    elif choice == 3:
        del n.input[:]
    elif choice == 4:
        n.output.extend(["extra_out_%d" % k for k in range(rng.randint(1, 4))])
    else:
        n.domain = rng.choice(["com.microsoft", "bogus", "ai.onnx"])
    return "node '%s' (%s)" % (n.name, n.op_type)


def o_value_info(rng, m):
    vis = list(m.graph.value_info) + list(m.graph.output)
    if not vis:
        return None
    vi = rng.choice(vis)
    tt = vi.type.tensor_type
    if len(tt.shape.dim) and rng.random() < 0.7:
        tt.shape.dim[rng.randrange(len(tt.shape.dim))].dim_value = rng.choice(
            [-1, 0, 1 << 40, 12345])
    else:
        tt.elem_type = rng.choice([0, 7, 11, 99])
    return "value_info '%s'" % vi.name


def o_constant(rng, m):
    nodes = [n for n in m.graph.node if n.op_type == "Constant"]
    if not nodes:
        return None
    n = rng.choice(nodes)
    for a in n.attribute:
        if a.type == AttributeProto.TENSOR:
            t = a.t
            choice = rng.randrange(3)
            if choice == 0:
                t.dims.append(rng.choice([3, 1 << 40, -2]))
            elif choice == 1:
                t.data_type = rng.choice([0, 8, 11, 99])
            else:
                t.raw_data = t.raw_data[:max(0, len(t.raw_data) - 1)]
                del t.int64_data[:]
                del t.float_data[:]
            return "Constant '%s' value" % n.name
    return None


def o_float_values(rng, m):
    """Absurd values in small float constants (Resize/Upsample scales, Clip bounds, OneHot
    depth, epsilons, Pad values...)."""
    tensors = [t for t in m.graph.initializer if t.data_type == 1]
    for n in m.graph.node:
        if n.op_type == "Constant":
            tensors.extend(a.t for a in n.attribute if a.type == AttributeProto.TENSOR and
                           a.t.data_type == 1)
    tensors = [t for t in tensors if 0 < int(np.prod(t.dims)) <= 8]
    if not tensors:
        return None
    t = rng.choice(tensors)
    arr = numpy_helper.to_array(t).copy().ravel()
    for _ in range(rng.randint(1, arr.size)):
        arr[rng.randrange(arr.size)] = rng.choice([np.nan, np.inf, -np.inf, 1e30, -1e30, 0.0,
                                                   -1.0, 1e9, 2.0 ** 31, 1e-30])
    t.CopyFrom(numpy_helper.from_array(arr.reshape(tuple(t.dims)).astype(np.float32), t.name))
    return "float constant '%s' = %s" % (t.name, arr.tolist()[:4])


# (name, function, must_fail)
ONNX_MUTATORS = [
    ("onnx:init-dims", o_init_dims, True),
    ("onnx:init-dtype", o_init_dtype, False),  # may still be a valid (e.g. int32) tensor
    ("onnx:short-raw", o_init_short_raw, True),
    ("onnx:typed-count", o_init_typed_short, False),   # n may equal the element count
    ("onnx:external", o_external, True),
    ("onnx:missing-init", o_missing_init, False),  # may become a graph input the run generates
    ("onnx:duplicate", o_duplicate, False),
    ("onnx:cycle", o_cycle, True),
    ("onnx:unsorted", o_unsorted, False),
    ("onnx:int-values", o_int_values, False),
    ("onnx:int-values", o_int_values, False),
    ("onnx:float-values", o_float_values, False),
    ("onnx:undefined", o_undefined, False),        # an optional input may become ""
    ("onnx:attr-type", o_attr_type, False),
    ("onnx:empty", o_empty, True),
    ("onnx:opset", o_opset, False),
    ("onnx:input-type", o_input_type, False),
    ("onnx:node", o_node, False),
    ("onnx:value-info", o_value_info, False),
    ("onnx:constant", o_constant, True),
]

# --------------------------------------------------------------------------------------------
# .graphi-aware mutations: edit the JSON header and/or weight section, rewrite the preamble.


def read_graphi(data):
    h = struct.unpack_from("<Q", data, 16)[0]
    w = (32 + h + 63) // 64 * 64
    return json.loads(data[32:32 + h].decode()), data[w:]


def write_graphi(header, weights, version=1, flags=0, h_override=None, l_override=None):
    text = json.dumps(header).encode()
    h = len(text) if h_override is None else h_override
    l_ = len(weights) if l_override is None else l_override
    pre = b"\x89GRAPHI\n" + struct.pack("<IIQQ", version, flags, h, l_)
    pad = (-(32 + len(text))) % 64
    return pre + text + b"\0" * pad + weights


def g_mutate(rng, data):
    hdr, weights = read_graphi(data)
    consts = hdr.get("constants", [])
    nodes = hdr.get("nodes", [])
    choice = rng.randrange(13)
    must_fail = True
    if choice == 0 and consts:
        c = rng.choice(consts)
        c["shape"] = rng.choice(HUGE_DIMS + [[7, 7, 7], []])
        what = "constant '%s' shape" % c["name"]
    elif choice == 1 and consts:
        c = rng.choice(consts)
        c["offset"] = rng.choice([1, 3, len(weights), len(weights) + 64, 1 << 62, -64,
                                  (1 << 64) - 64])
        what = "constant '%s' offset" % c["name"]
    elif choice == 2 and consts:
        c = rng.choice(consts)
        c["byte_length"] = rng.choice([0, 4, c.get("byte_length", 0) + 4, 1 << 62, -4])
        what = "constant '%s' byte_length" % c["name"]
    elif choice == 3 and consts:
        c = rng.choice(consts)
        c["dtype"] = rng.choice(["float64", "bool", "int8", "", 7, None, "int32", "int64"])
        what = "constant '%s' dtype" % c["name"]
        must_fail = False
    elif choice == 4 and nodes:
        n = rng.choice(nodes)
        if n["inputs"]:
            n["inputs"][rng.randrange(len(n["inputs"]))] = rng.choice(
                ["nope", "", n["outputs"][0] if n["outputs"] else "nope"])
        what = "node '%s' inputs" % n["name"]
        must_fail = False
    elif choice == 5 and len(nodes) >= 2:
        a, b = rng.sample(nodes, 2)
        if a["outputs"] and b["outputs"]:
            b["outputs"][0] = a["outputs"][0]
        what = "duplicate output"
    elif choice == 6 and nodes:
        n = rng.choice(nodes)
        attrs = n.get("attributes") or {}
        if attrs:
            k = rng.choice(sorted(attrs))
            attrs[k] = rng.choice([{"type": "int", "value": "x"}, {"type": "ints", "value": 3},
                                   {"type": "float", "value": [1]}, {"type": "bogus", "value": 1},
                                   {"type": "int", "value": 1 << 70}, {"value": 1},
                                   {"type": "int", "value": -1},
                                   {"type": "ints", "value": [1 << 62, -1]}])
        else:
            n["attributes"] = {"axis": {"type": "int", "value": 99}}
        what = "node '%s' attributes" % n["name"]
        must_fail = False
    elif choice == 7 and nodes:
        n = rng.choice(nodes)
        n["op"] = rng.choice(["NoSuchOp", "", 5, None])
        what = "node '%s' op" % n["name"]
    elif choice == 8 and hdr.get("inputs"):
        i = rng.choice(hdr["inputs"])
        i["shape"] = rng.choice(HUGE_DIMS + [[1.5], ["a"], None, []])
        what = "input '%s' shape" % i["name"]
        must_fail = False
    elif choice == 9:
        hdr[rng.choice(["nodes", "constants", "inputs", "outputs"])] = rng.choice(
            [[], {}, None, 3, [None], [{}]])
        what = "top-level list"
        must_fail = False
    elif choice == 10:
        # The preamble lies about the lengths or version.
        return write_graphi(hdr, weights, version=rng.choice([0, 1, 2, 1 << 31]),
                            flags=rng.choice([0, 1]),
                            h_override=rng.choice([None, 0, 1 << 62, (1 << 64) - 1]),
                            l_override=rng.choice([None, 0, 1 << 62, len(weights) + 1])), \
            "preamble", False
    elif choice == 11:
        hdr["outputs"] = rng.choice([["no_such_value"], [""], [], ["x", "x"]])
        what = "outputs"
        must_fail = False
    else:
        # Deep nesting / huge numbers in the JSON itself.
        text = json.dumps(hdr).encode()
        text = text.replace(b'"metadata": {', b'"metadata": {"deep": ' + b"[" * 5000 +
                            b"]" * 5000 + b", ", 1) if rng.random() < 0.5 else \
            text.replace(b"[", b"[1e999999, ", 1)
        pre = b"\x89GRAPHI\n" + struct.pack("<IIQQ", 1, 0, len(text), len(weights))
        return pre + text + b"\0" * ((-(32 + len(text))) % 64) + weights, "json", True
    return write_graphi(hdr, weights), what, must_fail


# --------------------------------------------------------------------------------------------
# .npy mutations: build the file from parts.


def npy_bytes(header, payload, magic=b"\x93NUMPY", version=(1, 0), hlen=None):
    h = header.encode("latin1")
    pad = 64 - (len(magic) + 2 + 2 + len(h) + 1) % 64
    h = h + b" " * (pad % 64) + b"\n"
    if hlen is None:
        hlen = len(h)
    return magic + bytes(version) + struct.pack("<H", hlen & 0xffff) + h + payload


def n_mutate(rng, shape, elem):
    """A mutant .npy for an input of `shape` (ints, -1 unknown) and ONNX elem type."""
    shape = [d if isinstance(d, int) and d > 0 else 2 for d in shape]
    dt = {1: "<f4", 6: "<i4", 7: "<i8"}.get(elem, "<f4")
    n = int(np.prod(shape)) if shape else 1
    good = np.zeros(n, np.dtype(dt)).tobytes()
    sh = "(" + "".join("%d, " % d for d in shape) + ")" if len(shape) != 1 else "(%d,)" % shape[0]
    choice = rng.randrange(14)
    hd = lambda d, fo, s: "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (d, fo, s)
    if choice == 0:
        return npy_bytes(hd(rng.choice(["<f8", ">f4", "|b1", "<i2", "<c8", "|O", "<U3", "<f2",
                                        "|u1", "<u8", "zz"]), "False", sh), good), \
            "dtype", True
    if choice == 1:
        bad = list(shape) + [rng.choice([2, 3])]
        return npy_bytes(hd(dt, "False", str(tuple(bad))), good * 3), "shape", True
    if choice == 2:
        fo = shape[::-1] if len(shape) > 1 and shape[0] != shape[-1] else shape
        return npy_bytes(hd(dt, "True", sh), good), "fortran", len(shape) > 1
    if choice == 3:
        return npy_bytes(hd(dt, "False", sh), good[:rng.randrange(max(1, len(good)))]), \
            "truncated data", True
    if choice == 4:
        return npy_bytes(hd(dt, "False", sh), good + b"\0" * rng.choice([1, 4, 64])), \
            "trailing data", True
    if choice == 5:
        return npy_bytes(hd(dt, "False", rng.choice(["(-1, 4)", "(1099511627776, 1099511627776)",
                                                     "(4294967296, 4294967296, 4)",
                                                     "(9223372036854775807,)", "(2.5,)",
                                                     "('a',)", "((1,2),)", "(,)"])), good), \
            "bogus shape", True
    if choice == 6:
        return npy_bytes(hd(dt, "False", sh), good, magic=rng.choice([b"\x93NUMPZ", b"NUMPY!",
                                                                      b""])), "magic", True
    if choice == 7:
        return npy_bytes(hd(dt, "False", sh), good, version=rng.choice([(0, 0), (9, 9), (4, 0)])), \
            "version", True
    if choice == 8:
        return npy_bytes(hd(dt, "False", sh), good, hlen=rng.choice([0, 1, 0xffff, 7])), \
            "header length", True
    if choice == 9:
        return npy_bytes(rng.choice(["[1, 2, 3]", "{'descr': '<f4'", "{}", "",
                                     "{'descr': '<f4', 'shape': (2,)}",
                                     "{'descr': '<f4', 'fortran_order': 'no', 'shape': (2,)}",
                                     "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), "
                                     "'descr': '<f8'}",
                                     "{'descr': __import__('os'), 'fortran_order': False}",
                                     "\x00\xff{'descr'", "{" * 3000]), good), \
            "bogus header", True
    if choice == 10:
        data = npy_bytes(hd(dt, "False", sh), good)
        return data[:rng.randrange(len(data))], "truncated file", True
    if choice == 11:
        # Version 2.0 with a 4-byte header length that lies.
        h = hd(dt, "False", sh).encode() + b"\n"
        return b"\x93NUMPY\x02\x00" + struct.pack("<I", rng.choice([0xffffffff, 1 << 30,
                                                                     len(h) + 1000])) + h + good, \
            "v2 header length", True
    if choice == 12:
        return npy_bytes(hd(dt, "False", sh).replace(" ", "  ") , good), "whitespace", False
    return npy_bytes(hd(dt, "False", "()"), good[:np.dtype(dt).itemsize]), "scalar", \
        shape != []


def cli_mutant(rng, s, work):
    """(graphi arguments, description, must_fail) of a wrong command line on seed s."""
    dims = sum((["--dim", d] for d in s.dims), [])
    choice = rng.randrange(5)
    if choice == 0 and s.dims:
        name = rng.choice(s.dims).split("=")[0]
        v = rng.choice(["0", "-1", "1099511627776", "99999999999999999999", "abc", "", "3.5",
                        "9223372036854775807"])
        return ["run", s.path, "--dim", "%s=%s" % (name, v)] + \
            [a for d in s.dims if not d.startswith(name + "=") for a in ("--dim", d)], \
            "dim %s" % v, True, name
    if choice == 1:
        return ["run", s.path, "--dim", "no_such_dim=2"] + dims, "unknown dim", \
            s.kind == "onnx", "no_such_dim"
    name = s.inputs[0][0] if s.inputs else "x"
    if choice == 2:
        src = rng.choice(["/dev/zero", "/dev/null", "/dev/urandom", work, "/nonexistent.npy"])
        return ["run", s.path, "--input", "%s=%s" % (name, src)] + dims, "input " + src, True, \
            src
    if choice == 3:
        return ["run", s.path, "--input", "no_such_input=/dev/null"] + dims, "unknown input", \
            True, "no_such_input"
    opt = rng.choice(["--threads", "--executors", "--iterations"])
    return [rng.choice(["run", "info"]), s.path, opt,
            rng.choice(["0", "-1", "99999999999", "x"])] + dims, "bad option value", False, opt


# --------------------------------------------------------------------------------------------
# Running


class Case:
    def __init__(self, ident, mutator, what, path, args, must_fail, seed_path):
        self.ident, self.mutator, self.what, self.path = ident, mutator, what, path
        self.args, self.must_fail, self.seed_path = args, must_fail, seed_path
        self.outcome, self.detail, self.stderr, self.rc, self.rss_mb, self.secs = \
            None, "", "", None, 0, 0.0
        # What an error message must mention: the mutant file, or for a wrong command line
        # the offending option / input file.
        self.token = os.path.basename(path)


def make_cases(rng, seeds, count, work):
    cases = []
    model_seeds = [s for s in seeds if s.kind in ("onnx", "graphi")]
    npy_seeds = [s for s in seeds if s.inputs and all(d > 0 for d in s.inputs[0][2])]
    for k in range(count):
        r = rng.random()
        if r < 0.12 and npy_seeds:
            s = rng.choice(npy_seeds)
            name, _, shape, elem = s.inputs[0]
            data, what, must_fail = n_mutate(rng, shape, elem)
            path = os.path.join(work, "m%04d.npy" % k)
            open(path, "wb").write(data)
            args = ["run", s.path, "--input", "%s=%s" % (name, path)] + \
                sum((["--dim", d] for d in s.dims), [])
            cases.append(Case(k, "npy:" + what, what, path, args, must_fail, s.path))
            continue
        if r < 0.16:
            # Wrong command lines on valid models: bogus --dim values, inputs that are devices,
            # directories, missing files or another input's data.
            s = rng.choice(model_seeds)
            args, what, must_fail, token = cli_mutant(rng, s, work)
            c = Case(k, "cli:" + what, what, s.path, args, must_fail, s.path)
            c.token = token
            cases.append(c)
            continue
        # .graphi seeds are few (generated): give them a quarter of the model mutants.
        graphi_seeds = [s for s in model_seeds if s.kind == "graphi"]
        if graphi_seeds and rng.random() < 0.25:
            s = rng.choice(graphi_seeds)
        else:
            s = rng.choice(model_seeds)
        ext = ".onnx" if s.kind == "onnx" else ".graphi"
        must_fail = False
        if r < 0.45:
            name, fn = rng.choice(BYTE_MUTATORS)
            data = fn(rng, s.data)
            mut, what = "bytes:" + name, name
            must_fail = name == "truncate"
        elif s.kind == "onnx":
            model = onnx.ModelProto()
            model.ParseFromString(s.data)
            for _ in range(8):
                name, fn, must_fail = rng.choice(ONNX_MUTATORS)
                try:
                    what = fn(rng, model)
                except (ValueError, TypeError, IndexError):  # protobuf refused the edit
                    what = None
                if what:
                    break
            if not what:
                continue
            data, mut = model.SerializeToString(), name
        else:
            data, what, must_fail = g_mutate(rng, s.data)
            mut = "graphi:" + what.split("'")[0].strip()
        path = os.path.join(work, "m%04d%s" % (k, ext))
        open(path, "wb").write(data)
        dims = sum((["--dim", d] for d in s.dims), [])
        # Run half of them, `info` the rest: both load and validate; run also executes.
        sub = "run" if rng.random() < 0.5 else "info"
        extra = []
        if sub == "run" and rng.random() < 0.25:  # the parallel engine, and the unfused graph
            extra = rng.choice([["--executors", "2", "--no-pin"], ["--threads", "2", "--no-pin"],
                                ["--no-fuse"]])
        cases.append(Case(k, mut, what, path, [sub, path] + dims + extra, must_fail, s.path))
    return cases


def run_case(graphi, case, timeout, max_rss_mb, env):
    args = [graphi] + case.args
    if case.args[0] == "run":
        args += ["--iterations", "1", "--warmup", "0"]
    out_f = tempfile.TemporaryFile()
    err_f = tempfile.TemporaryFile()

    def limits():
        # Without a sanitizer an address-space cap turns a runaway allocation into bad_alloc;
        # with ASan (which reserves terabytes of shadow) it is left to max_allocation_size_mb.
        if not env.get("GRAPHI_FUZZ_ASAN"):
            cap = (max_rss_mb + 1024) << 20
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    t0 = time.monotonic()
    p = subprocess.Popen(args, stdout=out_f, stderr=err_f, env=env, preexec_fn=limits,
                         start_new_session=True)
    status, rusage, timed_out = None, None, False
    while True:
        pid, st, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            status, rusage = st, ru
            break
        if time.monotonic() - t0 > timeout:
            os.killpg(p.pid, 9)
            _, status, rusage = os.wait4(p.pid, 0)
            timed_out = True
            break
        time.sleep(0.005)
    p.returncode = 0  # reaped by wait4; keep Popen from waiting again
    case.secs = time.monotonic() - t0
    err_f.seek(0)
    case.stderr = err_f.read().decode("utf-8", "replace")
    case.rss_mb = rusage.ru_maxrss // 1024
    if os.WIFSIGNALED(status):
        case.rc = -os.WTERMSIG(status)
    else:
        case.rc = os.WEXITSTATUS(status)
    classify(case, timed_out, max_rss_mb)
    return case


def classify(case, timed_out, max_rss_mb):
    err = case.stderr
    base = case.token
    if timed_out:
        case.outcome, case.detail = "hang", "timeout"
    elif "allocation-size-too-big" in err or "requested allocation size" in err or \
            "out of memory" in err.lower() and "Sanitizer" in err or \
            case.rss_mb > max_rss_mb or "bad_alloc" in err:
        case.outcome, case.detail = "huge-alloc", "peak RSS %d MiB" % case.rss_mb
    elif case.rc < 0:
        case.outcome, case.detail = "crash", "signal %d" % -case.rc
    elif "Sanitizer" in err or "runtime error:" in err:
        line = next((l for l in err.splitlines() if "Sanitizer" in l or "runtime error" in l), "")
        case.outcome, case.detail = "crash", line.strip()[:200]
    elif "terminate called" in err or "uncaught" in err.lower():
        case.outcome, case.detail = "crash", "uncaught exception"
    elif case.rc in (1, 2):
        if base in err or os.path.basename(case.seed_path) in err and case.mutator[:4] in (
                "cli:", "npy:"):
            case.outcome = "error"
        else:
            case.outcome = "unnamed"
            lines = [l for l in err.strip().splitlines() if "error" in l] or \
                err.strip().splitlines() or [""]
            case.detail = lines[-1][:200]
    elif case.rc == 0:
        if case.must_fail:
            case.outcome, case.detail = "accepted", "exit 0 for a mutation that must be refused"
        else:
            why = onnx_checker_complaint(case.path)
            if why:
                # graphi ran a model the ONNX checker refuses: often harmless leniency (an
                # unused attribute, nodes out of order), sometimes a silently wrong answer.
                case.outcome, case.detail = "lenient", why
            else:
                case.outcome = "ok"
    else:
        case.outcome, case.detail = "crash", "exit code %d" % case.rc


def onnx_checker_complaint(path):
    """The ONNX checker's (and strict shape inference's) objection to an .onnx file, or ""."""
    if not path.endswith(".onnx"):
        return ""
    try:
        m = onnx.load(path)
        onnx.checker.check_model(m)
        onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
    except Exception as e:  # the checker raises several exception types
        return "onnx checker: " + " ".join(str(e).split())[:160]
    return ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graphi", default=os.path.join(REPO, "build", "graphi"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=500)
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per graphi call")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--max-rss-mb", type=int, default=2048)
    ap.add_argument("--keep-dir", help="where bad mutants go (default: a new temp dir)")
    ap.add_argument("--quick", action="store_true", help="a few seed models only (for ctest)")
    ap.add_argument("--strict", action="store_true",
                    help="also fail on errors that do not name the file")
    ap.add_argument("--verbose", "-v", action="store_true")
    ap.add_argument("--show-errors", type=int, default=0, metavar="N",
                    help="print the last stderr line of N random refused mutants")
    args = ap.parse_args()
    graphi = os.path.abspath(args.graphi)
    if not os.access(graphi, os.X_OK):
        sys.exit("fuzz_inputs: no graphi executable at %s (use --graphi)" % graphi)

    work = tempfile.mkdtemp(prefix="graphi_fuzz_")
    keep = args.keep_dir or tempfile.mkdtemp(prefix="graphi_fuzz_bad_")
    os.makedirs(keep, exist_ok=True)
    env = dict(os.environ)
    env.setdefault("GRAPHI_RNN_SCHEDULE_SEARCH", "0")
    env["GRAPHI_CACHE_DIR"] = os.path.join(work, "cache")
    env["OMP_NUM_THREADS"] = "1"
    asan = b"__asan_init" in open(graphi, "rb").read()
    if asan:
        env["GRAPHI_FUZZ_ASAN"] = "1"
        env["ASAN_OPTIONS"] = ("detect_leaks=0:abort_on_error=0:exitcode=86:"
                               "allocator_may_return_null=0:max_allocation_size_mb=%d:"
                               "detect_odr_violation=0" % args.max_rss_mb)
        env["UBSAN_OPTIONS"] = "halt_on_error=1:exitcode=87:print_stacktrace=1"

    rng = random.Random(args.seed)
    seeds = collect_seeds(work, graphi, args.quick)
    cases = make_cases(rng, seeds, args.count, work)
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        done = list(pool.map(lambda c: run_case(graphi, c, args.timeout, args.max_rss_mb, env),
                             cases))
    elapsed = time.monotonic() - t0

    by_outcome, by_mut = {}, {}
    for c in done:
        by_outcome[c.outcome] = by_outcome.get(c.outcome, 0) + 1
        by_mut.setdefault(c.mutator, {}).setdefault(c.outcome, 0)
        by_mut[c.mutator][c.outcome] += 1
    bad = [c for c in done if c.outcome in BAD or (args.strict and c.outcome == "unnamed")]
    for c in done:
        if c.outcome in BAD or c.outcome in ("unnamed", "lenient"):
            dst = os.path.join(keep, os.path.basename(c.path))
            shutil.copy(c.path, dst)
            with open(dst + ".txt", "w") as f:
                f.write("outcome: %s (%s)\nmutator: %s: %s\nseed: %s\ncommand: graphi %s\n"
                        "exit: %s  peak RSS: %d MiB  %.1f s\n\n%s" %
                        (c.outcome, c.detail, c.mutator, c.what, c.seed_path,
                         " ".join(c.args), c.rc, c.rss_mb, c.secs, c.stderr[-20000:]))
    print("fuzz_inputs: %d mutants of %d seeds, seed %d, %s%s, %.1f s" %
          (len(done), len(seeds), args.seed, graphi, " (ASan/UBSan)" if asan else "", elapsed))
    print("outcomes: " + ", ".join("%s %d" % (k, v) for k, v in sorted(by_outcome.items())))
    if args.verbose:
        for m in sorted(by_mut):
            print("  %-22s %s" % (m, ", ".join("%s %d" % kv for kv in sorted(by_mut[m].items()))))
    for c in done:
        if c.outcome in BAD or c.outcome == "unnamed" or \
                (args.verbose and c.outcome == "lenient"):
            print("  %-10s %-20s %-40s %s" % (c.outcome, c.mutator, c.what[:40], c.detail))
    errs = [c for c in done if c.outcome == "error"]
    for c in random.Random(0).sample(errs, min(args.show_errors, len(errs))):
        print("  [%s] %s" % (c.mutator, (c.stderr.strip().splitlines() or [""])[-1][:300]))
    if bad or any(c.outcome == "unnamed" for c in done):
        print("kept in %s (each mutant with a .txt: command, exit, stderr)" % keep)
    else:
        shutil.rmtree(keep, ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
