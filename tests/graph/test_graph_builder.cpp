// GraphBuilder::finish(): one test per validation error, each checking that the message names the
// source, the node and the value involved. The first part uses ToyShapes (tests/graph/
// toy_shapes.h) so it exercises graph/ alone; the last part goes through the real op registry
// (ops::Registry::get()) for the errors that op shape rules raise inside finish().
#include <catch2/catch.hpp>

#include "graph/graph_builder.h"
#include "ops/registry.h"
#include "tests/graph/toy_shapes.h"

using namespace graphi;
using namespace graphi::graph;

namespace {

const test::ToyShapes kToy;
const TensorDesc kF23{DType::kF32, {2, 3}};

Attributes attrs_int(const std::string& k, int64_t v) {
  Attributes a;
  a.set(k, v);
  return a;
}

// The error of finish(); fails the test when finish() succeeds.
Status finish_error(const GraphBuilder& b) {
  Result<Graph> r = b.finish(kToy);
  REQUIRE_FALSE(r.is_ok());
  INFO(r.status().message());
  return r.status();
}

}  // namespace

TEST_CASE("builder: a valid graph is built in topological order with consumers and outputs") {
  GraphBuilder b("m.graphi");
  b.add_input("x", kF23);
  b.add_constant("w", Tensor(kF23));
  // Declared consumer-first: finish() must reorder.
  b.add_node("Same", "second", {"a", "w"}, {"b"});
  b.add_node("Same", "first", {"x", "w"}, {"a"});
  b.add_node("Pick", "third", {"", "b"}, {"c"});
  b.add_output("c");
  b.add_output("a");
  b.set_metadata("producer", "test");
  Result<Graph> r = b.finish(kToy);
  REQUIRE(r.is_ok());
  const Graph& g = *r;
  REQUIRE(g.num_nodes() == 3);
  CHECK(g.node(0).name == "first");
  CHECK(g.node(1).name == "second");
  CHECK(g.node(2).name == "third");
  CHECK(g.node(2).inputs[0] == kNoId);
  CHECK(g.source() == "m.graphi");
  CHECK(g.metadata().at("producer") == "test");
  REQUIRE(g.outputs().size() == 2);
  CHECK(g.value(g.outputs()[0]).name == "c");
  CHECK(g.value(g.outputs()[1]).name == "a");
  ValueId a = *g.find_value("a");
  CHECK(g.value(a).is_output);
  CHECK(g.value(a).producer == 0);
  CHECK(g.value(a).desc == kF23);
  ValueId w = *g.find_value("w");
  CHECK(g.value(w).kind == ValueKind::kConstant);
  REQUIRE(g.consumers(w).size() == 2);
  CHECK(g.consumers(w)[0] == 0);
  CHECK(g.consumers(w)[1] == 1);
  REQUIRE(g.inputs().size() == 1);
  CHECK(g.value(g.inputs()[0]).name == "x");
  CHECK_FALSE(g.find_value("nope").has_value());
}

TEST_CASE("builder: duplicate value name between two graph inputs") {
  GraphBuilder b("m.graphi");
  b.add_input("x", kF23);
  b.add_input("x", kF23);
  b.add_output("x");
  Status s = finish_error(b);
  CHECK(s.code() == StatusCode::kInvalidGraph);
  CHECK_THAT(s.message(), Catch::StartsWith("m.graphi: duplicate value name 'x'"));
  CHECK_THAT(s.message(), Catch::Contains("graph input 'x'"));
}

TEST_CASE("builder: duplicate value name between a node output and a constant") {
  GraphBuilder b("m.graphi");
  b.add_input("x", kF23);
  b.add_constant("w", Tensor(kF23));
  b.add_node("Same", "n1", {"x"}, {"w"});
  b.add_output("w");
  Status s = finish_error(b);
  CHECK_THAT(s.message(), Catch::Contains("duplicate value name 'w'"));
  CHECK_THAT(s.message(), Catch::Contains("node 'n1' (Same)"));
  CHECK_THAT(s.message(), Catch::Contains("constant 'w'"));
}

TEST_CASE("builder: duplicate value name produced by two nodes") {
  GraphBuilder b("m.graphi");
  b.add_input("x", kF23);
  b.add_node("Same", "n1", {"x"}, {"y"});
  b.add_node("Same", "n2", {"x"}, {"y"});
  b.add_output("y");
  Status s = finish_error(b);
  CHECK_THAT(s.message(), Catch::Contains("duplicate value name 'y'"));
  CHECK_THAT(s.message(), Catch::Contains("'n1'"));
  CHECK_THAT(s.message(), Catch::Contains("'n2'"));
}

