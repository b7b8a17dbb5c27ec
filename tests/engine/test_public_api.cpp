// The public embedding API (include/graphi/graphi.hpp, graphi.h, through libgraphi.so): outputs
// against PyTorch's (the ONNX fixtures' .npy files) and against the naive reference LSTM
// (tests/support/reference_rnn) fed with the model's own weights; concurrent run() calls; every
// error path of both APIs (missing file, wrong names, shapes, dtypes, sizes, null pointers).
// Internal headers are used only to build the reference side.
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <map>
#include <set>
#include <thread>

#include "engine/session.h"
#include "graph/format.h"
#include "graph/npy.h"
#include "graphi/graphi.h"
#include "graphi/graphi.hpp"
#include "models/lstm.h"
#include "ops/registry.h"
#include "tests/support/reference_rnn.h"
#include "tests/support/test_util.h"

using Catch::Matchers::Contains;

namespace {

const std::string kOnnxDir = std::string(GRAPHI_SOURCE_DIR) + "/tests/data/onnx/";

graphi::Tensor npy(const std::string& name) {
  return graphi::value_or_throw(graphi::graph::read_npy(kOnnxDir + name));
}

graphi::Tensor to_tensor(const graphi::Array& a) {
  graphi::Tensor t(graphi::TensorDesc{a.dtype(), a.shape()});
  std::memcpy(t.data(), a.data(), t.bytes());
  return t;
}

graphi::Array view_of(const std::string& name, const graphi::Tensor& t) {
  return graphi::Array::view(name, t.dtype(), t.shape(), t.data());
}

graphi::Session open_ok(const std::string& path, const graphi::SessionOptions& o = {}) {
  auto s = graphi::Session::open(path, o);
  INFO(s.error().message);
  REQUIRE(s.ok());
  return std::move(s).value();
}

std::vector<graphi::SessionOptions> configs() {
  graphi::SessionOptions seq;  // explicitly the reference executor (the default is a plan)
  seq.executors = 1;
  seq.threads = 1;
  seq.scheduler = "sequential";
  graphi::SessionOptions cpf;
  cpf.executors = 2;
  cpf.scheduler = "cpf";
  cpf.pin = false;  // the test machine is shared; placement has its own tests
  graphi::SessionOptions fifo = cpf;
  fifo.executors = 1;
  fifo.threads = 2;
  fifo.scheduler = "fifo";
  return {seq, cpf, fifo};
}

}  // namespace

TEST_CASE("public api: mlp.onnx outputs equal PyTorch's, info and summaries", "[api]") {
  const graphi::Tensor x = npy("mlp.in0.npy"), want = npy("mlp.out0.npy");
  for (const graphi::SessionOptions& o : configs()) {
    graphi::Session s = open_ok(kOnnxDir + "mlp.onnx", o);
    REQUIRE(s.inputs().size() == 1);
    CHECK(s.inputs()[0].name == "x");
    CHECK(s.inputs()[0].dtype == graphi::DType::kF32);
    CHECK(s.inputs()[0].shape == std::vector<int64_t>{4, 16});
    REQUIRE(s.outputs().size() == 1);
    CHECK(s.outputs()[0].name == "probs");
    CHECK(s.outputs()[0].shape == std::vector<int64_t>{4, 10});
    CHECK_FALSE(s.config_summary().empty());
    CHECK(s.options().scheduler == o.scheduler);
    const graphi::Tensor x_before = x;
    auto out = s.run({view_of("x", x)});
    INFO(out.error().message);
    REQUIRE(out.ok());
    REQUIRE(out->size() == 1);
    CHECK((*out)[0].name() == "probs");
    CHECK((*out)[0].owns_data());
    CHECK(graphi::test::max_rel_error(to_tensor((*out)[0]), want) < 1e-5);
    CHECK(std::memcmp(x.data(), x_before.data(), x.bytes()) == 0);  // inputs only read
    // Owning inputs (copy_of) work the same; the outputs of a run outlive the next run.
    graphi::Array owned = graphi::Array::copy_of("x", graphi::DType::kF32, {4, 16}, x.data());
    auto out2 = s.run({owned});
    REQUIRE(out2.ok());
    CHECK(graphi::test::max_rel_error(to_tensor((*out2)[0]), want) < 1e-5);
    CHECK(graphi::test::max_rel_error(to_tensor((*out)[0]), want) < 1e-5);
  }
}

