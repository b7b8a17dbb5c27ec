// ChannelGather(X0, X1, ...) -> Y (graphi's own op, attributes `source` and `channel`, optional
// `block`): output channel c is channel channel[c] of input source[c]; every input has Y's N, H
// and W. It is what a run of channel Slices, Concats and channel shuffles (ShuffleNet's
// Reshape [N, g, C/g, H, W] + Transpose + Reshape) computes, composed into one copy
// (graph/passes/channel_gather.h emits it). With `block` B the inputs and the output are
// channel-blocked [N, ceil(C/B), H, W, B] (graph/passes/blocked_layout.h): each output vector
// of B lanes is a masked lane permute of the few input vectors it draws from, and the output's
// padding lanes are written as zeros (the blocked layout's invariant); input padding lanes are
// never read.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "ops/activations.h"  // SimdIsa, active_simd_isa()
#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

struct GatherSpec {
  int64_t block = 0;  // 0: NCHW
  std::vector<int64_t> source, channel;
  int64_t n = 0, hw = 0, h = 0, w = 0;
  std::vector<int64_t> in_channels;  // per input: C (NCHW) or ceil(C/B) * B (blocked)
};

Result<GatherSpec> spec_of(const NodeView& v) {
  GatherSpec s;
  if (v.node.attrs.has("block")) {
    GRAPHI_ASSIGN_OR_RETURN(s.block, layout_block(v.node, v.where));
  }
  GRAPHI_ASSIGN_OR_RETURN(s.source, graph::attr_ints(v.node.attrs, v.where, "source"));
  GRAPHI_ASSIGN_OR_RETURN(s.channel, graph::attr_ints(v.node.attrs, v.where, "channel"));
  if (s.source.empty() || s.source.size() != s.channel.size())
    return Status::invalid_graph(v.where + ": attributes 'source' (" +
                                 std::to_string(s.source.size()) + " values) and 'channel' (" +
                                 std::to_string(s.channel.size()) +
                                 " values) must have one entry per output channel, at least one");
  if (v.inputs.empty()) return Status::invalid_graph(v.where + ": expects at least 1 input, got 0");
  const int rank = s.block ? 5 : 4;
  for (size_t i = 0; i < v.inputs.size(); ++i) {
    if (!v.has_input(i))
      return Status::invalid_graph(v.where + ": input " + std::to_string(i) + " is absent");
    const TensorDesc& d = v.in(i);
    if (d.dtype != DType::kF32 || d.rank() != rank || (s.block && d.shape[4] != s.block))
      return Status::invalid_graph(
          v.where + ": input " + std::to_string(i) + " must be float32 " +
          (s.block ? "[N, C/" + std::to_string(s.block) + ", H, W, " + std::to_string(s.block) + "]"
                   : std::string("[N, C, H, W]")) +
          ", got " + d.to_string());
    const TensorDesc& d0 = v.in(0);
    if (d.shape[0] != d0.shape[0] || d.shape[2] != d0.shape[2] || d.shape[3] != d0.shape[3])
      return Status::invalid_graph(v.where + ": input " + std::to_string(i) + " " + d.to_string() +
                                   " differs from input 0 " + d0.to_string() + " in N, H or W");
    s.in_channels.push_back(s.block ? d.shape[1] * s.block : d.shape[1]);
  }
  for (size_t c = 0; c < s.source.size(); ++c) {
    const int64_t src = s.source[c], ch = s.channel[c];
    if (src < 0 || src >= static_cast<int64_t>(v.inputs.size()))
      return Status::invalid_graph(v.where + ": attribute 'source'[" + std::to_string(c) +
                                   "] = " + std::to_string(src) + " names no input (" +
                                   std::to_string(v.inputs.size()) + " inputs)");
    if (ch < 0 || ch >= s.in_channels[static_cast<size_t>(src)])
      return Status::invalid_graph(v.where + ": attribute 'channel'[" + std::to_string(c) +
                                   "] = " + std::to_string(ch) + " is out of range for input " +
                                   std::to_string(src) + " " +
                                   v.in(static_cast<size_t>(src)).to_string());
  }
  s.n = v.in(0).shape[0];
  s.h = v.in(0).shape[2];
  s.w = v.in(0).shape[3];
  s.hw = s.h * s.w;
  return s;
}

