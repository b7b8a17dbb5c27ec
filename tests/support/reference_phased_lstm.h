// Naive PhasedLSTM (ops/rnn/phased_lstm.h) in double precision, written straight from the equations
// of Neil et al. 2016 on top of ONNX LSTM's: one batch entry, one time step and one unit at a
// time, ONNX layouts and gate order (i, o, f, c), no packing. Shares no code with the kernel.
// Bad arguments (a bug in the test) throw std::invalid_argument.
#pragma once

#include <string>
#include <vector>

#include "graph/tensor.h"

namespace graphi::test {

struct PhasedLstmRefSpec {
  int64_t hidden = 0;
  std::string direction = "forward";  // forward | reverse | bidirectional
  int layout = 0;                     // 0: X [T, B, I], times [T, B]; 1: X [B, T, I], times [B, T]
  double alpha = 0.001;
  double clip = 0;            // > 0: clip the gate pre-activations
  bool input_forget = false;  // f = 1 - i
};

// Inputs in the op's order; nullptr = absent optional input (times, tau, shift, r_on required).
struct PhasedLstmRefInputs {
  const Tensor* x = nullptr;
  const Tensor* w = nullptr;
  const Tensor* r = nullptr;
  const Tensor* b = nullptr;
  const Tensor* seq_lens = nullptr;  // int32 or int64
  const Tensor* initial_h = nullptr;
  const Tensor* initial_c = nullptr;
  const Tensor* p = nullptr;
  const Tensor* times = nullptr;
  const Tensor* tau = nullptr;
  const Tensor* shift = nullptr;
  const Tensor* r_on = nullptr;
};

// {Y, Y_h, Y_c}, float32, in the layout's shapes.
std::vector<Tensor> reference_phased_lstm(const PhasedLstmRefSpec& spec,
                                          const PhasedLstmRefInputs& in);

}  // namespace graphi::test