TEST_CASE("public api: unrolled LSTM cell .onnx equals PyTorch with and without the passes",
          "[api]") {
  const graphi::Tensor x = npy("lstm_cell_unrolled.in0.npy");
  const graphi::Tensor hs = npy("lstm_cell_unrolled.out0.npy"),
                       c = npy("lstm_cell_unrolled.out1.npy");
  for (bool optimize : {true, false}) {
    for (graphi::SessionOptions o : configs()) {
      o.optimize = optimize;
      graphi::Session s = open_ok(kOnnxDir + "lstm_cell_unrolled.onnx", o);
      if (optimize)
        CHECK_THAT(s.passes_summary(), Contains("LSTM"));
      else
        CHECK(s.passes_summary().empty());
      auto out = s.run({view_of(s.inputs()[0].name, x)});
      INFO(out.error().message);
      REQUIRE(out.ok());
      REQUIRE(out->size() == 2);
      CHECK(graphi::test::max_rel_error(to_tensor((*out)[0]), hs) < 1e-4);
      CHECK(graphi::test::max_rel_error(to_tensor((*out)[1]), c) < 1e-4);
    }
  }
}

TEST_CASE("public api: symbolic dims come from options.dims", "[api]") {
  const graphi::Tensor image = npy("cnn_dynamic_batch.in0.npy"),
                       want = npy("cnn_dynamic_batch.out0.npy");
  graphi::SessionOptions o;
  o.dims["n"] = image.shape()[0];
  graphi::Session s = open_ok(kOnnxDir + "cnn_dynamic_batch.onnx", o);
  CHECK(s.inputs()[0].shape[0] == image.shape()[0]);
  auto out = s.run({view_of("image", image)});
  REQUIRE(out.ok());
  CHECK(graphi::test::max_rel_error(to_tensor((*out)[0]), want) < 1e-4);

  auto missing = graphi::Session::open(kOnnxDir + "cnn_dynamic_batch.onnx");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == graphi::StatusCode::kInvalidArgument);
  CHECK_THAT(missing.error().message, Contains("'n'"));
  o.dims["n"] = 0;
  auto zero = graphi::Session::open(kOnnxDir + "cnn_dynamic_batch.onnx", o);
  REQUIRE_FALSE(zero.ok());
  CHECK(zero.error().code == graphi::StatusCode::kInvalidArgument);
}

TEST_CASE("public api: read_signature gives the declared dims without compiling", "[api]") {
  auto gru = graphi::read_signature(kOnnxDir + "gru_dynamic_batch.onnx");
  REQUIRE(gru.ok());
  CHECK(gru->dynamic);
  REQUIRE(gru->inputs.size() == 1);
  CHECK(gru->inputs[0].name == "x");
  CHECK(gru->inputs[0].shape == std::vector<int64_t>{5, -1, 8});
  CHECK(gru->inputs[0].dim_names == std::vector<std::string>{"", "batch", ""});
  REQUIRE(gru->outputs.size() == 2);
  CHECK(gru->outputs[1].shape == std::vector<int64_t>{1, -1, 16});

  auto mlp = graphi::read_signature(kOnnxDir + "mlp.onnx");  // static: what open() compiles
  REQUIRE(mlp.ok());
  CHECK_FALSE(mlp->dynamic);
  graphi::Session s = open_ok(kOnnxDir + "mlp.onnx");
  REQUIRE(mlp->inputs.size() == s.inputs().size());
  CHECK(mlp->inputs[0].shape == s.inputs()[0].shape);
  CHECK(mlp->outputs[0].shape == s.outputs()[0].shape);

  auto missing = graphi::read_signature(kOnnxDir + "no_such_model.onnx");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == graphi::StatusCode::kIoError);
  const std::string junk = (graphi::test::scratch_dir("api_signature") / "junk.onnx").string();
  std::ofstream(junk) << "not a model at all";
  auto bad = graphi::read_signature(junk);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message, Contains("junk.onnx"));
}

