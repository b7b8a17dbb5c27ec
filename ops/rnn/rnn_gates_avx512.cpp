// The AVX512 path of ops/rnn/rnn_gates.h; compiled for AVX512 by ops/vec_math.h's target switch and
// reached only through rnn_gate_kernels() after the CPU check.
#include "ops/rnn/rnn_gates.h"

#define GRAPHI_VEC_AVX512
#include "ops/rnn/rnn_gates_impl.h"  // includes ops/vec_math.h

namespace graphi::ops::detail {
extern const RnnGateKernels kRnnGateKernelsAvx512;
const RnnGateKernels kRnnGateKernelsAvx512{SimdIsa::kAvx512,
                                           lstm_gates_t<VecAvx512>,
                                           gru_gates_lbr_t<VecAvx512>,
                                           gru_gates_reset_t<VecAvx512>,
                                           gru_gates_output_t<VecAvx512>,
                                           rnn_gates_t<VecAvx512>,
                                           lstm_backward_t<VecAvx512>,
                                           phased_blend_t<VecAvx512>,
                                           phased_gate_row_t<VecAvx512>};
}  // namespace graphi::ops::detail

GRAPHI_VEC_TARGET_END
