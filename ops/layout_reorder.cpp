// ToBlocked / FromBlocked: the layout boundaries of graph/passes/blocked_layout.h. ToBlocked
// (attribute block = B, 8 or 16) turns NCHW [N, C, H, W] into oneDNN's nChw{B}c held as
// [N, ceil(C/B), H, W, B], the lanes past C of the last block zero (channel padding, as oneDNN
// pads a blocked memory whose C is no multiple of B); FromBlocked does the reverse, keeping the
// first `channels` (attribute; default: all, C/B * B) and dropping the padding lanes, whatever
// they hold. oneDNN's jit reorder, then loops (the team splitting the N * ceil(C/B) channel
// blocks; a full block as one 2-D transpose in 8x8 tiles, ops/transpose_tiles.h); nothing
// allocated at run time. Tiled loops against oneDNN's reorder (inception b1, 2 threads, per-op
// medians): 192x28x28 to nChw16c 42.8 against 49.8 us, 256x28x28 back 36.4 against 34.5: a
// tie, so oneDNN stays first.
#include <algorithm>
#include <cstdio>
#include <limits>

#include "ops/onednn.h"
#include "ops/registry.h"
#include "ops/shape_rules.h"
#include "ops/transpose_tiles.h"

namespace graphi::ops {
namespace {

// FromBlocked's `channels` for an input of `blocks` blocks of b: within the last block.
Result<int64_t> logical_channels(const graph::Node& node, const std::string& where, int64_t blocks,
                                 int64_t b) {
  GRAPHI_ASSIGN_OR_RETURN(int64_t c, graph::attr_int(node.attrs, where, "channels", blocks * b));
  if (c <= (blocks - 1) * b || c > blocks * b)
    return Status::invalid_graph(
        where + ": attribute 'channels' = " + std::to_string(c) + " does not fit " +
        std::to_string(blocks) + " blocks of " + std::to_string(b) + " (it must be in (" +
        std::to_string((blocks - 1) * b) + ", " + std::to_string(blocks * b) + "])");
  return c;
}

Result<std::vector<TensorDesc>> infer_reorder(const graph::InferContext& ctx) {
  if (ctx.inputs.size() != 1 || !ctx.inputs[0] || ctx.num_outputs != 1)
    return Status::invalid_graph(ctx.where + ": " + ctx.node.op + " takes 1 input and 1 output");
  const TensorDesc& x = *ctx.inputs[0];
  GRAPHI_ASSIGN_OR_RETURN(int64_t b, layout_block(ctx.node, ctx.where));
  if (x.dtype != DType::kF32)
    return Status::invalid_graph(ctx.where + ": input must be float32, got " + x.to_string());
  if (ctx.node.op == "ToBlocked") {
    if (x.rank() != 4)
      return Status::invalid_graph(ctx.where + ": input must be NCHW, got " + x.to_string());
    return std::vector<TensorDesc>{
        TensorDesc{DType::kF32, {x.shape[0], (x.shape[1] + b - 1) / b, x.shape[2], x.shape[3], b}}};
  }
  if (x.rank() != 5 || x.shape[4] != b)
    return Status::invalid_graph(ctx.where + ": input must be [N, C/" + std::to_string(b) +
                                 ", H, W, " + std::to_string(b) + "], got " + x.to_string());
  GRAPHI_ASSIGN_OR_RETURN(int64_t c, logical_channels(ctx.node, ctx.where, x.shape[1], b));
  return std::vector<TensorDesc>{TensorDesc{DType::kF32, {x.shape[0], c, x.shape[2], x.shape[3]}}};
}

CostHint cost_reorder(const graph::Node&, std::span<const TensorDesc* const> inputs,
                      std::span<const TensorDesc* const> outputs) {
  CostHint c;
  c.bytes = static_cast<double>(inputs[0]->bytes() + outputs[0]->bytes());
  return c;
}

class ReorderKernel final : public Kernel {
 public:
  const char* name() const override { return to_blocked_ ? "to_blocked" : "from_blocked"; }