TEST_CASE("public api: a saved 2-layer LSTM model equals the naive reference and the engine",
          "[api]") {
  graphi::models::RnnSpec spec;
  spec.input = 6;
  spec.hidden = 8;
  spec.layers = 2;
  spec.batch = 3;
  spec.seq = 5;
  spec.seed = 7;
  const graphi::graph::Graph g =
      graphi::value_or_throw(graphi::models::build_lstm(spec, graphi::ops::Registry::get()));
  const std::string path = (graphi::test::scratch_dir("public_api_lstm") / "lstm.graphi").string();
  REQUIRE(graphi::graph::write_graphi(g, path).is_ok());

  using graphi::DType;
  using graphi::TensorDesc;
  const int64_t T = spec.seq, B = spec.batch, E = spec.input, H = spec.hidden, L = spec.layers;
  const graphi::Tensor x = graphi::test::random_tensor(TensorDesc{DType::kF32, {T, B, E}}, 11);
  const graphi::Tensor h0 = graphi::test::random_tensor(TensorDesc{DType::kF32, {L, B, H}}, 12);
  const graphi::Tensor c0 = graphi::test::random_tensor(TensorDesc{DType::kF32, {L, B, H}}, 13);

  // Reference: the naive ONNX LSTM layer by layer with the model's weights (x W layout ->
  // ONNX's [4H, in], bias folded into Wb, Rb = 0).
  graphi::Tensor y_ref(TensorDesc{DType::kF32, {T, B, H}});
  graphi::Tensor hn_ref(TensorDesc{DType::kF32, {L, B, H}}),
      cn_ref(TensorDesc{DType::kF32, {L, B, H}});
  graphi::Tensor layer_in = x;
  for (int64_t l = 0; l < L; ++l) {
    const auto& Wv = *g.value(*g.find_value("l" + std::to_string(l) + "/W")).data;
    const auto& Rv = *g.value(*g.find_value("l" + std::to_string(l) + "/R")).data;
    const auto& bv = *g.value(*g.find_value("l" + std::to_string(l) + "/b")).data;
    const int64_t in = Wv.shape()[0];
    graphi::Tensor W(TensorDesc{DType::kF32, {1, 4 * H, in}}),
        R(TensorDesc{DType::kF32, {1, 4 * H, H}});
    graphi::Tensor b(TensorDesc{DType::kF32, {1, 8 * H}});
    for (int64_t r = 0; r < 4 * H; ++r) {
      for (int64_t k = 0; k < in; ++k)
        W.data_as<float>()[r * in + k] = Wv.data_as<float>()[k * 4 * H + r];
      for (int64_t k = 0; k < H; ++k)
        R.data_as<float>()[r * H + k] = Rv.data_as<float>()[k * 4 * H + r];
      b.data_as<float>()[r] = bv.data_as<float>()[r];
    }
    graphi::Tensor ih(TensorDesc{DType::kF32, {1, B, H}}), ic(TensorDesc{DType::kF32, {1, B, H}});
    std::memcpy(ih.data(), h0.data_as<float>() + l * B * H, ih.bytes());
    std::memcpy(ic.data(), c0.data_as<float>() + l * B * H, ic.bytes());
    graphi::test::RnnRefSpec rs;
    rs.op = "LSTM";
    rs.hidden = H;
    graphi::test::RnnRefInputs ri;
    ri.x = &layer_in;
    ri.w = &W;
    ri.r = &R;
    ri.b = &b;
    ri.initial_h = &ih;
    ri.initial_c = &ic;
    std::vector<graphi::Tensor> ref = graphi::test::reference_rnn(rs, ri);  // Y [T,1,B,H], Y_h, Y_c
    graphi::Tensor next(TensorDesc{DType::kF32, {T, B, H}});
    std::memcpy(next.data(), ref[0].data(), next.bytes());
    std::memcpy(hn_ref.data_as<float>() + l * B * H, ref[1].data(), ih.bytes());
    std::memcpy(cn_ref.data_as<float>() + l * B * H, ref[2].data(), ic.bytes());
    layer_in = std::move(next);
  }
  y_ref = layer_in;

  // The engine's sequential executor on the unoptimized graph, through the internal API.
  auto engine = graphi::value_or_throw(
      graphi::engine::Session::create(std::make_shared<const graphi::graph::Graph>(g)));
  graphi::engine::NamedTensors eng =
      graphi::value_or_throw(engine->run({{"x", x}, {"h0", h0}, {"c0", c0}}));
  REQUIRE(eng.size() == 3);
  CHECK(graphi::test::max_rel_error(eng[0].second, y_ref) < 1e-4);  // the reference is sound

  for (bool optimize : {true, false}) {
    for (graphi::SessionOptions o : configs()) {
      o.optimize = optimize;
      graphi::Session s = open_ok(path, o);
      auto out = s.run({view_of("c0", c0), view_of("x", x), view_of("h0", h0)});  // any order
      INFO(out.error().message);
      REQUIRE(out.ok());
      REQUIRE(out->size() == 3);
      CHECK((*out)[0].name() == "y");
      CHECK((*out)[1].name() == "h_n");
      CHECK((*out)[2].name() == "c_n");
      CHECK(graphi::test::max_rel_error(to_tensor((*out)[0]), y_ref) < 1e-4);
      CHECK(graphi::test::max_rel_error(to_tensor((*out)[1]), hn_ref) < 1e-4);
      CHECK(graphi::test::max_rel_error(to_tensor((*out)[2]), cn_ref) < 1e-4);
      for (int i = 0; i < 3; ++i)
        CHECK(graphi::test::max_rel_error(to_tensor((*out)[i]), eng[i].second) < 1e-4);
    }
  }
}

