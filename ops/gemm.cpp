// MatMul (numpy matmul semantics: 1-D operands, batch broadcasting) and Gemm (ONNX: alpha, beta,
// transA, transB, optional C broadcast to [M, N]), and MatMulBias (graph/passes/
// matmul_epilogue.h: Y = act(A W + b), A [..., K] as [rows, K], W a constant [K, N], b [N],
// attribute activation (ops/conv_activation.h: Relu, Gelu, GeluTanh), on oneDNN's matmul with
// the bias and the activation as post-ops, or the reference loops).
//
// Kernels, in preference order for both ops:
//   *_gemv    <= 4 rows times a constant B of >= 256 KiB: B packed into 64-column panels that
//             the team streams through gemv_rows (batch-1 classifiers and MLP layers);
//   *_xsmm    LIBXSMM microkernels for small single (non-batched) products, split over the team;
//   *_onednn  a oneDNN matmul primitive (constant B pre-packed), which opens its own region;
//   *_ref     a plain parallel loop nest that declines nothing (the generic fallback).
// The xsmm/oneDNN boundary comes from timings on this machine (2-core EPYC, AVX-512, 1 MiB L2):
// for M*N*K <= 64^3 LIBXSMM wins (e.g. [1,64]x[64,256]: 0.4 us vs 2.1 us) except when a constant
// B fills the L2 ([1,256]x[256,1024]: oneDNN with packed B 9.3 us, LIBXSMM 15 us; with a
// non-constant B oneDNN needs 44 us, so LIBXSMM keeps that case).
#include <omp.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>

#include "ops/conv_activation.h"
#include "ops/onednn.h"
#include "ops/registry.h"
#include "ops/rnn/gemv_rows.h"
#include "ops/xsmm.h"

namespace graphi::ops {
namespace {

// One GEMM (or a batch of them), row-major throughout:
//   Y[b] (M x N) = alpha * op(A[b]) op(B[b]) + beta * C
// op(A) is A, or A^T when A is stored [K, M] (trans_a); likewise B stored [N, K] (trans_b).
// C is broadcast to [M, N] through strides of 0.
struct GemmProblem {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  float alpha = 1.0f, beta = 0.0f;
  bool has_c = false;
  int64_t c_rows = 1, c_cols = 1;  // C as a 2-D [c_rows, c_cols], each 1 or M / N
  // Batches (MatMul only): element offset of each output batch's A and B matrices.
  Shape batch;             // output batch dims; empty for a single product
  Shape a_batch, b_batch;  // operand batch dims, left-padded with 1 to batch's rank
  std::vector<int64_t> a_off, b_off;
  Shape out_shape;

