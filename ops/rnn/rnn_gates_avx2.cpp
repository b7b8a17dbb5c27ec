// The AVX2 path of ops/rnn/rnn_gates.h; compiled for AVX2 by ops/vec_math.h's target switch and
// reached only through rnn_gate_kernels() after the CPU check.
#include "ops/rnn/rnn_gates.h"

#define GRAPHI_VEC_AVX2
#include "ops/rnn/rnn_gates_impl.h"  // includes ops/vec_math.h

namespace graphi::ops::detail {
extern const RnnGateKernels kRnnGateKernelsAvx2;
const RnnGateKernels kRnnGateKernelsAvx2{SimdIsa::kAvx2,
                                         lstm_gates_t<VecAvx2>,
                                         gru_gates_lbr_t<VecAvx2>,
                                         gru_gates_reset_t<VecAvx2>,
                                         gru_gates_output_t<VecAvx2>,
                                         rnn_gates_t<VecAvx2>,
                                         lstm_backward_t<VecAvx2>,
                                         phased_blend_t<VecAvx2>,
                                         phased_gate_row_t<VecAvx2>};
}  // namespace graphi::ops::detail

GRAPHI_VEC_TARGET_END
