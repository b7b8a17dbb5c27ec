// ONNX import, convolution, pooling, normalization and resampling: 1-D Conv/ConvTranspose/pools as
// 2-D ones, 3-D ones as graphi's Conv3D/ConvTranspose3D/MaxPool3D/AveragePool3D, MaxPool's
// Indices as MaxPoolWithIndices, auto_pad and ceil_mode as explicit pads, global pools
// (GlobalLpPool as LpPool), inference BatchNormalization as Mul + Add (with run-time statistics:
// Sub, Div by Sqrt, Mul, Add), Upsample
// as Resize, Resize-18's axes and keep_aspect_ratio_policy as full-rank scales/sizes,
// ConvTranspose's auto_pad and output_shape as pads and output_padding.
#include <algorithm>
#include <cmath>

#include "graph/onnx/import_internal.h"

namespace graphi::graph::onnx_import {

using onnx::HostTensor;

namespace {

// INTS attribute `name` of n, or `count` copies of dflt when it is absent or empty.
std::vector<int64_t> ints_or(const onnx::Node& n, const char* name, int64_t dflt, size_t count) {
  const onnx::Attr* a = n.attr(name);
  std::vector<int64_t> v = a ? a->ints : std::vector<int64_t>{};
  if (v.empty()) v.assign(count, dflt);
  return v;
}

// Sets INTS attribute `name` of n to v, replacing the one it has.
void set_ints(onnx::Node& n, const std::string& name, std::vector<int64_t> v) {
  std::erase_if(n.attrs, [&](const onnx::Attr& a) { return a.name == name; });
  onnx::Attr a;
  a.name = name;
  a.type = onnx::kAttrInts;
  a.ints = std::move(v);
  n.attrs.push_back(std::move(a));
}

// `n` without attribute `drop` and with `pads` = pads.
onnx::Node with_pads(const onnx::Node& n, const char* drop, std::vector<int64_t> pads) {
  onnx::Node out = n;
  std::erase_if(out.attrs, [&](const onnx::Attr& a) { return a.name == drop; });
  set_ints(out, "pads", std::move(pads));
  return out;
}

}  // namespace

std::optional<Status> Importer::translate_conv_pool(NodeIn& io) {
  const onnx::Node& n = io.n;
  const std::string& op = n.op;
  const std::string& where = io.where;
  [[maybe_unused]] const std::string& name = io.name;
  [[maybe_unused]] std::vector<std::string>& ins = io.ins;
  [[maybe_unused]] const std::vector<std::string>& outs = io.outs;
  [[maybe_unused]] auto need = [&](size_t k) { return io.need(k); };
  if (op == "Upsample") {
    // Opsets 7-9: Resize with asymmetric coordinates (as Resize-10 below); scales as an
    // attribute (opset 7) or a constant input (opset 9).
    GRAPHI_RETURN_IF_ERROR(need(0));
    const onnx::Attr* md = n.attr("mode");
    const std::string mode = md ? md->s : "nearest";
    if (mode != "nearest" && mode != "linear" && mode != "bilinear")
      return Status::unsupported(where + ": attribute 'mode' = '" + mode + "' is not supported");
    std::string scales;
    if (ins.size() > 1 && !ins[1].empty()) {
      if (!host(ins[1])) return unsupported_op(n, "with scales computed at run time");
      scales = ins[1];
    } else {
      const onnx::Attr* sc = n.attr("scales");
      if (!sc || sc->type != onnx::kAttrFloats)
        return Status::invalid_graph(where + ": missing 'scales'");
      HostTensor t = HostTensor::make(onnx::kFloat, {static_cast<int64_t>(sc->floats.size())});
      for (size_t k = 0; k < sc->floats.size(); ++k) t.f[k] = sc->floats[k];
      scales = add_const(name + "/scales", std::move(t));
    }
    Attributes a;
    a.set("mode", std::string(mode == "nearest" ? "nearest" : "linear"));
    a.set("coordinate_transformation_mode", std::string("asymmetric"));
    a.set("nearest_mode", std::string("simple"));  // floor; ceil on a down-sampled dim
    return emit("Resize", name, {ins[0], "", scales}, outs, std::move(a), where, &n);
  }
  if (op == "Resize" && opset_ < 11) {
    // Resize-10 (X, scales): asymmetric coordinates (x / scale) and, for nearest, ceil on a
    // down-sampled dim and floor otherwise (ops/resize.cpp 'simple'), as ONNX Runtime runs it;
    // opset 11's defaults (half_pixel) would shift every linear sample.
    GRAPHI_RETURN_IF_ERROR(need(0));
    GRAPHI_RETURN_IF_ERROR(need(1));
    if (!host(ins[1])) return unsupported_op(n, "with scales computed at run time");
    const onnx::Attr* md = n.attr("mode");
    const std::string mode = md ? md->s : "nearest";
    Attributes a;
    a.set("mode", mode);
    a.set("coordinate_transformation_mode", std::string("asymmetric"));
    a.set("nearest_mode", std::string("simple"));
    return emit("Resize", name, {ins[0], "", ins[1]}, outs, std::move(a), where, &n);
  }
  const onnx::Attr* kar_attr = op == "Resize" ? n.attr("keep_aspect_ratio_policy") : nullptr;
  if (op == "Resize" && (n.attr("axes") || (kar_attr && kar_attr->s != "stretch"))) {
    // Opset 18: scales/sizes of the listed axes only, and sizes kept to the input's aspect
    // ratio. Rewritten to full-rank constants; for not_larger / not_smaller one scale (the min
    // or max of size / in over the axes) drives the coordinates and the sizes are round(scale *
    // in), as ONNX's reference and ONNX Runtime compute them: graphi's Resize then gets both.
    GRAPHI_RETURN_IF_ERROR(need(0));
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(ins[0], where));
    const int64_t rank = d.rank();
    const std::string kar = kar_attr ? kar_attr->s : "stretch";
    if (kar != "stretch" && kar != "not_larger" && kar != "not_smaller")
      return Status::invalid_graph(where + ": attribute 'keep_aspect_ratio_policy' = '" + kar +
                                   "' is not stretch, not_larger or not_smaller");
    std::vector<int64_t> axes;
    if (const onnx::Attr* ax = n.attr("axes")) axes = ax->ints;
    if (axes.empty())
      for (int64_t k = 0; k < rank; ++k) axes.push_back(k);
    std::vector<bool> seen(static_cast<size_t>(rank), false);
    for (int64_t& a : axes) {
      if (a < -rank || a >= rank || seen[static_cast<size_t>(a < 0 ? a + rank : a)])
        return Status::invalid_graph(where + ": attribute 'axes' " + shape_to_string(axes) +
                                     " has an axis out of range or repeated for input " +
                                     d.to_string());
      if (a < 0) a += rank;
      seen[static_cast<size_t>(a)] = true;
    }
    const bool has_scales = ins.size() > 2 && !ins[2].empty(),
               has_sizes = ins.size() > 3 && !ins[3].empty();
    const std::string which = has_scales ? "scales" : "sizes";
    const HostTensor* given = has_scales ? host(ins[2]) : has_sizes ? host(ins[3]) : nullptr;
    if (!has_scales && !has_sizes) return Status::invalid_graph(where + ": needs scales or sizes");
    if (!given) return unsupported_op(n, "with " + which + " computed at run time");
    if (given->numel() != axes.size())
      return Status::invalid_graph(where + ": input " + which + " " + given->desc() + " has " +
                                   std::to_string(given->numel()) + " values for " +
                                   std::to_string(axes.size()) + " axes");
    const onnx::Attr* ctm = n.attr("coordinate_transformation_mode");
    if (ctm && ctm->s == "tf_crop_and_resize")
      return Status::unsupported(
          where +
          ": attribute 'coordinate_transformation_mode' = 'tf_crop_and_resize' is not "
          "supported");
    GRAPHI_ASSIGN_OR_RETURN(Attributes a,
                            convert_attrs(n, where, {"axes", "keep_aspect_ratio_policy"}));
    HostTensor scales = HostTensor::make(onnx::kFloat, {rank});
    for (int64_t k = 0; k < rank; ++k) scales.f[static_cast<size_t>(k)] = 1.0;
    if (has_scales) {
      for (size_t j = 0; j < axes.size(); ++j)
        scales.f[static_cast<size_t>(axes[j])] = given->get_f(j);
      return emit("Resize", name, {ins[0], "", add_const(name + "/scales", std::move(scales))},
                  outs, std::move(a), where, &n);
    }
    std::vector<int64_t> sizes = d.shape;
    for (size_t j = 0; j < axes.size(); ++j) sizes[static_cast<size_t>(axes[j])] = given->get_i(j);
    if (kar == "stretch")
      return emit("Resize", name, {ins[0], "", "", add_ints_const(name + "/sizes", sizes)}, outs,
                  std::move(a), where, &n);
    double scale = kar == "not_larger" ? 1e300 : 0;
    for (int64_t ax : axes) {
      const double r = static_cast<double>(sizes[static_cast<size_t>(ax)]) /
                       static_cast<double>(d.shape[static_cast<size_t>(ax)]);
      scale = kar == "not_larger" ? std::min(scale, r) : std::max(scale, r);
    }
    for (int64_t ax : axes) {
      const auto k = static_cast<size_t>(ax);
      sizes[k] = static_cast<int64_t>(std::round(scale * static_cast<double>(d.shape[k])));
      scales.f[k] = scale;
    }
    return emit("Resize", name,
                {ins[0], "", add_const(name + "/scales", std::move(scales)),
                 add_ints_const(name + "/sizes", sizes)},
                outs, std::move(a), where, &n);
  }
  if (op == "GridSample") {
    // Opset 16 names the modes bilinear / nearest / bicubic and takes 4-D inputs only; opset 20
    // renames them linear / nearest / cubic and adds volumetric (5-D) inputs. graphi's op takes
    // opset 20's names (ops/grid_sample.cpp).
    GRAPHI_RETURN_IF_ERROR(need(0));
    GRAPHI_RETURN_IF_ERROR(need(1));
    const bool v20 = opset_ >= 20;
    const onnx::Attr* md = n.attr("mode");
    std::string mode = md ? md->s : (v20 ? "linear" : "bilinear");
    if (md && md->type != onnx::kAttrString)
      return Status::invalid_graph(where + ": attribute 'mode' must be a string");
    if (v20 ? mode != "linear" && mode != "nearest" && mode != "cubic"
            : mode != "bilinear" && mode != "nearest" && mode != "bicubic")
      return Status::invalid_graph(where + ": attribute 'mode' = '" + mode +
                                   "' is not a GridSample mode at opset " + std::to_string(opset_) +
                                   (v20 ? " (linear, nearest or cubic)"
                                        : " (bilinear, nearest or bicubic; opset 20 renames them "
                                          "linear, nearest, cubic)"));
    if (mode == "bilinear") mode = "linear";
    if (mode == "bicubic") mode = "cubic";
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc x, desc_of(ins[0], where));
    if (!v20 && x.rank() != 4)
      return Status::invalid_graph(where + ": input 0 (X) " + x.to_string() +
                                   " must be 4-D [N, C, H, W] at opset " + std::to_string(opset_) +
                                   " (volumetric GridSample is opset 20's)");
    GRAPHI_ASSIGN_OR_RETURN(Attributes a, convert_attrs(n, where, {"mode"}));
    a.set("mode", mode);
    return emit("GridSample", name, {ins[0], ins[1]}, outs, std::move(a), where, &n);
  }
  if (op == "RoiAlign" && opset_ < 16) {
    // Opset 10 has no coordinate_transformation_mode: it computes what opset 16 calls
    // 'output_half_pixel' (opset 16's default is 'half_pixel'; ops/roi_align.cpp).
    GRAPHI_ASSIGN_OR_RETURN(Attributes a, convert_attrs(n, where));
    a.set("coordinate_transformation_mode", std::string("output_half_pixel"));
    return emit("RoiAlign", name, ins, outs, std::move(a), where, &n);
  }
  if (op == "MaxPool" && outs.size() > 1) {
    // Indices (PyTorch's return_indices=True, and the 1x1 pool its export subtracts): graphi's
    // MaxPoolWithIndices, 1-D to 3-D (ops/pool_nd.cpp). An Indices output nothing reads is
    // dropped, so that pool keeps the oneDNN kernels of the MaxPool op.
    if (is_read(outs[1])) {
      GRAPHI_RETURN_IF_ERROR(need(0));
      GRAPHI_ASSIGN_OR_RETURN(Attributes a, convert_attrs(n, where));
      return emit("MaxPoolWithIndices", name, {ins[0]}, {outs[0], outs[1]}, std::move(a), where,
                  &n);
    }
    io.outs.resize(1);
  }
  if (op == "GlobalLpPool") {
    // LpPool (ops/pool_nd.cpp) whose kernel is X's spatial dims.
    GRAPHI_RETURN_IF_ERROR(need(0));
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(ins[0], where));
    if (d.rank() < 3)
      return Status::invalid_graph(where + ": input " + d.to_string() + " has no spatial dims");
    GRAPHI_ASSIGN_OR_RETURN(Attributes a, convert_attrs(n, where));
    a.set("kernel_shape", std::vector<int64_t>(d.shape.begin() + 2, d.shape.end()));
    return emit("LpPool", name, {ins[0]}, outs, std::move(a), where, &n);
  }
  if ((op == "Conv" || op == "ConvTranspose" || op == "MaxPool" || op == "AveragePool") &&
      !ins.empty() && !ins[0].empty()) {
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(ins[0], where));
    if (d.rank() == 3) return translate_1d(n, name, ins, outs, d, where);
    if (d.rank() == 5) {
      // Volumetric: graphi's 3-D ops (ops/conv_pool_3d.cpp), same attributes; the 2-D passes
      // never see them.
      GRAPHI_ASSIGN_OR_RETURN(Attributes attrs, convert_attrs(n, where));
      return emit(op + "3D", name, ins, outs, std::move(attrs), where, &n);
    }
  }
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool") {
    GRAPHI_RETURN_IF_ERROR(need(0));
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(ins[0], where));
    if (d.rank() < 3)
      return Status::invalid_graph(where + ": input " + d.to_string() + " has no spatial dims");
    Attributes a;
    if (d.rank() != 4) {
      // 1-D and 3-D global pools (Conv1d nets' AdaptiveAvgPool1d(1)): a reduction over every
      // spatial axis, which needs no pooling kernel of that rank.
      std::vector<int64_t> axes;
      for (int64_t k = 2; k < d.rank(); ++k) axes.push_back(k);
      a.set("axes", axes);
      a.set("keepdims", int64_t{1});
      return emit(op == "GlobalAveragePool" ? "ReduceMean" : "ReduceMax", name, {ins[0]}, outs, a,
                  where, &n);
    }
    a.set("kernel_shape", std::vector<int64_t>(d.shape.begin() + 2, d.shape.end()));
    return emit(op == "GlobalAveragePool" ? "AveragePool" : "MaxPool", name, {ins[0]}, outs, a,
                where, &n);
  }
  if (op == "BatchNormalization") {
    // Inference form with constant statistics: y = x * s + (B - mean * s), s = scale / sqrt(var +
    // eps).
    for (size_t k = 0; k < 5; ++k) GRAPHI_RETURN_IF_ERROR(need(k));
    const onnx::Attr* tm = n.attr("training_mode");
    const onnx::Attr* spatial = n.attr("spatial");
    for (size_t k = 1; k < outs.size(); ++k)
      if (is_read(outs[k]))
        return Status::unsupported(where + ": BatchNormalization's output " + std::to_string(k) +
                                   " (running or saved statistics) is read; not supported");
    if (spatial && spatial->i == 0)
      return Status::unsupported(where + ": BatchNormalization with spatial = 0 is not supported");
    const HostTensor *scale = host(ins[1]), *bias = host(ins[2]), *mean = host(ins[3]),
                     *var = host(ins[4]);
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(ins[0], where));
    if (d.rank() < 2)
      return Status::invalid_graph(where + ": input " + d.to_string() + " has no channel dim");
    const bool training = outs.size() > 1 || (tm && tm->i != 0);
    if (!training && (!scale || !bias || !mean || !var))
      return batch_norm_run_time_stats(n, name, ins, outs, d, where);
    // Training mode (training_mode = 1, or the running-statistics outputs of opset < 14, as
    // torch.onnx.export(..., training=TrainingMode.TRAINING) writes): graphi's BatchNormalization
    // node, which a training graph runs with batch statistics (docs/TRAINING.md); inference uses
    // the running statistics.
    if (training) {
      Attributes a;
      const onnx::Attr* eps = n.attr("epsilon");
      const onnx::Attr* mom = n.attr("momentum");
      a.set("epsilon", eps ? static_cast<double>(eps->f) : 1e-5);
      a.set("momentum", mom ? static_cast<double>(mom->f) : 0.9);
      return emit("BatchNormalization", name, {ins[0], ins[1], ins[2], ins[3], ins[4]}, {outs[0]},
                  std::move(a), where, &n);
    }
    const int64_t c = d.shape[1];
    for (const HostTensor* t : {scale, bias, mean, var})
      if (!t->is_float() || static_cast<int64_t>(t->numel()) != c)
        return Status::invalid_graph(where + ": scale, B, mean and var must be float tensors of " +
                                     std::to_string(c) + " values, got " + t->desc());
    const onnx::Attr* eps_attr = n.attr("epsilon");
    const double eps = eps_attr ? eps_attr->f : 1e-5;
    Shape cshape(static_cast<size_t>(d.rank() - 1), 1);
    cshape[0] = c;
    HostTensor s = HostTensor::make(onnx::kFloat, cshape),
               b = HostTensor::make(onnx::kFloat, cshape);
    for (size_t k = 0; k < static_cast<size_t>(c); ++k) {
      s.f[k] = static_cast<float>(scale->f[k] / std::sqrt(var->f[k] + eps));
      b.f[k] = static_cast<float>(bias->f[k] - mean->f[k] * s.f[k]);
    }
    const std::string scaled = fresh(name + "/scaled");
    GRAPHI_RETURN_IF_ERROR(emit("Mul", fresh(name + "/scale"),
                                {ins[0], add_const(name + "/s", std::move(s))}, {scaled}, {}, where,
                                &n));
    return emit("Add", name, {scaled, add_const(name + "/b", std::move(b))}, outs, {}, where, &n);
  }
  return std::nullopt;
}