TEST_CASE("builder: duplicate node name") {
  GraphBuilder b("m.graphi");
  b.add_input("x", kF23);
  b.add_node("Same", "n1", {"x"}, {"y"});
  b.add_node("Same", "n1", {"y"}, {"z"});
  b.add_output("z");
  Status s = finish_error(b);
  CHECK(s.message() == "m.graphi: duplicate node name 'n1'");
}

TEST_CASE("builder: empty names and empty op types are rejected") {
  SECTION("input") {
    GraphBuilder b("m.graphi");
    b.add_input("", kF23);
    CHECK_THAT(finish_error(b).message(), Catch::Contains("a graph input has an empty name"));
  }
  SECTION("node") {
    GraphBuilder b("m.graphi");
    b.add_input("x", kF23);
    b.add_node("Same", "", {"x"}, {"y"});
    b.add_output("y");
    CHECK_THAT(finish_error(b).message(), Catch::Contains("a node of type Same has an empty name"));
  }
  SECTION("op") {
    GraphBuilder b("m.graphi");
    b.add_input("x", kF23);
    b.add_node("", "n1", {"x"}, {"y"});
    b.add_output("y");
    CHECK_THAT(finish_error(b).message(), Catch::Contains("node 'n1' has an empty op type"));
  }
  SECTION("output value") {
    GraphBuilder b("m.graphi");
    b.add_input("x", kF23);
    b.add_node("Same", "n1", {"x"}, {""});
    b.add_output("x");
    CHECK_THAT(finish_error(b).message(),
               Catch::Contains("node 'n1' (Same): an output has an empty name"));
  }
}

TEST_CASE("builder: a node without outputs is rejected") {
  GraphBuilder b("m.graphi");
  b.add_input("x", kF23);
  b.add_node("Same", "sink", {"x"}, {});
  b.add_output("x");
  CHECK(finish_error(b).message() == "m.graphi: node 'sink' (Same): has no outputs");
}

TEST_CASE("builder: a constant without data is rejected") {
  GraphBuilder b("m.graphi");
  b.add_constant("w", std::shared_ptr<const Tensor>());
  b.add_output("w");
  CHECK(finish_error(b).message() == "m.graphi: constant 'w' has no data");
}

TEST_CASE("builder: a value used but never produced names the node, the input slot and the value") {
  GraphBuilder b("m.graphi");
  b.add_input("x", kF23);
  b.add_node("Same", "gates", {"x", "h_prev"}, {"y"});
  b.add_output("y");
  Status s = finish_error(b);
  CHECK(s.code() == StatusCode::kInvalidGraph);
  CHECK(s.message() ==
        "m.graphi: node 'gates' (Same): input 1 'h_prev' is used but never produced");
}

TEST_CASE("builder: a graph output that is never produced") {
  GraphBuilder b("m.graphi");
  b.add_input("x", kF23);
  b.add_node("Same", "n1", {"x"}, {"y"});
  b.add_output("yy");
  CHECK(finish_error(b).message() == "m.graphi: graph output 'yy' is never produced");
}

TEST_CASE("builder: a graph output listed twice") {
  GraphBuilder b("m.graphi");
  b.add_input("x", kF23);
  b.add_node("Same", "n1", {"x"}, {"y"});
  b.add_output("y");
  b.add_output("y");
  CHECK(finish_error(b).message() == "m.graphi: graph output 'y' is listed twice");
}

TEST_CASE("builder: a graph without outputs is rejected") {
  GraphBuilder b("m.graphi");
  b.add_input("x", kF23);
  b.add_node("Same", "n1", {"x"}, {"y"});
  CHECK(finish_error(b).message() == "m.graphi: the graph declares no outputs");
}

TEST_CASE("builder: a cycle names every node on it, in order") {
  // in -> a -> b -> c -> a (cycle a, b, c), plus d hanging off c; d is not on the cycle.
  GraphBuilder b("m.graphi");
  b.add_input("x", kF23);
  b.add_node("Same", "d", {"vc"}, {"vd"});
  b.add_node("Same", "a", {"x", "vc"}, {"va"});
  b.add_node("Same", "b", {"va"}, {"vb"});
  b.add_node("Same", "c", {"vb"}, {"vc"});
  b.add_output("vd");
  Status s = finish_error(b);
  CHECK(s.code() == StatusCode::kInvalidGraph);
  const std::string& m = s.message();
  CHECK_THAT(m, Catch::StartsWith("m.graphi: the graph has a cycle through nodes "));
  // The cycle may start at any of its nodes, but must follow producer -> consumer order.
  bool ok = m.find("'a' -> 'b' -> 'c' -> 'a'") != std::string::npos ||
            m.find("'b' -> 'c' -> 'a' -> 'b'") != std::string::npos ||
            m.find("'c' -> 'a' -> 'b' -> 'c'") != std::string::npos;
  CHECK(ok);
  CHECK(m.find("'d'") == std::string::npos);
}

