// graphi_bench_lstm: makespan of the unrolled stacked LSTM graph (models/lstm.h) for each
// scheduling policy and configuration, against the sequential executor (issue 3, benchmark (3)).
//
//   graphi_bench_lstm [--hidden 256] [--input 256] [--layers 4] [--batch 1] [--steps 50]
//                     [--configs 1x1,1x2,2x1] [--policies cpf,fifo,shared-queue] [--repeats 21]
//                     [--csv FILE]
//
// All Sessions are created first and sampled interleaved (order rotated every round); a
// sample is one untimed warm-up run and one timed run. Every Session's outputs are compared
// with the sequential 1x1 Session's (max relative error, reported).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "benchmarks/bench_util.h"
#include "engine/plan.h"
#include "engine/session.h"
#include "models/lstm.h"
#include "models/weights.h"
#include "ops/registry.h"

using namespace graphi;
using namespace graphi::bench;

namespace {

[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(
      stderr,
      "graphi_bench_lstm: %s\nusage: graphi_bench_lstm [--hidden H] [--input E] [--layers L] "
      "[--batch B] "
      "[--steps T] [--configs 1x1,1x2,2x1] [--policies cpf,...] [--repeats N] [--csv FILE]\n",
      msg.c_str());
  std::exit(2);
}

[[noreturn]] void fail(const Status& s) {
  std::fprintf(stderr, "graphi_bench_lstm: %s\n", s.message().c_str());
  std::exit(1);
}

double max_rel_error(const engine::NamedTensors& a, const engine::NamedTensors& b) {
  double err = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    const float* x = a[k].second.data_as<float>();
    const float* y = b[k].second.data_as<float>();
    for (int64_t i = 0; i < a[k].second.numel(); ++i)
      err = std::max(err,
                     std::abs(double(x[i]) - double(y[i])) / std::max(1.0, std::abs(double(y[i]))));
  }
  return err;
}

struct Entry {
  std::string policy;
  int executors, threads;
  std::unique_ptr<engine::Session> session;
  std::vector<double> ms;
  double error = 0;
};

}  // namespace