Status Importer::batch_norm_run_time_stats(const onnx::Node& n, const std::string& name,
                                           const std::vector<std::string>& ins,
                                           const std::vector<std::string>& outs,
                                           const TensorDesc& x, const std::string& where) {
  // y = (x - mean) / sqrt(var + eps) * scale + B, each [C] operand viewed as [C, 1, ...]. tf2onnx
  // writes Keras' LayerNormalization this way, mean and var computed by the graph.
  const int64_t c = x.shape[1];
  Shape cshape(static_cast<size_t>(x.rank() - 1), 1);
  cshape[0] = c;
  const char* names[] = {"X", "scale", "B", "input_mean", "input_var"};
  std::vector<std::string> v(5);
  for (size_t k = 1; k < 5; ++k) {
    if (const HostTensor* h = host(ins[k])) {
      if (!h->is_float() || static_cast<int64_t>(h->numel()) != c)
        return Status::invalid_graph(where + ": " + names[k] + " must be a float tensor of " +
                                     std::to_string(c) + " values, got " + h->desc());
      HostTensor t = *h;
      t.type = onnx::kFloat;
      t.shape = cshape;
      v[k] = add_const(name + "/" + names[k], std::move(t));
      continue;
    }
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(ins[k], where));
    if (d.dtype != DType::kF32 || d.shape != Shape{c})
      return Status::invalid_graph(where + ": " + names[k] + " must be a float tensor of shape [" +
                                   std::to_string(c) + "] (the channels of X " + x.to_string() +
                                   "), got " + d.to_string());
    v[k] = fresh(name + "/" + names[k]);
    GRAPHI_RETURN_IF_ERROR(emit_reshape(v[k], ins[k], cshape, {v[k]}, where, &n));
  }
  const onnx::Attr* eps_attr = n.attr("epsilon");
  HostTensor eps = HostTensor::make(onnx::kFloat, {1});
  eps.f[0] = eps_attr ? eps_attr->f : 1e-5;
  const std::string var_eps = fresh(name + "/var_eps"), root = fresh(name + "/std"),
                    centered = fresh(name + "/centered"), normed = fresh(name + "/normed"),
                    scaled = fresh(name + "/scaled");
  GRAPHI_RETURN_IF_ERROR(emit("Add", var_eps, {v[4], add_const(name + "/eps", std::move(eps))},
                              {var_eps}, {}, where, &n));
  GRAPHI_RETURN_IF_ERROR(emit("Sqrt", root, {var_eps}, {root}, {}, where, &n));
  GRAPHI_RETURN_IF_ERROR(emit("Sub", centered, {ins[0], v[3]}, {centered}, {}, where, &n));
  GRAPHI_RETURN_IF_ERROR(emit("Div", normed, {centered, root}, {normed}, {}, where, &n));
  GRAPHI_RETURN_IF_ERROR(emit("Mul", scaled, {normed, v[1]}, {scaled}, {}, where, &n));
  return emit("Add", name, {scaled, v[2]}, {outs[0]}, {}, where, &n);
}

