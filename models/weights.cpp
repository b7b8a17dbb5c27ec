#include "models/weights.h"

namespace graphi::models {

uint64_t WeightRng::next_u64() {
  // splitmix64 (Steele, Lea, Flood 2014): a full-period generator good enough for weights.
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

float WeightRng::uniform(float lo, float hi) {
  // 24 random bits -> [0, 1) exactly representable in float.
  float u = static_cast<float>(next_u64() >> 40) * (1.0f / 16777216.0f);
  return lo + (hi - lo) * u;
}

Tensor uniform_tensor(const Shape& shape, float bound, WeightRng& rng) {
  Tensor t(TensorDesc{DType::kF32, shape});
  float* p = t.data_as<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = rng.uniform(-bound, bound);
  return t;
}

Tensor random_tensor(const TensorDesc& desc, WeightRng& rng) {
  if (desc.dtype == DType::kF32) return uniform_tensor(desc.shape, 1.0f, rng);
  Tensor t(desc);
  for (int64_t i = 0; i < t.numel(); ++i) {
    int64_t v = static_cast<int64_t>(rng.next_u64() % 10);
    if (desc.dtype == DType::kI32)
      t.data_as<int32_t>()[i] = static_cast<int32_t>(v);
    else
      t.data_as<int64_t>()[i] = v;
  }
  return t;
}

}  // namespace graphi::models
