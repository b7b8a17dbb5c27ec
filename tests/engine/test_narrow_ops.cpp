// Plan::narrow (engine/plan.h): an op whose cost hint is below a team's worth of work runs on
// one thread of its executor's team, without a parallel region; other ops, and ops with an
// unknown (0 / 0) hint, get the whole team. Checked with custom ops that record the team size
// they ran with, on the sequential executor and on one executor of the parallel runtime.
#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>

#include "engine/plan.h"
#include "engine/session.h"
#include "graph/graph_builder.h"
#include "ops/custom_op.h"
#include "tests/support/test_util.h"

using namespace graphi;
using namespace graphi::engine;

namespace {

std::atomic<int> g_tiny{0}, g_big{0}, g_unknown{0};

Result<std::vector<TensorDesc>> infer_copy(const graph::InferContext& ctx) {
  return std::vector<TensorDesc>{*ctx.inputs[0]};
}
ops::CostHint cost_tiny(const graph::Node&, std::span<const TensorDesc* const>,
                        std::span<const TensorDesc* const>) {
  return {100.0, 256.0};
}
ops::CostHint cost_big(const graph::Node&, std::span<const TensorDesc* const>,
                       std::span<const TensorDesc* const>) {
  return {1e8, 1e6};
}
ops::CostHint cost_unknown(const graph::Node&, std::span<const TensorDesc* const>,
                           std::span<const TensorDesc* const>) {
  return {0.0, 0.0};
}
// Records the largest team it ran on; thread 0 copies the f32[4, 8] input.
template <std::atomic<int>* Seen>
void probe(const ops::TeamContext& team, const ops::Buffers& io) {
  int v = Seen->load();
  while (v < team.nthr && !Seen->compare_exchange_weak(v, team.nthr)) {
  }
  if (team.ithr == 0) std::memcpy(io.outputs[0], io.inputs[0], 4 * 8 * sizeof(float));
}

void register_probes() {
  static const bool done = [] {
    REQUIRE(ops::register_custom_op({"TestNarrowTiny",
                                     infer_copy,
                                     cost_tiny,
                                     false,
                                     {ops::function_kernel<&probe<&g_tiny>>}})
                .is_ok());
    REQUIRE(
        ops::register_custom_op(
            {"TestNarrowBig", infer_copy, cost_big, false, {ops::function_kernel<&probe<&g_big>>}})
            .is_ok());
    REQUIRE(ops::register_custom_op({"TestNarrowUnknown",
                                     infer_copy,
                                     cost_unknown,
                                     false,
                                     {ops::function_kernel<&probe<&g_unknown>>}})
                .is_ok());
    return true;
  }();
  (void)done;
}

std::shared_ptr<const graph::Graph> probe_graph() {
  register_probes();
  graph::GraphBuilder b("<narrow ops>");
  b.add_input("x", TensorDesc{DType::kF32, {4, 8}});
  b.add_node("TestNarrowTiny", "tiny", {"x"}, {"a"});
  b.add_node("TestNarrowBig", "big", {"a"}, {"b"});
  b.add_node("TestNarrowUnknown", "unknown", {"b"}, {"c"});
  b.add_node("Add", "add", {"c", "x"}, {"y"});  // a built-in element-wise op of 32 values
  b.add_output("y");
  return std::make_shared<const graph::Graph>(value_or_throw(b.finish(ops::Registry::get())));
}

}  // namespace

TEST_CASE("narrow ops: ops too small for a team run on one thread of it", "[plan][narrow]") {
  auto g = probe_graph();
  auto plan = value_or_throw(compile(g, 2));
  CHECK(plan.narrow(0));
  CHECK_FALSE(plan.narrow(1));
  CHECK_FALSE(plan.narrow(2));  // no hint: not known to be small
  CHECK(plan.narrow(3));
  CHECK(plan.node_threads(0, 2) == 1);
  CHECK(plan.node_threads(1, 2) == 2);
  auto one = value_or_throw(compile(g, 1));
  for (NodeId n = 0; n < 4; ++n) CHECK_FALSE(one.narrow(n));  // a team of 1 has nothing to narrow

  const Tensor x = test::random_tensor(TensorDesc{DType::kF32, {4, 8}}, 5);
  for (const char* scheduler : {"sequential", "cpf"}) {  // cpf: one executor of the runtime
    INFO("scheduler " << scheduler);
    g_tiny = g_big = g_unknown = 0;
    SessionOptions o;
    o.threads = 2;
    o.pin = false;
    o.scheduler = scheduler;
    auto s = value_or_throw(Session::create(g, o));
    auto out = value_or_throw(s->run({{"x", x}}));
    CHECK(g_tiny == 1);
    CHECK(g_big == 2);
    CHECK(g_unknown == 2);
    for (int64_t i = 0; i < 32; ++i)
      CHECK(out[0].second.data_as<float>()[i] == 2 * x.data_as<float>()[i]);
  }
}
