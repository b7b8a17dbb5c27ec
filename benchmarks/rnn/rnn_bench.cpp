// graphi_bench_rnn: graphi's fused LSTM/GRU sequence ops (ops/rnn_sequence.h) against oneDNN
// 2.6's lstm_forward and lbr_gru_forward primitives, in the same process (issue 4, Benchmark).
//
//   graphi_bench_rnn [--full] [--threads 1,2] [--cells lstm,gru] [--budget-ms 250]
//                    [--csv FILE]
//
// Configurations: DeepCPU Table 1 (input = hidden in {64, 256, 1024}, batch in {1, 10, 20},
// sequence 100) plus hidden 256 batch 1 at sequence 1 and 10. Hidden 1024 at batch 10 and 20
// only with --full (each run takes hundreds of ms).
//
// graphi: a one-node graph (X input; W, R, B constants, so the weights are packed once at
// Session creation) run by engine::Session with the sequential executor and a team of k.
// oneDNN: forward_inference, weights in format_tag::any reordered once from the same values
// (gate blocks permuted from ONNX order), primitives created once, executed on the calling
// thread after omp_set_num_threads(k). GRU is compared like for like: graphi's GRU with
// linear_before_reset = 1 against lbr_gru_forward. Both get zero initial states and produce
// the whole output sequence Y; their max abs difference is printed per row.
//
// Timing: per row, two rounds over all rows; within a row the two implementations alternate
// sample by sample (one untimed warm-up each first). Medians over both rounds' samples; the
// per-round ratios show the drift between rounds.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "benchmarks/bench_util.h"
#include "dnnl.hpp"
#include "engine/session.h"
#include "graph/graph_builder.h"
#include "models/weights.h"
#include "ops/registry.h"

using namespace graphi;
using namespace graphi::bench;

namespace {

[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(stderr,
               "graphi_bench_rnn: %s\nusage: graphi_bench_rnn [--full] [--threads 1,2] "
               "[--cells lstm,gru] [--budget-ms MS] [--csv FILE]\n",
               msg.c_str());
  std::exit(2);
}

[[noreturn]] void fail(const std::string& msg) {
  std::fprintf(stderr, "graphi_bench_rnn: %s\n", msg.c_str());
  std::exit(1);
}

struct Config {
  bool lstm = true;
  int64_t hidden = 0, batch = 0, seq = 0;  // input = hidden
  int threads = 1;
  int gates() const { return lstm ? 4 : 3; }
  std::string name() const {
    return std::string(lstm ? "LSTM" : "GRU") + " h" + std::to_string(hidden) + " b" +
           std::to_string(batch) + " s" + std::to_string(seq) + " t" + std::to_string(threads);
  }
  // Multiply-adds of the GEMMs only (x and h projections), 2 flops each.
  double flops() const {
    return 2.0 * double(seq) * double(batch) * double(hidden + hidden) * double(gates() * hidden);
  }
};

// ONNX-layout weights of one layer (D = 1): W [G*H, I], R [G*H, H], B [2*G*H] (Wb then Rb).
struct Weights {
  std::vector<float> w, r, b;
};

Weights make_weights(const Config& c, uint64_t seed) {
  const int64_t G = c.gates(), H = c.hidden, I = c.hidden;
  models::WeightRng rng(seed);
  const float bound = 1.0f / std::sqrt(float(H));  // PyTorch's init range
  Weights wt;
  wt.w.resize(size_t(G * H * I));
  wt.r.resize(size_t(G * H * H));
  wt.b.resize(size_t(2 * G * H));
  for (float& v : wt.w) v = rng.uniform(-bound, bound);
  for (float& v : wt.r) v = rng.uniform(-bound, bound);
  for (float& v : wt.b) v = rng.uniform(-bound, bound);
  return wt;
}

// ---- graphi -------------------------------------------------------------------------------

struct GraphiRunner {
  std::unique_ptr<engine::Session> session;
  engine::NamedTensors inputs;

