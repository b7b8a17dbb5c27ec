#pragma once
// Stress tests size their loops by this: under ThreadSanitizer every atomic and every yield is
// instrumented (a capacity-1 ring hand-off costs ~1 ms instead of ~1 us), and a race shows in the
// first thousands of hand-offs, not the ten millionth. The Release suite keeps the full counts.

#include <cstdint>

namespace graphi::test {

#if defined(__SANITIZE_THREAD__)
inline constexpr bool kUnderThreadSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
inline constexpr bool kUnderThreadSanitizer = true;
#else
inline constexpr bool kUnderThreadSanitizer = false;
#endif
#else
inline constexpr bool kUnderThreadSanitizer = false;
#endif

// n in a Release build, n / divisor (at least 1) under TSan.
constexpr uint64_t stress_count(uint64_t n, uint64_t tsan_divisor) {
  if (!kUnderThreadSanitizer) return n;
  return n / tsan_divisor > 0 ? n / tsan_divisor : 1;
}

}  // namespace graphi::test
