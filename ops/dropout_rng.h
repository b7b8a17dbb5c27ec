// The counter-based random stream of DropoutTraining (ops/dropout_ops.cpp): uniform numbers that
// depend only on (seed, step, element index), so a mask never depends on the team size or the
// schedule and tests can recompute it.
#pragma once

#include <cstdint>

namespace graphi::ops {

// SplitMix64's finalizer (Steele, Lea, Flood 2014): a bijective 64-bit mix.
constexpr uint64_t splitmix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class DropoutStream {
 public:
  constexpr DropoutStream(uint64_t seed, int64_t step)
      : key_(splitmix64(seed ^ splitmix64(static_cast<uint64_t>(step)))) {}
  // Uniform in [0, 1) with 24 random bits: element i is kept when uniform(i) >= ratio.
  constexpr double uniform(uint64_t i) const {
    return static_cast<double>(splitmix64(key_ + i) >> 40) * (1.0 / 16777216.0);
  }

 private:
  uint64_t key_;
};

}  // namespace graphi::ops