TEST_CASE("public api: concurrent run() calls each get their own outputs", "[api]") {
  graphi::SessionOptions o;
  o.executors = 2;
  o.scheduler = "cpf";
  o.pin = false;
  graphi::Session s = open_ok(kOnnxDir + "mlp.onnx", o);
  graphi::Session ref = open_ok(kOnnxDir + "mlp.onnx");  // sequential
  constexpr int kThreads = 4, kRuns = 10;
  std::vector<graphi::Tensor> inputs, want;
  for (int i = 0; i < kThreads * kRuns; ++i) {
    inputs.push_back(
        graphi::test::random_tensor(graphi::TensorDesc{graphi::DType::kF32, {4, 16}}, 100 + i));
    want.push_back(to_tensor(ref.run({view_of("x", inputs.back())}).value()[0]));
  }
  std::vector<double> err(inputs.size(), -1);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRuns; ++r) {
        const int i = t * kRuns + r;
        auto out = s.run({view_of("x", inputs[i])});
        err[i] = out.ok() ? graphi::test::max_rel_error(to_tensor((*out)[0]), want[i]) : 1e9;
      }
    });
  for (auto& th : threads) th.join();
  for (double e : err) CHECK(e < 1e-5);
}

TEST_CASE("public api: errors come back as values naming the problem", "[api]") {
  auto missing = graphi::Session::open("/nonexistent/model.onnx");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == graphi::StatusCode::kIoError);
  CHECK_THAT(missing.error().message, Contains("/nonexistent/model.onnx"));
  CHECK_THROWS_AS(missing.value(), std::logic_error);
  CHECK(graphi::Session::open("").error().code == graphi::StatusCode::kInvalidArgument);
  CHECK(graphi::Session::open(kOnnxDir).error().code ==
        graphi::StatusCode::kIoError);  // a directory

  graphi::SessionOptions bad;
  bad.scheduler = "no-such-policy";
  auto b = graphi::Session::open(kOnnxDir + "mlp.onnx", bad);
  REQUIRE_FALSE(b.ok());
  CHECK(b.error().code == graphi::StatusCode::kInvalidArgument);

  graphi::Session s = open_ok(kOnnxDir + "mlp.onnx");
  const graphi::Tensor x = npy("mlp.in0.npy");
  auto expect = [&](const std::vector<graphi::Array>& in, const std::string& needle) {
    auto r = s.run(in);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == graphi::StatusCode::kInvalidArgument);
    CHECK_THAT(r.error().message, Contains(needle));
  };
  expect({graphi::Array::view("y", graphi::DType::kF32, {4, 16}, x.data())}, "y");  // unknown name
  expect({}, "x");                                                                  // missing input
  expect({view_of("x", x), view_of("x", x)}, "x");                                  // duplicated
  expect({graphi::Array::view("x", graphi::DType::kF32, {16, 4}, x.data())},
         "[16, 4]");  // wrong shape
  expect({graphi::Array::view("x", graphi::DType::kI32, {4, 16}, x.data())},
         "int32");                                                                    // wrong dtype
  expect({graphi::Array::view("x", graphi::DType::kF32, {4, 16}, nullptr)}, "null");  // null data
  expect({graphi::Array::view("x", static_cast<graphi::DType>(9), {4, 16}, x.data())},
         "dtype");  // bad dtype
  expect({graphi::Array::view("x", graphi::DType::kF32, {-4, 16}, x.data())}, "negative");
  // The session stays usable after failed runs.
  auto ok = s.run({view_of("x", x)});
  REQUIRE(ok.ok());
  CHECK(graphi::test::max_rel_error(to_tensor((*ok)[0]), npy("mlp.out0.npy")) < 1e-5);
  // A moved-from session reports an error instead of crashing.
  graphi::Session moved = std::move(s);
  CHECK(s.run({view_of("x", x)}).error().code == graphi::StatusCode::kInvalidArgument);  // NOLINT
  CHECK(s.inputs().empty());
  CHECK(moved.run({view_of("x", x)}).ok());
}