  Status init(const KernelContext& ctx) override {
    to_blocked_ = ctx.node.op == "ToBlocked";
    const Shape& x = ctx.inputs[0]->shape;
    const Shape& y = ctx.outputs[0]->shape;
    GRAPHI_ASSIGN_OR_RETURN(b_, layout_block(ctx.node, ctx.where));
    n_ = x[0];
    c_ = to_blocked_ ? x[1] : y[1];
    cb_ = (c_ + b_ - 1) / b_;
    hw_ = x[2] * x[3];
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    const float* x = static_cast<const float*>(io.inputs[0]);
    float* y = static_cast<float*>(io.outputs[0]);
    auto [p0, p1] = team_range(n_ * cb_, team.ithr, team.nthr);
    const int64_t block = hw_ * b_;  // one channel block: B planes = HW vectors of B
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t img = p / cb_, c0 = p % cb_ * b_;
      const int64_t lanes = std::min(b_, c_ - c0);  // < B in a padded last block
      const int64_t plain = (img * c_ + c0) * hw_;  // channel c0 of image img in NCHW
      if (lanes == b_) {
        // A full block is a 2-D transpose: [B][HW] <-> [HW][B], in 8x8 tiles.
        if (to_blocked_)
          transpose_block_f32(x + plain, hw_, y + p * block, b_, b_, hw_);
        else
          transpose_block_f32(x + p * block, b_, y + plain, hw_, hw_, b_);
      } else if (to_blocked_) {
        const float* src = x + plain;
        float* dst = y + p * block;
        for (int64_t c = 0; c < lanes; ++c)
          for (int64_t i = 0; i < hw_; ++i) dst[i * b_ + c] = src[c * hw_ + i];
        for (int64_t c = lanes; c < b_; ++c)
          for (int64_t i = 0; i < hw_; ++i) dst[i * b_ + c] = 0.0f;
      } else {
        const float* src = x + p * block;
        float* dst = y + plain;
        for (int64_t i = 0; i < hw_; ++i)
          for (int64_t c = 0; c < lanes; ++c) dst[c * hw_ + i] = src[i * b_ + c];
      }
    }
  }

 private:
  bool to_blocked_ = true;
  int64_t b_ = 16, n_ = 0, c_ = 0, cb_ = 0, hw_ = 0;
};

// oneDNN's jit reorder (Primitive::execute opens its own region): measured ~5x the loops'
// bandwidth (8x192x28x28 to nChw16c, 2 threads: 0.09 ms against 0.45-0.74 ms).
class OnednnReorderKernel final : public Kernel {
 public:
  static constexpr int64_t kMinElements = 4096;

  const char* name() const override {
    return to_blocked_ ? "to_blocked_onednn" : "from_blocked_onednn";
  }
  bool opens_own_region() const override { return true; }
  size_t scratch_bytes() const override { return prim_ ? prim_->scratch_bytes() : 0; }

  Status init(const KernelContext& ctx) override {
    to_blocked_ = ctx.node.op == "ToBlocked";
    const Shape& x = ctx.inputs[0]->shape;
    GRAPHI_ASSIGN_OR_RETURN(const int64_t b, layout_block(ctx.node, ctx.where));
    const int64_t c = to_blocked_ ? x[1] : ctx.outputs[0]->shape[1];  // logical channels
    count_ = ctx.outputs[0]->numel();
    // A small tensor costs the loops less than a oneDNN call (its argument map and OpenMP
    // region: microseconds).
    if (count_ < kMinElements)
      return Status::unsupported("tensor of " + std::to_string(count_) + " elements, below " +
                                 std::to_string(kMinElements) + ": the loops are cheaper");
    GRAPHI_ASSIGN_OR_RETURN(
        prim_, onednn::make_layout_reorder(x[0], c, x[2], x[3], static_cast<int>(b), to_blocked_,
                                           ctx.team_size));
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    float* y = static_cast<float*>(io.outputs[0]);
    if (!prim_->execute(static_cast<const float*>(io.inputs[0]), nullptr, nullptr, y, team.scratch,
                        team.nthr, team.scratch_bytes)) {
      std::fprintf(stderr, "graphi: %s: oneDNN execution failed; output set to NaN\n", name());
      std::fill(y, y + count_, std::numeric_limits<float>::quiet_NaN());
    }
  }

 private:
  bool to_blocked_ = true;
  int64_t count_ = 0;
  std::unique_ptr<onednn::Primitive> prim_;
};

}  // namespace

void register_layout_reorder_ops(Registry& r) {
  for (const char* op : {"ToBlocked", "FromBlocked"})
    r.add(
        OpDef{op,
              infer_reorder,
              cost_reorder,
              false,
              {[]() -> std::unique_ptr<Kernel> { return std::make_unique<OnednnReorderKernel>(); },
               []() -> std::unique_ptr<Kernel> { return std::make_unique<ReorderKernel>(); }}});
}

}  // namespace graphi::ops
