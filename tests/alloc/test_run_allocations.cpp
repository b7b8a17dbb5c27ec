// No allocation on the run path of a compiled CNN (issue 18): this binary replaces the global
// operator new (libdnnl.so and libstdc++ bind to it too) with a counting one, compiles CNN graphs
// (conv + bias + ReLU, max-pool, parallel branches summed and concatenated, average pool; as
// built and after the default passes: FusedConv, nChw16c), warms them up and counts the
// allocations of later runs. Session::run itself allocates the returned output tensors and its
// binding table, so each CNN is compared with a one-op graph with the same input and output
// names (x -> Relu -> y, a plain loop that allocates nothing): every allocation above that
// baseline was made by the CNN's ops or the engine running them.
// Each allocation is attributed by its caller's address (dladdr): oneDNN 2.6 allocates inside
// every primitive execution (dnnl_primitive_execute copies the arguments into an
// std::unordered_map, dnnl::impl::parallel wraps its body in an std::function), which no caller
// can avoid through its public API; those are counted apart and reported, everything else must
// be zero. In its own binary because the counting operator new would count for every test.
#include <dlfcn.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <new>

#include "engine/model_loader.h"
#include "engine/session.h"
#include "graph/graph_builder.h"
#include "ops/registry.h"
#include "tests/support/test_util.h"

namespace {
std::atomic<long> g_allocations{0};   // all operator new calls
std::atomic<long> g_onednn{0};        // ... made from code in libdnnl.so
std::atomic<size_t> g_onednn_max{0};  // the largest of those (bytes), reset per measured run

__attribute__((noinline)) void count(void* caller, std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  Dl_info info;  // glibc's dladdr does not allocate
  if (dladdr(caller, &info) != 0 && info.dli_fname && std::strstr(info.dli_fname, "libdnnl")) {
    g_onednn.fetch_add(1, std::memory_order_relaxed);
    size_t m = g_onednn_max.load(std::memory_order_relaxed);
    while (n > m && !g_onednn_max.compare_exchange_weak(m, n, std::memory_order_relaxed)) {
    }
  }
}
}  // namespace

void* operator new(std::size_t n) {
  count(__builtin_return_address(0), n);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  count(__builtin_return_address(0), n);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  count(__builtin_return_address(0), n);
  return std::malloc(n ? n : 1);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  count(__builtin_return_address(0), n);
  return std::malloc(n ? n : 1);
}
void* operator new(std::size_t n, std::align_val_t a) {
  count(__builtin_return_address(0), n);
  const std::size_t al = static_cast<std::size_t>(a);
  if (void* p = std::aligned_alloc(al, (n + al - 1) / al * al)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t a) { return operator new(n, a); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

using namespace graphi;
using namespace graphi::engine;

namespace {

using Shape4 = std::vector<int64_t>;

graph::Attributes conv_attrs(int64_t k) {
  graph::Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{k, k});
  a.set("pads", std::vector<int64_t>{k / 2, k / 2, k / 2, k / 2});
  return a;
}

graph::Attributes pool_attrs(int64_t k, int64_t s, int64_t p) {
  graph::Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{k, k});
  a.set("strides", std::vector<int64_t>{s, s});
  a.set("pads", std::vector<int64_t>{p, p, p, p});
  return a;
}

// conv+ReLU -> max-pool -> two parallel conv+ReLU modules summed (PathNet) -> an inception-like
// pair of a 1x1 conv and a 3x3 max-pool + 1x1 conv, concatenated -> average pool.
std::shared_ptr<const graph::Graph> cnn_graph(int64_t batch) {
  graph::GraphBuilder b("<alloc test cnn>");
  b.add_input("x", TensorDesc{DType::kF32, {batch, 3, 16, 16}});
  uint64_t seed = 1;
  auto conv = [&](const std::string& name, const std::string& in, int64_t cin, int64_t cout,
                  int64_t k, bool relu) {
    b.add_constant(name + ".w", test::random_tensor(TensorDesc{DType::kF32, {cout, cin, k, k}},
                                                    seed++, -0.3, 0.3));
    b.add_constant(name + ".b", test::random_tensor(TensorDesc{DType::kF32, {cout}}, seed++));
    b.add_node("Conv", name, {in, name + ".w", name + ".b"}, {relu ? name + ".c" : name},
               conv_attrs(k));
    if (relu) b.add_node("Relu", name + ".relu", {name + ".c"}, {name});
  };
  conv("c0", "x", 3, 16, 3, true);
  b.add_node("MaxPool", "p0", {"c0"}, {"p0"}, pool_attrs(2, 2, 0));
  conv("m1", "p0", 16, 16, 3, true);
  conv("m2", "p0", 16, 16, 3, true);
  b.add_node("Add", "sum", {"m1", "m2"}, {"sum"});
  conv("i1", "sum", 16, 16, 1, true);
  b.add_node("MaxPool", "ip", {"sum"}, {"ip"}, pool_attrs(3, 1, 1));
  conv("i2", "ip", 16, 16, 1, true);
  graph::Attributes cat;
  cat.set("axis", int64_t{1});
  b.add_node("Concat", "cat", {"i1", "i2"}, {"cat"}, cat);
  graph::Attributes avg = pool_attrs(2, 2, 0);
  b.add_node("AveragePool", "y", {"cat"}, {"y"}, avg);
  b.add_output("y");
  return std::make_shared<const graph::Graph>(value_or_throw(b.finish(ops::Registry::get())));
}

// The same input and output names and ranks, one allocation-free op.
std::shared_ptr<const graph::Graph> baseline_graph(int64_t batch) {
  graph::GraphBuilder b("<alloc test baseline>");
  b.add_input("x", TensorDesc{DType::kF32, {batch, 3, 16, 16}});
  b.add_node("Relu", "y", {"x"}, {"y"});
  b.add_output("y");
  return std::make_shared<const graph::Graph>(value_or_throw(b.finish(ops::Registry::get())));
}

struct RunAllocations {
  long outside_onednn = -1, onednn = -1;
  size_t onednn_max_bytes = 0;  // the largest allocation inside libdnnl over the measured runs
};

// Allocations of one run, after `warmup` runs (the minimum over a few runs: nothing else in the
// process allocates meanwhile, but take no chances with a lazily started thread).
RunAllocations allocations_per_run(Session& s, const NamedTensors& in, int warmup = 3) {
  for (int i = 0; i < warmup; ++i) REQUIRE(s.run(in).is_ok());
  RunAllocations best;
  g_onednn_max.store(0);
  for (int i = 0; i < 5; ++i) {
    const long all0 = g_allocations.load(), dnnl0 = g_onednn.load();
    auto r = s.run(in);
    const long dnnl = g_onednn.load() - dnnl0, other = g_allocations.load() - all0 - dnnl;
    REQUIRE(r.is_ok());
    if (best.outside_onednn < 0 || other < best.outside_onednn) best.outside_onednn = other;
    if (best.onednn < 0 || dnnl < best.onednn) best.onednn = dnnl;
  }
  best.onednn_max_bytes = g_onednn_max.load();
  return best;
}

// The graph after the default passes (FusedConv, blocked layout), as Sessions load models.
std::shared_ptr<const graph::Graph> optimized(std::shared_ptr<const graph::Graph> g) {
  return value_or_throw(optimize_graph(std::move(g))).graph;
}

}  // namespace