Result<Shape> Importer::input_shape(const onnx::Node& n, size_t k, const std::string& where) {
  if (k >= n.inputs.size() || n.inputs[k].empty() || !vals_.count(n.inputs[k]))
    return Status::invalid_graph(where + ": input " + std::to_string(k) + " is missing");
  if (const HostTensor* h = host(n.inputs[k])) return h->shape;
  return vals_.at(n.inputs[k]).desc.shape;
}

Result<onnx::Node> Importer::explicit_pads(const onnx::Node& n, const std::string& where) {
  const std::string mode = n.attr("auto_pad")->s;
  if (mode != "SAME_UPPER" && mode != "SAME_LOWER" && mode != "VALID")
    return Status::unsupported(where + ": attribute 'auto_pad' = '" + mode +
                               "' is not supported (NOTSET, SAME_UPPER, SAME_LOWER, VALID)");
  GRAPHI_ASSIGN_OR_RETURN(Shape x, input_shape(n, 0, where));
  if (x.size() < 3)
    return Status::invalid_graph(where + ": input X " + shape_to_string(x) +
                                 " has no spatial dims");
  const size_t r = x.size() - 2;
  auto ints_attr = [&](const char* name, int64_t dflt) { return ints_or(n, name, dflt, r); };
  std::vector<int64_t> kernel = ints_attr("kernel_shape", 0);
  if (n.op == "Conv" && !n.attr("kernel_shape")) {
    GRAPHI_ASSIGN_OR_RETURN(Shape w, input_shape(n, 1, where));
    if (w.size() != x.size())
      return Status::invalid_graph(where + ": W " + shape_to_string(w) + " does not match X " +
                                   shape_to_string(x));
    kernel.assign(w.begin() + 2, w.end());
  }
  const std::vector<int64_t> strides = ints_attr("strides", 1), dil = ints_attr("dilations", 1);
  if (kernel.size() != r || strides.size() != r || dil.size() != r)
    return Status::invalid_graph(where + ": kernel_shape, strides and dilations must have " +
                                 std::to_string(r) + " values");
  std::vector<int64_t> pads(2 * r, 0);
  for (size_t d = 0; mode != "VALID" && d < r; ++d) {
    if (strides[d] < 1) return Status::invalid_graph(where + ": strides must be >= 1");
    const int64_t in = x[d + 2], out = (in + strides[d] - 1) / strides[d];
    const int64_t total =
        std::max<int64_t>(0, (out - 1) * strides[d] + (kernel[d] - 1) * dil[d] + 1 - in);
    const int64_t small = total / 2, big = total - small;
    pads[d] = mode == "SAME_UPPER" ? small : big;  // SAME_UPPER puts the extra pad at the end
    pads[d + r] = mode == "SAME_UPPER" ? big : small;
  }
  return with_pads(n, "auto_pad", pads);
}

