// ONNX import, dynamically quantized MatMuls: what ONNX Runtime's quantize_dynamic writes for a
// MatMul with constant weights,
//   xq, xs, xzp = DynamicQuantizeLinear(x);  acc = MatMulInteger(xq, Wq, xzp, wzp)
//   y = Mul(Cast(acc, FLOAT), Mul(xs, w_scale))
// (either operand order in both Muls; one DynamicQuantizeLinear may feed several MatMulIntegers,
// the Q / K / V projections of an attention block), and ORT's own fusion of it,
// com.microsoft.DynamicQuantizeMatMul(x, Wq, w_scale, wzp, bias), become graphi's
// Int8MatMul (ops/int8_matmul.cpp), which computes exactly what the chain
// defines in int8 / int32. The same chain through ConvInteger (quantize_dynamic's Conv) becomes
// DynamicQuantizeDequantize(x) (once per x) and a float Conv with weights (W - zero point) *
// scale: the same integer products, summed in float32. The chain is checked as a whole at its
// DynamicQuantizeLinear: every reader of its three outputs must belong to such a chain, no
// intermediate may be a graph output; anything else (ConvInteger, a quantized value read by another
// op) is refused by name. The chain's other nodes are then skipped and the op is emitted at its
// last Mul.
#include <algorithm>
#include <set>

#include "graph/onnx/import_internal.h"

