// SpscRing<T>: a bounded lock-free single-producer / single-consumer ring buffer. The scheduler
// uses one per executor to hand it op ids (capacity 1 by default, as the Graphi paper found best)
// and each executor one back to report ops that became ready. Header-only; no allocation after
// construction.
//
// Contract (modelled on taskflow's utility/spsc.hpp):
//  - Exactly one producer thread calls try_push() and exactly one consumer thread calls try_pop()
//    at any time. Which threads these are may change over time only across a synchronization
//    that orders the old and the new caller (e.g. the scheduler role passing between executors
//    under a lock). capacity(), size_approx() and empty_approx() may be called from any thread.
//  - FIFO: items are popped in the order they were pushed; none is lost or duplicated.
//  - Capacity is the requested capacity rounded up to a power of two (1, 2, 4, ...); all of it is
//    usable (no slot is sacrificed to tell full from empty), so a ring of capacity 1 holds one op.
//  - try_push / try_pop never block, never allocate and are noexcept: they return false when the
//    ring is full / empty. Waiting (spin, yield, sleep) is the caller's policy.
//  - An item popped by the consumer happens-after its push: everything the producer wrote before
//    try_push() is visible to the consumer after the matching try_pop().
//  - T must be trivially copyable (op ids, small PODs): slots are copied, never constructed.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>

#include "graph/base.h"

namespace graphi::engine {

template <typename T>
class SpscRing {
  static_assert(std::is_trivially_copyable_v<T>,
                "SpscRing holds trivially copyable items (op ids)");
  static_assert(std::is_default_constructible_v<T>, "SpscRing slots are default-initialized");

 public:
  static constexpr size_t kCacheLine = 64;
  static constexpr size_t kMaxCapacity = size_t{1} << 30;

  // The capacity a request rounds up to: the next power of two, 0 if `requested` is 0 or above
  // kMaxCapacity. Callers validate user options with it.
  static constexpr size_t rounded_capacity(size_t requested) {
    if (requested == 0 || requested > kMaxCapacity) return 0;
    size_t c = 1;
    while (c < requested) c <<= 1;
    return c;
  }

  // Aborts (GRAPHI_CHECK) on an invalid capacity: options are validated before this point.
  explicit SpscRing(size_t requested_capacity)
      : capacity_(rounded_capacity(requested_capacity)), mask_(capacity_ - 1) {
    GRAPHI_CHECK(capacity_ != 0, "SpscRing capacity must be in [1, 2^30], got " +
                                     std::to_string(requested_capacity));
    void* raw = ::operator new (sizeof(T) * capacity_, std::align_val_t{kCacheLine});
    std::uninitialized_value_construct_n(static_cast<T*>(raw), capacity_);
    slots_.reset(static_cast<T*>(raw));
  }
  SpscRing(const SpscRing&) = delete;
  SpscRing& operator=(const SpscRing&) = delete;

  size_t capacity() const noexcept { return capacity_; }

  // Producer only. Copies `item` into the ring; false if full.
  bool try_push(const T& item) noexcept {
    // Relaxed: only this (producer) thread writes tail_.
    const size_t tail = producer_.tail.load(std::memory_order_relaxed);
    if (tail - producer_.cached_head == capacity_) {
      // Acquire pairs with the release store of head in try_pop(): once we see the consumer
      // advanced past a slot, its read of that slot is complete and we may overwrite it.
      producer_.cached_head = consumer_.head.load(std::memory_order_acquire);
      if (tail - producer_.cached_head == capacity_) return false;
    }
    slots_[tail & mask_] = item;
    // Release pairs with the acquire load of tail in try_pop(): publishes the slot write (and
    // everything the producer did before) to the consumer.
    producer_.tail.store(tail + 1, std::memory_order_release);
    return true;
  }

  // Consumer only. Moves the oldest item into `out`; false (and `out` untouched) if empty.
  bool try_pop(T& out) noexcept {
    // Relaxed: only this (consumer) thread writes head_.
    const size_t head = consumer_.head.load(std::memory_order_relaxed);
    if (head == consumer_.cached_tail) {
      // Acquire pairs with the release store of tail in try_push(): makes the slot contents
      // written before that store visible here.
      consumer_.cached_tail = producer_.tail.load(std::memory_order_acquire);
      if (head == consumer_.cached_tail) return false;
    }
    out = slots_[head & mask_];
    // Release pairs with the acquire load of head in try_push(): the slot read above completes
    // before the producer may reuse the slot.
    consumer_.head.store(head + 1, std::memory_order_release);
    return true;
  }

  // Any thread. A snapshot that may be stale by the time it returns; exact when neither side is
  // running. Head is read first: tail only grows, so tail - head never underflows.
  size_t size_approx() const noexcept {
    // Acquire on both: pairs with the release stores above so the two reads are not older than
    // what the caller already observed through other synchronization.
    const size_t head = consumer_.head.load(std::memory_order_acquire);
    const size_t tail = producer_.tail.load(std::memory_order_acquire);
    const size_t n = tail - head;
    return n > capacity_ ? capacity_ : n;
  }
  bool empty_approx() const noexcept { return size_approx() == 0; }

 private:
  struct AlignedDelete {
    void operator()(T* p) const { ::operator delete (p, std::align_val_t{kCacheLine}); }
  };

  // Indices grow without wrapping into the slot range (slot = index & mask_); size_t cannot
  // overflow in practice (2^64 items), and unsigned differences stay right even if it did.
  // Each side's index and its cached copy of the other side's index share one cache line that
  // only that side writes, so the common case touches no line the other side writes.
  struct alignas(kCacheLine) ConsumerSide {
    std::atomic<size_t> head{0};  // next slot to pop; written by the consumer only
    size_t cached_tail = 0;       // consumer's last view of tail; consumer-private
  };
  struct alignas(kCacheLine) ProducerSide {
    std::atomic<size_t> tail{0};  // next slot to fill; written by the producer only
    size_t cached_head = 0;       // producer's last view of head; producer-private
  };

  alignas(kCacheLine) const size_t capacity_;
  const size_t mask_;
  std::unique_ptr<T[], AlignedDelete> slots_;
  ConsumerSide consumer_;
  ProducerSide producer_;
};

}  // namespace graphi::engine
