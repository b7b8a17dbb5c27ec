// The signal ops of ONNX opset 17 that run at run time: DFT, STFT and MelWeightMatrix (when its
// hertz inputs are computed; with constant inputs the importer folds it, as it folds the window
// ops: graph/onnx/onnx_fold_signal.cpp). graphi's DFT has ONNX DFT-17's interface (axis an
// attribute); the importer moves DFT-20's axis input there. Transforms run through FftPlan
// (ops/fft.h), planned at init for the one length a node uses, in double; float32 in and out.
#include <algorithm>
#include <cmath>

#include "graph/signal_math.h"
#include "ops/fft.h"
#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

// The value of a constant integer input that ONNX defines as a scalar (rank 0 or one element).
Result<int64_t> const_scalar_input(const NodeView& v, size_t i, const char* field) {
  GRAPHI_ASSIGN_OR_RETURN(std::vector<int64_t> vals, const_ints_input(v, i, field));
  if (vals.size() != 1)
    return Status::invalid_graph(v.where + ": input " + std::to_string(i) + " (" + field +
                                 ") must be a scalar, got " + v.in(i).to_string());
  return vals[0];
}

Result<bool> flag_attr(const NodeView& v, const char* name, int64_t dflt) {
  GRAPHI_ASSIGN_OR_RETURN(int64_t f, graph::attr_int(v.node.attrs, v.where, name, dflt));
  if (f != 0 && f != 1)
    return Status::invalid_graph(v.where + ": attribute '" + name + "' must be 0 or 1, got " +
                                 std::to_string(f));
  return f == 1;
}

// Per-thread scratch in Complex elements, rounded to whole 64-byte lines.
size_t lane_scratch_elems(const FftPlan& plan) {
  const size_t e = static_cast<size_t>(plan.size()) + plan.scratch_elems();
  return (e + 3) / 4 * 4;
}

// A kernel whose team threads each transform whole lanes with one FftPlan, made at init: each
// thread's slice of scratch holds a lane and the plan's work space.
class FftLaneKernel : public Kernel {
 public:
  size_t scratch_bytes() const override {
    return static_cast<size_t>(threads_) * lane_elems_ * sizeof(Complex);
  }

 protected:
  void make_plan(int64_t n, int team_size) {
    plan_ = std::make_unique<FftPlan>(n);
    threads_ = std::max(1, team_size);
    lane_elems_ = lane_scratch_elems(*plan_);
  }
  bool bluestein() const { return plan_ && plan_->bluestein(); }
  // The threads taking part: at most the team the scratch was sized for.
  int threads(const TeamContext& team) const { return std::min(team.nthr, threads_); }
  Complex* lane_buffer(const TeamContext& team) const {
    return static_cast<Complex*>(team.scratch) + static_cast<size_t>(team.ithr) * lane_elems_;
  }

  std::unique_ptr<FftPlan> plan_;

 private:
  int threads_ = 1;
  size_t lane_elems_ = 0;
};

double fft_flops(int64_t lanes, int64_t n) {
  return 5.0 * static_cast<double>(lanes) * static_cast<double>(n) *
         std::max(1.0, std::log2(static_cast<double>(n)));
}

// ---- DFT ----

// Input [..., len at axis, ..., c] (c = 1 real, 2 complex) as [outer, len, inner, c]; output
// [outer, out_len, inner, out_c].
struct DftGeom {
  int64_t outer = 1, len = 1, inner = 1, in_c = 1;
  int64_t n = 1;        // transform length (dft_length, or the axis length)
  int64_t out_len = 1;  // n, n / 2 + 1 (onesided forward)
  int64_t out_c = 2;    // 1 for the inverse of a one-sided spectrum (real signal)
  bool inverse = false, onesided = false;
  Shape out;
};