TEST_CASE("c api: run and run_into equal PyTorch, ownership and sizes", "[api]") {
  const graphi::Tensor x = npy("mlp.in0.npy"), want = npy("mlp.out0.npy");
  graphi_options o;
  graphi_options_init(&o);
  o.executors = 2;
  o.scheduler = "cpf";
  o.pin = 0;
  graphi_session* s = reinterpret_cast<graphi_session*>(1);
  REQUIRE(graphi_session_open((kOnnxDir + "mlp.onnx").c_str(), &o, &s) == GRAPHI_OK);
  REQUIRE(s != nullptr);
  REQUIRE(graphi_session_num_inputs(s) == 1);
  REQUIRE(graphi_session_num_outputs(s) == 1);
  graphi_tensor info;
  REQUIRE(graphi_session_input(s, 0, &info) == GRAPHI_OK);
  CHECK(std::string(info.name) == "x");
  CHECK(info.dtype == GRAPHI_F32);
  CHECK(info.rank == 2);
  CHECK(info.shape[0] == 4);
  CHECK(info.shape[1] == 16);
  CHECK(info.bytes == 4 * 16 * 4);
  REQUIRE(graphi_session_output(s, 0, &info) == GRAPHI_OK);
  CHECK(std::string(info.name) == "probs");
  CHECK(info.bytes == 4 * 10 * 4);
  CHECK_THAT(graphi_session_config_summary(s), Contains("cpf"));
  for (int optimize : {1, 0}) {  // the passes fuse the unrolled cell unless optimize = 0
    graphi_options lo;
    graphi_options_init(&lo);
    lo.optimize = optimize;
    graphi_session* ls = nullptr;
    REQUIRE(graphi_session_open((kOnnxDir + "lstm_cell_unrolled.onnx").c_str(), &lo, &ls) ==
            GRAPHI_OK);
    if (optimize)
      CHECK_THAT(graphi_session_passes_summary(ls), Contains("LSTM"));
    else
      CHECK(std::string(graphi_session_passes_summary(ls)).empty());
    graphi_session_free(ls);
  }
  CHECK(std::string(graphi_session_passes_summary(nullptr)).empty());

  const int64_t shape[] = {4, 16};
  graphi_tensor in{"x", GRAPHI_F32, 2, shape, x.data(), x.bytes()};
  graphi_outputs* outs = nullptr;
  REQUIRE(graphi_session_run(s, &in, 1, &outs) == GRAPHI_OK);
  REQUIRE(graphi_outputs_count(outs) == 1);
  graphi_tensor y;
  REQUIRE(graphi_outputs_get(outs, 0, &y) == GRAPHI_OK);
  CHECK(std::string(y.name) == "probs");
  REQUIRE(y.bytes == want.bytes());
  graphi::Tensor got(want.desc());
  std::memcpy(got.data(), y.data, y.bytes);
  CHECK(graphi::test::max_rel_error(got, want) < 1e-5);
  CHECK(graphi_outputs_get(outs, 1, &y) == GRAPHI_INVALID_ARGUMENT);
  CHECK_THAT(graphi_last_error(), Contains("out of range"));
  graphi_outputs_free(outs);

  std::vector<float> buf(40, -7.0f);
  graphi_buffer bb{buf.data(), buf.size() * sizeof(float), 0};
  REQUIRE(graphi_session_run_into(s, &in, 1, &bb, 1) == GRAPHI_OK);
  CHECK(bb.bytes_written == want.bytes());
  std::memcpy(got.data(), buf.data(), got.bytes());
  CHECK(graphi::test::max_rel_error(got, want) < 1e-5);

  // Too small: an error naming the output and the size needed; nothing written.
  std::fill(buf.begin(), buf.end(), -7.0f);
  graphi_buffer small{buf.data(), 39 * sizeof(float), 0};
  CHECK(graphi_session_run_into(s, &in, 1, &small, 1) == GRAPHI_INVALID_ARGUMENT);
  CHECK_THAT(graphi_last_error(), Contains("probs") && Contains("160"));
  CHECK(buf[0] == -7.0f);
  CHECK(small.bytes_written == 0);
  CHECK(graphi_session_run_into(s, &in, 1, &bb, 2) == GRAPHI_INVALID_ARGUMENT);  // wrong count
  CHECK(graphi_session_run_into(s, &in, 1, nullptr, 1) == GRAPHI_INVALID_ARGUMENT);
  graphi_buffer null_data{nullptr, 1000, 0};
  CHECK(graphi_session_run_into(s, &in, 1, &null_data, 1) == GRAPHI_INVALID_ARGUMENT);
  graphi_session_free(s);
}