  int64_t batch_count() const { return static_cast<int64_t>(a_off.size()); }
  int64_t c_row_stride() const { return c_rows == 1 ? 0 : c_cols; }
  int64_t c_col_stride() const { return c_cols == 1 ? 0 : 1; }
};

Status check_f32(const std::string& where, const char* name, const TensorDesc& d) {
  if (d.dtype != DType::kF32)
    return Status::invalid_graph(where + ": input " + name + " must be float32, got " +
                                 d.to_string());
  return Status::ok();
}

// Numpy matmul: 1-D A is [1, K] with M dropped from the output, 1-D B is [K, 1] with N dropped;
// the leading (batch) dims broadcast.
Result<GemmProblem> matmul_problem(const TensorDesc& a, const TensorDesc& b,
                                   const std::string& where) {
  GRAPHI_RETURN_IF_ERROR(check_f32(where, "A", a));
  GRAPHI_RETURN_IF_ERROR(check_f32(where, "B", b));
  if (a.rank() < 1 || b.rank() < 1)
    return Status::invalid_graph(where + ": MatMul operands must have rank >= 1: A is " +
                                 a.to_string() + ", B is " + b.to_string());
  Shape as = a.shape, bs = b.shape;
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  GemmProblem p;
  p.m = as[as.size() - 2];
  p.k = as.back();
  p.n = bs.back();
  if (bs[bs.size() - 2] != p.k)
    return Status::invalid_graph(where + ": inner dimensions differ: A is " + a.to_string() +
                                 ", B is " + b.to_string());
  const size_t rank = std::max(as.size(), bs.size()) - 2;
  p.a_batch.assign(rank - (as.size() - 2), 1);
  p.a_batch.insert(p.a_batch.end(), as.begin(), as.end() - 2);
  p.b_batch.assign(rank - (bs.size() - 2), 1);
  p.b_batch.insert(p.b_batch.end(), bs.begin(), bs.end() - 2);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t x = p.a_batch[i], y = p.b_batch[i];
    if (x != y && x != 1 && y != 1)
      return Status::invalid_graph(where + ": batch dimensions do not broadcast: A is " +
                                   a.to_string() + ", B is " + b.to_string());
    p.batch.push_back(std::max(x, y));
  }
  // Offsets of every output batch's matrices; a broadcast dim (size 1) has stride 0.
  const int64_t count = shape_numel(p.batch);
  std::vector<int64_t> a_stride(rank), b_stride(rank);
  int64_t sa = p.m * p.k, sb = p.k * p.n;
  for (size_t i = rank; i-- > 0;) {
    a_stride[i] = p.a_batch[i] == 1 ? 0 : sa;
    b_stride[i] = p.b_batch[i] == 1 ? 0 : sb;
    sa *= p.a_batch[i];
    sb *= p.b_batch[i];
  }
  p.a_off.resize(count);
  p.b_off.resize(count);
  for (int64_t idx = 0; idx < count; ++idx) {
    int64_t rest = idx, ao = 0, bo = 0;
    for (size_t i = rank; i-- > 0;) {
      const int64_t coord = rest % p.batch[i];
      rest /= p.batch[i];
      ao += coord * a_stride[i];
      bo += coord * b_stride[i];
    }
    p.a_off[idx] = ao;
    p.b_off[idx] = bo;
  }
  p.out_shape = p.batch;
  if (a.rank() > 1) p.out_shape.push_back(p.m);
  if (b.rank() > 1) p.out_shape.push_back(p.n);
  return p;
}

// ONNX Gemm: A [M, K] (or [K, M] with transA), B [K, N] (or [N, K] with transB), optional C
// unidirectionally broadcastable to [M, N].
Result<GemmProblem> gemm_problem(const graph::Node& node,
                                 const std::vector<const TensorDesc*>& inputs,
                                 const std::string& where) {
  if (inputs.size() < 2 || inputs.size() > 3 || !inputs[0] || !inputs[1])
    return Status::invalid_graph(where + ": Gemm takes inputs A, B and an optional C, got " +
                                 std::to_string(inputs.size()) + " inputs");
  const TensorDesc& a = *inputs[0];
  const TensorDesc& b = *inputs[1];
  GRAPHI_RETURN_IF_ERROR(check_f32(where, "A", a));
  GRAPHI_RETURN_IF_ERROR(check_f32(where, "B", b));
  if (a.rank() != 2)
    return Status::invalid_graph(where + ": input A must be 2-D, got " + a.to_string());
  if (b.rank() != 2)
    return Status::invalid_graph(where + ": input B must be 2-D, got " + b.to_string());
  GRAPHI_ASSIGN_OR_RETURN(int64_t trans_a, graph::attr_int(node.attrs, where, "transA", 0));
  GRAPHI_ASSIGN_OR_RETURN(int64_t trans_b, graph::attr_int(node.attrs, where, "transB", 0));
  if (trans_a != 0 && trans_a != 1)
    return Status::invalid_graph(where + ": attribute 'transA' must be 0 or 1, got " +
                                 std::to_string(trans_a));
  if (trans_b != 0 && trans_b != 1)
    return Status::invalid_graph(where + ": attribute 'transB' must be 0 or 1, got " +
                                 std::to_string(trans_b));
  GRAPHI_ASSIGN_OR_RETURN(double alpha, graph::attr_float(node.attrs, where, "alpha", 1.0));
  GRAPHI_ASSIGN_OR_RETURN(double beta, graph::attr_float(node.attrs, where, "beta", 1.0));
  GemmProblem p;
  p.trans_a = trans_a == 1;
  p.trans_b = trans_b == 1;
  p.alpha = static_cast<float>(alpha);
  p.beta = static_cast<float>(beta);
  p.m = p.trans_a ? a.shape[1] : a.shape[0];
  p.k = p.trans_a ? a.shape[0] : a.shape[1];
  p.n = p.trans_b ? b.shape[0] : b.shape[1];
  const int64_t kb = p.trans_b ? b.shape[1] : b.shape[0];
  if (kb != p.k)
    return Status::invalid_graph(where + ": inner dimensions differ: A is " + a.to_string() +
                                 " (transA=" + std::to_string(trans_a) + "), B is " +
                                 b.to_string() + " (transB=" + std::to_string(trans_b) + ")");
  if (inputs.size() == 3 && inputs[2]) {
    const TensorDesc& c = *inputs[2];
    GRAPHI_RETURN_IF_ERROR(check_f32(where, "C", c));
    const std::string target =
        "[M, N] = [" + std::to_string(p.m) + ", " + std::to_string(p.n) + "]";
    if (c.rank() > 2)
      return Status::invalid_graph(where + ": input C " + c.to_string() +
                                   " does not broadcast to " + target + " (rank above 2)");
    p.c_cols = c.rank() >= 1 ? c.shape.back() : 1;
    p.c_rows = c.rank() == 2 ? c.shape[0] : 1;
    if ((p.c_rows != 1 && p.c_rows != p.m) || (p.c_cols != 1 && p.c_cols != p.n))
      return Status::invalid_graph(where + ": input C " + c.to_string() +
                                   " does not broadcast to " + target);
    p.has_c = true;
  }
  p.a_off = {0};
  p.b_off = {0};
  p.out_shape = {p.m, p.n};
  return p;
}

// MatMulBias: A [..., K] (rank >= 2) as one [rows, K] matrix, W [K, N], bias [N] as C of one
// row.
Result<GemmProblem> matmul_bias_problem(const std::vector<const TensorDesc*>& inputs,
                                        const std::string& where) {
  if (inputs.size() != 3 || !inputs[0] || !inputs[1] || !inputs[2])
    return Status::invalid_graph(where + ": MatMulBias takes exactly 3 inputs (A, W, bias), got " +
                                 std::to_string(inputs.size()));
  const TensorDesc &a = *inputs[0], &w = *inputs[1], &bias = *inputs[2];
  GRAPHI_RETURN_IF_ERROR(check_f32(where, "A", a));
  GRAPHI_RETURN_IF_ERROR(check_f32(where, "W", w));
  GRAPHI_RETURN_IF_ERROR(check_f32(where, "bias", bias));
  if (a.rank() < 2 || w.rank() != 2 || w.shape[0] != a.shape.back() ||
      bias.shape != Shape{w.shape[1]})
    return Status::invalid_graph(where +
                                 ": MatMulBias takes A [..., K] (rank >= 2), W [K, N] "
                                 "and bias [N], got A " +
                                 a.to_string() + ", W " + w.to_string() + ", bias " +
                                 bias.to_string());
  GemmProblem p;
  p.k = w.shape[0];
  p.n = w.shape[1];
  p.m = a.numel() / p.k;
  p.beta = 1.0f;
  p.has_c = true;
  p.c_rows = 1;
  p.c_cols = p.n;
  p.a_off = {0};
  p.b_off = {0};
  p.out_shape = a.shape;
  p.out_shape.back() = p.n;
  return p;
}

Result<GemmProblem> problem_for(const graph::Node& node,
                                const std::vector<const TensorDesc*>& inputs,
                                const std::string& where) {
  if (node.op == "MatMulBias") return matmul_bias_problem(inputs, where);
  if (node.op == "MatMul") {
    if (inputs.size() != 2 || !inputs[0] || !inputs[1])
      return Status::invalid_graph(where + ": MatMul takes exactly 2 inputs (A, B), got " +
                                   std::to_string(inputs.size()));
    return matmul_problem(*inputs[0], *inputs[1], where);
  }
  return gemm_problem(node, inputs, where);
}

Result<std::vector<TensorDesc>> infer_gemm(const graph::InferContext& ctx) {
  if (ctx.num_outputs != 1)
    return Status::invalid_graph(ctx.where + ": " + ctx.node.op + " has exactly 1 output, got " +
                                 std::to_string(ctx.num_outputs));
  GRAPHI_ASSIGN_OR_RETURN(GemmProblem p, problem_for(ctx.node, ctx.inputs, ctx.where));
  return std::vector<TensorDesc>{TensorDesc{DType::kF32, p.out_shape}};
}

CostHint cost_gemm(const graph::Node& node, std::span<const TensorDesc* const> inputs,
                   std::span<const TensorDesc* const> outputs) {
  CostHint c;
  const TensorDesc& y = *outputs[0];
  const TensorDesc& a = *inputs[0];
  // K is A's last dim unless Gemm transposes A (attributes were validated by the shape rule).
  const graph::Attribute* ta = node.op == "Gemm" ? node.attrs.find("transA") : nullptr;
  const int64_t* ta_value = ta ? std::get_if<int64_t>(ta) : nullptr;
  const int64_t k = ta_value && *ta_value == 1 ? a.shape[0] : a.shape.back();
  c.flops = 2.0 * static_cast<double>(y.numel()) * static_cast<double>(k);
  for (const TensorDesc* d : inputs)
    if (d) c.bytes += static_cast<double>(d->bytes());
  c.bytes += static_cast<double>(y.bytes());
  if (inputs.size() == 3 && inputs[2]) c.flops += 2.0 * static_cast<double>(y.numel());
  return c;
}

// Fills y[0..rows) x [n0, n1) of a row-major [*, N] output with beta * C broadcast.
void fill_beta_c(const GemmProblem& p, const float* c, float* y, int64_t m0, int64_t m1, int64_t n0,
                 int64_t n1) {
  const int64_t rs = p.c_row_stride(), cs = p.c_col_stride();
  for (int64_t i = m0; i < m1; ++i)
    for (int64_t j = n0; j < n1; ++j) y[i * p.n + j] = p.beta * c[i * rs + j * cs];
}

void fill_nan(float* y, int64_t count) {
  std::fill(y, y + count, std::numeric_limits<float>::quiet_NaN());
}

// The node's product when it is a single one (the kernels below take no batches).
Result<GemmProblem> single_product(const KernelContext& ctx) {
  GRAPHI_ASSIGN_OR_RETURN(GemmProblem p, problem_for(ctx.node, ctx.inputs, ctx.where));
  if (p.batch_count() != 1)
    return Status::unsupported("batched product (" + std::to_string(p.batch_count()) + " batches)");
  return p;
}

// ---------------------------------------------------------------------------------------------
// A few rows (M <= kGemvMaxRows: batch-1 classifiers and MLP layers) times a constant B: the
// weight stream is the whole cost. B is packed once (times alpha) into panels of 64 columns,
// [panel][K][64], so each thread streams whole panels front to back through gemv_rows (every
// 64-byte weight vector loaded once for all rows; ops/rnn/gemv_rows.h). Measured on the Zen 4
// guest, [1, K] x [K, N] Gemm, 2 threads, weights in cache (per-op trace): 256 x 256 3.4 us
// (LIBXSMM 3.7), 512 x 512 5.8 us (oneDNN with packed B 9.1), 1024 x 1000 24.3 us (26.9); inside
// GoogleNet b1, weights from DRAM, the 1024 x 1000 classifier 169 us against oneDNN's 217.
class GemvGemmKernel final : public Kernel {
 public:
  explicit GemvGemmKernel(const char* name) : name_(name) {}
  const char* name() const override { return name_; }

  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(p_, single_product(ctx));
    if (p_.m > kGemvMaxRows)
      return Status::unsupported("M = " + std::to_string(p_.m) + " rows (more than " +
                                 std::to_string(kGemvMaxRows) + ")");
    if (p_.trans_a && p_.m != 1)
      return Status::unsupported("transA with M > 1 (rows of A not contiguous)");
    const Tensor* b_const = ctx.constant(1);
    if (!b_const) return Status::unsupported("B changes every run (packed once only)");
    if (p_.k * p_.n * 4 < kMinWeightBytes)
      return Status::unsupported(std::to_string(p_.k * p_.n * 4) +
                                 " bytes of B: LIBXSMM's call is as fast below " +
                                 std::to_string(kMinWeightBytes));
    const float* b = b_const->data_as<float>();
    panels_ = (p_.n + kPanel - 1) / kPanel;
    packed_ = Tensor(TensorDesc{DType::kF32, {panels_ * p_.k * kPanel}});
    float* out = packed_.data_as<float>();
    for (int64_t q = 0; q < p_.k; ++q)
      for (int64_t j = 0; j < p_.n; ++j)
        out[((j / kPanel) * p_.k + q) * kPanel + j % kPanel] =
            p_.alpha * (p_.trans_b ? b[j * p_.k + q] : b[q * p_.n + j]);
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    const float* a = static_cast<const float*>(io.inputs[0]);
    const float* c =
        p_.has_c && p_.beta != 0.0f ? static_cast<const float*>(io.inputs[2]) : nullptr;
    float* y = static_cast<float*>(io.outputs[0]);
    auto [q0, q1] = team_range(panels_, team.ithr, team.nthr);
    for (int64_t q = q0; q < q1; ++q) {
      const int64_t n0 = q * kPanel, n1 = std::min(p_.n, n0 + kPanel);
      if (c) fill_beta_c(p_, c, y, 0, p_.m, n0, n1);
      gemv_rows(packed_.data_as<float>() + q * p_.k * kPanel, kPanel, a, p_.k, y + n0, p_.n, p_.m,
                p_.k, n1 - n0, c != nullptr);
    }
  }