TEST_CASE("alloc: a compiled CNN allocates nothing per run beyond the output tensors",
          "[alloc][cnn]") {
  auto blocked = optimized(cnn_graph(1));
  int blocked_convs = 0, plain_convs = 0, split_sums = 0;
  for (const graph::Node& n : blocked->nodes()) {
    blocked_convs += n.op == "BlockedConv";
    split_sums += n.op == "SplitSum";
    plain_convs += n.op == "Conv" || n.op == "FusedConv";
  }
  // The two modules m1, m2 merged into one (conv_merge), their sum one SplitSum.
  CHECK(blocked_convs == 4);
  CHECK(split_sums == 1);
  CHECK(plain_convs == 0);
  struct Split {
    int executors, threads;
    const char* scheduler;
  };
  for (Split sp : {Split{1, 1, "sequential"}, Split{1, 2, "sequential"}, Split{2, 1, "cpf"}}) {
    for (int64_t batch : {1, 8}) {
      for (bool passes : {false, true}) {
        SessionOptions o;
        o.executors = sp.executors;
        o.threads = sp.threads;
        o.scheduler = sp.scheduler;
        o.pin = false;  // the test machine may have fewer cores than the split
        auto g = passes ? optimized(cnn_graph(batch)) : cnn_graph(batch);
        auto cnn = value_or_throw(Session::create(g, o));
        auto base = value_or_throw(Session::create(baseline_graph(batch), o));
        NamedTensors in{{"x", test::random_tensor(TensorDesc{DType::kF32, {batch, 3, 16, 16}}, 5)}};
        const RunAllocations c = allocations_per_run(*cnn, in);
        const RunAllocations bl = allocations_per_run(*base, in);
        INFO(sp.executors << "x" << sp.threads << " " << sp.scheduler << ", batch " << batch
                          << (passes ? ", after the passes" : ", as built") << ": CNN run "
                          << c.outside_onednn << " allocations outside oneDNN + " << c.onednn
                          << " inside libdnnl's execute; baseline run " << bl.outside_onednn
                          << " + " << bl.onednn);
        CHECK(c.outside_onednn == bl.outside_onednn);
        CHECK(bl.onednn == 0);
        // oneDNN's own: a handful per primitive execution (8 primitives here), all of them
        // bookkeeping (hash-map nodes and buckets of the argument map, std::function bodies):
        // no data buffer, since every primitive runs on graphi's scratchpad (scratchpad_mode
        // user). The smallest primitive's scratchpad or tensor here is 1 KiB or more.
        CHECK(c.onednn <= 16 * 8);
        CHECK(c.onednn_max_bytes < 512);
        WARN("per run: " << c.onednn << " allocations inside libdnnl (" << sp.executors << "x"
                         << sp.threads << ", batch " << batch << (passes ? ", blocked" : "")
                         << "), the largest " << c.onednn_max_bytes << " bytes");
      }
    }
  }
}

TEST_CASE("alloc: the counting operator new sees allocations (the test can fail)", "[alloc]") {
  const long before = g_allocations.load();
  auto* v = new std::vector<int>(100);
  const long n = g_allocations.load() - before;
  delete v;
  CHECK(n == 2);  // the vector object and its elements
  // And the attribution to libdnnl is not vacuous: creating a oneDNN-backed Session allocates
  // there (primitive descriptors).
  const long dnnl0 = g_onednn.load();
  SessionOptions o;
  auto s = value_or_throw(Session::create(cnn_graph(1), o));
  CHECK(g_onednn.load() > dnnl0);
}
