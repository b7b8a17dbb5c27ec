"""Reads a .graphi file's constants and metadata (graph/FORMAT.md) with numpy only, so the
training benchmark's peers (PyTorch in .venv, TensorFlow in .venv-tf) start from the exact
weights `graphi model` generated."""
import json
import struct

import numpy as np

_DTYPES = {"float32": np.float32, "float64": np.float64, "int64": np.int64, "int32": np.int32,
           "bool": np.bool_, "uint8": np.uint8, "int8": np.int8, "float16": np.float16}


def read_graphi(path):
    """Returns (constants: {name: ndarray}, header: dict)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89GRAPHI\n":
        raise ValueError(f"{path}: not a .graphi file (bad magic)")
    version, flags, hlen, wlen = struct.unpack("<IIQQ", data[8:32])
    if version != 1 or flags != 0:
        raise ValueError(f"{path}: unsupported .graphi version {version} flags {flags}")
    header = json.loads(data[32:32 + hlen].decode("utf-8"))
    base = (32 + hlen + 63) // 64 * 64
    consts = {}
    for c in header["constants"]:
        dt = np.dtype(_DTYPES[c["dtype"]]).newbyteorder("<")
        start = base + c["offset"]
        arr = np.frombuffer(data[start:start + c["byte_length"]], dtype=dt)
        consts[c["name"]] = arr.reshape(c["shape"]).astype(dt.newbyteorder("="))
    return consts, header


def model_kind(header):
    return header.get("metadata", {}).get("model", "")


def dims(name, weights, batch):
    """The sizes of the evaluation model `name` (models/eval_models.h) from its weights."""
    d = {"name": name, "classes": weights["fc/b"].shape[0]}
    if name in ("lstm", "phased-lstm"):
        d["layers"] = sum(1 for k in weights if k.endswith("/R"))
        d["hidden"] = weights["l0/R"].shape[0]
        d["seq"], d["batch"] = batch["x"].shape[0], batch["x"].shape[1]
    else:
        d["batch"], d["image"] = batch["x"].shape[0], batch["x"].shape[2]
        if name == "pathnet":
            d["filters"] = weights["l0/m0/conv/W"].shape[0]
        else:
            d["width"] = weights["stem/conv1/W"].shape[0] // 64
    return d


# GoogleNet's inception blocks (k, l, m, n, p, q, pool_after), as models/googlenet.cpp.
GOOGLENET_BLOCKS = [
    (64, 96, 128, 16, 32, 32, False), (128, 128, 192, 32, 96, 64, True),
    (192, 96, 208, 16, 48, 64, False), (160, 112, 224, 24, 64, 64, False),
    (128, 128, 256, 24, 64, 64, False), (112, 144, 288, 32, 64, 64, False),
    (256, 160, 320, 32, 128, 128, True), (256, 160, 320, 32, 128, 128, False),
    (384, 192, 384, 48, 128, 128, False),
]