 private:
  static constexpr int64_t kPanel = 64;  // gemv_rows' four 16-float accumulators per row
  static constexpr int64_t kMinWeightBytes = 256 << 10;
  const char* name_;
  GemmProblem p_;
  int64_t panels_ = 0;
  Tensor packed_;  // alpha * B as [panel][K][64]
};

// ---------------------------------------------------------------------------------------------
// LIBXSMM: one product of M*N*K <= 64^3, the output split into up to team_size blocks of rows
// or of 16-aligned columns, one JIT kernel per block shape. In LIBXSMM's column-major terms the
// row-major Y = A B is Y^T = B^T A^T: m = N, n = M, LIBXSMM's "A" is our B and its "B" is our A.
class XsmmGemmKernel final : public Kernel {
 public:
  explicit XsmmGemmKernel(const char* name) : name_(name) {}
  const char* name() const override { return name_; }

  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(p_, single_product(ctx));
    if (p_.alpha != 1.0f) return Status::unsupported("alpha != 1 (LIBXSMM JITs only alpha = 1)");
    constexpr int64_t kMaxWork = 64 * 64 * 64;
    if (p_.m * p_.n * p_.k > kMaxWork)
      return Status::unsupported("M*N*K = " + std::to_string(p_.m * p_.n * p_.k) +
                                 " above 64^3; oneDNN is faster there");
    const bool b_const = ctx.constant(1) != nullptr;
    constexpr int64_t kPackedBWins = 512 * 1024;  // bytes: oneDNN's packed B wins past L2/2
    if (b_const && p_.k * p_.n * 4 > kPackedBWins)
      return Status::unsupported("constant B of " + std::to_string(p_.k * p_.n * 4) +
                                 " bytes; oneDNN with pre-packed B is faster");
    if (p_.trans_b) {
      // LIBXSMM 1.17 cannot JIT a transposed first operand (our B), so transpose a constant B
      // once here; a B that changes every run is left to the other kernels.
      if (!b_const)
        return Status::unsupported(
            "transB with a non-constant B (LIBXSMM 1.17 has no transposed-A JIT)");
      const float* b = ctx.constant(1)->data_as<float>();
      b_t_ = Tensor(TensorDesc{DType::kF32, {p_.k, p_.n}});
      float* bt = b_t_.data_as<float>();
      for (int64_t j = 0; j < p_.n; ++j)
        for (int64_t kk = 0; kk < p_.k; ++kk) bt[kk * p_.n + j] = b[j * p_.k + kk];
    }
    // Blocks: columns in multiples of 16 (a 512-bit vector) or rows, whichever gives more
    // blocks up to the team size; ties go to columns (contiguous stores).
    const int64_t t = std::max(1, ctx.team_size);
    const int64_t nb = std::min(p_.n, ((p_.n + t - 1) / t + 15) / 16 * 16);
    const int64_t col_blocks = (p_.n + nb - 1) / nb;
    const int64_t row_blocks = std::min(p_.m, t);
    std::map<std::pair<int64_t, int64_t>, xsmm::SmmKernel> by_shape;
    const float beta = p_.has_c && p_.beta != 0.0f ? 1.0f : 0.0f;
    auto add_block = [&](int64_t m0, int64_t m1, int64_t n0, int64_t n1) -> Status {
      auto key = std::make_pair(m1 - m0, n1 - n0);
      if (!by_shape.count(key)) {
        xsmm::SmmShape s;
        s.m = static_cast<int>(n1 - n0);
        s.n = static_cast<int>(m1 - m0);
        s.k = static_cast<int>(p_.k);
        s.lda = static_cast<int>(p_.n);  // B (or its transposed copy) row-major [K, N]
        s.trans_b = p_.trans_a;          // A stored [K, M] is column-major M x K
        s.ldb = static_cast<int>(p_.trans_a ? p_.m : p_.k);
        s.ldc = static_cast<int>(p_.n);
        s.alpha = 1.0f;
        s.beta = beta;
        GRAPHI_ASSIGN_OR_RETURN(xsmm::SmmKernel k, xsmm::dispatch_smm(s));
        by_shape[key] = k;
      }
      blocks_.push_back(Block{m0, m1, n0, n1, by_shape[key]});
      return Status::ok();
    };
    if (row_blocks > col_blocks) {
      for (int64_t i = 0; i < row_blocks; ++i) {
        auto [m0, m1] = team_range(p_.m, static_cast<int>(i), static_cast<int>(row_blocks));
        GRAPHI_RETURN_IF_ERROR(add_block(m0, m1, 0, p_.n));
      }
    } else {
      for (int64_t n0 = 0; n0 < p_.n; n0 += nb)
        GRAPHI_RETURN_IF_ERROR(add_block(0, p_.m, n0, std::min(p_.n, n0 + nb)));
    }
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    const float* a = static_cast<const float*>(io.inputs[0]);
    const float* b = b_t_.data() ? b_t_.data_as<float>() : static_cast<const float*>(io.inputs[1]);
    const float* c = p_.has_c ? static_cast<const float*>(io.inputs[2]) : nullptr;
    float* y = static_cast<float*>(io.outputs[0]);
    for (size_t j = team.ithr; j < blocks_.size(); j += team.nthr) {
      const Block& blk = blocks_[j];
      if (c && p_.beta != 0.0f) fill_beta_c(p_, c, y, blk.m0, blk.m1, blk.n0, blk.n1);
      const float* a_blk = p_.trans_a ? a + blk.m0 : a + blk.m0 * p_.k;
      blk.kernel(b + blk.n0, a_blk, y + blk.m0 * p_.n + blk.n0);
    }
  }

 private:
  struct Block {
    int64_t m0, m1, n0, n1;
    xsmm::SmmKernel kernel;
  };
  const char* name_;
  GemmProblem p_;
  Tensor b_t_;  // B^T of a constant B when transB (row-major [K, N]); empty otherwise
  std::vector<Block> blocks_;
};

