// models/lstm.h and models/gru.h: the unrolled graphs, run by engine::Session, against LSTM and
// GRU cells written here straight from the equations (plain loops in double precision). The
// reference reads the weights from the graph's constants by their documented names
// ("l{l}/W", "l{l}/R", "l{l}/b", GRU: "l{l}/R_zr", "l{l}/R_h" or "l{l}/R", "l{l}/Rb"); it
// shares no code with the builders.
#include <catch2/catch.hpp>
#include <cmath>
#include <memory>

#include "engine/session.h"
#include "models/gru.h"
#include "models/lstm.h"
#include "ops/registry.h"
#include "tests/support/test_util.h"

using namespace graphi;

namespace {

// A row-major matrix of doubles read from a constant of the graph.
struct Mat {
  int64_t rows = 0, cols = 0;
  std::vector<double> v;
  double operator()(int64_t r, int64_t c) const { return v[static_cast<size_t>(r * cols + c)]; }
};

Mat constant(const graph::Graph& g, const std::string& name) {
  auto id = g.find_value(name);
  REQUIRE(id.has_value());
  const graph::Value& val = g.value(*id);
  REQUIRE(val.kind == graph::ValueKind::kConstant);
  REQUIRE(val.desc.dtype == DType::kF32);
  Mat m;
  m.rows = val.desc.rank() == 2 ? val.desc.shape[0] : 1;
  m.cols = val.desc.shape.back();
  for (int64_t i = 0; i < val.desc.numel(); ++i) m.v.push_back(val.data->data_as<float>()[i]);
  return m;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// [T or L][B][H] as nested vectors.
using Seq = std::vector<std::vector<std::vector<double>>>;

Seq to_seq(const Tensor& t) {
  const auto& s = t.shape();
  Seq out(s[0], std::vector<std::vector<double>>(s[1], std::vector<double>(s[2])));
  for (int64_t a = 0; a < s[0]; ++a)
    for (int64_t b = 0; b < s[1]; ++b)
      for (int64_t c = 0; c < s[2]; ++c)
        out[a][b][c] = t.data_as<float>()[(a * s[1] + b) * s[2] + c];
  return out;
}

Tensor from_seq(const Seq& s) {
  Tensor t(TensorDesc{DType::kF32,
                      {static_cast<int64_t>(s.size()), static_cast<int64_t>(s[0].size()),
                       static_cast<int64_t>(s[0][0].size())}});
  float* p = t.data_as<float>();
  for (const auto& a : s)
    for (const auto& b : a)
      for (double c : b) *p++ = static_cast<float>(c);
  return t;
}

// sum_k in[k] * m(k, col0 + j) for j in [0, n)
std::vector<double> vec_mat(const std::vector<double>& in, const Mat& m, int64_t col0, int64_t n) {
  std::vector<double> out(static_cast<size_t>(n), 0.0);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t k = 0; k < m.rows; ++k) out[j] += in[k] * m(k, col0 + j);
  return out;
}

// LSTM, ONNX gate order i, o, f, c: g = x W + h R + b; c' = f c + i tanh(g_c); h' = o tanh(c').
void reference_lstm(const graph::Graph& g, const models::RnnSpec& s, const Seq& x, const Seq& h0,
                    const Seq& c0, Seq& y, Seq& h_n, Seq& c_n) {
  const int64_t H = s.hidden;
  Seq in = x;
  h_n = h0;
  c_n = c0;
  for (int64_t l = 0; l < s.layers; ++l) {
    const std::string p = "l" + std::to_string(l) + "/";
    const Mat W = constant(g, p + "W"), R = constant(g, p + "R"), b = constant(g, p + "b");
    for (int64_t t = 0; t < s.seq; ++t) {
      for (int64_t n = 0; n < s.batch; ++n) {
        std::vector<double>& h = h_n[l][n];
        std::vector<double>& c = c_n[l][n];
        auto gx = vec_mat(in[t][n], W, 0, 4 * H), gh = vec_mat(h, R, 0, 4 * H);
        std::vector<double> h_new(H);
        for (int64_t j = 0; j < H; ++j) {
          auto gate = [&](int k) { return gx[k * H + j] + gh[k * H + j] + b(0, k * H + j); };
          const double i = sigmoid(gate(0)), o = sigmoid(gate(1)), f = sigmoid(gate(2)),
                       cc = std::tanh(gate(3));
          c[j] = f * c[j] + i * cc;
          h_new[j] = o * std::tanh(c[j]);
        }
        h = h_new;
        in[t][n] = h;
      }
    }
  }
  y = in;
}

// GRU, ONNX gate order z, r, h. Canonical: h~ = tanh(x W_h + (r h) R_h + b_h). Linear before
// reset: h~ = tanh(x W_h + Wb_h + r (h R_h + Rb_h)). h' = (1 - z) h~ + z h.
void reference_gru(const graph::Graph& g, const models::RnnSpec& s, const Seq& x, const Seq& h0,
                   Seq& y, Seq& h_n) {
  const int64_t H = s.hidden;
  Seq in = x;
  h_n = h0;
  for (int64_t l = 0; l < s.layers; ++l) {
    const std::string p = "l" + std::to_string(l) + "/";
    const Mat W = constant(g, p + "W"), b = constant(g, p + "b");
    for (int64_t t = 0; t < s.seq; ++t) {
      for (int64_t n = 0; n < s.batch; ++n) {
        std::vector<double>& h = h_n[l][n];
        auto gx = vec_mat(in[t][n], W, 0, 3 * H);
        std::vector<double> z(H), r(H), hh(H);
        if (s.linear_before_reset) {
          const Mat R = constant(g, p + "R"), Rb = constant(g, p + "Rb");
          auto gh = vec_mat(h, R, 0, 3 * H);
          for (int64_t j = 0; j < H; ++j) {
            z[j] = sigmoid(gx[j] + b(0, j) + gh[j] + Rb(0, j));
            r[j] = sigmoid(gx[H + j] + b(0, H + j) + gh[H + j] + Rb(0, H + j));
            hh[j] = std::tanh(gx[2 * H + j] + b(0, 2 * H + j) +
                              r[j] * (gh[2 * H + j] + Rb(0, 2 * H + j)));
          }
        } else {
          const Mat Rzr = constant(g, p + "R_zr"), Rh = constant(g, p + "R_h");
          auto gh = vec_mat(h, Rzr, 0, 2 * H);
          for (int64_t j = 0; j < H; ++j) {
            z[j] = sigmoid(gx[j] + gh[j] + b(0, j));
            r[j] = sigmoid(gx[H + j] + gh[H + j] + b(0, H + j));
          }
          std::vector<double> rh(H);
          for (int64_t j = 0; j < H; ++j) rh[j] = r[j] * h[j];
          auto ghh = vec_mat(rh, Rh, 0, H);
          for (int64_t j = 0; j < H; ++j)
            hh[j] = std::tanh(gx[2 * H + j] + ghh[j] + b(0, 2 * H + j));
        }
        for (int64_t j = 0; j < H; ++j) h[j] = (1 - z[j]) * hh[j] + z[j] * h[j];
        in[t][n] = h;
      }
    }
  }
  y = in;
}

const Tensor& output(const engine::NamedTensors& outs, const std::string& name) {
  for (const auto& [n, t] : outs)
    if (n == name) return t;
  FAIL("no output " << name);
  throw;
}

struct Case {
  int64_t E, H, L, B, T;
};
const Case kCases[] = {
    {3, 4, 1, 1, 1}, {5, 8, 2, 3, 4}, {16, 32, 2, 3, 7}, {7, 5, 3, 2, 5}, {12, 6, 1, 4, 9}};

models::RnnSpec spec_of(const Case& c, uint64_t seed) {
  models::RnnSpec s;
  s.input = c.E;
  s.hidden = c.H;
  s.layers = c.L;
  s.batch = c.B;
  s.seq = c.T;
  s.seed = seed;
  return s;
}

}  // namespace