TEST_CASE("builder: a node that consumes its own output is a cycle of one") {
  GraphBuilder b("m.graphi");
  b.add_input("x", kF23);
  b.add_node("Same", "loop", {"x", "y"}, {"y"});
  b.add_output("y");
  CHECK(finish_error(b).message() ==
        "m.graphi: the graph has a cycle through nodes 'loop' -> 'loop'");
}

TEST_CASE("builder: an unknown op names the source, the node and the op") {
  GraphBuilder b("m.graphi");
  b.add_input("x", kF23);
  b.add_node("Frobnicate", "f1", {"x"}, {"y"});
  b.add_output("y");
  Status s = finish_error(b);
  CHECK(s.code() == StatusCode::kUnsupported);
  // ToyShapes returns the bare reason; finish() adds "<source>: node '...' (Op)".
  CHECK(s.message() == "m.graphi: node 'f1' (Frobnicate): unknown op type 'Frobnicate'");
}

TEST_CASE("builder: a shape rule's error keeps its own prefix and is not prefixed twice") {
  GraphBuilder b("m.graphi");
  b.add_input("x", kF23);
  b.add_input("z", TensorDesc{DType::kI32, {4, 5}});
  b.add_node("Same", "add", {"x", "z"}, {"y"});
  b.add_output("y");
  Status s = finish_error(b);
  CHECK(s.message() ==
        "m.graphi: node 'add' (Same): input 1 is int32[4, 5] but input 0 is float32[2, 3]");
}

TEST_CASE("builder: a missing required attribute names the node and the attribute") {
  GraphBuilder b("m.graphi");
  b.add_input("x", kF23);
  b.add_node("Scale", "s1", {"x"}, {"y"});
  b.add_output("y");
  Status s = finish_error(b);
  CHECK(s.code() == StatusCode::kInvalidGraph);
  CHECK(s.message() == "m.graphi: node 's1' (Scale): missing required attribute 'axis' (an int)");
}

TEST_CASE("builder: an ill-typed attribute names the node, the attribute and both types") {
  GraphBuilder b("m.graphi");
  b.add_input("x", kF23);
  Attributes a;
  a.set("axis", std::vector<double>{1.0, 2.0});
  b.add_node("Scale", "s1", {"x"}, {"y"}, a);
  b.add_output("y");
  CHECK(finish_error(b).message() ==
        "m.graphi: node 's1' (Scale): attribute 'axis' must be an int, got floats");
}

TEST_CASE("builder: a node with more outputs than its op produces") {
  GraphBuilder b("m.graphi");
  b.add_input("x", kF23);
  b.add_node("Same", "n1", {"x"}, {"y", "y2"});
  b.add_output("y");
  CHECK(finish_error(b).message() ==
        "m.graphi: node 'n1' (Same): has 2 outputs, the op produces 1");
}

TEST_CASE("builder: a declared desc that differs from the inferred one says both") {
  GraphBuilder b("m.graphi");
  b.add_input("x", kF23);
  b.add_node("Same", "n1", {"x"}, {"y"});
  b.add_output("y");
  b.declare("y", TensorDesc{DType::kF32, {3, 2}});
  CHECK(finish_error(b).message() ==
        "m.graphi: node 'n1' (Same): output 'y' is declared as float32[3, 2] but the op produces "
        "float32[2, 3]");
}

TEST_CASE("builder: a declared desc of a graph input that differs from the input") {
  GraphBuilder b("m.graphi");
  b.add_input("x", kF23);
  b.add_output("x");
  b.declare("x", TensorDesc{DType::kI64, {2, 3}});
  CHECK(finish_error(b).message() ==
        "m.graphi: value 'x' is declared as int64[2, 3] but is float32[2, 3]");
}

TEST_CASE("builder: a declared desc of a value that does not exist") {
  GraphBuilder b("m.graphi");
  b.add_input("x", kF23);
  b.add_output("x");
  b.declare("ghost", kF23);
  CHECK(finish_error(b).message() == "m.graphi: declared value 'ghost' does not exist");
}