Result<onnx::Node> Importer::transpose_pads(const onnx::Node& n, const std::string& where) {
  const onnx::Attr* ap = n.attr("auto_pad");
  const std::string mode = ap ? ap->s : "NOTSET";
  if (mode != "NOTSET" && mode != "SAME_UPPER" && mode != "SAME_LOWER" && mode != "VALID")
    return Status::unsupported(where + ": attribute 'auto_pad' = '" + mode +
                               "' is not supported (NOTSET, SAME_UPPER, SAME_LOWER, VALID)");
  GRAPHI_ASSIGN_OR_RETURN(Shape x, input_shape(n, 0, where));
  GRAPHI_ASSIGN_OR_RETURN(Shape w, input_shape(n, 1, where));
  if (x.size() < 3 || w.size() != x.size())
    return Status::invalid_graph(where + ": input X " + shape_to_string(x) + " and W " +
                                 shape_to_string(w) + " must have the same rank >= 3");
  const size_t r = x.size() - 2;
  std::vector<int64_t> kernel = ints_or(n, "kernel_shape", 0, r);
  if (!n.attr("kernel_shape")) kernel.assign(w.begin() + 2, w.end());
  const std::vector<int64_t> strides = ints_or(n, "strides", 1, r),
                             dil = ints_or(n, "dilations", 1, r);
  std::vector<int64_t> outpad = ints_or(n, "output_padding", 0, r),
                       pads = ints_or(n, "pads", 0, 2 * r);
  if (kernel.size() != r || strides.size() != r || dil.size() != r || outpad.size() != r ||
      pads.size() != 2 * r)
    return Status::invalid_graph(where +
                                 ": kernel_shape, strides, dilations, output_padding and pads "
                                 "do not match the input's " +
                                 std::to_string(r) + " spatial dims");
  // output_shape lists the spatial dims; some exporters write the whole [N, C, ...] shape.
  std::vector<int64_t> want;
  if (const onnx::Attr* os = n.attr("output_shape")) {
    want = os->ints;
    if (want.size() == r + 2) want.erase(want.begin(), want.begin() + 2);
    if (want.size() != r)
      return Status::invalid_graph(where + ": attribute 'output_shape' " +
                                   shape_to_string(os->ints) + " must have " + std::to_string(r) +
                                   " (or " + std::to_string(r + 2) + ") values");
  }
  if (want.empty() && mode == "VALID") pads.assign(2 * r, 0);
  for (size_t d = 0; d < r && (!want.empty() || mode == "SAME_UPPER" || mode == "SAME_LOWER");
       ++d) {
    const int64_t natural = strides[d] * (x[d + 2] - 1) + outpad[d] + (kernel[d] - 1) * dil[d] + 1;
    const int64_t out = want.empty() ? x[d + 2] * strides[d] : want[d];
    if (out < 1)
      return Status::invalid_graph(where + ": attribute 'output_shape' must be >= 1, got " +
                                   std::to_string(out));
    const int64_t total = natural - out;
    if (total < 0) {
      // A larger output than the kernel reaches (a kernel smaller than the stride): ONNX Runtime
      // and ONNX's shape inference clamp the padding at 0; an explicit output_shape is then
      // still met, its extra rows at the end getting only the bias (output_padding), while
      // SAME_* stays at the natural size (not the spec text's in * stride).
      pads[d] = pads[d + r] = 0;
      if (!want.empty()) outpad[d] += -total;
      continue;
    }
    // SAME_UPPER puts the odd pad at the end; SAME_LOWER, NOTSET and VALID at the start.
    const int64_t small = total / 2, big = total - small;
    pads[d] = mode == "SAME_UPPER" ? small : big;
    pads[d + r] = mode == "SAME_UPPER" ? big : small;
  }
  onnx::Node out = with_pads(n, "auto_pad", pads);
  std::erase_if(out.attrs, [](const onnx::Attr& a) { return a.name == "output_shape"; });
  set_ints(out, "output_padding", std::move(outpad));
  return out;
}

