// Run-time ISA selection for the fused gate kernels, their scalar path, the team split and the
// argument checks. The kernels themselves are ops/rnn/rnn_gates_impl.h.
#include "ops/rnn/rnn_gates.h"

#include <algorithm>
#include <string>

#include "ops/kernel.h"

#define GRAPHI_VEC_SCALAR
#include "ops/rnn/rnn_gates_impl.h"  // includes ops/vec_math.h

namespace graphi::ops {

namespace detail {
// Defined in ops/rnn/rnn_gates_avx2.cpp and ops/rnn/rnn_gates_avx512.cpp.
extern const RnnGateKernels kRnnGateKernelsAvx2;
extern const RnnGateKernels kRnnGateKernelsAvx512;
}  // namespace detail

namespace {
const RnnGateKernels kRnnGateKernelsScalar{SimdIsa::kScalar,
                                           lstm_gates_t<VecScalar>,
                                           gru_gates_lbr_t<VecScalar>,
                                           gru_gates_reset_t<VecScalar>,
                                           gru_gates_output_t<VecScalar>,
                                           rnn_gates_t<VecScalar>,
                                           lstm_backward_t<VecScalar>,
                                           phased_blend_t<VecScalar>,
                                           phased_gate_row_t<VecScalar>};

const RnnGateKernels& active() {
  static const RnnGateKernels* k = rnn_gate_kernels(active_simd_isa());
  return *k;
}
}  // namespace

const RnnGateKernels* rnn_gate_kernels(SimdIsa isa) {
  if (!simd_isa_supported(isa)) return nullptr;
  switch (isa) {
    case SimdIsa::kScalar:
      return &kRnnGateKernelsScalar;
    case SimdIsa::kAvx2:
      return &detail::kRnnGateKernelsAvx2;
    case SimdIsa::kAvx512:
      return &detail::kRnnGateKernelsAvx512;
  }
  return nullptr;
}

void lstm_gates(const LstmGateArgs& args, const GateTile& tile) noexcept {
  active().lstm(args, tile);
}
void gru_gates_lbr(const GruGateArgs& args, const GateTile& tile) noexcept {
  active().gru_lbr(args, tile);
}
void gru_gates_reset(const GruGateArgs& args, const GateTile& tile) noexcept {
  active().gru_reset(args, tile);
}
void gru_gates_output(const GruGateArgs& args, const GateTile& tile) noexcept {
  active().gru_output(args, tile);
}
void rnn_gates(const RnnGateArgs& args, const GateTile& tile) noexcept { active().rnn(args, tile); }
void lstm_gates_backward(const LstmBackwardArgs& args, const GateTile& tile) noexcept {
  active().lstm_backward(args, tile);
}
void phased_blend(const PhasedBlendArgs& args) noexcept { active().phased_blend(args); }
void phased_gate(const PhasedGateArgs& args) noexcept { active().phased_gate(args); }

GateTile gate_tile_for_thread(int64_t rows, int64_t hidden, int ithr, int nthr) {
  constexpr int64_t kLine = 16;  // floats per 64-byte cache line
  GateTile t{0, rows, 0, hidden};
  if (nthr <= 1) return t;
  if (hidden >= kLine * nthr) {
    auto [b, e] = team_range((hidden + kLine - 1) / kLine, ithr, nthr);
    t.col_begin = b * kLine;
    t.col_end = std::min(e * kLine, hidden);
  } else if (rows >= nthr) {
    auto [b, e] = team_range(rows, ithr, nthr);
    t.row_begin = b;
    t.row_end = e;
  } else {
    auto [b, e] = team_range(hidden, ithr, nthr);
    t.col_begin = b;
    t.col_end = e;
  }
  return t;
}

namespace {

std::string prefix(std::string_view where) {
  return where.empty() ? std::string() : std::string(where) + ": ";
}

// Checks one row-major operand: present if required, ld >= the columns its layout needs.
Status check_matrix(std::string_view where, const char* kernel, const char* name, const void* ptr,
                    bool required, int64_t ld, int64_t min_cols) {
  if (ptr == nullptr) {
    if (!required) return Status::ok();
    return Status::invalid_argument(prefix(where) + kernel + ": " + name + " is required");
  }
  if (ld < min_cols)
    return Status::invalid_argument(prefix(where) + kernel + ": " + name + " leading dimension " +
                                    std::to_string(ld) + " < " + std::to_string(min_cols) +
                                    " columns its layout needs");
  return Status::ok();
}

Status check_common(std::string_view where, const char* kernel, int64_t hidden, int64_t gate_stride,
                    int64_t rows, float clip) {
  if (hidden <= 0)
    return Status::invalid_argument(prefix(where) + kernel + ": hidden must be > 0, got " +
                                    std::to_string(hidden));
  if (rows < 0)
    return Status::invalid_argument(prefix(where) + kernel + ": rows must be >= 0, got " +
                                    std::to_string(rows));
  if (gate_stride != 0 && gate_stride < hidden)
    return Status::invalid_argument(prefix(where) + kernel + ": gate_stride " +
                                    std::to_string(gate_stride) + " < hidden " +
                                    std::to_string(hidden) + " (gate blocks would overlap)");
  if (clip != clip) return Status::invalid_argument(prefix(where) + kernel + ": clip is NaN");
  return Status::ok();
}

}  // namespace

Status check_lstm_gate_args(const LstmGateArgs& a, int64_t rows, std::string_view where) {
  const char* k = "lstm gates";
  GRAPHI_RETURN_IF_ERROR(check_common(where, k, a.hidden, a.gate_stride, rows, a.clip));
  const int64_t gs = a.gate_stride > 0 ? a.gate_stride : a.hidden;
  const int64_t gate_cols = 3 * gs + a.hidden;
  GRAPHI_RETURN_IF_ERROR(
      check_matrix(where, k, "gates_x", a.gates_x, true, a.ld_gates_x, gate_cols));
  GRAPHI_RETURN_IF_ERROR(
      check_matrix(where, k, "gates_h", a.gates_h, false, a.ld_gates_h, gate_cols));
  GRAPHI_RETURN_IF_ERROR(check_matrix(where, k, "c_prev", a.c_prev, false, a.ld_c_prev, a.hidden));
  GRAPHI_RETURN_IF_ERROR(check_matrix(where, k, "c", a.c, true, a.ld_c, a.hidden));
  GRAPHI_RETURN_IF_ERROR(check_matrix(where, k, "h", a.h, true, a.ld_h, a.hidden));
  GRAPHI_RETURN_IF_ERROR(
      check_matrix(where, k, "saved", a.saved, false, a.ld_saved, 4 * gs + a.hidden));
  return Status::ok();
}

Status check_gru_gate_args(const GruGateArgs& a, GruPass pass, int64_t rows,
                           std::string_view where) {
  const char* k = pass == GruPass::kLinearBeforeReset ? "gru gates (linear_before_reset)"
                  : pass == GruPass::kReset           ? "gru reset gate pass"
                                                      : "gru output pass";
  GRAPHI_RETURN_IF_ERROR(check_common(where, k, a.hidden, a.gate_stride, rows, a.clip));
  const int64_t gs = a.gate_stride > 0 ? a.gate_stride : a.hidden;
  const int64_t h = a.hidden;
  GRAPHI_RETURN_IF_ERROR(check_matrix(where, k, "h_prev", a.h_prev, false, a.ld_h_prev, h));
  switch (pass) {
    case GruPass::kLinearBeforeReset:
      GRAPHI_RETURN_IF_ERROR(
          check_matrix(where, k, "gates_x", a.gates_x, true, a.ld_gates_x, 2 * gs + h));
      GRAPHI_RETURN_IF_ERROR(
          check_matrix(where, k, "gates_h", a.gates_h, true, a.ld_gates_h, 2 * gs + h));
      GRAPHI_RETURN_IF_ERROR(check_matrix(where, k, "h", a.h, true, a.ld_h, h));
      break;
    case GruPass::kReset:
      GRAPHI_RETURN_IF_ERROR(
          check_matrix(where, k, "gates_x", a.gates_x, true, a.ld_gates_x, gs + h));
      GRAPHI_RETURN_IF_ERROR(
          check_matrix(where, k, "gates_h", a.gates_h, false, a.ld_gates_h, gs + h));
      GRAPHI_RETURN_IF_ERROR(check_matrix(where, k, "z", a.z, true, a.ld_z, h));
      GRAPHI_RETURN_IF_ERROR(check_matrix(where, k, "rh", a.rh, true, a.ld_rh, h));
      break;
    case GruPass::kOutput:
      GRAPHI_RETURN_IF_ERROR(
          check_matrix(where, k, "gates_x", a.gates_x, true, a.ld_gates_x, 2 * gs + h));
      GRAPHI_RETURN_IF_ERROR(
          check_matrix(where, k, "gates_hh", a.gates_hh, true, a.ld_gates_hh, h));
      GRAPHI_RETURN_IF_ERROR(check_matrix(where, k, "z", a.z, true, a.ld_z, h));
      GRAPHI_RETURN_IF_ERROR(check_matrix(where, k, "h", a.h, true, a.ld_h, h));
      break;
  }
  return Status::ok();
}

Status check_rnn_gate_args(const RnnGateArgs& a, int64_t rows, std::string_view where) {
  const char* k = "rnn gates";
  GRAPHI_RETURN_IF_ERROR(check_common(where, k, a.hidden, 0, rows, a.clip));
  GRAPHI_RETURN_IF_ERROR(
      check_matrix(where, k, "gates_x", a.gates_x, true, a.ld_gates_x, a.hidden));
  GRAPHI_RETURN_IF_ERROR(
      check_matrix(where, k, "gates_h", a.gates_h, false, a.ld_gates_h, a.hidden));
  GRAPHI_RETURN_IF_ERROR(check_matrix(where, k, "h", a.h, true, a.ld_h, a.hidden));
  return Status::ok();
}

}  // namespace graphi::ops