Result<DftGeom> dft_geom(const NodeView& v) {
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 1, 2, 1));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "input", {DType::kF32}));
  const TensorDesc& x = v.in(0);
  const int64_t r = x.rank();
  if (r < 2 || (x.shape.back() != 1 && x.shape.back() != 2))
    return Status::invalid_graph(v.where + ": input 0 (input) must be [..., signal, 1] (real) or " +
                                 "[..., signal, 2] (complex), got " + x.to_string());
  DftGeom g;
  g.in_c = x.shape.back();
  GRAPHI_ASSIGN_OR_RETURN(int64_t axis, graph::attr_int(v.node.attrs, v.where, "axis", 1));
  const int64_t a = axis < 0 ? axis + r : axis;
  if (a < 0 || a > r - 2)
    return Status::invalid_graph(v.where + ": attribute 'axis' = " + std::to_string(axis) +
                                 " is not a signal axis of input " + x.to_string() +
                                 " (valid: " + std::to_string(-r) + " to -2, 0 to " +
                                 std::to_string(r - 2) + "; the last dim holds real/imaginary)");
  GRAPHI_ASSIGN_OR_RETURN(g.inverse, flag_attr(v, "inverse", 0));
  GRAPHI_ASSIGN_OR_RETURN(g.onesided, flag_attr(v, "onesided", 0));
  for (int64_t d = 0; d < a; ++d) g.outer *= x.shape[static_cast<size_t>(d)];
  for (int64_t d = a + 1; d < r - 1; ++d) g.inner *= x.shape[static_cast<size_t>(d)];
  g.len = x.shape[static_cast<size_t>(a)];
  int64_t dft_length = 0;
  if (v.has_input(1)) {
    GRAPHI_ASSIGN_OR_RETURN(dft_length, const_scalar_input(v, 1, "dft_length"));
    if (dft_length < 1)
      return Status::invalid_graph(v.where + ": input 1 (dft_length) must be at least 1, got " +
                                   std::to_string(dft_length));
  }
  if (g.onesided && !g.inverse) {
    // A real-to-complex transform (numpy's rfft); ONNX Runtime refuses complex input here.
    if (g.in_c != 1)
      return Status::invalid_graph(v.where + ": onesided = 1 with inverse = 0 needs a real input " +
                                   "([..., 1]), got " + x.to_string());
    g.n = dft_length ? dft_length : g.len;
    g.out_len = g.n / 2 + 1;
  } else if (g.onesided) {
    // The inverse of a one-sided spectrum: a real signal of dft_length (default 2 (len - 1))
    // samples, as numpy's irfft and ONNX Runtime compute it.
    if (g.in_c != 2)
      return Status::invalid_graph(v.where + ": onesided = 1 with inverse = 1 needs a complex " +
                                   "one-sided spectrum ([..., 2]), got " + x.to_string());
    g.n = dft_length ? dft_length : 2 * (g.len - 1);
    if (g.n < 1)
      return Status::invalid_graph(v.where + ": onesided = 1 with inverse = 1 on a spectrum of " +
                                   "1 bin needs input 1 (dft_length)");
    g.out_len = g.n;
    g.out_c = 1;
  } else {
    g.n = dft_length ? dft_length : g.len;
    g.out_len = g.n;
  }
  g.out = x.shape;
  g.out[static_cast<size_t>(a)] = g.out_len;
  g.out.back() = g.out_c;
  return g;
}

Result<std::vector<TensorDesc>> infer_dft(const graph::InferContext& ctx) {
  GRAPHI_ASSIGN_OR_RETURN(DftGeom g, dft_geom(NodeView::of(ctx)));
  return std::vector<TensorDesc>{TensorDesc{DType::kF32, g.out}};
}

// A guess without the transform length: lanes of the longest signal dim.
CostHint cost_dft(const graph::Node&, std::span<const TensorDesc* const> in,
                  std::span<const TensorDesc* const> out) {
  const Shape& s = out[0]->shape;
  const int64_t longest = s.size() > 1 ? *std::max_element(s.begin(), s.end() - 1) : 1;
  const int64_t lanes = out[0]->numel() / std::max<int64_t>(1, s.back() * longest);
  return {fft_flops(lanes, longest), static_cast<double>(in[0]->bytes() + out[0]->bytes())};
}