TEST_CASE("c api: null pointers, wrong sizes and bad files give codes, not crashes", "[api]") {
  graphi_session* s = reinterpret_cast<graphi_session*>(1);
  CHECK(graphi_session_open("/nonexistent.graphi", nullptr, &s) == GRAPHI_IO_ERROR);
  CHECK(s == nullptr);
  CHECK_THAT(graphi_last_error(), Contains("/nonexistent.graphi"));
  CHECK(graphi_session_open(nullptr, nullptr, &s) == GRAPHI_INVALID_ARGUMENT);
  CHECK(graphi_session_open((kOnnxDir + "mlp.onnx").c_str(), nullptr, nullptr) ==
        GRAPHI_INVALID_ARGUMENT);
  // A file that is not a model.
  const std::string junk = (graphi::test::scratch_dir("c_api_junk") / "junk.onnx").string();
  {
    FILE* f = std::fopen(junk.c_str(), "wb");
    std::fputs("not a model", f);
    std::fclose(f);
  }
  const graphi_status st = graphi_session_open(junk.c_str(), nullptr, &s);
  CHECK(st != GRAPHI_OK);
  CHECK(s == nullptr);
  CHECK_THAT(graphi_last_error(), Contains("junk.onnx"));
  graphi_options o;
  graphi_options_init(&o);
  o.scheduler = "no-such-policy";
  CHECK(graphi_session_open((kOnnxDir + "mlp.onnx").c_str(), &o, &s) == GRAPHI_INVALID_ARGUMENT);
  CHECK_THAT(graphi_last_error(), Contains("no-such-policy"));
  graphi_options_init(&o);
  o.executors = -1;
  CHECK(graphi_session_open((kOnnxDir + "mlp.onnx").c_str(), &o, &s) == GRAPHI_INVALID_ARGUMENT);
  CHECK_THAT(graphi_last_error(), Contains("executors"));
  graphi_options_init(&o);
  o.num_dims = 1;  // names/values NULL
  CHECK(graphi_session_open((kOnnxDir + "mlp.onnx").c_str(), &o, &s) == GRAPHI_INVALID_ARGUMENT);
  graphi_options_init(nullptr);
  graphi_session_free(nullptr);
  graphi_outputs_free(nullptr);
  CHECK(graphi_session_num_inputs(nullptr) == 0);
  CHECK(graphi_outputs_count(nullptr) == 0);
  CHECK(std::string(graphi_session_config_summary(nullptr)).empty());
  CHECK(std::string(graphi_dtype_name(GRAPHI_I64)) == "int64");
  CHECK(graphi_dtype_size(42) == 0);
  graphi_tensor info;
  CHECK(graphi_session_input(nullptr, 0, &info) == GRAPHI_INVALID_ARGUMENT);

  REQUIRE(graphi_session_open((kOnnxDir + "mlp.onnx").c_str(), nullptr, &s) == GRAPHI_OK);
  CHECK(graphi_session_input(s, 0, nullptr) == GRAPHI_INVALID_ARGUMENT);
  CHECK(graphi_session_output(s, 5, &info) == GRAPHI_INVALID_ARGUMENT);
  std::vector<float> x(64, 0.5f);
  const int64_t shape[] = {4, 16};
  graphi_outputs* outs = reinterpret_cast<graphi_outputs*>(1);
  auto run_code = [&](graphi_tensor in) {
    outs = reinterpret_cast<graphi_outputs*>(1);
    const graphi_status c = graphi_session_run(s, &in, 1, &outs);
    CHECK(outs == nullptr);
    return c;
  };
  CHECK(run_code({"x", GRAPHI_F32, 2, shape, x.data(), 63 * 4}) ==
        GRAPHI_INVALID_ARGUMENT);  // bytes
  CHECK_THAT(graphi_last_error(), Contains("252") && Contains("256"));
  CHECK(run_code({"x", GRAPHI_F32, 2, shape, nullptr, 256}) == GRAPHI_INVALID_ARGUMENT);
  CHECK(run_code({nullptr, GRAPHI_F32, 2, shape, x.data(), 256}) == GRAPHI_INVALID_ARGUMENT);
  CHECK(run_code({"x", GRAPHI_F32, 2, nullptr, x.data(), 256}) == GRAPHI_INVALID_ARGUMENT);
  CHECK(run_code({"x", 17, 2, shape, x.data(), 256}) == GRAPHI_INVALID_ARGUMENT);
  CHECK(run_code({"x", GRAPHI_I32, 2, shape, x.data(), 256}) == GRAPHI_INVALID_ARGUMENT);  // dtype
  CHECK_THAT(graphi_last_error(), Contains("int32"));
  CHECK(run_code({"z", GRAPHI_F32, 2, shape, x.data(), 256}) == GRAPHI_INVALID_ARGUMENT);  // name
  CHECK_THAT(graphi_last_error(), Contains("z"));
  const int64_t wrong[] = {8, 8};
  CHECK(run_code({"x", GRAPHI_F32, 2, wrong, x.data(), 256}) == GRAPHI_INVALID_ARGUMENT);  // shape
  CHECK_THAT(graphi_last_error(), Contains("[8, 8]"));
  CHECK(graphi_session_run(s, nullptr, 1, &outs) == GRAPHI_INVALID_ARGUMENT);
  CHECK(graphi_session_run(s, nullptr, 0, nullptr) == GRAPHI_INVALID_ARGUMENT);
  CHECK(graphi_session_run(nullptr, nullptr, 0, &outs) == GRAPHI_INVALID_ARGUMENT);
  graphi_tensor ok_in{"x", GRAPHI_F32, 2, shape, x.data(), 256};
  REQUIRE(graphi_session_run(s, &ok_in, 1, &outs) == GRAPHI_OK);  // still usable
  graphi_outputs_free(outs);
  graphi_session_free(s);
}