// ---------------------------------------------------------------------------------------------
// oneDNN matmul primitive, created here once; constant B is packed into its preferred layout.
class OnednnGemmKernel final : public Kernel {
 public:
  explicit OnednnGemmKernel(const char* name) : name_(name) {}
  const char* name() const override { return name_; }
  bool opens_own_region() const override { return true; }
  size_t scratch_bytes() const override { return prim_ ? prim_->scratch_bytes() : 0; }

  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(p_, problem_for(ctx.node, ctx.inputs, ctx.where));
    onednn::MatMulSpec spec;
    if (ctx.node.op == "MatMulBias") {
      GRAPHI_ASSIGN_OR_RETURN(spec.post, conv_post_op(ctx.node, ctx.where));
    }
    const int64_t m = p_.m, n = p_.n, k = p_.k;
    if (p_.batch.size() + 2 > 12)
      return Status::unsupported("rank " + std::to_string(p_.batch.size() + 2) +
                                 " above oneDNN's 12");
    spec.src.dims = p_.a_batch;
    spec.src.dims.insert(spec.src.dims.end(), {m, k});
    spec.weights.dims = p_.b_batch;
    spec.weights.dims.insert(spec.weights.dims.end(), {k, n});
    spec.dst.dims = p_.batch;
    spec.dst.dims.insert(spec.dst.dims.end(), {m, n});
    if (p_.trans_a) spec.src.strides = {1, m};  // Gemm only: 2-D
    if (p_.trans_b) spec.weights.strides = {1, k};
    const bool b_const = ctx.constant(1) != nullptr;
    if (b_const) spec.const_weights = ctx.constant(1)->data_as<float>();
    // oneDNN computes alpha * (A B + bias), so the bias is (beta / alpha) * C.
    spec.output_scale = p_.alpha;
    if (p_.has_c && p_.beta != 0.0f) {
      if (p_.alpha == 0.0f) return Status::unsupported("alpha = 0 with a C term");
      const float factor = p_.beta / p_.alpha;
      spec.bias = onednn::Layout{{p_.c_rows, p_.c_cols}, {}};
      if (factor != 1.0f) {
        const bool c_const = ctx.constant(2) != nullptr;
        if (!c_const)
          return Status::unsupported("beta/alpha = " + std::to_string(factor) +
                                     " needs a scaled copy of C, and C is not constant");
        const Tensor& c = *ctx.constant(2);
        scaled_c_ = Tensor(TensorDesc{DType::kF32, {p_.c_rows, p_.c_cols}});
        for (int64_t i = 0; i < c.numel(); ++i)
          scaled_c_.data_as<float>()[i] = factor * c.data_as<float>()[i];
      }
    }
    GRAPHI_ASSIGN_OR_RETURN(prim_, onednn::make_matmul(spec, ctx.team_size));
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    const float* bias = nullptr;
    if (p_.has_c && p_.beta != 0.0f)
      bias =
          scaled_c_.data() ? scaled_c_.data_as<float>() : static_cast<const float*>(io.inputs[2]);
    float* y = static_cast<float*>(io.outputs[0]);
    if (!prim_->execute(static_cast<const float*>(io.inputs[0]),
                        static_cast<const float*>(io.inputs[1]), bias, y, team.scratch, team.nthr,
                        team.scratch_bytes)) {
      // Cannot happen after a successful creation; make it visible rather than silent.
      static std::atomic<bool> warned{false};
      if (!warned.exchange(true))
        std::fprintf(stderr, "graphi: %s: oneDNN execution failed; output set to NaN\n", name_);
      fill_nan(y, shape_numel(p_.out_shape));
    }
  }

 private:
  const char* name_;
  GemmProblem p_;
  Tensor scaled_c_;  // (beta/alpha) * C for a constant C when that factor is not 1
  std::unique_ptr<onednn::Primitive> prim_;
};