int main(int argc, char** argv) {
  models::RnnSpec spec{256, 256, 4, 1, 50};
  std::vector<std::pair<int, int>> configs{{1, 1}, {1, 2}, {2, 1}};
  std::vector<std::string> policies{"cpf", "fifo", "shared-queue"};
  int repeats = 21;
  std::string csv_path = "build/bench/lstm_makespan.csv";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(a + " needs a value");
      return argv[++i];
    };
    auto number = [&]() -> int64_t {
      const std::string v = value();
      char* end = nullptr;
      const long long n = std::strtoll(v.c_str(), &end, 10);
      if (*end || n < 1) usage_error(a + ": '" + v + "' is not a positive number");
      return n;
    };
    if (a == "--hidden")
      spec.hidden = number();
    else if (a == "--input")
      spec.input = number();
    else if (a == "--layers")
      spec.layers = number();
    else if (a == "--batch")
      spec.batch = number();
    else if (a == "--steps")
      spec.seq = number();
    else if (a == "--repeats")
      repeats = static_cast<int>(number());
    else if (a == "--csv")
      csv_path = value();
    else if (a == "--policies") {
      policies.clear();
      std::stringstream ss(value());
      for (std::string p; std::getline(ss, p, ',');) {
        if (p != "cpf" && p != "fifo" && p != "shared-queue")
          usage_error("--policies: unknown policy '" + p + "'");
        policies.push_back(p);
      }
    } else if (a == "--configs") {
      configs.clear();
      std::stringstream ss(value());
      for (std::string c; std::getline(ss, c, ',');) {
        int n = 0, k = 0;
        if (std::sscanf(c.c_str(), "%dx%d", &n, &k) != 2 || n < 1 || k < 1)
          usage_error("--configs: '" + c + "' is not NxK");
        configs.push_back({n, k});
      }
    } else
      usage_error("unknown option '" + a + "'");
  }

  auto g = models::build_lstm(spec, ops::Registry::get());
  if (!g.is_ok()) fail(g.status());
  auto graph = std::make_shared<const graph::Graph>(std::move(g).value());

  // Inputs: x uniform in [-1, 1) (seeded), zero initial states.
  engine::NamedTensors inputs;
  for (graph::ValueId v : graph->inputs()) {
    const graph::Value& val = graph->value(v);
    Tensor t(val.desc);
    models::WeightRng rng(7);
    float* p = t.data_as<float>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = val.name == "x" ? rng.uniform(-1, 1) : 0.0f;
    inputs.emplace_back(val.name, std::move(t));
  }

  // One Plan per team size, shared by the Sessions of that size.
  std::map<int, std::shared_ptr<const engine::Plan>> plans;
  auto plan_for = [&](int threads) {
    if (!plans.count(threads)) {
      auto p = engine::compile(graph, threads);
      if (!p.is_ok()) fail(p.status());
      plans[threads] = std::make_shared<const engine::Plan>(std::move(p).value());
    }
    return plans[threads];
  };
  std::vector<Entry> entries;
  auto add = [&](const std::string& policy, int n, int k) {
    engine::SessionOptions o;
    o.scheduler = policy;
    o.executors = n;
    o.threads = k;
    auto s = engine::Session::create(plan_for(k), o);
    if (!s.is_ok()) fail(s.status());
    entries.push_back({policy, n, k, std::move(s).value(), {}, 0});
  };
  add("sequential", 1, 1);
  for (auto [n, k] : configs)
    if (n == 1 && k > 1) add("sequential", 1, k);
  for (const std::string& policy : policies)
    for (auto [n, k] : configs) add(policy, n, k);

  std::printf("graphi_bench_lstm: LSTM %s, %zu nodes, %d samples per Session, load average %s\n",
              models::rnn_spec_to_string(spec).c_str(),
              plans[1] ? plans[1]->num_nodes() : size_t{0}, repeats, load_average().c_str());
  engine::NamedTensors reference;
  for (Entry& e : entries) {
    auto out = e.session->run(inputs);
    if (!out.is_ok()) fail(out.status());
    if (reference.empty())
      reference = std::move(out).value();
    else
      e.error = max_rel_error(*out, reference);
  }
  for (int r = 0; r < repeats; ++r)
    for (size_t j = 0; j < entries.size(); ++j) {
      Entry& e = entries[(j + static_cast<size_t>(r)) % entries.size()];
      if (auto out = e.session->run(inputs); !out.is_ok()) fail(out.status());
      const double t0 = now_ns();
      if (auto out = e.session->run(inputs); !out.is_ok()) fail(out.status());
      e.ms.push_back((now_ns() - t0) * 1e-6);
    }

  if (std::filesystem::path(csv_path).has_parent_path())
    std::filesystem::create_directories(std::filesystem::path(csv_path).parent_path());
  Csv csv;
  if (!csv.open(csv_path,
                {"model", "policy", "config", "summary", "samples", "median_ms", "p25_ms", "p75_ms",
                 "min_ms", "speedup_vs_sequential_1x1", "max_rel_error_vs_sequential"}))
    fail(Status::io_error("cannot write " + csv_path));
  const double base = median(entries[0].ms);
  Table t(
      {"policy", "config", "makespan ms", "p25", "p75", "min", "vs sequential 1x1", "max rel err"});
  for (Entry& e : entries) {
    const std::string cfg = std::to_string(e.executors) + "x" + std::to_string(e.threads);
    const double med = median(e.ms);
    char err[32];
    std::snprintf(err, sizeof err, "%.1e", e.error);
    t.add({e.policy, cfg, fmt(med, 3), fmt(quantile(e.ms, 0.25), 3), fmt(quantile(e.ms, 0.75), 3),
           fmt(quantile(e.ms, 0), 3), fmt(base / med, 2) + "x", err});
    csv.row({"lstm " + models::rnn_spec_to_string(spec), e.policy, cfg,
             "\"" + e.session->config_summary() + "\"", std::to_string(e.ms.size()), fmt(med, 4),
             fmt(quantile(e.ms, 0.25), 4), fmt(quantile(e.ms, 0.75), 4), fmt(quantile(e.ms, 0), 4),
             fmt(base / med, 3), err});
  }
  t.print();
  for (Entry& e : entries) std::printf("  %s\n", e.session->config_summary().c_str());
  std::printf("\nload average at the end: %s\nCSV: %s\n", load_average().c_str(), csv_path.c_str());
  return 0;
}