TEST_CASE("c api: the split comes from a plan unless the options give one", "[api]") {
  const std::filesystem::path cache = graphi::test::scratch_dir("c_api_plan");
  setenv("GRAPHI_CACHE_DIR", cache.c_str(), 1);  // no plan cached: the quick choice
  const std::string mlp = kOnnxDir + "mlp.onnx";
  graphi_options o;
  graphi_options_init(&o);
  CHECK(o.executors == 0);
  CHECK(o.threads == 0);
  CHECK(o.scheduler == nullptr);
  graphi_session* s = nullptr;
  REQUIRE(graphi_session_open(mlp.c_str(), &o, &s) == GRAPHI_OK);
  CHECK_THAT(graphi_session_plan_summary(s), Contains("graphi: plan auto: "));
  graphi_session_free(s);
  // "none": the 1x1 sequential reference executor, as before plans existed.
  REQUIRE(graphi_session_open_with_plan(mlp.c_str(), &o, "none", &s) == GRAPHI_OK);
  CHECK_THAT(graphi_session_config_summary(s), Contains("sequential 1x1"));
  CHECK(std::string(graphi_session_plan_summary(s)).empty());
  graphi_session_free(s);
  // Explicit split: no plan involved.
  o.threads = 2;
  REQUIRE(graphi_session_open(mlp.c_str(), &o, &s) == GRAPHI_OK);
  CHECK_THAT(graphi_session_config_summary(s), Contains("1x2"));
  CHECK(std::string(graphi_session_plan_summary(s)).empty());
  graphi_session_free(s);
  // A plan file that is not one: an error naming it.
  const std::string junk = (cache / "junk.plan.json").string();
  {
    FILE* f = std::fopen(junk.c_str(), "wb");
    std::fputs("{}", f);
    std::fclose(f);
  }
  graphi_options_init(&o);
  CHECK(graphi_session_open_with_plan(mlp.c_str(), &o, junk.c_str(), &s) ==
        GRAPHI_INVALID_ARGUMENT);
  CHECK(s == nullptr);
  CHECK_THAT(graphi_last_error(), Contains("junk.plan.json"));
  unsetenv("GRAPHI_CACHE_DIR");
}