// ---------------------------------------------------------------------------------------------
// Plain loops, rows of the (batched) output split over the team. Declines nothing.
class RefGemmKernel final : public Kernel {
 public:
  explicit RefGemmKernel(const char* name) : name_(name) {}
  const char* name() const override { return name_; }

  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(p_, problem_for(ctx.node, ctx.inputs, ctx.where));
    if (ctx.node.op == "MatMulBias") {
      GRAPHI_ASSIGN_OR_RETURN(post_, conv_post_op(ctx.node, ctx.where));
    }
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    const float* a_all = static_cast<const float*>(io.inputs[0]);
    const float* b_all = static_cast<const float*>(io.inputs[1]);
    const float* c = p_.has_c ? static_cast<const float*>(io.inputs[2]) : nullptr;
    float* y_all = static_cast<float*>(io.outputs[0]);
    const int64_t m = p_.m, n = p_.n, k = p_.k;
    const int64_t crs = p_.c_row_stride(), ccs = p_.c_col_stride();
    auto [r0, r1] = team_range(p_.batch_count() * m, team.ithr, team.nthr);
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t bi = r / m, i = r % m;
      const float* a = a_all + p_.a_off[bi];
      const float* b = b_all + p_.b_off[bi];
      float* y = y_all + r * n;
      if (!p_.trans_b) {
        std::fill(y, y + n, 0.0f);
        for (int64_t kk = 0; kk < k; ++kk) {
          const float av = p_.trans_a ? a[kk * m + i] : a[i * k + kk];
          const float* brow = b + kk * n;
          for (int64_t j = 0; j < n; ++j) y[j] += av * brow[j];
        }
      } else {
        for (int64_t j = 0; j < n; ++j) {
          const float* bcol = b + j * k;
          float acc = 0.0f;
          for (int64_t kk = 0; kk < k; ++kk)
            acc += (p_.trans_a ? a[kk * m + i] : a[i * k + kk]) * bcol[kk];
          y[j] = acc;
        }
      }
      if (p_.alpha != 1.0f)
        for (int64_t j = 0; j < n; ++j) y[j] *= p_.alpha;
      if (c && p_.beta != 0.0f)
        for (int64_t j = 0; j < n; ++j) y[j] += p_.beta * c[i * crs + j * ccs];
      if (post_.kind != ConvActivation::kNone)
        for (int64_t j = 0; j < n; ++j) y[j] = post_.apply(y[j]);
    }
  }

 private:
  const char* name_;
  GemmProblem p_;
  ConvPostOp post_;  // MatMulBias's activation
};

}  // namespace