Result<onnx::Node> Importer::ceil_mode_as_pads(const onnx::Node& n, const std::string& where) {
  GRAPHI_ASSIGN_OR_RETURN(const Shape x, input_shape(n, 0, where));
  if (x.size() < 3)
    return Status::invalid_graph(where + ": input X " + shape_to_string(x) +
                                 " has no spatial dims");
  const size_t r = x.size() - 2;
  auto ints_attr = [&](const char* name, int64_t dflt, size_t count) {
    return ints_or(n, name, dflt, count);
  };
  const std::vector<int64_t> k = ints_attr("kernel_shape", 0, r), st = ints_attr("strides", 1, r),
                             dil = ints_attr("dilations", 1, r);
  std::vector<int64_t> pads = ints_attr("pads", 0, 2 * r);
  if (k.size() != r || st.size() != r || dil.size() != r || pads.size() != 2 * r)
    return Status::invalid_graph(where +
                                 ": kernel_shape, strides, dilations and pads do not "
                                 "match the input's " +
                                 std::to_string(r) + " spatial dims");
  const onnx::Attr* cip = n.attr("count_include_pad");
  for (size_t d = 0; d < r; ++d) {
    if (st[d] < 1 || k[d] < 1)
      return Status::invalid_graph(where + ": bad kernel_shape or strides");
    const int64_t span = (k[d] - 1) * dil[d] + 1, padded = x[d + 2] + pads[d] + pads[d + r];
    if (padded < span) continue;  // the shape rule reports it
    int64_t out = (padded - span + st[d] - 1) / st[d] + 1;
    if ((out - 1) * st[d] >= x[d + 2] + pads[d])
      --out;  // the last window would start in the end pad
    const int64_t extra = (out - 1) * st[d] + span - padded;
    if (extra <= 0) continue;
    if (n.op == "AveragePool" && cip && cip->i != 0)
      return Status::unsupported(where +
                                 ": attribute 'ceil_mode' = 1 with count_include_pad = 1 "
                                 "is not supported when the last window runs past the padding");
    pads[d + r] += extra;
  }
  return with_pads(n, "ceil_mode", pads);
}

