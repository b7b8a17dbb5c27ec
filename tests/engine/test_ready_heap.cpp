// ReadyHeap (rank bitmap) and IdleSet against naive models: a sorted multiset with the same
// order (higher key first, ties to the lower op id) and a std::vector<bool>.
#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <set>

#include "engine/ready_heap.h"

using namespace graphi;
using namespace graphi::engine;

TEST_CASE("ReadyHeap pops by key, ties to the lower id, like a sorted set", "[ready_heap]") {
  for (size_t n :
       {size_t{1}, size_t{5}, size_t{64}, size_t{65}, size_t{4096}, size_t{4097}, size_t{300000}}) {
    INFO("n = " << n);
    std::mt19937_64 rng(n);
    std::vector<double> keys(n);
    // Few distinct keys, so ties are common (levels of a regular DAG).
    for (double& k : keys) k = static_cast<double>(rng() % 17) * 0.5;
    ReadyHeap heap;
    heap.reset(keys);
    ReadyHeap twin;
    twin.reset_like(heap);
    auto before = [&](graph::NodeId a, graph::NodeId b) {
      return keys[a] > keys[b] || (keys[a] == keys[b] && a < b);
    };
    std::set<graph::NodeId, decltype(before)> model(before);
    std::vector<bool> in(n, false);
    const size_t steps = std::min<size_t>(4 * n + 100, 400000);
    for (size_t s = 0; s < steps; ++s) {
      const bool do_push = model.empty() || (rng() % 3 != 0 && model.size() < n);
      if (do_push) {
        graph::NodeId v;
        do v = static_cast<graph::NodeId>(rng() % n);
        while (in[v]);
        in[v] = true;
        heap.push(v);
        twin.push(v);
        model.insert(v);
      } else {
        const graph::NodeId want = *model.begin();
        model.erase(model.begin());
        in[want] = false;
        REQUIRE(heap.pop() == want);
        REQUIRE(twin.pop() == want);
      }
      REQUIRE(heap.size() == model.size());
      REQUIRE(heap.empty() == model.empty());
    }
    heap.clear();
    CHECK(heap.empty());
    if (n > 3) {
      heap.push(3);
      CHECK(heap.pop() == 3);  // nothing left from before clear()
      CHECK(heap.empty());
    }
  }
}

TEST_CASE("ReadyHeap breaks key ties by the tie-break value, then the lower id", "[ready_heap]") {
  for (size_t n : {size_t{7}, size_t{200}, size_t{5000}}) {
    INFO("n = " << n);
    std::mt19937_64 rng(n + 1);
    std::vector<double> keys(n), ties(n);
    for (double& k : keys) k = static_cast<double>(rng() % 5);
    for (double& t : ties) t = static_cast<double>(rng() % 3);  // ties of ties too: then the id
    ReadyHeap heap;
    heap.reset(keys, ties);
    std::vector<graph::NodeId> want(n);
    for (size_t i = 0; i < n; ++i) want[i] = static_cast<graph::NodeId>(i);
    // The order straight from the definition: (key, tie) lexicographically higher first, then id.
    std::stable_sort(want.begin(), want.end(), [&](graph::NodeId a, graph::NodeId b) {
      return std::make_pair(keys[a], ties[a]) > std::make_pair(keys[b], ties[b]);
    });
    for (size_t i = n; i-- > 0;)
      heap.push(static_cast<graph::NodeId>(i));  // push order must not matter
    for (size_t i = 0; i < n; ++i) REQUIRE(heap.pop() == want[i]);
    CHECK(heap.empty());
  }
}

TEST_CASE("IdleSet finds the lowest set index across words", "[ready_heap]") {
  IdleSet s;
  s.reset(130);
  CHECK_FALSE(s.any());
  s.set(129);
  CHECK(s.first() == 129);
  s.set(64);
  CHECK(s.first() == 64);
  CHECK(s.word(1) == 1);
  s.clear(64);
  s.set(0);
  CHECK(s.first() == 0);
  CHECK(s.word(0) == 1);
  CHECK(s.word(5) == 0);
}
