#!/usr/bin/python3
"""Writes graph/onnx/onnx_attr_names.cpp: the attribute names and the input/output counts of every
default-domain ONNX op, the union over all opsets the installed onnx package knows (plus the
additions of opsets 18 to 28 when it is older), so the importer can refuse attributes ONNX does
not define and nodes with more or fewer inputs/outputs than any opset allows.

  /usr/bin/python3 scripts/gen_onnx_attr_names.py > graph/onnx/onnx_attr_names.cpp
"""
import onnx
import onnx.defs

# Attributes added at opset 18 (onnx 1.13), in case the installed package predates them.
OPSET18 = {"Split": {"num_outputs"}, "Resize": {"antialias", "axes", "keep_aspect_ratio_policy"},
           "LpPool": {"ceil_mode"}, "GroupNormalization": {"epsilon", "num_groups"},
           "CenterCropPad": {"axes"}, "Col2Im": {"dilations", "pads", "strides"}}

names, arity = {}, {}
for s in onnx.defs.get_all_schemas_with_history():
    if s.domain in ("", "ai.onnx"):
        names.setdefault(s.name, set()).update(s.attributes.keys())
        lo_i, hi_i, lo_o, hi_o = arity.get(s.name, (1 << 31, 0, 1 << 31, 0))
        arity[s.name] = (min(lo_i, s.min_input), max(hi_i, s.max_input),
                         min(lo_o, s.min_output), max(hi_o, s.max_output))
# Opsets 18-22 (onnx 1.13-1.17), read from onnx 1.17's schemas: new attributes of existing ops,
# new input/output counts, and new ops with their exact counts (versions that only add types are
# not listed). Opset 18's reductions take the axes as input 1 (and noop_with_empty_axes), Pad its
# axes as input 3; DFT-20 takes its axis as input 2.
REDUCTIONS_18 = ["ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
                 "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSumSquare"]
OPSET19_22 = {"AveragePool": {"dilations"}, "Cast": {"saturate"}, "CastLike": {"saturate"},
              "QuantizeLinear": {"saturate", "block_size", "output_dtype"},
              "DequantizeLinear": {"block_size"}, "GroupNormalization": {"stash_type"},
              "LpPool": {"dilations"}}
OPSET19_22.update({op: {"noop_with_empty_axes"} for op in REDUCTIONS_18})
# (min, max inputs, min, max outputs) over every version up to opset 22, where that differs.
ARITY_18_22 = {"Pad": (1, 4, 1, 1), "OptionalHasElement": (0, 1, 1, 1),
               "CenterCropPad": (2, 2, 1, 1), "Col2Im": (3, 3, 1, 1),
               "GroupNormalization": (3, 3, 1, 1)}
ARITY_18_22.update({op: (1, 2, 1, 1) for op in REDUCTIONS_18})
NEW_OPS_19_22 = {"Gelu": ({"approximate"}, (1, 1, 1, 1)),
                 "Mish": (set(), (1, 1, 1, 1)),
                 "BitwiseAnd": (set(), (2, 2, 1, 1)), "BitwiseOr": (set(), (2, 2, 1, 1)),
                 "BitwiseXor": (set(), (2, 2, 1, 1)), "BitwiseNot": (set(), (1, 1, 1, 1)),
                 "AffineGrid": ({"align_corners"}, (2, 2, 1, 1)),
                 "DeformConv": ({"dilations", "group", "kernel_shape", "offset_group", "pads",
                                 "strides"}, (3, 5, 1, 1)),
                 "ImageDecoder": ({"pixel_format"}, (1, 1, 1, 1)),
                 "RegexFullMatch": ({"pattern"}, (1, 1, 1, 1)),
                 "StringConcat": (set(), (2, 2, 1, 1)),
                 "StringSplit": ({"delimiter", "maxsplit"}, (1, 1, 2, 2))}

# Opsets 23-28 (onnx 1.18-1.23), read from onnx 1.23's schemas the same way.
OPSET23_28 = {"Cast": {"round_mode"}, "CastLike": {"round_mode"},
              "DequantizeLinear": {"output_dtype"}, "QuantizeLinear": {"precision"},
              "Range": {"stash_type"}, "SpaceToDepth": {"mode"}}
NEW_OPS_23_28 = {
    "Attention": ({"is_causal", "kv_num_heads", "left_window_size", "q_num_heads",
                   "qk_matmul_output_mode", "right_window_size", "scale", "softcap",
                   "softmax_precision"}, (3, 7, 1, 4)),
    "BitCast": ({"to"}, (1, 1, 1, 1)),
    "CausalConvWithState": ({"activation"}, (2, 4, 2, 2)),
    "CumProd": ({"exclusive", "reverse"}, (2, 2, 1, 1)),
    "LinearAttention": ({"chunk_size", "kv_num_heads", "q_num_heads", "scale", "update_rule"},
                        (3, 6, 2, 2)),
    "RMSNormalization": ({"axis", "epsilon", "stash_type"}, (2, 2, 1, 1)),
    "RotaryEmbedding": ({"interleaved", "num_heads", "rotary_embedding_dim"}, (3, 4, 1, 1)),
    "SwiGLU": ({"alpha"}, (2, 2, 1, 1)),
    "Swish": ({"alpha"}, (1, 1, 1, 1)),
    "TensorScatter": ({"axis", "mode"}, (2, 3, 1, 1))}
NEW_OPS_19_22.update(NEW_OPS_23_28)
OPSET19_22.update({op: OPSET19_22.get(op, set()) | attrs for op, attrs in OPSET23_28.items()})

for op, attrs in OPSET18.items():
    names.setdefault(op, set()).update(attrs)
    arity.setdefault(op, (0, 2147483647, 0, 2147483647))
for op, attrs in OPSET19_22.items():
    names.setdefault(op, set()).update(attrs)
for op, (attrs, counts) in NEW_OPS_19_22.items():
    names.setdefault(op, set()).update(attrs)
    arity.setdefault(op, counts)
for op, counts in ARITY_18_22.items():
    arity[op] = counts
if "DFT" in arity:
    lo_i, hi_i, lo_o, hi_o = arity["DFT"]
    arity["DFT"] = (lo_i, max(hi_i, 3), lo_o, hi_o)

print("// Generated by scripts/gen_onnx_attr_names.py from onnx %s (opsets up to %d, plus the"
      % (onnx.__version__, onnx.defs.onnx_opset_version()))
print("// additions of opsets 18 to 28); do not edit by hand.")
print('#include "graph/onnx/onnx_attr_names.h"')
print()
print("namespace graphi::graph::onnx {")
print()
print("// {op type, its attribute names separated by spaces, min/max inputs, min/max outputs},")
print("// sorted by op type.")
print("const OpAttrNames kOnnxAttrNames[] = {")
for op in sorted(names):
    print('    {"%s", "%s", %d, %d, %d, %d},' % ((op, " ".join(sorted(names[op]))) + arity[op]))
print("};")
print("const size_t kOnnxAttrNamesCount = sizeof(kOnnxAttrNames) / sizeof(kOnnxAttrNames[0]);")
print()
print("}  // namespace graphi::graph::onnx")