TEST_CASE("public api: tracing writes a Chrome trace through the C++ and C APIs", "[api][trace]") {
  const graphi::Tensor x = npy("mlp.in0.npy");
  const std::filesystem::path dir = graphi::test::scratch_dir("api_trace");
  auto count_ops = [](const std::string& path) {
    std::ifstream f(path);
    nlohmann::json doc = nlohmann::json::parse(f);
    std::map<std::string, size_t> nodes;
    size_t events = 0;
    for (const auto& ev : doc["traceEvents"])
      if (ev["ph"] == "X" && ev["cat"] == "op") {
        ++events;
        ++nodes[ev["args"]["node"].get<std::string>()];
      }
    // Each node once, or once per slice where the batch runs in slices (batch_split_choice.h).
    REQUIRE_FALSE(nodes.empty());
    const size_t per_node = nodes.begin()->second;
    for (const auto& [node, n] : nodes) CHECK(n == per_node);
    CHECK(nodes.size() * per_node == events);
    return events;
  };
  for (const graphi::SessionOptions& o : configs()) {
    INFO(o.scheduler);
    graphi::Session s = open_ok(kOnnxDir + "mlp.onnx", o);
    const std::string path = (dir / ("cpp_" + o.scheduler + ".json")).string();
    auto none = s.write_trace(path);  // nothing traced yet
    REQUIRE(!none.ok());
    CHECK(none.error().code == graphi::StatusCode::kInvalidArgument);
    s.set_tracing(true);
    REQUIRE(s.run({view_of("x", x)}).ok());
    auto n = s.write_trace(path);
    INFO(n.error().message);
    REQUIRE(n.ok());
    CHECK(*n > 0);
    CHECK(count_ops(path) == *n);
    auto bad = s.write_trace((dir / "no/dir/t.json").string());
    REQUIRE(!bad.ok());
    CHECK(bad.error().code == graphi::StatusCode::kIoError);
    CHECK_THAT(bad.error().message, Contains("no/dir/t.json"));
  }

  graphi_session* s = nullptr;
  REQUIRE(graphi_session_open((kOnnxDir + "mlp.onnx").c_str(), nullptr, &s) == GRAPHI_OK);
  const std::string path = (dir / "c.json").string();
  CHECK(graphi_session_write_trace(s, path.c_str()) == GRAPHI_INVALID_ARGUMENT);
  CHECK_THAT(graphi_last_error(), Contains("no traced run"));
  REQUIRE(graphi_session_set_tracing(s, 1) == GRAPHI_OK);
  const int64_t shape[] = {4, 16};
  graphi_tensor in{"x", GRAPHI_F32, 2, shape, x.data(), x.bytes()};
  graphi_outputs* outs = nullptr;
  REQUIRE(graphi_session_run(s, &in, 1, &outs) == GRAPHI_OK);
  graphi_outputs_free(outs);
  REQUIRE(graphi_session_write_trace(s, path.c_str()) == GRAPHI_OK);
  CHECK(count_ops(path) > 0);
  CHECK(graphi_session_write_trace(s, nullptr) == GRAPHI_INVALID_ARGUMENT);
  CHECK(graphi_session_write_trace(nullptr, path.c_str()) == GRAPHI_INVALID_ARGUMENT);
  CHECK(graphi_session_set_tracing(nullptr, 1) == GRAPHI_INVALID_ARGUMENT);
  graphi_session_free(s);
}