class DftKernel final : public FftLaneKernel {
 public:
  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(g_, dft_geom(NodeView::of_kernel(ctx)));
    make_plan(g_.n, ctx.team_size);
    return Status::ok();
  }
  const char* name() const override { return bluestein() ? "dft_bluestein" : "dft"; }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    const int nthr = threads(team);
    if (team.ithr >= nthr) return;
    const auto* x = static_cast<const float*>(io.inputs[0]);
    auto* y = static_cast<float*>(io.outputs[0]);
    Complex* buf = lane_buffer(team);
    Complex* work = buf + g_.n;
    const int64_t n = g_.n, copy = std::min(g_.len, n);
    const double scale = g_.inverse ? 1.0 / static_cast<double>(n) : 1.0;
    auto [begin, end] = team_range(g_.outer * g_.inner, team.ithr, nthr);
    for (int64_t lane = begin; lane < end; ++lane) {
      const int64_t o = lane / g_.inner, i = lane % g_.inner;
      const float* src = x + (o * g_.len * g_.inner + i) * g_.in_c;
      const int64_t step = g_.inner * g_.in_c;
      if (g_.out_c == 1) {
        // Hermitian extension of the one-sided spectrum: bins 0..n/2 from the input (zero past
        // its end), bin n - k the conjugate of bin k.
        const int64_t half = n / 2;
        for (int64_t k = 0; k <= half; ++k)
          buf[k] = k < g_.len ? Complex{src[k * step], src[k * step + 1]} : Complex{0, 0};
        for (int64_t k = half + 1; k < n; ++k) buf[k] = std::conj(buf[n - k]);
      } else {
        for (int64_t t = 0; t < copy; ++t)
          buf[t] = {src[t * step], g_.in_c == 2 ? src[t * step + 1] : 0.0f};
        for (int64_t t = copy; t < n; ++t) buf[t] = {0, 0};
      }
      plan_->transform(buf, g_.inverse, work);
      float* dst = y + (o * g_.out_len * g_.inner + i) * g_.out_c;
      const int64_t out_step = g_.inner * g_.out_c;
      if (g_.out_c == 1) {
        for (int64_t k = 0; k < g_.out_len; ++k)
          dst[k * out_step] = static_cast<float>(buf[k].real() * scale);
      } else {
        for (int64_t k = 0; k < g_.out_len; ++k) {
          dst[k * out_step] = static_cast<float>(buf[k].real() * scale);
          dst[k * out_step + 1] = static_cast<float>(buf[k].imag() * scale);
        }
      }
    }
  }

 private:
  DftGeom g_;
};

// ---- STFT ----

// Signal [B, L] or [B, L, c]; frames of frame_length samples every frame_step, each multiplied
// by the window and transformed; output [B, frames, bins, 2].
struct StftGeom {
  int64_t batch = 1, len = 1, in_c = 1;
  int64_t step = 1, frame = 1, frames = 1, bins = 1;
  bool has_window = false;
};

Result<StftGeom> stft_geom(const NodeView& v) {
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 2, 4, 2));
  GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 0, "signal", {DType::kF32}));
  const TensorDesc& x = v.in(0);
  StftGeom g;
  if (x.rank() == 3 && (x.shape[2] == 1 || x.shape[2] == 2))
    g.in_c = x.shape[2];
  else if (x.rank() != 2)  // [B, L]: real, as ONNX Runtime accepts
    return Status::invalid_graph(v.where + ": input 0 (signal) must be [batch, length, 1] " +
                                 "(real), [batch, length, 2] (complex) or [batch, length], got " +
                                 x.to_string());
  g.batch = x.shape[0];
  g.len = x.shape[1];
  GRAPHI_ASSIGN_OR_RETURN(g.step, const_scalar_input(v, 1, "frame_step"));
  if (g.step < 1)
    return Status::invalid_graph(v.where + ": input 1 (frame_step) must be at least 1, got " +
                                 std::to_string(g.step));
  int64_t window_len = 0, frame_length = 0;
  if (v.has_input(2)) {
    GRAPHI_RETURN_IF_ERROR(expect_dtype(v, 2, "window", {DType::kF32}));
    if (v.in(2).rank() != 1)
      return Status::invalid_graph(v.where + ": input 2 (window) must be 1-D, got " +
                                   v.in(2).to_string());
    window_len = v.in(2).shape[0];
    g.has_window = true;
  }
  if (v.has_input(3)) {
    GRAPHI_ASSIGN_OR_RETURN(frame_length, const_scalar_input(v, 3, "frame_length"));
    if (frame_length < 1)
      return Status::invalid_graph(v.where + ": input 3 (frame_length) must be at least 1, got " +
                                   std::to_string(frame_length));
  }
  if (window_len && frame_length && window_len != frame_length)
    return Status::invalid_graph(v.where + ": input 2 (window) has " + std::to_string(window_len) +
                                 " samples but input 3 (frame_length) is " +
                                 std::to_string(frame_length) + "; they must match");
  g.frame = frame_length ? frame_length : window_len;
  if (!g.frame)
    return Status::invalid_graph(v.where + ": needs input 2 (window) or input 3 (frame_length) " +
                                 "to know the frame length");
  if (g.frame > g.len)
    return Status::invalid_graph(v.where + ": the frame length " + std::to_string(g.frame) +
                                 " is longer than the signal " + x.to_string());
  GRAPHI_ASSIGN_OR_RETURN(bool onesided, flag_attr(v, "onesided", 1));
  g.frames = 1 + (g.len - g.frame) / g.step;
  // One-sided output of a complex signal keeps the first frame / 2 + 1 bins, as ONNX's
  // reference and ONNX Runtime do.
  g.bins = onesided ? g.frame / 2 + 1 : g.frame;
  return g;
}