Status Importer::translate_1d(const onnx::Node& n, const std::string& name,
                              const std::vector<std::string>& ins,
                              const std::vector<std::string>& outs, const TensorDesc& x,
                              const std::string& where) {
  // Inserts a dim of 1 before the last: constants are reshaped here, run-time values by a
  // Reshape node.
  auto unsqueeze = [&](const std::string& v, const std::string& tag) -> Result<std::string> {
    if (const HostTensor* h = host(v)) {
      HostTensor t = *h;
      if (t.shape.size() != 3)
        return Status::invalid_graph(where + ": input '" + v + "' " + h->desc() +
                                     " must have rank 3 for a 1-D " + n.op);
      t.shape.insert(t.shape.end() - 1, 1);
      return add_const(name + "/" + tag, std::move(t));
    }
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(v, where));
    if (d.rank() != 3)
      return Status::invalid_graph(where + ": input '" + v + "' " + d.to_string() +
                                   " must have rank 3 for a 1-D " + n.op);
    Shape s = d.shape;
    s.insert(s.end() - 1, 1);
    const std::string out = fresh(name + "/" + tag);
    GRAPHI_RETURN_IF_ERROR(
        emit("Reshape", out, {v, add_ints_const(out + "/shape", s)}, {out}, {}, where, &n));
    return out;
  };
  std::vector<std::string> ins2 = ins;
  GRAPHI_ASSIGN_OR_RETURN(ins2[0], unsqueeze(ins[0], "x2d"));
  if (n.op == "Conv" || n.op == "ConvTranspose") {
    if (ins.size() < 2 || ins[1].empty())
      return Status::invalid_graph(where + ": input 1 is missing");
    GRAPHI_ASSIGN_OR_RETURN(ins2[1], unsqueeze(ins[1], "w2d"));
  }
  GRAPHI_ASSIGN_OR_RETURN(Attributes attrs, convert_attrs(n, where));
  // 1-D window attributes -> 2-D with a height of 1: a 1 for the sizes and steps, a 0 for the
  // added output padding (a 1 there would make the height 2).
  for (const onnx::Attr& a : n.attrs) {
    if (a.type != onnx::kAttrInts) continue;
    if (a.name == "kernel_shape" || a.name == "strides" || a.name == "dilations" ||
        a.name == "output_padding" || a.name == "output_shape") {
      if (a.ints.size() != 1)
        return Status::invalid_graph(where + ": attribute '" + a.name +
                                     "' must have 1 value for a 1-D " + n.op);
      attrs.set(a.name, std::vector<int64_t>{a.name == "output_padding" ? 0 : 1, a.ints[0]});
    } else if (a.name == "pads") {
      if (a.ints.size() != 2)
        return Status::invalid_graph(where + ": attribute 'pads' must have 2 values for a 1-D " +
                                     n.op);
      attrs.set(a.name, std::vector<int64_t>{0, a.ints[0], 0, a.ints[1]});
    }
  }
  const std::string y2 = fresh(name + "/y2d");
  GRAPHI_RETURN_IF_ERROR(emit(n.op, fresh(name + "/2d"), ins2, {y2}, std::move(attrs), where, &n));
  Shape ys = vals_.at(y2).desc.shape;
  ys.erase(ys.end() - 2);
  (void)x;
  return emit("Reshape", name, {y2, add_ints_const(name + "/shape", ys)}, outs, {}, where, &n);
}

}  // namespace graphi::graph::onnx_import