TEST_CASE("LSTM graph matches an LSTM written from the equations", "[models][lstm]") {
  uint64_t seed = 11;
  for (const Case& c : kCases) {
    for (int threads : {1, 2}) {
      const models::RnnSpec s = spec_of(c, seed++);
      INFO("E=" << c.E << " H=" << c.H << " L=" << c.L << " B=" << c.B << " T=" << c.T
                << " threads=" << threads);
      auto g = models::build_lstm(s, ops::Registry::get());
      REQUIRE(g.is_ok());
      auto graph = std::make_shared<const graph::Graph>(std::move(*g));
      engine::SessionOptions opt;
      opt.threads = threads;
      auto session = engine::Session::create(graph, opt);
      if (!session.is_ok()) FAIL(session.status().to_string());

      Tensor x = test::random_tensor({DType::kF32, {c.T, c.B, c.E}}, seed * 3 + 1);
      Tensor h0 = test::random_tensor({DType::kF32, {c.L, c.B, c.H}}, seed * 3 + 2, -0.5, 0.5);
      Tensor c0 = test::random_tensor({DType::kF32, {c.L, c.B, c.H}}, seed * 3 + 3, -0.5, 0.5);
      auto outs = (*session)->run({{"c0", c0}, {"x", x}, {"h0", h0}});
      if (!outs.is_ok()) FAIL(outs.status().to_string());

      Seq y, h_n, c_n;
      reference_lstm(*graph, s, to_seq(x), to_seq(h0), to_seq(c0), y, h_n, c_n);
      CHECK(test::max_rel_error(output(*outs, "y"), from_seq(y)) < 1e-5);
      CHECK(test::max_rel_error(output(*outs, "h_n"), from_seq(h_n)) < 1e-5);
      CHECK(test::max_rel_error(output(*outs, "c_n"), from_seq(c_n)) < 1e-5);
    }
  }
}