TEST_CASE("builder: matching declared descs are accepted") {
  GraphBuilder b("m.graphi");
  b.add_input("x", kF23);
  b.add_node("Same", "n1", {"x"}, {"y"});
  b.add_output("y");
  b.declare("y", kF23);
  b.declare("x", kF23);
  CHECK(b.finish(kToy).is_ok());
}

TEST_CASE("builder: an empty batch (zero-sized dim) in a graph input is rejected") {
  GraphBuilder b("m.graphi");
  b.add_input("x", TensorDesc{DType::kF32, {0, 3}});
  b.add_node("Same", "n1", {"x"}, {"y"});
  b.add_output("y");
  Status s = finish_error(b);
  CHECK(s.code() == StatusCode::kInvalidGraph);
  CHECK_THAT(s.message(), Catch::StartsWith("m.graphi: graph input 'x' has shape [0, 3]"));
  CHECK_THAT(s.message(), Catch::Contains("empty batch"));
}

TEST_CASE("builder: a zero-sized constant is rejected") {
  GraphBuilder b("m.graphi");
  b.add_constant("w", Tensor(TensorDesc{DType::kF32, {4, 0}}));
  b.add_output("w");
  CHECK_THAT(finish_error(b).message(),
             Catch::StartsWith("m.graphi: constant 'w' has shape [4, 0]"));
}

TEST_CASE("builder: an op that infers a zero-sized output is rejected, naming node and output") {
  GraphBuilder b("m.graphi");
  b.add_input("x", kF23);
  b.add_node("Rows", "r1", {"x"}, {"y"}, attrs_int("rows", 0));
  b.add_output("y");
  CHECK_THAT(finish_error(b).message(),
             Catch::StartsWith("m.graphi: node 'r1' (Rows): output 0 'y' has shape [0, 3]"));
}

TEST_CASE("builder: from_graph rebuilds an identical graph") {
  GraphBuilder b("m.graphi");
  b.add_input("x", kF23);
  b.add_constant("w", Tensor(kF23));
  b.add_node("Same", "n1", {"x", "w"}, {"y", "y2"}, attrs_int("outputs", 2));
  b.add_node("Pick", "n2", {"", "y2"}, {"z"});
  b.add_output("z");
  b.add_output("y");
  b.set_metadata("k", "v");
  Graph g = value_or_throw(b.finish(kToy));
  Graph h = value_or_throw(GraphBuilder::from_graph(g).finish(kToy));
  REQUIRE(h.num_values() == g.num_values());
  REQUIRE(h.num_nodes() == g.num_nodes());
  for (ValueId v = 0; v < g.num_values(); ++v) {
    CHECK(h.value(v).name == g.value(v).name);
    CHECK(h.value(v).desc == g.value(v).desc);
    CHECK(h.value(v).kind == g.value(v).kind);
    CHECK(h.value(v).producer == g.value(v).producer);
    CHECK(h.value(v).is_output == g.value(v).is_output);
    CHECK(h.value(v).data == g.value(v).data);  // shared, not copied
  }
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    CHECK(h.node(n).name == g.node(n).name);
    CHECK(h.node(n).op == g.node(n).op);
    CHECK(h.node(n).inputs == g.node(n).inputs);
    CHECK(h.node(n).outputs == g.node(n).outputs);
    CHECK(h.node(n).attrs == g.node(n).attrs);
  }
  CHECK(h.metadata() == g.metadata());
  CHECK(h.source() == g.source());
}

// ------------------------------------------------------------------------------------------
// Errors raised by the real op shape rules through finish(): they carry the source and node.

namespace {

Status registry_error(const GraphBuilder& b) {
  Result<Graph> r = b.finish(ops::Registry::get());
  REQUIRE_FALSE(r.is_ok());
  INFO(r.status().message());
  return r.status();
}

}  // namespace

TEST_CASE("builder (registry): an unknown op names the node and lists the supported ops") {
  GraphBuilder b("m.graphi");
  b.add_input("x", kF23);
  b.add_node("Frobnicate", "f1", {"x"}, {"y"});
  b.add_output("y");
  Status s = registry_error(b);
  CHECK(s.code() == StatusCode::kUnsupported);
  CHECK_THAT(s.message(),
             Catch::StartsWith(
                 "m.graphi: node 'f1' (Frobnicate): unknown op type 'Frobnicate' (supported: "));
  CHECK_THAT(s.message(), Catch::Contains("MatMul"));
  CHECK_THAT(s.message(), Catch::Contains("Sigmoid"));
}

