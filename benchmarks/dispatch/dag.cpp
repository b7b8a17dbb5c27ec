#include "benchmarks/dispatch/dag.h"

#include <algorithm>
#include <random>

namespace graphi::bench {

namespace {

// Fills the CSR arrays, depths, sources and outputs from per-node predecessor lists.
Dag finish(std::string name, const std::vector<std::vector<uint32_t>>& preds) {
  Dag d;
  d.name = std::move(name);
  d.n = static_cast<uint32_t>(preds.size());
  d.pred_offsets.assign(d.n + 1, 0);
  std::vector<uint32_t> out_degree(d.n, 0);
  for (uint32_t i = 0; i < d.n; ++i) {
    d.pred_offsets[i + 1] = d.pred_offsets[i] + static_cast<uint32_t>(preds[i].size());
    for (uint32_t p : preds[i]) {
      d.preds.push_back(p);
      ++out_degree[p];
    }
  }
  d.succ_offsets.assign(d.n + 1, 0);
  for (uint32_t i = 0; i < d.n; ++i) d.succ_offsets[i + 1] = d.succ_offsets[i] + out_degree[i];
  d.succs.resize(d.preds.size());
  std::vector<uint32_t> fill(d.succ_offsets.begin(), d.succ_offsets.end() - 1);
  for (uint32_t i = 0; i < d.n; ++i)
    for (uint32_t p : preds[i]) d.succs[fill[p]++] = i;  // ascending i per p
  d.depth.assign(d.n, 1);
  for (uint32_t i = 0; i < d.n; ++i) {
    for (uint32_t p : preds[i]) d.depth[i] = std::max(d.depth[i], d.depth[p] + 1);
    d.critical_path = std::max(d.critical_path, d.depth[i]);
    if (preds[i].empty()) d.sources.push_back(i);
  }
  for (uint32_t i = 0; i < d.n; ++i)
    if (out_degree[i] == 0 && d.depth[i] == d.critical_path) d.outputs.push_back(i);
  return d;
}

}  // namespace

Dag make_chain(uint32_t n) {
  std::vector<std::vector<uint32_t>> preds(n);
  for (uint32_t i = 1; i < n; ++i) preds[i] = {i - 1};
  return finish("chain", preds);
}

Dag make_fan(uint32_t n) {
  std::vector<std::vector<uint32_t>> preds(n);
  for (uint32_t i = 1; i + 1 < n; ++i) preds[i] = {0};
  for (uint32_t i = 1; i + 1 < n; ++i) preds[n - 1].push_back(i);
  return finish("fan", preds);
}

Dag make_layered(uint32_t layers, uint32_t width, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<uint32_t> count(1, 3), pick(0, width - 1);
  std::vector<std::vector<uint32_t>> preds(static_cast<size_t>(layers) * width);
  for (uint32_t l = 1; l < layers; ++l)
    for (uint32_t j = 0; j < width; ++j) {
      std::vector<uint32_t>& p = preds[l * width + j];
      const uint32_t k = std::min(count(rng), width);
      while (p.size() < k) {
        const uint32_t q = (l - 1) * width + pick(rng);
        if (std::find(p.begin(), p.end(), q) == p.end()) p.push_back(q);
      }
      std::sort(p.begin(), p.end());
    }
  return finish("layered", preds);
}

Dag make_rnn_shape(uint32_t layers, uint32_t steps) {
  // Node id = t * layers + l: topological (both predecessors have smaller ids).
  std::vector<std::vector<uint32_t>> preds(static_cast<size_t>(layers) * steps);
  for (uint32_t t = 0; t < steps; ++t)
    for (uint32_t l = 0; l < layers; ++l) {
      std::vector<uint32_t>& p = preds[t * layers + l];
      if (t > 0) p.push_back((t - 1) * layers + l);
      if (l > 0) p.push_back(t * layers + l - 1);
      std::sort(p.begin(), p.end());
    }
  return finish("lstm", preds);
}

Dag make_shape(const std::string& name) {
  if (name == "chain") return make_chain(10000);
  if (name == "fan") return make_fan(10000);
  if (name == "layered") return make_layered(100, 100, 42);
  if (name == "lstm") return make_rnn_shape(4, 100);
  return Dag{};
}

}  // namespace graphi::bench
