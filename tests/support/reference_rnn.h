// Naive ONNX LSTM / GRU / RNN (opset 14) in double precision, written straight from the
// equations of the ONNX operator documentation: one batch entry and one time step at a time, the
// gate order and the weight layout of ONNX, no packing, no blocking. The independent truth for
// ops/rnn/rnn_sequence.cpp; it shares no code with the kernels. Bad arguments (a bug in the test)
// throw std::invalid_argument.
#pragma once

#include <string>
#include <vector>

#include "graph/tensor.h"

namespace graphi::test {

struct RnnRefSpec {
  std::string op;                     // "LSTM", "GRU" or "RNN"
  int64_t hidden = 0;                 // hidden_size
  std::string direction = "forward";  // forward | reverse | bidirectional
  int layout = 0;                     // 0: X [T, B, I]; 1: X [B, T, I]
  double clip = 0;                    // > 0: clip the activations' inputs to [-clip, clip]
  bool input_forget = false;          // LSTM: f = 1 - i
  bool linear_before_reset = false;   // GRU
  // RNN: "Tanh", "Relu" or "Sigmoid", one per direction (or one for all); empty = Tanh.
  std::vector<std::string> activations;
  // The bf16-weight semantics (graphi_rnn_weights = bf16): x, W, h (the canonical GRU: r * h)
  // and R rounded to bf16 (nearest even) before each product; sums stay exact (double).
  bool bf16_operands = false;
};

// Inputs in ONNX order; nullptr = absent. seq_lens may be int32 or int64.
struct RnnRefInputs {
  const Tensor* x = nullptr;
  const Tensor* w = nullptr;
  const Tensor* r = nullptr;
  const Tensor* b = nullptr;
  const Tensor* seq_lens = nullptr;
  const Tensor* initial_h = nullptr;
  const Tensor* initial_c = nullptr;  // LSTM
  const Tensor* p = nullptr;          // LSTM peepholes (i, o, f)
};

// {Y, Y_h} for GRU/RNN, {Y, Y_h, Y_c} for LSTM, float32, in the layout's shapes. Y is 0 past a
// batch entry's sequence length; Y_h / Y_c hold the state after its last valid step.
std::vector<Tensor> reference_rnn(const RnnRefSpec& spec, const RnnRefInputs& in);

}  // namespace graphi::test