Result<std::vector<TensorDesc>> infer_stft(const graph::InferContext& ctx) {
  GRAPHI_ASSIGN_OR_RETURN(StftGeom g, stft_geom(NodeView::of(ctx)));
  return std::vector<TensorDesc>{TensorDesc{DType::kF32, {g.batch, g.frames, g.bins, 2}}};
}

CostHint cost_stft(const graph::Node&, std::span<const TensorDesc* const> in,
                   std::span<const TensorDesc* const> out) {
  const int64_t lanes = out[0]->shape[0] * out[0]->shape[1];
  return {fft_flops(lanes, out[0]->shape[2] * 2),
          static_cast<double>(in[0]->bytes() + out[0]->bytes())};
}

class StftKernel final : public FftLaneKernel {
 public:
  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(g_, stft_geom(NodeView::of_kernel(ctx)));
    make_plan(g_.frame, ctx.team_size);
    return Status::ok();
  }
  const char* name() const override { return bluestein() ? "stft_bluestein" : "stft"; }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    const int nthr = threads(team);
    if (team.ithr >= nthr) return;
    const auto* x = static_cast<const float*>(io.inputs[0]);
    const float* w = g_.has_window ? static_cast<const float*>(io.inputs[2]) : nullptr;
    auto* y = static_cast<float*>(io.outputs[0]);
    Complex* buf = lane_buffer(team);
    Complex* work = buf + g_.frame;
    auto [begin, end] = team_range(g_.batch * g_.frames, team.ithr, nthr);
    for (int64_t lane = begin; lane < end; ++lane) {
      const int64_t b = lane / g_.frames, f = lane % g_.frames;
      const float* src = x + (b * g_.len + f * g_.step) * g_.in_c;
      for (int64_t t = 0; t < g_.frame; ++t) {
        const double wt = w ? static_cast<double>(w[t]) : 1.0;
        buf[t] = {wt * src[t * g_.in_c], g_.in_c == 2 ? wt * src[t * 2 + 1] : 0.0};
      }
      plan_->transform(buf, false, work);
      float* dst = y + lane * g_.bins * 2;
      for (int64_t k = 0; k < g_.bins; ++k) {
        dst[2 * k] = static_cast<float>(buf[k].real());
        dst[2 * k + 1] = static_cast<float>(buf[k].imag());
      }
    }
  }

 private:
  StftGeom g_;
};

// ---- MelWeightMatrix (hertz inputs computed at run time) ----

struct MelInputs {
  graph::signal::MelSpec spec;
  bool hz_const = false;  // both hertz inputs constants (spec complete at init)
};