void register_gemm_ops(Registry& r) {
  r.add(OpDef{
      "MatMul",
      infer_gemm,
      cost_gemm,
      false,
      {[]() -> std::unique_ptr<Kernel> { return std::make_unique<GemvGemmKernel>("matmul_gemv"); },
       []() -> std::unique_ptr<Kernel> { return std::make_unique<XsmmGemmKernel>("matmul_xsmm"); },
       []() -> std::unique_ptr<Kernel> {
         return std::make_unique<OnednnGemmKernel>("matmul_onednn");
       },
       []() -> std::unique_ptr<Kernel> { return std::make_unique<RefGemmKernel>("matmul_ref"); }}});
  r.add(OpDef{
      "Gemm",
      infer_gemm,
      cost_gemm,
      false,
      {[]() -> std::unique_ptr<Kernel> { return std::make_unique<GemvGemmKernel>("gemm_gemv"); },
       []() -> std::unique_ptr<Kernel> { return std::make_unique<XsmmGemmKernel>("gemm_xsmm"); },
       []() -> std::unique_ptr<Kernel> {
         return std::make_unique<OnednnGemmKernel>("gemm_onednn");
       },
       []() -> std::unique_ptr<Kernel> { return std::make_unique<RefGemmKernel>("gemm_ref"); }}});
  r.add(OpDef{"MatMulBias",
              infer_gemm,
              cost_gemm,
              false,
              {[]() -> std::unique_ptr<Kernel> {
                 return std::make_unique<OnednnGemmKernel>("matmul_bias_onednn");
               },
               []() -> std::unique_ptr<Kernel> {
                 return std::make_unique<RefGemmKernel>("matmul_bias_ref");
               }}});
}

}  // namespace graphi::ops
