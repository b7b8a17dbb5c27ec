// register_custom_op: an application's op goes into the process-wide registry and then runs
// like a built-in (shape rule, kernel selection, teams of 1-3 threads, a Session), checked
// against values computed here from the op's definition; bad OpDefs are clear errors.
#include <catch2/catch.hpp>
#include <memory>
#include <mutex>

#include "engine/session.h"
#include "graph/graph_builder.h"
#include "ops/custom_op.h"
#include "tests/support/op_runner.h"
#include "tests/support/test_util.h"

using namespace graphi;
using graphi::test::run_single_op;

namespace {

// TestAxpb: y = a * x + b elementwise on f32, a and b float attributes (defaults 1 and 0).
Result<std::vector<TensorDesc>> infer_axpb(const graph::InferContext& ctx) {
  if (ctx.inputs.size() != 1 || !ctx.inputs[0])
    return Status::invalid_graph(ctx.where + ": expects 1 input, got " +
                                 std::to_string(ctx.inputs.size()));
  if (ctx.inputs[0]->dtype != DType::kF32)
    return Status::invalid_graph(ctx.where + ": input must be float32");
  return std::vector<TensorDesc>{*ctx.inputs[0]};
}

ops::CostHint cost_axpb(const graph::Node&, std::span<const TensorDesc* const> in,
                        std::span<const TensorDesc* const>) {
  return {2.0 * static_cast<double>(in[0]->numel()), 2.0 * static_cast<double>(in[0]->bytes())};
}

class AxpbKernel final : public ops::Kernel {
 public:
  Status init(const ops::KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(double a, graph::attr_float(ctx.node.attrs, ctx.where, "a", 1.0));
    GRAPHI_ASSIGN_OR_RETURN(double b, graph::attr_float(ctx.node.attrs, ctx.where, "b", 0.0));
    a_ = static_cast<float>(a);
    b_ = static_cast<float>(b);
    n_ = ctx.inputs[0]->numel();
    return Status::ok();
  }
  void run(const ops::TeamContext& team, const ops::Buffers& io) const noexcept override {
    const auto* x = static_cast<const float*>(io.inputs[0]);
    auto* y = static_cast<float*>(io.outputs[0]);
    auto [begin, end] = ops::team_range(n_, team.ithr, team.nthr);
    for (int64_t i = begin; i < end; ++i) y[i] = a_ * x[i] + b_;
  }
  const char* name() const override { return "test_axpb"; }

 private:
  float a_ = 1, b_ = 0;
  int64_t n_ = 0;
};

std::unique_ptr<ops::Kernel> make_axpb() { return std::make_unique<AxpbKernel>(); }

ops::OpDef axpb_def(std::string type = "TestAxpb") {
  return ops::OpDef{std::move(type), infer_axpb, cost_axpb, false, {make_axpb}};
}

void register_axpb_once() {
  static std::once_flag once;
  std::call_once(once, [] { REQUIRE(ops::register_custom_op(axpb_def()).is_ok()); });
}

graph::Attributes ab(double a, double b) {
  graph::Attributes at;
  at.set("a", a);
  at.set("b", b);
  return at;
}

}  // namespace

TEST_CASE("a custom op runs through the registry on teams of 1-3 threads", "[ops][custom]") {
  register_axpb_once();
  REQUIRE(ops::Registry::get().find("TestAxpb") != nullptr);
  Tensor x = test::random_tensor({DType::kF32, {7, 13}}, 5, -3, 3);
  for (int threads : {1, 2, 3}) {
    auto r = run_single_op("TestAxpb", ab(2.5, -1.0), {x}, 1, threads);
    REQUIRE(r.is_ok());
    CHECK(std::string(r->kernel) == "test_axpb");
    const float* got = r->outputs[0].data_as<float>();
    for (int64_t i = 0; i < x.numel(); ++i) CHECK(got[i] == 2.5f * x.data_as<float>()[i] + -1.0f);
  }
}

TEST_CASE("a graph of custom ops runs in a Session on every policy", "[ops][custom]") {
  register_axpb_once();
  graph::GraphBuilder b("custom");
  b.add_input("x", {DType::kF32, {4}});
  b.add_node("TestAxpb", "n1", {"x"}, {"y1"}, ab(2.0, 1.0));
  b.add_node("TestAxpb", "n2", {"y1"}, {"y2"}, ab(-1.0, 0.5));
  b.add_node("TestAxpb", "n3", {"y1"}, {"y3"}, ab(3.0, 0.0));
  b.add_output("y2");
  b.add_output("y3");
  auto g = b.finish(ops::Registry::get());
  REQUIRE(g.is_ok());
  auto gp = std::make_shared<const graph::Graph>(std::move(g).value());
  Tensor x({DType::kF32, {4}});
  for (int i = 0; i < 4; ++i) x.data_as<float>()[i] = static_cast<float>(i) - 1.5f;
  for (const char* policy : {"sequential", "cpf", "fifo", "shared-queue"}) {
    INFO(policy);
    engine::SessionOptions o;
    o.scheduler = policy;
    o.executors = std::string(policy) == "sequential" ? 1 : 2;
    o.pin = false;
    auto s = engine::Session::create(gp, o);
    REQUIRE(s.is_ok());
    auto out = (*s)->run({{"x", x}});
    REQUIRE(out.is_ok());
    for (int i = 0; i < 4; ++i) {
      const float y1 = 2.0f * x.data_as<float>()[i] + 1.0f;
      CHECK((*out)[0].second.data_as<float>()[i] == -1.0f * y1 + 0.5f);
      CHECK((*out)[1].second.data_as<float>()[i] == 3.0f * y1);
    }
  }
}

TEST_CASE("register_custom_op refuses bad definitions with clear errors", "[ops][custom]") {
  register_axpb_once();
  auto err = [](ops::OpDef d) {
    Status s = ops::register_custom_op(std::move(d));
    CHECK(s.code() == StatusCode::kInvalidArgument);
    return s.message();
  };
  CHECK_THAT(err(axpb_def("TestAxpb")), Catch::Contains("'TestAxpb' is already registered"));
  CHECK_THAT(err(axpb_def("MatMul")), Catch::Contains("'MatMul' is already registered"));
  CHECK_THAT(err(axpb_def("")), Catch::Contains("empty op type"));
  CHECK_THAT(err(axpb_def("Bad Name")), Catch::Contains("whitespace"));
  ops::OpDef d = axpb_def("TestNoInfer");
  d.infer = nullptr;
  CHECK_THAT(err(d), Catch::Contains("'TestNoInfer': no shape rule"));
  d = axpb_def("TestNoCost");
  d.cost = nullptr;
  CHECK_THAT(err(d), Catch::Contains("no cost hint"));
  d = axpb_def("TestNoKernels");
  d.kernels.clear();
  CHECK_THAT(err(d), Catch::Contains("no kernels"));
  d = axpb_def("TestNullKernel");
  d.kernels.push_back(nullptr);
  CHECK_THAT(err(d), Catch::Contains("kernel factory 1 is null"));
  // None of the refused definitions slipped in.
  for (const char* t : {"TestNoInfer", "TestNoCost", "TestNoKernels", "TestNullKernel"})
    CHECK(ops::Registry::get().find(t) == nullptr);
}
