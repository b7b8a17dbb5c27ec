// ONNX import, shape and view ops: Identity/Dropout, Flatten/Squeeze/Unsqueeze on run-time values,
// Expand, DepthToSpace/SpaceToDepth, OneHot, Scatter, Gather (constant indices become Slices),
// Reshape's allowzero.
#include <algorithm>

#include "graph/onnx/import_internal.h"
#include "graph/onnx/onnx_fold.h"

namespace graphi::graph::onnx_import {

using onnx::HostTensor;

std::optional<Status> Importer::translate_shape(NodeIn& io) {
  const onnx::Node& n = io.n;
  const std::string& op = n.op;
  const std::string& where = io.where;
  [[maybe_unused]] const std::string& name = io.name;
  [[maybe_unused]] std::vector<std::string>& ins = io.ins;
  [[maybe_unused]] const std::vector<std::string>& outs = io.outs;
  [[maybe_unused]] auto need = [&](size_t k) { return io.need(k); };
  if (op == "ReverseSequence") {
    // Every sequence reversed over the whole time axis (tf2onnx's Keras go_backwards and
    // Bidirectional GRU / SimpleRNN write it with constant, full lengths): a Slice with step -1.
    GRAPHI_RETURN_IF_ERROR(need(0));
    GRAPHI_RETURN_IF_ERROR(need(1));
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(ins[0], where));
    const onnx::Attr* ta = n.attr("time_axis");
    const onnx::Attr* ba = n.attr("batch_axis");
    const int64_t time_axis = ta ? ta->i : 0, batch_axis = ba ? ba->i : 1;
    if (d.rank() < 2 || (time_axis != 0 && time_axis != 1) || batch_axis != 1 - time_axis)
      return Status::invalid_graph(where + ": time_axis " + std::to_string(time_axis) +
                                   " and batch_axis " + std::to_string(batch_axis) +
                                   " must be 0 and 1 (either way) of input " + d.to_string());
    const int64_t steps = d.shape[static_cast<size_t>(time_axis)];
    const HostTensor* lens = host(ins[1]);
    if (!lens || lens->numel() != static_cast<size_t>(d.shape[static_cast<size_t>(batch_axis)]))
      return unsupported_op(n, "with sequence_lens computed at run time");
    for (size_t k = 0; k < lens->numel(); ++k)
      if (lens->get_i(k) != steps)
        return Status::unsupported(where + ": sequence_lens[" + std::to_string(k) +
                                   "] = " + std::to_string(lens->get_i(k)) +
                                   " is not supported: graphi reverses whole sequences only (" +
                                   std::to_string(steps) + " steps)");
    return emit(
        "Slice", name,
        {ins[0], add_ints_const(name + "/starts", {-1}),
         add_ints_const(name + "/ends", {-steps - 1}), add_ints_const(name + "/axes", {time_axis}),
         add_ints_const(name + "/steps", {-1})},
        outs, {}, where, &n);
  }
  if (op == "Identity" || op == "Dropout") {
    GRAPHI_RETURN_IF_ERROR(need(0));
    bool training = false;
    if (op == "Dropout" && ins.size() > 2 && !ins[2].empty()) {
      const HostTensor* t = host(ins[2]);
      if (!t || t->numel() != 1)
        return Status::unsupported(where + ": Dropout's training_mode must be a constant");
      training = t->get_i(0) != 0;
    }
    double ratio = 0.5;
    if (training && ins.size() > 1 && !ins[1].empty()) {
      const HostTensor* r = host(ins[1]);
      if (!r || r->numel() != 1 || !r->is_float())
        return Status::unsupported(where + ": Dropout's ratio must be a float constant");
      ratio = r->f[0];
    }
    if (ratio == 0) training = false;  // the spec: ratio 0 drops nothing, even in training
    const bool mask_read = outs.size() > 1 && is_read(outs[1]);
    if (mask_read && training)
      return Status::unsupported(where +
                                 ": Dropout's mask output in training mode (training_mode = "
                                 "true, ratio > 0) is not supported");
    if (mask_read) {
      // Inference keeps every element: the mask is all true (BOOL is float32 1 in graphi).
      GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(ins[0], where));
      HostTensor one = HostTensor::make(onnx::kBool, Shape(d.shape.size(), 1));
      one.i[0] = 1;
      const std::string c = add_const(name + "/true", std::move(one));
      GRAPHI_RETURN_IF_ERROR(
          d.shape.empty()
              ? emit("Identity", fresh(name + "/mask"), {c}, {outs[1]}, {}, where, &n)
              : emit("Expand", fresh(name + "/mask"), {c, add_ints_const(name + "/shape", d.shape)},
                     {outs[1]}, {}, where, &n));
    }
    if (!training) return emit("Identity", name, {ins[0]}, {outs[0]}, {}, where, &n);
    // Training mode (torch.onnx.export(..., training=TrainingMode.TRAINING)): graphi's Dropout,
    // the identity for inference, a seeded mask in a training graph (docs/TRAINING.md).
    Attributes a;
    a.set("ratio", ratio);
    if (const onnx::Attr* seed = n.attr("seed")) a.set("seed", seed->i);
    return emit("Dropout", name, {ins[0]}, {outs[0]}, std::move(a), where, &n);
  }
  if (op == "Flatten" || op == "Squeeze" || op == "Unsqueeze") {
    GRAPHI_RETURN_IF_ERROR(need(0));
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(ins[0], where));
    GRAPHI_ASSIGN_OR_RETURN(Shape s, shape_after(n, d, where));
    return emit_reshape(name, ins[0], s, outs, where, &n);
  }
  if (op == "Expand") {
    GRAPHI_RETURN_IF_ERROR(need(0));
    GRAPHI_RETURN_IF_ERROR(need(1));
    const HostTensor* shape = host(ins[1]);
    if (!shape) return unsupported_op(n, "with a shape computed at run time");
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(ins[0], where));
    if (shape->is_float()) return Status::invalid_graph(where + ": shape must be INT64");
    GRAPHI_ASSIGN_OR_RETURN(Shape out, onnx::broadcast_shapes(d.shape, shape->i, where));
    if (out == d.shape) return emit("Identity", name, {ins[0]}, outs, {}, where, &n);
    for (int64_t dim : out)
      if (dim < 1)
        return Status::unsupported(where + ": Expand to " + shape_to_string(out) +
                                   " is not supported (empty tensors)");
    return emit("Expand", name, {ins[0], ins[1]}, outs, {}, where, &n);  // ops/tile_expand.cpp
  }
  if (op == "DepthToSpace" || op == "SpaceToDepth") {
    // Reshape, Transpose, Reshape (nn.PixelShuffle exports DepthToSpace, mode CRD).
    GRAPHI_RETURN_IF_ERROR(need(0));
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(ins[0], where));
    const onnx::Attr* bs = n.attr("blocksize");
    if (!bs || bs->type != onnx::kAttrInt || bs->i < 1)
      return Status::invalid_graph(where + ": attribute 'blocksize' (an int >= 1) is missing");
    const onnx::Attr* md = n.attr("mode");
    const std::string mode = md ? md->s : "DCR";
    if (d.rank() != 4)
      return Status::invalid_graph(where + ": input " + d.to_string() + " must be [N, C, H, W]");
    const int64_t b = bs->i, N = d.shape[0], C = d.shape[1], H = d.shape[2], W = d.shape[3];
    Shape s1, s2;
    std::vector<int64_t> perm;
    if (op == "DepthToSpace") {
      if (C % (b * b) != 0 || (mode != "DCR" && mode != "CRD"))
        return Status::invalid_graph(where + ": channels " + std::to_string(C) +
                                     " must divide by blocksize^2, mode must be DCR or CRD");
      if (mode == "DCR") {
        s1 = {N, b, b, C / (b * b), H, W};
        perm = {0, 3, 4, 1, 5, 2};
      } else {
        s1 = {N, C / (b * b), b, b, H, W};
        perm = {0, 1, 4, 2, 5, 3};
      }
      s2 = {N, C / (b * b), H * b, W * b};
    } else {
      // Opset 28's mode: DCR (the default, and every earlier opset's order) puts the block
      // offset before the channel, CRD after it.
      if (H % b != 0 || W % b != 0 || (mode != "DCR" && mode != "CRD"))
        return Status::invalid_graph(where + ": H and W must divide by blocksize " +
                                     std::to_string(b) + ", mode must be DCR or CRD");
      s1 = {N, C, H / b, b, W / b, b};
      perm = mode == "DCR" ? std::vector<int64_t>{0, 3, 5, 1, 2, 4}
                           : std::vector<int64_t>{0, 1, 3, 5, 2, 4};
      s2 = {N, C * b * b, H / b, W / b};
    }
    const std::string r1 = fresh(name + "/split"), t1 = fresh(name + "/transpose");
    GRAPHI_RETURN_IF_ERROR(
        emit("Reshape", r1, {ins[0], add_ints_const(r1 + "/shape", s1)}, {r1}, {}, where, &n));
    Attributes ta;
    ta.set("perm", perm);
    GRAPHI_RETURN_IF_ERROR(emit("Transpose", t1, {r1}, {t1}, std::move(ta), where, &n));
    return emit("Reshape", name, {t1, add_ints_const(name + "/shape", s2)}, outs, {}, where, &n);
  }
  if (op == "OneHot") {
    // Where(indices == k or indices == k - depth, on, off) with k = 0..depth-1 along `axis`.
    for (size_t k = 0; k < 3; ++k) GRAPHI_RETURN_IF_ERROR(need(k));
    const HostTensor* depth_t = host(ins[1]);
    if (!depth_t || depth_t->numel() != 1)
      return unsupported_op(n, "with a depth computed at run time (it must be a constant scalar)");
    // Bounded before the conversion (a NaN or 1e30 depth is undefined as an integer) and before
    // the two depth-long constants below are allocated (a corrupt 2^31 asked for 32 GiB).
    const double depth_f = depth_t->get_f(0);
    constexpr int64_t kMaxDepth = int64_t{1} << 24;
    if (!(depth_f >= 1 && depth_f <= static_cast<double>(kMaxDepth)))
      return Status::invalid_graph(where + ": input 1 (depth) is " + std::to_string(depth_f) +
                                   "; it must be in [1, " + std::to_string(kMaxDepth) + "]");
    const auto depth = static_cast<int64_t>(depth_f);
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(ins[0], where));
    const onnx::Attr* ax = n.attr("axis");
    int64_t axis = ax ? ax->i : -1;
    const int64_t r = d.rank() + 1;
    if (axis < -r || axis >= r) return Status::invalid_graph(where + ": axis out of range");
    if (axis < 0) axis += r;
    Shape ishape = d.shape, kshape(static_cast<size_t>(r), 1);
    ishape.insert(ishape.begin() + axis, 1);
    kshape[static_cast<size_t>(axis)] = depth;
    HostTensor ks = HostTensor::make(onnx_type_of(d.dtype), kshape),
               kn = HostTensor::make(onnx_type_of(d.dtype), kshape);
    for (int64_t k = 0; k < depth; ++k) {
      if (ks.is_float()) {
        ks.f[static_cast<size_t>(k)] = static_cast<double>(k);
        kn.f[static_cast<size_t>(k)] = static_cast<double>(k - depth);
      } else {
        ks.i[static_cast<size_t>(k)] = k;
        kn.i[static_cast<size_t>(k)] = k - depth;
      }
    }
    const std::string iu = fresh(name + "/indices"), e1 = fresh(name + "/eq"),
                      e2 = fresh(name + "/eq_neg"), m = fresh(name + "/mask"),
                      on = fresh(name + "/on"), off = fresh(name + "/off");
    GRAPHI_RETURN_IF_ERROR(
        emit("Reshape", iu, {ins[0], add_ints_const(iu + "/shape", ishape)}, {iu}, {}, where, &n));
    GRAPHI_RETURN_IF_ERROR(
        emit("Equal", e1, {iu, add_const(name + "/k", std::move(ks))}, {e1}, {}, where, &n));
    GRAPHI_RETURN_IF_ERROR(
        emit("Equal", e2, {iu, add_const(name + "/k_neg", std::move(kn))}, {e2}, {}, where, &n));
    GRAPHI_RETURN_IF_ERROR(emit("Or", m, {e1, e2}, {m}, {}, where, &n));
    // values = [off, on]: two Slices (constant or run-time values alike).
    auto pick = [&](const std::string& out, int64_t at) {
      return emit(
          "Slice", out,
          {ins[2], add_ints_const(out + "/starts", {at}), add_ints_const(out + "/ends", {at + 1})},
          {out}, {}, where, &n);
    };
    GRAPHI_RETURN_IF_ERROR(pick(off, 0));
    GRAPHI_RETURN_IF_ERROR(pick(on, 1));
    return emit("Where", name, {m, on, off}, outs, {}, where, &n);
  }
  if (op == "Scatter") {  // opsets 9-10: ScatterElements under its old name
    GRAPHI_ASSIGN_OR_RETURN(Attributes attrs, convert_attrs(n, where));
    return emit("ScatterElements", name, ins, outs, std::move(attrs), where, &n);
  }
  if (op == "Gather") {
    GRAPHI_RETURN_IF_ERROR(need(0));
    GRAPHI_RETURN_IF_ERROR(need(1));
    const HostTensor* idx = host(ins[1]);
    GRAPHI_ASSIGN_OR_RETURN(Attributes gather_attrs, convert_attrs(n, where));
    // Run-time indices (nn.Embedding): graphi's Gather op (ops/onnx_view_ops.cpp).
    if (!idx) return emit("Gather", name, ins, outs, std::move(gather_attrs), where, &n);
    if (idx->is_float()) return Status::invalid_graph(where + ": indices must be integers");
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(ins[0], where));
    const onnx::Attr* ax = n.attr("axis");
    int64_t axis = ax ? ax->i : 0;
    const int64_t rank = d.rank();
    if (axis < -rank || axis >= rank) return Status::invalid_graph(where + ": axis out of range");
    if (axis < 0) axis += rank;
    const int64_t dim = d.shape[static_cast<size_t>(axis)];
    std::vector<int64_t> v = idx->i;
    for (int64_t& x : v) {
      if (x < -dim || x >= dim)
        return Status::invalid_graph(where + ": index " + std::to_string(x) +
                                     " is out of range for axis " + std::to_string(axis) +
                                     " of size " + std::to_string(dim));
      if (x < 0) x += dim;
    }
    if (v.empty()) return Status::unsupported(where + ": empty indices");
    Shape out(d.shape.begin(), d.shape.begin() + axis);
    out.insert(out.end(), idx->shape.begin(), idx->shape.end());
    out.insert(out.end(), d.shape.begin() + axis + 1, d.shape.end());
    const int64_t step = v.size() > 1 ? v[1] - v[0] : 1;
    bool progression = step != 0;
    for (size_t k = 1; progression && k < v.size(); ++k) progression = v[k] - v[k - 1] == step;
    auto slice = [&](int64_t start, int64_t count, int64_t st, const std::string& out_name,
                     const std::string& node) {
      int64_t end = start + count * st;
      if (end < 0) end = -dim - 1;  // a negative step running past index 0
      return emit(
          "Slice", node,
          {ins[0], add_ints_const(node + "/starts", {start}), add_ints_const(node + "/ends", {end}),
           add_ints_const(node + "/axes", {axis}), add_ints_const(node + "/steps", {st})},
          {out_name}, {}, where, &n);
    };
    Shape sliced = d.shape;
    sliced[static_cast<size_t>(axis)] = static_cast<int64_t>(v.size());
    const bool same_shape = sliced == out;
    const std::string sliced_name = same_shape ? outs[0] : fresh(name + "/sliced");
    const std::string slice_node = same_shape ? name : fresh(name + "/slice");
    if (progression) {
      GRAPHI_RETURN_IF_ERROR(
          slice(v[0], static_cast<int64_t>(v.size()), step, sliced_name, slice_node));
    } else {  // irregular constant indices: graphi's Gather
      return emit("Gather", name, ins, outs, std::move(gather_attrs), where, &n);
    }
    if (same_shape) return Status::ok();
    return emit_reshape(name, sliced_name, out, outs, where, &n);
  }
  if (op == "Reshape") {
    const onnx::Attr* az = n.attr("allowzero");
    if (az && az->i != 0 && ins.size() > 1) {
      const HostTensor* s = host(ins[1]);
      if (s && std::find(s->i.begin(), s->i.end(), 0) != s->i.end())
        return Status::unsupported(
            where +
            ": Reshape with allowzero = 1 and a 0 in the shape (empty tensors) is not supported");
    }
    // To a scalar: the shape is an empty constant, which graphi cannot hold as a tensor.
    if (ins.size() > 1 && !ins[0].empty()) {
      const HostTensor* s = host(ins[1]);
      if (s && s->numel() == 0 && !host(ins[0])) {
        GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(ins[0], where));
        if (d.numel() != 1)
          return Status::invalid_graph(where + ": Reshape of " + d.to_string() +
                                       " to a scalar (shape []) needs exactly one element");
        return emit_reshape(name, ins[0], {}, outs, where, &n);
      }
    }
  }
  return std::nullopt;
}

Result<Shape> Importer::shape_after(const onnx::Node& n, const TensorDesc& in,
                                    const std::string& where) {
  HostTensor fake;
  fake.type = onnx_type_of(in.dtype);
  fake.shape = in.shape;
  std::vector<const HostTensor*> ins{&fake};
  for (size_t k = 1; k < n.inputs.size(); ++k) {
    if (n.inputs[k].empty()) {
      ins.push_back(nullptr);
      continue;
    }
    const HostTensor* h = host(n.inputs[k]);
    if (!h)
      return Status::unsupported(where + ": input " + std::to_string(k) + " ('" + n.inputs[k] +
                                 "') must be known at import time (a constant)");
    ins.push_back(h);
  }
  // The fake input has no data: fold only ops that look at shapes (checked by the caller).
  fake.f.clear();
  fake.i.clear();
  GRAPHI_ASSIGN_OR_RETURN(std::vector<HostTensor> r, onnx::fold_node(n, opset_, ins, where));
  return r.at(0).shape;
}

}  // namespace graphi::graph::onnx_import