TEST_CASE("GRU graph matches a GRU written from the equations (both reset variants)",
          "[models][gru]") {
  uint64_t seed = 101;
  for (bool lbr : {false, true}) {
    for (const Case& c : kCases) {
      models::RnnSpec s = spec_of(c, seed++);
      s.linear_before_reset = lbr;
      INFO("E=" << c.E << " H=" << c.H << " L=" << c.L << " B=" << c.B << " T=" << c.T
                << " lbr=" << lbr);
      auto g = models::build_gru(s, ops::Registry::get());
      REQUIRE(g.is_ok());
      auto graph = std::make_shared<const graph::Graph>(std::move(*g));
      auto session = engine::Session::create(graph);
      if (!session.is_ok()) FAIL(session.status().to_string());

      Tensor x = test::random_tensor({DType::kF32, {c.T, c.B, c.E}}, seed * 3 + 1);
      Tensor h0 = test::random_tensor({DType::kF32, {c.L, c.B, c.H}}, seed * 3 + 2, -0.5, 0.5);
      auto outs = (*session)->run({{"x", x}, {"h0", h0}});
      if (!outs.is_ok()) FAIL(outs.status().to_string());

      Seq y, h_n;
      reference_gru(*graph, s, to_seq(x), to_seq(h0), y, h_n);
      CHECK(test::max_rel_error(output(*outs, "y"), from_seq(y)) < 1e-5);
      CHECK(test::max_rel_error(output(*outs, "h_n"), from_seq(h_n)) < 1e-5);
    }
  }
}

TEST_CASE("RNN graphs have the documented interface and dependencies", "[models]") {
  models::RnnSpec s = spec_of({5, 8, 2, 3, 4}, 1);
  auto g = models::build_lstm(s, ops::Registry::get());
  REQUIRE(g.is_ok());
  std::vector<std::string> ins, outs;
  for (auto v : g->inputs()) ins.push_back(g->value(v).name + g->value(v).desc.to_string());
  for (auto v : g->outputs()) outs.push_back(g->value(v).name + g->value(v).desc.to_string());
  CHECK(ins ==
        std::vector<std::string>{"xfloat32[4, 3, 5]", "h0float32[2, 3, 8]", "c0float32[2, 3, 8]"});
  CHECK(outs == std::vector<std::string>{"yfloat32[4, 3, 8]", "h_nfloat32[2, 3, 8]",
                                         "c_nfloat32[2, 3, 8]"});
  CHECK(g->value(*g->find_value("l1/W")).desc.shape == Shape{8, 32});
  CHECK(g->value(*g->find_value("l0/W")).desc.shape == Shape{5, 32});

  // The node reading name `consumer` has `producer`'s output among its inputs.
  auto reads = [&](const std::string& consumer, const std::string& value) {
    for (const graph::Node& n : g->nodes())
      if (n.name == consumer)
        for (auto v : n.inputs)
          if (v != graph::kNoId && g->value(v).name == value) return true;
    return false;
  };
  CHECK(reads("l1/t2/gates_x", "l0/t2/h"));  // layer l-1, same step
  CHECK(reads("l1/t2/gates_h", "l1/t1/h"));  // same layer, step t-1
  CHECK(reads("l0/t0/gates_h", "h0/l0"));
  CHECK(g->metadata().at("model") == "lstm");
}

TEST_CASE("RNN weights are a pure function of the seed", "[models]") {
  models::RnnSpec s = spec_of({4, 6, 2, 1, 3}, 5);
  auto a = models::build_gru(s, ops::Registry::get());
  auto b = models::build_gru(s, ops::Registry::get());
  s.seed = 6;
  auto c = models::build_gru(s, ops::Registry::get());
  REQUIRE((a.is_ok() && b.is_ok() && c.is_ok()));
  const Tensor& wa = *a->value(*a->find_value("l1/R_h")).data;
  const Tensor& wb = *b->value(*b->find_value("l1/R_h")).data;
  const Tensor& wc = *c->value(*c->find_value("l1/R_h")).data;
  CHECK(test::max_rel_error(wa, wb) == 0);
  CHECK(test::max_rel_error(wa, wc) > 0);
  // PyTorch's bound: uniform in [-1/sqrt(H), 1/sqrt(H)).
  for (int64_t i = 0; i < wa.numel(); ++i)
    CHECK(std::abs(wa.data_as<float>()[i]) <= 1 / std::sqrt(6.0f));
}

TEST_CASE("RNN builders reject sizes out of range, naming the field", "[models]") {
  models::RnnSpec s = spec_of({4, 0, 1, 1, 1}, 1);
  auto g = models::build_lstm(s, ops::Registry::get());
  REQUIRE_FALSE(g.is_ok());
  CHECK(g.status().code() == StatusCode::kInvalidArgument);
  CHECK(g.status().message().find("hidden") != std::string::npos);
  s = spec_of({4, 4, 64, 1, 100000}, 1);
  auto big = models::build_gru(s, ops::Registry::get());
  REQUIRE_FALSE(big.is_ok());
  CHECK(big.status().message().find("layers * seq") != std::string::npos);
}