Result<MelInputs> mel_inputs(const NodeView& v) {
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 5, 5, 5));
  MelInputs m;
  GRAPHI_ASSIGN_OR_RETURN(m.spec.num_mel_bins, const_scalar_input(v, 0, "num_mel_bins"));
  GRAPHI_ASSIGN_OR_RETURN(m.spec.dft_length, const_scalar_input(v, 1, "dft_length"));
  GRAPHI_ASSIGN_OR_RETURN(m.spec.sample_rate, const_scalar_input(v, 2, "sample_rate"));
  for (size_t i : {size_t{3}, size_t{4}}) {
    GRAPHI_RETURN_IF_ERROR(
        expect_dtype(v, i, i == 3 ? "lower_edge_hertz" : "upper_edge_hertz", {DType::kF32}));
    if (v.in(i).numel() != 1)
      return Status::invalid_graph(v.where + ": input " + std::to_string(i) +
                                   " must be a scalar, got " + v.in(i).to_string());
  }
  GRAPHI_ASSIGN_OR_RETURN(int64_t type,
                          graph::attr_int(v.node.attrs, v.where, "output_datatype", 1));
  if (type != 1)
    return Status::unsupported(v.where + ": attribute 'output_datatype' = " + std::to_string(type) +
                               ": with hertz inputs computed at run time graphi makes FLOAT (1) " +
                               "only (constant inputs fold to any type at import)");
  const Tensor* lo = v.const_inputs.size() > 3 ? v.const_inputs[3] : nullptr;
  const Tensor* hi = v.const_inputs.size() > 4 ? v.const_inputs[4] : nullptr;
  m.hz_const = lo && hi;
  // Counts checked now; hertz values (and so the bins' range) when known.
  graph::signal::MelSpec counts = m.spec;
  counts.lower_hz = counts.upper_hz = 0;
  GRAPHI_RETURN_IF_ERROR(graph::signal::check_mel_spec(counts, v.where));
  if (m.hz_const) {
    m.spec.lower_hz = lo->data_as<float>()[0];
    m.spec.upper_hz = hi->data_as<float>()[0];
    GRAPHI_RETURN_IF_ERROR(graph::signal::check_mel_spec(m.spec, v.where));
  }
  return m;
}

Result<std::vector<TensorDesc>> infer_mel(const graph::InferContext& ctx) {
  GRAPHI_ASSIGN_OR_RETURN(MelInputs m, mel_inputs(NodeView::of(ctx)));
  return std::vector<TensorDesc>{TensorDesc{DType::kF32, {m.spec.bins(), m.spec.num_mel_bins}}};
}

CostHint cost_mel(const graph::Node&, std::span<const TensorDesc* const>,
                  std::span<const TensorDesc* const> out) {
  return {static_cast<double>(out[0]->numel()), static_cast<double>(out[0]->bytes())};
}

class MelWeightMatrixKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(m_, mel_inputs(NodeView::of_kernel(ctx)));
    where_ = ctx.where;
    return Status::ok();
  }
  const char* name() const override { return "mel_weight_matrix"; }

  // One thread builds the (small) matrix; hertz values that put a filter outside the spectrum
  // fail the run naming the node, as they fail ONNX Runtime's.
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    if (team.ithr != 0) return;
    graph::signal::MelSpec s = m_.spec;
    auto* y = static_cast<float*>(io.outputs[0]);
    if (!m_.hz_const) {
      s.lower_hz = *static_cast<const float*>(io.inputs[3]);
      s.upper_hz = *static_cast<const float*>(io.inputs[4]);
      try {
        Status st = graph::signal::check_mel_spec(s, where_);
        if (!st.is_ok()) {
          std::fill(y, y + s.bins() * s.num_mel_bins, std::nanf(""));
          team.fail(st.message());
          return;
        }
      } catch (...) {  // the message could not be built (out of memory)
        team.fail("MelWeightMatrix: lower_edge_hertz / upper_edge_hertz out of range");
        return;
      }
    }
    graph::signal::fill_mel_weight_matrix(s, y);
  }

 private:
  MelInputs m_;
  std::string where_;
};

std::unique_ptr<Kernel> make_dft() { return std::make_unique<DftKernel>(); }
std::unique_ptr<Kernel> make_stft() { return std::make_unique<StftKernel>(); }
std::unique_ptr<Kernel> make_mel() { return std::make_unique<MelWeightMatrixKernel>(); }

}  // namespace

void register_signal_ops(Registry& r) {
  r.add({"DFT", infer_dft, cost_dft, false, {make_dft}});
  r.add({"STFT", infer_stft, cost_stft, false, {make_stft}});
  r.add({"MelWeightMatrix", infer_mel, cost_mel, false, {make_mel}});
}

}  // namespace graphi::ops
