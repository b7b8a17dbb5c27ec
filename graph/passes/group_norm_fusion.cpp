#include "graph/passes/group_norm_fusion.h"

#include <algorithm>

#include "graph/passes/pass_util.h"

namespace graphi::graph::passes {
namespace {

bool f32_4d(const Value& v) { return v.desc.dtype == DType::kF32 && v.desc.rank() == 4; }

// A per-channel constant of x's shape (pass_util's per_channel_constant) as a [C] tensor.
Tensor channel_vector(const Value& v) {
  Tensor t(TensorDesc{DType::kF32, {v.desc.numel()}});
  std::copy_n(v.data->data_as<float>(), v.desc.numel(), t.data_as<float>());
  return t;
}

Tensor filled(int64_t c, float value) {
  Tensor t(TensorDesc{DType::kF32, {c}});
  std::fill_n(t.data_as<float>(), c, value);
  return t;
}

// The Reshape node producing v, when its input is x-shaped and it is read only by `reader`.
NodeId reshape_into(const Graph& g, ValueId v, NodeId reader) {
  const NodeId p = g.value(v).producer;
  if (p == kNoId || g.node(p).op != "Reshape" || sole_reader(g, v) != reader) return kNoId;
  return p;
}

}  // namespace

Result<GroupNormFusionResult> fuse_group_norm(const Graph& g, const ShapeInferencer& shapes) {
  GroupNormFusionResult result;
  Rewrite rw(g);
  for (NodeId id = 0; id < g.num_nodes(); ++id) {
    const Node& in = g.node(id);
    if (in.op != "InstanceNormalization" || in.inputs.size() != 3 || in.outputs.size() != 1 ||
        in.inputs[1] == kNoId || in.inputs[2] == kNoId || rw.removed(id))
      continue;
    const Value& sv = g.value(in.inputs[1]);
    const Value& bv = g.value(in.inputs[2]);
    if (!sv.data || !bv.data || sv.desc.dtype != DType::kF32 || bv.desc.dtype != DType::kF32)
      continue;
    auto eps = attr_float(in.attrs, in.name, "epsilon", 1e-5);
    if (!eps.is_ok()) continue;
    std::vector<NodeId> fused = {id};
    ValueId x = kNoId, y = in.outputs[0];
    int64_t groups = 0;
    Tensor scale, bias;
    if (f32_4d(g.value(in.inputs[0]))) {
      // InstanceNormalization of X itself: one group per channel, its scale and bias.
      x = in.inputs[0];
      groups = g.value(x).desc.shape[1];
      if (sv.desc.numel() != groups || bv.desc.numel() != groups) continue;
      scale = channel_vector(sv);
      bias = channel_vector(bv);
    } else {
      // Reshape X to [N, G, ...], InstanceNormalization (unit scale, zero bias), Reshape back.
      const NodeId r1 = reshape_into(g, in.inputs[0], id);
      const NodeId r2 = sole_reader(g, y);
      if (r1 == kNoId || r2 == kNoId || g.node(r2).op != "Reshape" ||
          g.node(r2).outputs.size() != 1)
        continue;
      x = g.node(r1).inputs[0];
      const Value& xv = g.value(x);
      const Shape& grouped = g.value(in.inputs[0]).desc.shape;
      if (!f32_4d(xv) || grouped.size() < 3 || grouped[0] != xv.desc.shape[0] ||
          g.value(g.node(r2).outputs[0]).desc != xv.desc)
        continue;
      groups = grouped[1];
      const int64_t c = xv.desc.shape[1];
      if (groups < 1 || c % groups != 0 || sv.desc.numel() != groups ||
          !const_all_equal(g, in.inputs[1], 1.0f) || !const_all_equal(g, in.inputs[2], 0.0f))
        continue;
      fused = {r1, id, r2};
      y = g.node(r2).outputs[0];
      scale = filled(c, 1.0f);
      bias = filled(c, 0.0f);
    }
    const Shape& xs = g.value(x).desc.shape;
    // The per-channel Mul and Add after it, then a Relu.
    bool affine = false, relu = false;
    if (const NodeId m = sole_reader(g, y); m != kNoId) {
      const ValueId s = other_operand(g.node(m), "Mul", y);
      if (s != kNoId && per_channel_constant(g.value(s), xs)) {
        const Tensor sc = channel_vector(g.value(s));
        for (int64_t c = 0; c < xs[1]; ++c) {
          scale.data_as<float>()[c] *= sc.data_as<float>()[c];
          bias.data_as<float>()[c] *= sc.data_as<float>()[c];
        }
        fused.push_back(m);
        y = g.node(m).outputs[0];
        affine = true;
      }
    }
    if (const NodeId a = sole_reader(g, y); a != kNoId) {
      const ValueId b = other_operand(g.node(a), "Add", y);
      if (b != kNoId && per_channel_constant(g.value(b), xs)) {
        const Tensor bc = channel_vector(g.value(b));
        for (int64_t c = 0; c < xs[1]; ++c) bias.data_as<float>()[c] += bc.data_as<float>()[c];
        fused.push_back(a);
        y = g.node(a).outputs[0];
        affine = true;
      }
    }
    if (const NodeId r = sole_reader(g, y); r != kNoId && g.node(r).op == "Relu") {
      fused.push_back(r);
      y = g.node(r).outputs[0];
      relu = true;
    }
    if (g.value(y).desc != g.value(x).desc) continue;
    for (NodeId f : fused) rw.remove(f);
    const std::string sname = rw.fresh(in.name + "/scale"), bname = rw.fresh(in.name + "/bias");
    rw.add_constant(sname, std::move(scale));
    rw.add_constant(bname, std::move(bias));
    Attributes a;
    a.set("num_groups", groups);
    a.set("epsilon", *eps);
    if (relu) a.set("activation", std::string("Relu"));
    rw.add_node("GroupNorm", in.name, {g.value(x).name, sname, bname}, {g.value(y).name}, a);
    ++result.fused;
    result.affine += affine ? 1 : 0;
    result.with_relu += relu ? 1 : 0;
  }
  GRAPHI_ASSIGN_OR_RETURN(result.graph, rw.finish_or_copy(result.fused, shapes));
  return result;
}

}  // namespace graphi::graph::passes
