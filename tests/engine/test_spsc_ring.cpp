// SpscRing: capacity rules, FIFO order, full/empty and wraparound against a std::deque model,
// then a two-thread stress test (10^7 items: count, order and checksum).
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <deque>
#include <random>
#include <thread>

#include "engine/spsc_ring.h"
#include "tests/support/sanitizer_scale.h"

using graphi::engine::SpscRing;

TEST_CASE("SpscRing capacity rounds up to a power of two, 1 is valid", "[spsc_ring]") {
  using Ring = SpscRing<uint32_t>;
  CHECK(Ring::rounded_capacity(0) == 0);
  CHECK(Ring::rounded_capacity(1) == 1);
  CHECK(Ring::rounded_capacity(2) == 2);
  CHECK(Ring::rounded_capacity(3) == 4);
  CHECK(Ring::rounded_capacity(8) == 8);
  CHECK(Ring::rounded_capacity(9) == 16);
  CHECK(Ring::rounded_capacity(Ring::kMaxCapacity) == Ring::kMaxCapacity);
  CHECK(Ring::rounded_capacity(Ring::kMaxCapacity + 1) == 0);
  for (size_t requested : {1, 2, 3, 5, 8, 100}) {
    Ring r(requested);
    CHECK(r.capacity() == Ring::rounded_capacity(requested));
    // The whole capacity is usable: exactly capacity() pushes succeed.
    for (size_t i = 0; i < r.capacity(); ++i) CHECK(r.try_push(static_cast<uint32_t>(i)));
    CHECK_FALSE(r.try_push(99));
    CHECK(r.size_approx() == r.capacity());
  }
  // Cache-line separation of the two sides (no false sharing between producer and consumer).
  CHECK(alignof(Ring) >= 64);
  CHECK(sizeof(Ring) >= 3 * 64);
}

TEST_CASE("SpscRing is FIFO, reports full and empty, and leaves out untouched when empty",
          "[spsc_ring]") {
  SpscRing<int> r(4);
  int out = -7;
  CHECK(r.empty_approx());
  CHECK_FALSE(r.try_pop(out));
  CHECK(out == -7);
  for (int i = 0; i < 4; ++i) REQUIRE(r.try_push(10 + i));
  CHECK_FALSE(r.try_push(14));
  CHECK(r.size_approx() == 4);
  for (int i = 0; i < 4; ++i) {
    REQUIRE(r.try_pop(out));
    CHECK(out == 10 + i);
  }
  CHECK_FALSE(r.try_pop(out));
  CHECK(r.empty_approx());
}

TEST_CASE("SpscRing wraps around: random push/pop sequences match a deque model", "[spsc_ring]") {
  struct Op {  // a trivially copyable, non-scalar item
    uint32_t id;
    uint16_t executor;
    uint16_t flags;
  };
  for (size_t capacity : {1, 2, 8}) {
    SpscRing<Op> ring(capacity);
    std::deque<Op> model;
    std::mt19937 rng(static_cast<uint32_t>(capacity) * 7919u);
    uint32_t next = 0;
    for (int step = 0; step < 20000; ++step) {
      INFO("capacity " << capacity << " step " << step);
      if (rng() % 2 == 0) {
        Op op{next, static_cast<uint16_t>(next % 5), static_cast<uint16_t>(next * 3)};
        bool pushed = ring.try_push(op);
        CHECK(pushed == (model.size() < capacity));
        if (pushed) {
          model.push_back(op);
          ++next;
        }
      } else {
        Op got{};
        bool popped = ring.try_pop(got);
        REQUIRE(popped == !model.empty());
        if (popped) {
          CHECK(got.id == model.front().id);
          CHECK(got.executor == model.front().executor);
          CHECK(got.flags == model.front().flags);
          model.pop_front();
        }
      }
      REQUIRE(ring.size_approx() == model.size());
    }
    CHECK(next > 4000);  // the indices went around the ring many times
  }
}

namespace {

// Producer pushes 0..n-1, consumer checks each arrives in order exactly once. Both yield when the
// ring is full / empty so the test behaves on a 2-core machine shared with other tests.
void stress(size_t capacity, uint64_t n) {
  SpscRing<uint64_t> ring(capacity);
  std::atomic<bool> producer_done{false};
  uint64_t received = 0, sum = 0, xor_all = 0, out_of_order = 0;
  std::thread consumer([&] {
    uint64_t expected = 0, v = 0;
    auto take = [&](uint64_t item) {
      if (item != expected) ++out_of_order;
      ++received;
      sum += item;
      xor_all ^= item * 0x9E3779B97F4A7C15ull;
      expected = item + 1;  // resynchronize so one error does not cascade
    };
    for (;;) {
      if (ring.try_pop(v)) {
        take(v);
        continue;
      }
      // Stop only once the producer has finished and the ring is drained: a lost item then shows
      // up as a short count instead of a hang.
      if (producer_done.load(std::memory_order_acquire)) {
        while (ring.try_pop(v)) take(v);
        break;
      }
      std::this_thread::yield();
    }
  });
  for (uint64_t i = 0; i < n; ++i) {
    while (!ring.try_push(i)) std::this_thread::yield();
  }
  producer_done.store(true, std::memory_order_release);
  consumer.join();
  uint64_t expect_xor = 0;
  for (uint64_t i = 0; i < n; ++i) expect_xor ^= i * 0x9E3779B97F4A7C15ull;
  INFO("capacity " << capacity);
  CHECK(out_of_order == 0);
  CHECK(received == n);
  CHECK(sum == n * (n - 1) / 2);
  CHECK(xor_all == expect_xor);
  CHECK(ring.empty_approx());
}

}  // namespace

TEST_CASE("SpscRing two-thread stress: 10^7 items through a small ring, no loss or duplication",
          "[spsc_ring][stress]") {
  stress(64, graphi::test::stress_count(10'000'000, 50));  // 200k under TSan
}

TEST_CASE("SpscRing two-thread stress with capacity 1 (the paper's default)",
          "[spsc_ring][stress]") {
  stress(1, graphi::test::stress_count(300'000, 30));  // 10k under TSan
}