namespace graphi::graph::onnx_import {

using onnx::HostTensor;

namespace {

std::vector<const onnx::Node*> readers(const onnx::GraphProto& g, const std::string& v) {
  std::vector<const onnx::Node*> out;
  for (const onnx::Node& n : g.nodes)
    if (std::find(n.inputs.begin(), n.inputs.end(), v) != n.inputs.end()) out.push_back(&n);
  return out;
}

bool is_default_domain(const onnx::Node& n) { return n.domain.empty() || n.domain == "ai.onnx"; }

}  // namespace

Status Importer::plan_dynamic_quantize_chains(const onnx::Node& d, const std::string& where) {
  if (d.inputs.size() != 1 || d.inputs[0].empty() || d.outputs.size() != 3)
    return Status::invalid_graph(where +
                                 ": DynamicQuantizeLinear takes 1 input and has 3 outputs "
                                 "(y, y_scale, y_zero_point)");
  const std::string &xq = d.outputs[0], &xs = d.outputs[1], &xzp = d.outputs[2];
  const std::string help =
      "; graphi runs DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul chains (ONNX "
      "Runtime's quantize_dynamic of a MatMul) as one int8 op, integer tensors at run time are "
      "not supported";
  auto refuse = [&](const std::string& value, const onnx::Node& r) {
    return Status::unsupported(where + ": its output '" + value + "' feeds node[" +
                               std::to_string(r.index) + "] '" + r.name + "' (" + r.op + ")" +
                               help);
  };
  // The one reader of v, which `ok` accepts (`producer` names the chain's node when v has none).
  auto only_reader = [&](const std::string& v, const onnx::Node& producer,
                         auto ok) -> Result<const onnx::Node*> {
    const auto rs = readers(m_.graph, v);
    if (rs.empty())
      return Status::unsupported(where + ": the output '" + v + "' of node[" +
                                 std::to_string(producer.index) + "] '" + producer.name + "' (" +
                                 producer.op + ") is not read" + help);
    for (const onnx::Node* r : rs)
      if (!ok(*r)) return refuse(v, *r);
    if (rs.size() > 1) return refuse(v, *rs[1]);
    return rs[0];
  };
  std::set<std::string> outputs;
  for (const onnx::ValueInfo& o : m_.graph.outputs) outputs.insert(o.name);
  auto not_output = [&](const std::string& v) -> Status {
    if (outputs.count(v))
      return Status::unsupported(where + ": '" + v +
                                 "' of its MatMulInteger chain is a graph "
                                 "output" +
                                 help);
    return Status::ok();
  };
  for (const std::string& v : {xq, xs, xzp}) GRAPHI_RETURN_IF_ERROR(not_output(v));
  std::set<size_t> matmuls, scale_muls, ends;
  std::vector<std::pair<size_t, DqChain>> chains;
  for (const onnx::Node* mm : readers(m_.graph, xq)) {
    if ((mm->op != "MatMulInteger" && mm->op != "ConvInteger") || !is_default_domain(*mm) ||
        mm->inputs.size() < 3 || mm->inputs[0] != xq || mm->inputs[1] == xq ||
        mm->inputs[2] != xzp || mm->outputs.size() != 1)
      return refuse(xq, *mm);
    const std::string& acc = mm->outputs[0];
    GRAPHI_RETURN_IF_ERROR(not_output(acc));
    GRAPHI_ASSIGN_OR_RETURN(const onnx::Node* cast, only_reader(acc, *mm, [](const onnx::Node& r) {
                              const onnx::Attr* to = r.attr("to");
                              return r.op == "Cast" && to && to->i == onnx::kFloat;
                            }));
    const std::string& accf = cast->outputs[0];
    GRAPHI_RETURN_IF_ERROR(not_output(accf));
    GRAPHI_ASSIGN_OR_RETURN(
        const onnx::Node* end, only_reader(accf, *cast, [](const onnx::Node& r) {
          return r.op == "Mul" && r.inputs.size() == 2 && r.inputs[0] != r.inputs[1];
        }));
    const std::string& prod = end->inputs[0] == accf ? end->inputs[1] : end->inputs[0];
    // The scale product: a Mul of xs and the weights' scale.
    const onnx::Node* pm = nullptr;
    for (const onnx::Node& n : m_.graph.nodes)
      if (std::find(n.outputs.begin(), n.outputs.end(), prod) != n.outputs.end()) pm = &n;
    if (!pm || pm->op != "Mul" || pm->inputs.size() != 2 ||
        (pm->inputs[0] == xs) == (pm->inputs[1] == xs))
      return refuse(accf, *end);
    GRAPHI_RETURN_IF_ERROR(not_output(prod));
    DqChain c;
    c.x = d.inputs[0];
    c.w = mm->inputs[1];
    c.w_zero_point = mm->inputs.size() > 3 ? mm->inputs[3] : "";
    c.w_scale = pm->inputs[0] == xs ? pm->inputs[1] : pm->inputs[0];
    c.where = where_of(*mm);
    c.integer_op = mm->index;
    matmuls.insert(mm->index);
    scale_muls.insert(pm->index);
    ends.insert(end->index);
    chains.emplace_back(end->index, c);
    dq_chain_inner_.insert(mm->index);
    dq_chain_inner_.insert(cast->index);
  }
  for (const onnx::Node* r : readers(m_.graph, xs))
    if (!scale_muls.count(r->index)) return refuse(xs, *r);
  for (const onnx::Node* r : readers(m_.graph, xzp))
    if (!matmuls.count(r->index)) return refuse(xzp, *r);
  for (size_t pi : scale_muls)
    for (const onnx::Node* r : readers(m_.graph, m_.graph.nodes[pi].outputs[0]))
      if (!ends.count(r->index)) return refuse(m_.graph.nodes[pi].outputs[0], *r);
  for (size_t pi : scale_muls) dq_chain_inner_.insert(pi);
  for (auto& [index, c] : chains) dq_chain_end_[index] = std::move(c);
  return Status::ok();
}

Status Importer::emit_dynamic_quantize_matmul(const onnx::Node& n, const DqChain& c,
                                              const std::string& bias, const std::string& where) {
  const std::string mm = c.where;  // where the weights come from
  if (m_.graph.nodes[c.integer_op].op == "ConvInteger")
    return emit_dynamic_quantize_conv(n, c, where);
  const HostTensor* w = host(c.w);
  if (!w)
    return Status::unsupported(mm + ": the weights '" + c.w +
                               "' are computed at run time; "
                               "graphi runs dynamically quantized MatMuls with constant weights");
  if (w->type != onnx::kInt8 && w->type != onnx::kUint8)
    return Status::invalid_graph(mm + ": the weights '" + c.w + "' are " + w->desc() +
                                 "; they must be INT8 or UINT8");
  GRAPHI_ASSIGN_OR_RETURN(TensorDesc xd, desc_of(c.x, where));
  if (w->shape.size() != 2 || xd.rank() < 1 || xd.shape.back() != w->shape[0])
    return Status::unsupported(mm + ": weights " + w->desc() + " and the quantized input " +
                               xd.to_string() +
                               " (graphi takes 2-D weights [K, N] and x [..., K])");
  const int64_t N = w->shape[1];
  const HostTensor* zp = nullptr;
  if (!c.w_zero_point.empty()) {
    zp = host(c.w_zero_point);
    if (!zp)
      return Status::unsupported(mm + ": the weights' zero point '" + c.w_zero_point +
                                 "' is computed at run time; it must be a constant");
    if (zp->type != w->type || (zp->numel() != 1 && zp->numel() != static_cast<size_t>(N)))
      return Status::invalid_graph(mm + ": the weights' zero point " + zp->desc() +
                                   " must have the weights' type and 1 or " + std::to_string(N) +
                                   " values");
  }
  const HostTensor* s = host(c.w_scale);
  if (!s)
    return Status::unsupported(where + ": the weights' scale '" + c.w_scale +
                               "' is computed at run time; it must be a constant");
  if (s->type != onnx::kFloat || (s->numel() != 1 && s->numel() != static_cast<size_t>(N)))
    return Status::invalid_graph(where + ": the weights' scale " + s->desc() +
                                 " must be FLOAT with 1 or " + std::to_string(N) + " values");
  // W minus its zero point, which the int8 kernel takes as its s8 operand.
  size_t bad = 0;
  std::optional<Int8MatMulWeights> q = int8_matmul_weights(*w, zp, *s, &bad);
  if (!q)
    return Status::unsupported(
        mm + ": weight [" + std::to_string(bad / static_cast<size_t>(N)) + ", " +
        std::to_string(bad % static_cast<size_t>(N)) + "] minus its zero point is " +
        std::to_string(w->i[bad] -
                       (zp ? zp->i[zp->numel() == 1 ? 0 : bad % static_cast<size_t>(N)] : 0)) +
        ", outside int8; graphi's int8 kernel takes weights whose difference to their zero point "
        "fits int8 (quantize_dynamic's QInt8 weights, or QUInt8 ones with zero point 128)");
  std::vector<std::string> ins = {c.x, add_const(c.w + "_int8", std::move(q->w)),
                                  add_const(c.w_scale + "_scale", std::move(q->scale))};
  if (!bias.empty()) ins.push_back(bias);
  const std::string name = node_name(n);
  return emit("Int8MatMul", name, ins, outputs_of(n, name), Attributes{}, where, &n);
}

Status Importer::emit_dynamic_quantize_conv(const onnx::Node& n, const DqChain& c,
                                            const std::string& where) {
  const onnx::Node& ci = m_.graph.nodes[c.integer_op];
  const std::string mm = c.where;
  const HostTensor* w = host(c.w);
  if (!w)
    return Status::unsupported(mm + ": the weights '" + c.w +
                               "' are computed at run time; "
                               "graphi runs dynamically quantized convolutions with constant "
                               "weights");
  if ((w->type != onnx::kInt8 && w->type != onnx::kUint8) || w->shape.size() < 3)
    return Status::invalid_graph(mm + ": the weights '" + c.w + "' are " + w->desc() +
                                 "; they must be INT8 or UINT8 [M, C / group, kernel...]");
  const int64_t M = w->shape[0];
  const size_t per = w->numel() / static_cast<size_t>(M);
  const HostTensor* zp = c.w_zero_point.empty() ? nullptr : host(c.w_zero_point);
  if (!c.w_zero_point.empty() &&
      (!zp || zp->type != w->type || (zp->numel() != 1 && zp->numel() != static_cast<size_t>(M))))
    return Status::unsupported(mm + ": the weights' zero point '" + c.w_zero_point +
                               "' must be a constant of the weights' type with 1 or " +
                               std::to_string(M) + " values");
  const HostTensor* s = host(c.w_scale);
  if (!s || s->type != onnx::kFloat || (s->numel() != 1 && s->numel() != static_cast<size_t>(M)))
    return Status::unsupported(where + ": the weights' scale '" + c.w_scale +
                               "' must be a FLOAT constant with 1 or " + std::to_string(M) +
                               " values (one per output channel)");
  // (W - zero point) * scale per output channel: the float convolution of the dequantized x
  // with these sums the same products the integer one does, each scaled.
  HostTensor wd = HostTensor::make(onnx::kFloat, w->shape);
  for (int64_t m = 0; m < M; ++m) {
    const int64_t z = zp ? zp->i[zp->numel() == 1 ? 0 : static_cast<size_t>(m)] : 0;
    const auto sm = static_cast<float>(s->f[s->numel() == 1 ? 0 : static_cast<size_t>(m)]);
    for (size_t e = 0; e < per; ++e) {
      const size_t k = static_cast<size_t>(m) * per + e;
      wd.f[k] = static_cast<double>(static_cast<float>(w->i[k] - z) * sm);
    }
  }
  auto [it, fresh_x] = dq_dequantized_.try_emplace(c.x, "");
  if (fresh_x) {
    it->second = fresh(c.x + "_dynamic_qdq");
    GRAPHI_RETURN_IF_ERROR(emit("DynamicQuantizeDequantize", fresh(c.x + "/DynamicQuantize"), {c.x},
                                {it->second}, Attributes{}, where, nullptr));
  }
  onnx::Node conv = ci;
  conv.op = "Conv";
  conv.index = n.index;
  conv.inputs = {it->second, add_const(c.w + "_dequantized", std::move(wd))};
  conv.outputs = n.outputs;
  if (conv.attr("auto_pad") && conv.attr("auto_pad")->s != "NOTSET") {
    GRAPHI_ASSIGN_OR_RETURN(onnx::Node padded, explicit_pads(conv, where));
    return translate(padded, where);
  }
  return translate(conv, where);
}

std::optional<Status> Importer::import_dynamic_quantize(const onnx::Node& n,
                                                        const std::string& where) {
  if (dq_chain_inner_.count(n.index)) return Status::ok();  // emitted at the chain's last Mul
  if (auto it = dq_chain_end_.find(n.index); it != dq_chain_end_.end())
    return emit_dynamic_quantize_matmul(n, it->second, "", where);
  if (n.op == "DynamicQuantizeLinear" && is_default_domain(n)) {
    for (const std::string& in : n.inputs)
      if (!in.empty() && !vals_.count(in))
        return Status::internal(where + ": input '" + in + "' is not defined");
    return plan_dynamic_quantize_chains(n, where);
  }
  if (n.op == "DynamicQuantizeMatMul" && n.domain == "com.microsoft") {
    if (n.inputs.size() < 3 || n.inputs.size() > 5 || n.inputs[0].empty() || n.inputs[1].empty() ||
        n.inputs[2].empty() || n.outputs.size() != 1)
      return Status::invalid_graph(where +
                                   ": DynamicQuantizeMatMul takes A, B, b_scale and "
                                   "optionally b_zero_point and bias, and has 1 output");
    for (const std::string& in : n.inputs)
      if (!in.empty() && !vals_.count(in))
        return Status::internal(where + ": input '" + in + "' is not defined");
    DqChain c;
    c.x = n.inputs[0];
    c.w = n.inputs[1];
    c.w_scale = n.inputs[2];
    c.w_zero_point = n.inputs.size() > 3 ? n.inputs[3] : "";
    c.where = where;
    c.integer_op = n.index;
    const std::string bias = n.inputs.size() > 4 ? n.inputs[4] : "";
    if (!bias.empty()) {
      const HostTensor* b = host(bias);
      if (!b || b->type != onnx::kFloat)
        return Status::unsupported(where + ": bias '" + bias + "' must be a FLOAT constant");
    }
    return emit_dynamic_quantize_matmul(n, c, bias, where);
  }
  return std::nullopt;
}

}  // namespace graphi::graph::onnx_import
