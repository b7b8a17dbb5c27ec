// build_phased_lstm: a stacked Phased LSTM (Neil et al. 2016; the PhasedLSTM op of
// ops/rnn/phased_lstm.h, one fused node per layer) with seeded random parameters, for
// `graphi model phased-lstm`.
//
// Graph inputs:  "x" f32[T, B, E]; "times" f32[T, B] (the timestamp of every step, e.g. event
//                times of an irregularly sampled sequence); "h0", "c0" f32[L, B, H].
// Graph outputs: "y" f32[T, B, H] (last layer's h_t), "h_n", "c_n" f32[L, B, H].
// Layer l > 0 reads layer l-1's y; every layer sees the same timestamps. Nodes "l{l}" (PhasedLSTM,
// alpha = 0.001), "l{l}/y" (Reshape of Y [T, 1, B, H] to [T, B, H]; the last one is "y"),
// "h0/split", "c0/split" (L > 1), "h_n", "c_n".
// Constants per layer, drawn from models::WeightRng(seed) in this order: "l{l}/W" [1, 4H, E_l],
// "l{l}/R" [1, 4H, H], "l{l}/B" [1, 8H] uniform in [-1/sqrt(H), 1/sqrt(H)) (ONNX gate order
// i, o, f, c); "l{l}/tau" [1, H] = exp(uniform[0, 3)) (periods 1..20 time units, as the paper's
// initialization samples log-uniform periods); "l{l}/shift" [1, H] uniform in [0, tau);
// "l{l}/r_on" [1, H] = 0.05 (the paper's open ratio).
#pragma once

#include <string>

#include "graph/graph.h"
#include "graph/graph_builder.h"
#include "models/rnn_spec.h"
#include "models/weights.h"

namespace graphi::models {

// Errors: kInvalidArgument for a spec out of range (validate_rnn_spec with 4 gates), else
// whatever finish() reports.
Result<graph::Graph> build_phased_lstm(const RnnSpec& spec, const graph::ShapeInferencer& shapes);

// Weights, biases (Wb and Rb) and the three time-gate parameters of every layer.
int64_t phased_lstm_parameter_count(const RnnSpec& spec);

// Adds the time-gate constants PREFIX + "tau", "shift", "r_on" of `shape` (H = its element
// count: [H] or [1, H]): tau = exp(uniform[0, 3)), shift = uniform[0, 1) * tau, r_on = 0.05,
// drawn from `rng` in that order (every PhasedLSTM builder's initialization).
void add_phased_time_gate_params(graph::GraphBuilder& b, const std::string& prefix,
                                 const Shape& shape, WeightRng& rng);

}  // namespace graphi::models