TEST_CASE("builder (registry): a shape mismatch in Add says both shapes") {
  GraphBuilder b("m.graphi");
  b.add_input("x", kF23);
  b.add_input("z", TensorDesc{DType::kF32, {4, 5}});
  b.add_node("Add", "gates", {"x", "z"}, {"y"});
  b.add_output("y");
  Status s = registry_error(b);
  CHECK(s.code() == StatusCode::kInvalidGraph);
  CHECK_THAT(s.message(), Catch::StartsWith("m.graphi: node 'gates' (Add): "));
  CHECK_THAT(s.message(), Catch::Contains("[2, 3]"));
  CHECK_THAT(s.message(), Catch::Contains("[4, 5]"));
}

TEST_CASE("builder (registry): a MatMul inner-dimension mismatch says both shapes") {
  GraphBuilder b("m.graphi");
  b.add_input("x", kF23);
  b.add_constant("w", Tensor(TensorDesc{DType::kF32, {4, 5}}));
  b.add_node("MatMul", "xw", {"x", "w"}, {"y"});
  b.add_output("y");
  Status s = registry_error(b);
  CHECK_THAT(s.message(), Catch::StartsWith("m.graphi: node 'xw' (MatMul): "));
  CHECK_THAT(s.message(), Catch::Contains("float32[2, 3]"));
  CHECK_THAT(s.message(), Catch::Contains("float32[4, 5]"));
}

TEST_CASE("builder (registry): a dtype mismatch names the input and both descs") {
  SECTION("MatMul with an int32 operand") {
    GraphBuilder b("m.graphi");
    b.add_input("x", kF23);
    b.add_input("w", TensorDesc{DType::kI32, {3, 4}});
    b.add_node("MatMul", "xw", {"x", "w"}, {"y"});
    b.add_output("y");
    Status s = registry_error(b);
    CHECK_THAT(s.message(), Catch::StartsWith("m.graphi: node 'xw' (MatMul): "));
    CHECK_THAT(s.message(), Catch::Contains("int32[3, 4]"));
  }
  SECTION("Concat of float32 and int64") {
    GraphBuilder b("m.graphi");
    b.add_input("x", kF23);
    b.add_input("i", TensorDesc{DType::kI64, {2, 3}});
    Attributes a;
    a.set("axis", int64_t{0});
    b.add_node("Concat", "cat", {"x", "i"}, {"y"}, a);
    b.add_output("y");
    Status s = registry_error(b);
    CHECK_THAT(s.message(), Catch::StartsWith("m.graphi: node 'cat' (Concat): "));
    CHECK_THAT(s.message(), Catch::Contains("int64[2, 3]"));
    CHECK_THAT(s.message(), Catch::Contains("float32[2, 3]"));
  }
}

TEST_CASE("builder (registry): Concat without its required axis attribute") {
  GraphBuilder b("m.graphi");
  b.add_input("x", kF23);
  b.add_node("Concat", "cat", {"x", "x"}, {"y"});
  b.add_output("y");
  CHECK(registry_error(b).message() ==
        "m.graphi: node 'cat' (Concat): missing required attribute 'axis' (an int)");
}

TEST_CASE("builder (registry): Concat with an ill-typed axis attribute") {
  GraphBuilder b("m.graphi");
  b.add_input("x", kF23);
  Attributes a;
  a.set("axis", std::string("1"));
  b.add_node("Concat", "cat", {"x", "x"}, {"y"}, a);
  b.add_output("y");
  CHECK(registry_error(b).message() ==
        "m.graphi: node 'cat' (Concat): attribute 'axis' must be an int, got string");
}

TEST_CASE("builder (registry): a valid small cell infers every shape") {
  GraphBuilder b("m.graphi");
  b.add_input("x", TensorDesc{DType::kF32, {1, 4}});
  b.add_constant("W", Tensor(TensorDesc{DType::kF32, {4, 3}}));
  b.add_constant("b", Tensor(TensorDesc{DType::kF32, {3}}));
  b.add_node("MatMul", "xw", {"x", "W"}, {"xw"});
  b.add_node("Add", "xwb", {"xw", "b"}, {"xwb"});
  b.add_node("Sigmoid", "h", {"xwb"}, {"h"});
  Attributes a;
  a.set("axis", int64_t{1});
  b.add_node("Concat", "cat", {"h", "h"}, {"hh"}, a);
  b.add_output("hh");
  Result<Graph> r = b.finish(ops::Registry::get());
  REQUIRE(r.is_ok());
  CHECK(r->value(*r->find_value("xwb")).desc == TensorDesc{DType::kF32, {1, 3}});
  CHECK(r->value(*r->find_value("hh")).desc == TensorDesc{DType::kF32, {1, 6}});
}
