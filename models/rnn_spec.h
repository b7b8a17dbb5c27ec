// RnnSpec: the sizes of an unrolled recurrent model (LSTM, GRU), shared by the builders in
// lstm.h / gru.h and by `graphi model`.
#pragma once

#include <cstdint>
#include <string>

#include "graph/base.h"

namespace graphi::models {

struct RnnSpec {
  int64_t input = 0;                 // E: features of x per step
  int64_t hidden = 0;                // H: features of the hidden state
  int64_t layers = 1;                // L: stacked layers; layer l > 0 reads layer l-1's h
  int64_t batch = 1;                 // B
  int64_t seq = 1;                   // T: time steps, unrolled
  uint64_t seed = 1;                 // weights are a pure function of (spec, seed)
  bool linear_before_reset = false;  // GRU only (see gru.h)
};

// Limits checked by validate_rnn_spec(): each size is at least 1 and at most the constant;
// the unrolled graph has at most kMaxRnnSteps layer-steps and kMaxRnnParameterBytes of weights.
inline constexpr int64_t kMaxRnnFeatures = 16384;  // E and H
inline constexpr int64_t kMaxRnnLayers = 64;
inline constexpr int64_t kMaxRnnBatch = 65536;
inline constexpr int64_t kMaxRnnSeq = 100000;
inline constexpr int64_t kMaxRnnSteps = 100000;  // L * T
inline constexpr int64_t kMaxRnnParameterBytes = int64_t{4} << 30;

// OK, or kInvalidArgument naming the field and its allowed range, e.g.
// "lstm: hidden must be in [1, 16384], got 0". `gates` is 4 for LSTM, 3 for GRU.
Status validate_rnn_spec(const RnnSpec& spec, const std::string& cell, int gates);

// Number of weight and bias parameters of the model (for summaries and the size limit).
int64_t rnn_parameter_count(const RnnSpec& spec, int gates);

// "E=64 H=128 L=2 B=1 T=20 seed=1" (plus " linear_before_reset" when set).
std::string rnn_spec_to_string(const RnnSpec& spec);

}  // namespace graphi::models
