#include "ops/registry.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace graphi::ops {

namespace {

// The process-wide table, built on first use. Mutable only through add_to_process_table().
Registry& process_table() {
  static Registry* table = [] {
    auto* r = new Registry();  // never destroyed: kernels may outlive static destruction order
    register_elementwise_ops(*r);
    register_shape_ops(*r);
    register_softmax_op(*r);
    register_gemm_ops(*r);
    register_conv_pool_ops(*r);
    register_conv_pool_3d_ops(*r);
    register_rnn_ops(*r);
    register_onnx_view_ops(*r);
    register_phased_lstm_op(*r);
    register_unary_ops(*r);
    register_reduce_ops(*r);
    register_pad_op(*r);
    register_logic_ops(*r);
    register_cast_op(*r);
    register_quantize_dequantize_op(*r);
    register_int8_matmul_op(*r);
    register_dynamic_quantize_dequantize_op(*r);
    register_norm_ops(*r);
    register_log_softmax_op(*r);
    register_index_ops(*r);
    register_tile_expand_ops(*r);
    register_resize_op(*r);
    register_grid_sample_op(*r);
    register_det_op(*r);
    register_col2im_op(*r);
    register_center_crop_pad_op(*r);
    register_roi_align_op(*r);
    register_pool_nd_ops(*r);
    register_max_unpool_op(*r);
    register_int_arith_ops(*r);
    register_conv_transpose_op(*r);
    register_cumsum_op(*r);
    register_signal_ops(*r);
    register_einsum_op(*r);
    register_scatter_gather_nd_ops(*r);
    register_lrn_op(*r);
    register_optimizer_ops(*r);
    register_max_pool_grad_op(*r);
    register_relu_grad_op(*r);
    register_split_sum_op(*r);
    register_channel_gather_op(*r);
    register_channel_affine_op(*r);
    register_group_norm_op(*r);
    register_conv_grad_weight_op(*r);
    register_batch_norm_ops(*r);
    register_dropout_ops(*r);
    return r;
  }();
  return *table;
}

}  // namespace

const Registry& Registry::get() { return process_table(); }

Status Registry::add_to_process_table(OpDef def) {
  static std::mutex mu;
  Registry& table = process_table();
  std::lock_guard<std::mutex> lock(mu);
  if (table.defs_.count(def.type))
    return Status::invalid_argument("op type '" + def.type + "' is already registered");
  table.add(std::move(def));
  return Status::ok();
}

void Registry::add(OpDef def) {
  GRAPHI_CHECK(def.infer && def.cost && !def.kernels.empty(), "incomplete OpDef " + def.type);
  GRAPHI_CHECK(!defs_.count(def.type), "op registered twice: " + def.type);
  std::string type = def.type;
  defs_.emplace(std::move(type), std::move(def));
}

const OpDef* Registry::find(const std::string& type) const {
  auto it = defs_.find(type);
  return it == defs_.end() ? nullptr : &it->second;
}

std::vector<std::string> Registry::op_types() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : defs_) out.push_back(k);
  return out;
}

Result<std::vector<TensorDesc>> Registry::infer(const graph::InferContext& ctx) const {
  const OpDef* def = find(ctx.node.op);
  if (!def) {
    std::string known;
    for (const auto& [k, v] : defs_) known += (known.empty() ? "" : ", ") + k;
    return Status::unsupported(ctx.where + ": unknown op type '" + ctx.node.op +
                               "' (supported: " + known + ")");
  }
  return def->infer(ctx);
}

CostHint Registry::cost(const graph::Node& node, std::span<const TensorDesc* const> inputs,
                        std::span<const TensorDesc* const> outputs) const {
  const OpDef* def = find(node.op);
  GRAPHI_CHECK(def != nullptr, "cost of unknown op " + node.op);
  return def->cost(node, inputs, outputs);
}

bool verbose_dispatch() {
  const char* v = std::getenv("GRAPHI_VERBOSE");
  return v && std::strstr(v, "dispatch") != nullptr;
}

Result<std::unique_ptr<Kernel>> Registry::select(const KernelContext& ctx) const {
  const OpDef* def = find(ctx.node.op);
  if (!def) return Status::unsupported(ctx.where + ": unknown op type '" + ctx.node.op + "'");
  std::string reasons;
  for (KernelFactory make : def->kernels) {
    std::unique_ptr<Kernel> k = make();
    Status s = k->init(ctx);
    if (s.is_ok()) {
      if (verbose_dispatch())
        std::fprintf(stderr, "graphi: dispatch %s -> %s\n", ctx.where.c_str(), k->name());
      return k;
    }
    if (verbose_dispatch())
      std::fprintf(stderr, "graphi: dispatch %s: %s declined: %s\n", ctx.where.c_str(), k->name(),
                   s.message().c_str());
    reasons += std::string(reasons.empty() ? "" : "; ") + k->name() + ": " + s.message();
  }
  return Status::unsupported(ctx.where + ": no kernel accepts this node (" + reasons + ")");
}

}  // namespace graphi::ops