  void init(const Config& c, const Weights& wt, const std::vector<float>& x) {
    const int64_t G = c.gates(), H = c.hidden, I = c.hidden;
    auto constant = [](const Shape& shape, const std::vector<float>& v) {
      Tensor t(TensorDesc{DType::kF32, shape});
      std::memcpy(t.data_as<float>(), v.data(), v.size() * sizeof(float));
      return t;
    };
    graph::GraphBuilder b("rnn_bench");
    b.add_input("X", TensorDesc{DType::kF32, {c.seq, c.batch, I}});
    b.add_constant("W", constant({1, G * H, I}, wt.w));
    b.add_constant("R", constant({1, G * H, H}, wt.r));
    b.add_constant("B", constant({1, 2 * G * H}, wt.b));
    graph::Attributes a;
    a.set("hidden_size", H);
    if (!c.lstm) a.set("linear_before_reset", int64_t{1});
    b.add_node(c.lstm ? "LSTM" : "GRU", "rnn", {"X", "W", "R", "B"}, {"Y"}, a);
    b.add_output("Y");
    auto g = b.finish(ops::Registry::get());
    if (!g.is_ok()) fail(g.status().message());
    engine::SessionOptions o;
    o.threads = c.threads;
    auto s = engine::Session::create(std::make_shared<const graph::Graph>(std::move(g).value()), o);
    if (!s.is_ok()) fail(s.status().message());
    session = std::move(s).value();
    inputs.emplace_back("X", constant({c.seq, c.batch, I}, x));
  }
  // Runs once; copies Y [T, 1, B, H] into `y` when given.
  void run(std::vector<float>* y = nullptr) {
    auto out = session->run(inputs);
    if (!out.is_ok()) fail(out.status().message());
    if (y) {
      const Tensor& t = (*out)[0].second;
      y->assign(t.data_as<float>(), t.data_as<float>() + t.numel());
    }
  }
};

// ---- oneDNN -------------------------------------------------------------------------------

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

struct DnnlRunner {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
  dnnl::primitive prim;
  dnnl::memory src, w_layer, w_iter, bias, dst;
  int threads = 1;

