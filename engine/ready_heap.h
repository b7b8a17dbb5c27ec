// ReadyHeap: the scheduler's ready set, a binary max-heap of op ids by a per-op key. With
// levels as keys it is critical-path first; with -topological position it is FIFO. Storage is
// reserved once (one slot per op), so push/pop never allocate during a run.
#pragma once

#include <algorithm>
#include <span>
#include <vector>

#include "graph/graph.h"

namespace graphi::engine {

class ReadyHeap {
 public:
  // keys[n] orders op n; higher runs first. Ties go to the lower op id (deterministic).
  void reset(std::span<const double> keys) {
    keys_ = keys;
    heap_.clear();
    heap_.reserve(keys.size());
  }
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  void push(graph::NodeId n) {
    heap_.push_back(Entry{keys_[n], n});
    std::push_heap(heap_.begin(), heap_.end(), Less{});
  }
  graph::NodeId pop() {
    std::pop_heap(heap_.begin(), heap_.end(), Less{});
    const graph::NodeId n = heap_.back().id;
    heap_.pop_back();
    return n;
  }

 private:
  // The key travels with the id: comparisons touch only the heap's own array (no lookup into a
  // per-op table, which missed the cache on wide graphs).
  struct Entry {
    double key;
    graph::NodeId id;
  };
  struct Less {
    bool operator()(const Entry& a, const Entry& b) const {
      return a.key < b.key || (a.key == b.key && a.id > b.id);
    }
  };
  std::span<const double> keys_;
  std::vector<Entry> heap_;
};

// IdleSet: which executors can take another op, as a bitmap; first() uses count-trailing-zeros.
class IdleSet {
 public:
  void reset(size_t n) { words_.assign((n + 63) / 64, 0); }
  void set(size_t i) { words_[i / 64] |= uint64_t{1} << (i % 64); }
  void clear(size_t i) { words_[i / 64] &= ~(uint64_t{1} << (i % 64)); }
  bool any() const {
    for (uint64_t w : words_)
      if (w) return true;
    return false;
  }
  // Bits 64*i .. 64*i+63 (0 past the end): the executors' idle hint publishes word 0.
  uint64_t word(size_t i) const { return i < words_.size() ? words_[i] : 0; }
  // Lowest set index; call only when any().
  size_t first() const {
    for (size_t k = 0;; ++k)
      if (words_[k]) return k * 64 + static_cast<size_t>(__builtin_ctzll(words_[k]));
  }

 private:
  std::vector<uint64_t> words_;
};

}  // namespace graphi::engine