Shape output_shape(const GatherSpec& s) {
  const int64_t m = static_cast<int64_t>(s.source.size());
  if (s.block) return {s.n, (m + s.block - 1) / s.block, s.h, s.w, s.block};
  return {s.n, m, s.h, s.w};
}

Result<std::vector<TensorDesc>> infer_channel_gather(const graph::InferContext& ctx) {
  GRAPHI_ASSIGN_OR_RETURN(GatherSpec s, spec_of(NodeView::of(ctx)));
  return std::vector<TensorDesc>{TensorDesc{DType::kF32, output_shape(s)}};
}

CostHint cost_channel_gather(const graph::Node&, std::span<const TensorDesc* const>,
                             std::span<const TensorDesc* const> out) {
  return {0.0, 2.0 * static_cast<double>(out[0]->bytes())};
}

// Blocked: the input vectors one output vector of B lanes draws from. Lane l of the output is
// lane idx[l] of input `input`'s channel block `cblock` where bit l of `mask` is set.
struct LaneGroup {
  int input = 0;
  int64_t cblock = 0;
  uint32_t mask = 0;
  alignas(64) int32_t idx[16] = {};
};

constexpr int64_t kPixelTile = 32;  // pixels per work item: the source vectors stay in L1

__attribute__((target("avx512f"))) void gather_tile_avx512(const LaneGroup* groups, size_t count,
                                                           const float* const* src, float* dst,
                                                           int64_t pixels) noexcept {
  for (int64_t p = 0; p < pixels; ++p) {
    __m512 acc = _mm512_setzero_ps();
    for (size_t k = 0; k < count; ++k) {
      const LaneGroup& g = groups[k];
      const __m512i idx = _mm512_load_si512(g.idx);
      acc = _mm512_mask_permutexvar_ps(acc, static_cast<__mmask16>(g.mask), idx,
                                       _mm512_loadu_ps(src[k] + p * 16));
    }
    _mm512_storeu_ps(dst + p * 16, acc);
  }
}

__attribute__((target("avx2"))) void gather_tile_avx2(const LaneGroup* groups, size_t count,
                                                      const float* const* src, float* dst,
                                                      int64_t pixels) noexcept {
  for (int64_t p = 0; p < pixels; ++p) {
    __m256 acc = _mm256_setzero_ps();
    for (size_t k = 0; k < count; ++k) {
      const LaneGroup& g = groups[k];
      const __m256i idx = _mm256_load_si256(reinterpret_cast<const __m256i*>(g.idx));
      const __m256i lane = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
      const __m256i sel = _mm256_cmpeq_epi32(
          _mm256_and_si256(_mm256_set1_epi32(static_cast<int>(g.mask)), lane), lane);
      const __m256 v = _mm256_permutevar8x32_ps(_mm256_loadu_ps(src[k] + p * 8), idx);
      acc = _mm256_blendv_ps(acc, v, _mm256_castsi256_ps(sel));
    }
    _mm256_storeu_ps(dst + p * 8, acc);
  }
}

class ChannelGatherKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    const NodeView v = NodeView::of_kernel(ctx);
    GRAPHI_ASSIGN_OR_RETURN(spec_, spec_of(v));
    if (ctx.outputs.size() != 1) return Status::unsupported("expects 1 output");
    if (!spec_.block) return Status::ok();
    const int64_t b = spec_.block, m = static_cast<int64_t>(spec_.source.size());
    out_blocks_ = (m + b - 1) / b;
    group_begin_.push_back(0);
    for (int64_t ob = 0; ob < out_blocks_; ++ob) {
      const size_t first = groups_.size();
      for (int64_t l = 0; l < b && ob * b + l < m; ++l) {
        const int input = static_cast<int>(spec_.source[static_cast<size_t>(ob * b + l)]);
        const int64_t ch = spec_.channel[static_cast<size_t>(ob * b + l)];
        auto it = std::find_if(
            groups_.begin() + static_cast<std::ptrdiff_t>(first), groups_.end(),
            [&](const LaneGroup& g) { return g.input == input && g.cblock == ch / b; });
        if (it == groups_.end()) {
          groups_.push_back(LaneGroup{});
          it = groups_.end() - 1;
          it->input = input;
          it->cblock = ch / b;
        }
        it->mask |= 1u << l;
        it->idx[l] = static_cast<int32_t>(ch % b);
      }
      group_begin_.push_back(groups_.size());
    }
    const SimdIsa isa = active_simd_isa();
    simd_ = (b == 16 && isa == SimdIsa::kAvx512) ||
            (b == 8 && (isa == SimdIsa::kAvx2 || isa == SimdIsa::kAvx512));
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    if (spec_.block)
      run_blocked(team, io);
    else
      run_planes(team, io);
  }
  const char* name() const override {
    return spec_.block ? "channel_gather_blocked" : "channel_gather_planes";
  }

 private:
  // NCHW: one contiguous H*W plane per output channel.
  void run_planes(const TeamContext& team, const Buffers& io) const noexcept {
    const int64_t m = static_cast<int64_t>(spec_.source.size());
    auto [b, e] = team_range(spec_.n * m, team.ithr, team.nthr);
    float* y = static_cast<float*>(io.outputs[0]);
    for (int64_t i = b; i < e; ++i) {
      const int64_t n = i / m, c = i % m;
      const size_t s = static_cast<size_t>(spec_.source[static_cast<size_t>(c)]);
      const float* x = static_cast<const float*>(io.inputs[s]);
      const int64_t cin = spec_.in_channels[s];
      std::memcpy(y + i * spec_.hw,
                  x + (n * cin + spec_.channel[static_cast<size_t>(c)]) * spec_.hw,
                  static_cast<size_t>(spec_.hw) * sizeof(float));
    }
  }

  // Blocked: work items of (image, tile of kPixelTile pixels), all output blocks of the tile.
  void run_blocked(const TeamContext& team, const Buffers& io) const noexcept {
    const int64_t b = spec_.block, hw = spec_.hw;
    const int64_t tiles = (hw + kPixelTile - 1) / kPixelTile;
    auto [first, last] = team_range(spec_.n * tiles, team.ithr, team.nthr);
    float* y = static_cast<float*>(io.outputs[0]);
    const float* src[16];  // an output block draws from at most B <= 16 input vectors
    for (int64_t item = first; item < last; ++item) {
      const int64_t n = item / tiles, p0 = (item % tiles) * kPixelTile;
      const int64_t pixels = std::min(kPixelTile, hw - p0);
      for (int64_t ob = 0; ob < out_blocks_; ++ob) {
        float* dst = y + ((n * out_blocks_ + ob) * hw + p0) * b;
        const size_t g0 = group_begin_[static_cast<size_t>(ob)],
                     g1 = group_begin_[static_cast<size_t>(ob) + 1];
        for (size_t k = g0; k < g1; ++k) {
          const LaneGroup& g = groups_[k];
          const float* x = static_cast<const float*>(io.inputs[static_cast<size_t>(g.input)]);
          src[k - g0] =
              x +
              ((n * (spec_.in_channels[static_cast<size_t>(g.input)] / b) + g.cblock) * hw + p0) *
                  b;
        }
        if (simd_ && b == 16) {
          gather_tile_avx512(groups_.data() + g0, g1 - g0, src, dst, pixels);
        } else if (simd_) {
          gather_tile_avx2(groups_.data() + g0, g1 - g0, src, dst, pixels);
        } else {
          for (int64_t p = 0; p < pixels; ++p) {
            float* out = dst + p * b;
            std::fill(out, out + b, 0.0f);
            for (size_t k = g0; k < g1; ++k)
              for (int64_t l = 0; l < b; ++l)
                if (groups_[k].mask >> l & 1u) out[l] = src[k - g0][p * b + groups_[k].idx[l]];
          }
        }
      }
    }
  }

  GatherSpec spec_;
  int64_t out_blocks_ = 0;
  std::vector<LaneGroup> groups_;
  std::vector<size_t> group_begin_;  // output block ob's groups: [begin[ob], begin[ob + 1])
  bool simd_ = false;
};

std::unique_ptr<Kernel> make_channel_gather() { return std::make_unique<ChannelGatherKernel>(); }

}  // namespace

void register_channel_gather_op(Registry& r) {
  r.add({"ChannelGather", infer_channel_gather, cost_channel_gather, false, {make_channel_gather}});
}

}  // namespace graphi::ops