  void init(const Config& c, const Weights& wt, const std::vector<float>& x) {
    threads = c.threads;
    omp_set_num_threads(threads);
    const int64_t G = c.gates(), H = c.hidden, I = c.hidden, T = c.seq, N = c.batch;
    // oneDNN gate g takes ONNX gate onnx_gate[g]. LSTM: oneDNN (i, f, c~, o), ONNX (i, o, f, c~).
    // lbr GRU: oneDNN (u, r, h~), ONNX (z, r, h~), z == u.
    const std::vector<int64_t> onnx_gate = c.lstm ? std::vector<int64_t>{0, 2, 3, 1}
                                                  : std::vector<int64_t>{0, 1, 2};
    // User layouts ldigo: [1, 1, in, G, H]; element (in, g, h) = ONNX M[onnx_gate[g]*H + h][in].
    auto to_ldigo = [&](const std::vector<float>& m, int64_t in_dim) {
      std::vector<float> out(size_t(in_dim * G * H));
      for (int64_t i = 0; i < in_dim; ++i)
        for (int64_t g = 0; g < G; ++g)
          for (int64_t h = 0; h < H; ++h)
            out[size_t((i * G + g) * H + h)] = m[size_t((onnx_gate[size_t(g)] * H + h) * in_dim + i)];
      return out;
    };
    std::vector<float> wl = to_ldigo(wt.w, I), wi = to_ldigo(wt.r, H);
    // Bias ldgo. LSTM: Wb + Rb per gate. lbr GRU: G + 1 blocks, u and r get Wb + Rb, block 2
    // is Wb of h~ (outside r *), block 3 is Rb of h~ (inside r * (U h + b)).
    const int64_t bias_gates = c.lstm ? G : G + 1;
    std::vector<float> bl(size_t(bias_gates * H));
    const float* wb = wt.b.data();
    const float* rb = wt.b.data() + G * H;
    for (int64_t g = 0; g < G; ++g)
      for (int64_t h = 0; h < H; ++h) {
        const int64_t o = onnx_gate[size_t(g)] * H + h;
        bl[size_t(g * H + h)] = (!c.lstm && g == 2) ? wb[o] : wb[o] + rb[o];
      }
    if (!c.lstm)
      for (int64_t h = 0; h < H; ++h) bl[size_t(3 * H + h)] = rb[2 * H + h];

    const dnnl::memory::desc src_md({T, N, I}, dt::f32, tag::tnc);
    const dnnl::memory::desc dst_md({T, N, H}, dt::f32, tag::tnc);
    const dnnl::memory::desc wl_any({1, 1, I, G, H}, dt::f32, tag::any);
    const dnnl::memory::desc wi_any({1, 1, H, G, H}, dt::f32, tag::any);
    const dnnl::memory::desc wl_user({1, 1, I, G, H}, dt::f32, tag::ldigo);
    const dnnl::memory::desc wi_user({1, 1, H, G, H}, dt::f32, tag::ldigo);
    const dnnl::memory::desc bias_md({1, 1, bias_gates, H}, dt::f32, tag::ldgo);
    const dnnl::memory::desc none;  // zero initial states; final states not requested
    const auto dir = dnnl::rnn_direction::unidirectional_left2right;
    const auto prop = dnnl::prop_kind::forward_inference;
    dnnl::memory::desc wl_md, wi_md;
    if (c.lstm) {
      dnnl::lstm_forward::primitive_desc pd(
          dnnl::lstm_forward::desc(prop, dir, src_md, none, none, wl_any, wi_any, bias_md, dst_md,
                                   none, none),
          eng);
      wl_md = pd.weights_layer_desc();
      wi_md = pd.weights_iter_desc();
      prim = dnnl::lstm_forward(pd);
    } else {
      dnnl::lbr_gru_forward::primitive_desc pd(
          dnnl::lbr_gru_forward::desc(prop, dir, src_md, none, wl_any, wi_any, bias_md, dst_md,
                                      none),
          eng);
      wl_md = pd.weights_layer_desc();
      wi_md = pd.weights_iter_desc();
      prim = dnnl::lbr_gru_forward(pd);
    }
    // Reorder the user weights once into the primitive's format.
    dnnl::memory wl_u(wl_user, eng, wl.data()), wi_u(wi_user, eng, wi.data());
    w_layer = dnnl::memory(wl_md, eng);
    w_iter = dnnl::memory(wi_md, eng);
    dnnl::reorder(wl_u, w_layer).execute(strm, wl_u, w_layer);
    dnnl::reorder(wi_u, w_iter).execute(strm, wi_u, w_iter);
    bias = dnnl::memory(bias_md, eng);
    std::memcpy(bias.get_data_handle(), bl.data(), bl.size() * sizeof(float));
    src = dnnl::memory(src_md, eng);
    std::memcpy(src.get_data_handle(), x.data(), x.size() * sizeof(float));
    dst = dnnl::memory(dst_md, eng);
    strm.wait();
  }
  void run(std::vector<float>* y = nullptr) {
    omp_set_num_threads(threads);
    prim.execute(strm, {{DNNL_ARG_SRC_LAYER, src},
                        {DNNL_ARG_WEIGHTS_LAYER, w_layer},
                        {DNNL_ARG_WEIGHTS_ITER, w_iter},
                        {DNNL_ARG_BIAS, bias},
                        {DNNL_ARG_DST_LAYER, dst}});
    strm.wait();
    if (y) {
      const float* p = static_cast<const float*>(dst.get_data_handle());
      y->assign(p, p + dst.get_desc().get_size() / sizeof(float));
    }
  }
};

struct Row {
  Config c;
  GraphiRunner graphi;
  DnnlRunner dnnl;
  double max_abs_diff = 0;
  std::vector<double> g_ms, d_ms;     // both rounds
  double round_ratio[2] = {0, 0};     // oneDNN / graphi median per round
};

void sample_row(Row& row, int round, double budget_ms) {
  // Warm-up (untimed), then estimate how many samples fit the budget.
  row.graphi.run();
  row.dnnl.run();
  double t0 = now_ns();
  row.graphi.run();
  row.dnnl.run();
  const double pair_ms = (now_ns() - t0) * 1e-6;
  const int n = std::clamp(int(budget_ms / std::max(pair_ms, 1e-3)), 5, 400);
  std::vector<double> g, d;
  for (int i = 0; i < n; ++i) {
    // Alternate which goes first, so neither always follows the other.
    for (int k = 0; k < 2; ++k) {
      const bool graphi_turn = (k == 0) == (i % 2 == 0);
      t0 = now_ns();
      if (graphi_turn) row.graphi.run();
      else row.dnnl.run();
      (graphi_turn ? g : d).push_back((now_ns() - t0) * 1e-6);
    }
  }
  row.round_ratio[round] = median(d) / median(g);
  row.g_ms.insert(row.g_ms.end(), g.begin(), g.end());
  row.d_ms.insert(row.d_ms.end(), d.begin(), d.end());
}

std::vector<int64_t> parse_list(const std::string& opt, const std::string& v) {
  std::vector<int64_t> out;
  std::stringstream ss(v);
  for (std::string s; std::getline(ss, s, ',');) {
    char* end = nullptr;
    const long long n = std::strtoll(s.c_str(), &end, 10);
    if (s.empty() || *end || n < 1) usage_error(opt + ": '" + s + "' is not a positive number");
    out.push_back(n);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  bool full = false, do_lstm = true, do_gru = true;
  std::vector<int64_t> threads{1, 2};
  double budget_ms = 250;
  std::string csv_path = "build/bench/rnn.csv";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--full") full = true;
    else if (a == "--threads") threads = parse_list(a, value());
    else if (a == "--budget-ms") budget_ms = double(parse_list(a, value())[0]);
    else if (a == "--csv") csv_path = value();
    else if (a == "--cells") {
      const std::string v = value();
      do_lstm = v.find("lstm") != std::string::npos;
      do_gru = v.find("gru") != std::string::npos;
      if (!do_lstm && !do_gru) usage_error("--cells: expected lstm, gru or lstm,gru");
    } else usage_error("unknown option '" + a + "'");
  }

  std::vector<Row> rows;
  auto add = [&](bool lstm, int64_t h, int64_t b, int64_t s) {
    for (int64_t t : threads) {
      rows.emplace_back();
      rows.back().c = Config{lstm, h, b, s, int(t)};
    }
  };
  for (bool lstm : {true, false}) {
    if ((lstm && !do_lstm) || (!lstm && !do_gru)) continue;
    for (int64_t h : {64, 256, 1024})
      for (int64_t b : {1, 10, 20})
        if (full || h < 1024 || b == 1) add(lstm, h, b, 100);
    add(lstm, 256, 1, 1);
    add(lstm, 256, 1, 10);
  }

  std::printf("graphi_bench_rnn: %zu rows, oneDNN %d.%d.%d, load average %s\n", rows.size(),
              dnnl_version()->major, dnnl_version()->minor, dnnl_version()->patch,
              load_average().c_str());
  std::fflush(stdout);
  for (size_t i = 0; i < rows.size(); ++i) {
    Row& r = rows[i];
    const Weights wt = make_weights(r.c, 1000 + i);
    models::WeightRng rng(77 + i);
    std::vector<float> x(size_t(r.c.seq * r.c.batch * r.c.hidden));
    for (float& v : x) v = rng.uniform(-1, 1);
    r.graphi.init(r.c, wt, x);
    r.dnnl.init(r.c, wt, x);
    std::vector<float> yg, yd;
    r.graphi.run(&yg);
    r.dnnl.run(&yd);
    if (yg.size() != yd.size())
      fail(r.c.name() + ": output sizes differ (" + std::to_string(yg.size()) + " vs " +
           std::to_string(yd.size()) + ")");
    for (size_t k = 0; k < yg.size(); ++k)
      r.max_abs_diff = std::max(r.max_abs_diff, double(std::abs(yg[k] - yd[k])));
  }
  for (int round = 0; round < 2; ++round)
    for (Row& r : rows) sample_row(r, round, budget_ms);

  if (std::filesystem::path(csv_path).has_parent_path())
    std::filesystem::create_directories(std::filesystem::path(csv_path).parent_path());
  Csv csv;
  if (!csv.open(csv_path, {"cell", "hidden", "input", "batch", "seq", "threads", "samples",
                           "graphi_ms", "onednn_ms", "ratio_onednn_over_graphi",
                           "ratio_round1", "ratio_round2", "graphi_gflops", "onednn_gflops",
                           "max_abs_diff"}))
    fail("cannot write " + csv_path);
  Table t({"config", "graphi ms", "oneDNN ms", "oneDNN/graphi", "(round 1, 2)", "graphi GFLOP/s",
           "oneDNN GFLOP/s", "max |diff|"});
  for (Row& r : rows) {
    const double g = median(r.g_ms), d = median(r.d_ms);
    char diff[32];
    std::snprintf(diff, sizeof diff, "%.1e", r.max_abs_diff);
    t.add({r.c.name(), fmt(g, 3), fmt(d, 3), fmt(d / g, 2) + "x",
           fmt(r.round_ratio[0], 2) + ", " + fmt(r.round_ratio[1], 2), fmt(r.c.flops() / g * 1e-6, 1),
           fmt(r.c.flops() / d * 1e-6, 1), diff});
    csv.row({r.c.lstm ? "LSTM" : "GRU-lbr", std::to_string(r.c.hidden), std::to_string(r.c.hidden),
             std::to_string(r.c.batch), std::to_string(r.c.seq), std::to_string(r.c.threads),
             std::to_string(r.g_ms.size()), fmt(g, 4), fmt(d, 4), fmt(d / g, 3),
             fmt(r.round_ratio[0], 3), fmt(r.round_ratio[1], 3), fmt(r.c.flops() / g * 1e-6, 2),
             fmt(r.c.flops() / d * 1e-6, 2), diff});
  }
  t.print();
  // float32 sums in a different order differ by ~1e-6; a wrong gate mapping differs by ~0.1.
  constexpr double kTolerance = 1e-4;
  int disagree = 0;
  for (const Row& r : rows)
    if (!(r.max_abs_diff <= kTolerance)) {
      std::fprintf(stderr, "graphi_bench_rnn: %s: graphi and oneDNN disagree (max abs diff %.3g > %g)\n",
                   r.c.name().c_str(), r.max_abs_diff, kTolerance);
      ++disagree;
    }
  std::printf(
      "\nmedians over 2 interleaved rounds; GFLOP/s counts the GEMM flops 2*T*B*(I+H)*G*H; "
      "GRU = linear_before_reset (oneDNN lbr_gru)\nload average at the end: %s\nCSV: %s\n",
      load_average().c_str(), csv_path.c_str());
  return disagree ? 1 : 0;
}
