// Seeded random weights for the model builders and for generated run inputs. The generator is
// spelled out here (splitmix64 + 24-bit mantissa floats) rather than taken from <random>, so the
// same seed gives the same weights with every compiler and standard library.
#pragma once

#include <cstdint>

#include "graph/tensor.h"

namespace graphi::models {

class WeightRng {
 public:
  explicit WeightRng(uint64_t seed) : state_(seed) {}
  uint64_t next_u64();
  // Uniform in [lo, hi).
  float uniform(float lo, float hi);

 private:
  uint64_t state_;
};

// A float32 tensor of `shape` with values uniform in [-bound, bound), as PyTorch initializes
// RNN weights with bound = 1/sqrt(hidden).
Tensor uniform_tensor(const Shape& shape, float bound, WeightRng& rng);

// A tensor of `desc` filled from `rng`: float32 uniform in [-1, 1); int32/int64 uniform in
// [0, 10) (small non-negative values, safe as indices of small tensors).
Tensor random_tensor(const TensorDesc& desc, WeightRng& rng);

}  // namespace graphi::models
