#include "graph/graph_builder.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <queue>
#include <unordered_map>
#include <unordered_set>

namespace graphi::graph {

void GraphBuilder::add_input(const std::string& name, TensorDesc desc) {
  values_.push_back({name, std::move(desc), ValueKind::kInput, nullptr});
}

void GraphBuilder::add_constant(const std::string& name, std::shared_ptr<const Tensor> data) {
  TensorDesc d = data ? data->desc() : TensorDesc{};
  values_.push_back({name, std::move(d), ValueKind::kConstant, std::move(data)});
}

void GraphBuilder::add_constant(const std::string& name, Tensor data) {
  add_constant(name, std::make_shared<const Tensor>(std::move(data)));
}

void GraphBuilder::add_node(const std::string& op, const std::string& name,
                            const std::vector<std::string>& inputs,
                            const std::vector<std::string>& outputs, Attributes attrs) {
  nodes_.push_back({op, name, inputs, outputs, std::move(attrs)});
}

void GraphBuilder::add_output(const std::string& name) { outputs_.push_back(name); }

void GraphBuilder::declare(const std::string& name, TensorDesc desc) {
  declared_.emplace_back(name, std::move(desc));
}

GraphBuilder GraphBuilder::from_graph(const Graph& g) {
  GraphBuilder b(g.source());
  for (const Value& v : g.values()) {
    if (v.kind == ValueKind::kInput) b.add_input(v.name, v.desc);
    if (v.kind == ValueKind::kConstant) b.add_constant(v.name, v.data);
  }
  for (const Node& n : g.nodes()) {
    std::vector<std::string> ins, outs;
    for (ValueId v : n.inputs) ins.push_back(v == kNoId ? std::string() : g.value(v).name);
    for (ValueId v : n.outputs) outs.push_back(g.value(v).name);
    b.add_node(n.op, n.name, ins, outs, n.attrs);
  }
  for (ValueId v : g.outputs()) b.add_output(g.value(v).name);
  b.metadata_ = g.metadata();
  return b;
}

namespace {

// The machine's physical memory in bytes.
uint64_t physical_memory_bytes() {
  static const uint64_t bytes = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page)
                                 : uint64_t{1} << 40;
  }();
  return bytes;
}

Status check_dims(const std::string& where, const std::string& what, const TensorDesc& d) {
  for (int64_t dim : d.shape) {
    if (dim <= 0) {
      return Status::invalid_graph(where + ": " + what + " has shape " +
                                   shape_to_string(d.shape) +
                                   "; every dimension must be at least 1 (empty tensors, such as "
                                   "an empty batch, are not supported)");
    }
  }
  // A value that cannot fit in memory comes from a bogus dimension (a corrupt file, a wrong
  // --dim): refuse it here, before the product overflows int64 in a kernel or the engine tries a
  // multi-GB allocation.
  uint64_t bytes = dtype_size(d.dtype);
  bool overflow = false;
  for (int64_t dim : d.shape)
    overflow = overflow || __builtin_mul_overflow(bytes, static_cast<uint64_t>(dim), &bytes);
  const uint64_t limit = physical_memory_bytes();
  if (overflow || bytes > limit) {
    char gib[64];
    std::snprintf(gib, sizeof gib, "%.1f GiB", static_cast<double>(limit) / (1u << 30));
    const std::string need =
        overflow ? std::string("more than 2^64 bytes")
                 : std::to_string(bytes >> 30) + " GiB";
    return Status::invalid_graph(where + ": " + what + " is " + d.to_string() + ", which needs " +
                                 need + ", more than this machine's memory (" + gib +
                                 "); is a dimension wrong?");
  }
  return Status::ok();
}

}  // namespace

Result<Graph> GraphBuilder::finish(const ShapeInferencer& shapes) const {
  const std::string& src = source_;
  auto err = [&](StatusCode c, const std::string& m) { return Status(c, src + ": " + m); };

  // 1. Names. `defined` maps a value name to a description of who defines it.
  std::unordered_map<std::string, std::string> defined;
  std::unordered_map<std::string, size_t> producer_of;  // value name -> pending node index
  // Sized up front: a 168k-node model otherwise rehashes these maps ~18 times each.
  size_t n_outputs = 0;
  for (const PendingNode& n : nodes_) n_outputs += n.outputs.size();
  defined.reserve(values_.size() + n_outputs);
  producer_of.reserve(n_outputs);
  for (const PendingValue& v : values_) {
    const char* kind = v.kind == ValueKind::kInput ? "graph input" : "constant";
    if (v.name.empty()) return err(StatusCode::kInvalidGraph, std::string("a ") + kind + " has an empty name");
    if (v.kind == ValueKind::kConstant && !v.data)
      return err(StatusCode::kInvalidGraph, "constant '" + v.name + "' has no data");
    auto [it, fresh] = defined.emplace(v.name, std::string(kind) + " '" + v.name + "'");
    if (!fresh)
      return err(StatusCode::kInvalidGraph,
                 "duplicate value name '" + v.name + "': defined as " + it->second + " and as a " + kind);
    GRAPHI_RETURN_IF_ERROR(check_dims(src, std::string(kind) + " '" + v.name + "'", v.desc));
  }
  std::unordered_set<std::string> node_names;
  node_names.reserve(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const PendingNode& n = nodes_[i];
    std::string where = "node '" + n.name + "' (" + n.op + ")";
    if (n.name.empty()) return err(StatusCode::kInvalidGraph, "a node of type " + n.op + " has an empty name");
    if (n.op.empty()) return err(StatusCode::kInvalidGraph, "node '" + n.name + "' has an empty op type");
    if (!node_names.insert(n.name).second)
      return err(StatusCode::kInvalidGraph, "duplicate node name '" + n.name + "'");
    if (n.outputs.empty()) return err(StatusCode::kInvalidGraph, where + ": has no outputs");
    for (const std::string& o : n.outputs) {
      if (o.empty()) return err(StatusCode::kInvalidGraph, where + ": an output has an empty name");
      auto [it, fresh] = defined.emplace(o, where);
      if (!fresh)
        return err(StatusCode::kInvalidGraph,
                   "duplicate value name '" + o + "': produced by " + where + " and already defined by " + it->second);
      producer_of[o] = i;
    }
  }
  for (const PendingNode& n : nodes_) {
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const std::string& in = n.inputs[k];
      if (!in.empty() && !defined.count(in))
        return err(StatusCode::kInvalidGraph, "node '" + n.name + "' (" + n.op + "): input " +
                                                  std::to_string(k) + " '" + in +
                                                  "' is used but never produced");
    }
  }
  if (outputs_.empty()) return err(StatusCode::kInvalidGraph, "the graph declares no outputs");
  std::unordered_set<std::string> seen_outputs;
  for (const std::string& o : outputs_) {
    if (!defined.count(o)) return err(StatusCode::kInvalidGraph, "graph output '" + o + "' is never produced");
    if (!seen_outputs.insert(o).second)
      return err(StatusCode::kInvalidGraph, "graph output '" + o + "' is listed twice");
  }

  // 2. Topological order (Kahn), stable: among ready nodes the one declared first goes first.
  const size_t n_nodes = nodes_.size();
  std::vector<std::vector<size_t>> succ(n_nodes);
  std::vector<size_t> pending(n_nodes, 0);
  for (size_t i = 0; i < n_nodes; ++i) {
    for (const std::string& in : nodes_[i].inputs) {
      auto p = producer_of.find(in);
      if (in.empty() || p == producer_of.end()) continue;
      succ[p->second].push_back(i);
      ++pending[i];
    }
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < n_nodes; ++i)
    if (pending[i] == 0) ready.push(i);
  std::vector<size_t> order;
  order.reserve(n_nodes);
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (size_t s : succ[i])
      if (--pending[s] == 0) ready.push(s);
  }
  if (order.size() != n_nodes) {
    // Every node left has a pending producer that is also left: walk producers until a node
    // repeats; the walk from its first visit is a cycle.
    size_t start = 0;
    while (pending[start] == 0) ++start;
    std::vector<size_t> path;
    std::unordered_map<size_t, size_t> pos;
    size_t cur = start;
    while (!pos.count(cur)) {
      pos[cur] = path.size();
      path.push_back(cur);
      for (const std::string& in : nodes_[cur].inputs) {
        auto p = producer_of.find(in);
        if (!in.empty() && p != producer_of.end() && pending[p->second] != 0) {
          cur = p->second;
          break;
        }
      }
    }
    std::vector<size_t> cycle(path.begin() + static_cast<long>(pos[cur]), path.end());
    std::reverse(cycle.begin(), cycle.end());  // producer -> consumer order
    std::string names;
    for (size_t i : cycle) names += "'" + nodes_[i].name + "' -> ";
    names += "'" + nodes_[cycle.front()].name + "'";
    return err(StatusCode::kInvalidGraph, "the graph has a cycle through nodes " + names);
  }

  // 3. Build the Graph: inputs and constants first, then node outputs in topological order.
  Graph g;
  g.source_ = source_;
  g.metadata_ = metadata_;
  auto add_value = [&](Value v) {
    ValueId id = static_cast<ValueId>(g.values_.size());
    g.value_index_[v.name] = id;
    if (v.kind == ValueKind::kInput) g.inputs_.push_back(id);
    g.values_.push_back(std::move(v));
    return id;
  };
  g.values_.reserve(values_.size() + n_outputs);
  g.value_index_.reserve(values_.size() + n_outputs);
  g.nodes_.reserve(nodes_.size());
  for (const PendingValue& v : values_) add_value(Value{v.name, v.desc, v.kind, kNoId, false, v.data});
  std::unordered_map<std::string, const TensorDesc*> declared;
  for (const auto& [name, d] : declared_) declared[name] = &d;

  for (size_t i : order) {
    const PendingNode& pn = nodes_[i];
    NodeId nid = static_cast<NodeId>(g.nodes_.size());
    Node node{pn.op, pn.name, pn.attrs, {}, {}};
    for (const std::string& in : pn.inputs) node.inputs.push_back(in.empty() ? kNoId : g.value_index_.at(in));

    InferContext ctx{node, {}, {}, src + ": " + node.where(), pn.outputs.size()};
    for (ValueId v : node.inputs) {
      ctx.inputs.push_back(v == kNoId ? nullptr : &g.values_[v].desc);
      ctx.const_inputs.push_back(v != kNoId && g.values_[v].kind == ValueKind::kConstant
                                     ? g.values_[v].data.get() : nullptr);
    }
    Result<std::vector<TensorDesc>> out = shapes.infer(ctx);
    if (!out.is_ok()) {
      const std::string& m = out.status().message();
      // Shape rules prefix their message with ctx.where; add it when a rule did not.
      if (m.rfind(src + ":", 0) == 0) return out.status();
      return Status(out.status().code(), ctx.where + ": " + m);
    }
    if (out->size() != pn.outputs.size())
      return err(StatusCode::kInvalidGraph, node.where() + ": has " + std::to_string(pn.outputs.size()) +
                                                " outputs, the op produces " + std::to_string(out->size()));
    for (size_t k = 0; k < pn.outputs.size(); ++k) {
      const TensorDesc& d = (*out)[k];
      GRAPHI_RETURN_IF_ERROR(check_dims(ctx.where, "output " + std::to_string(k) + " '" + pn.outputs[k] + "'", d));
      auto dec = declared.find(pn.outputs[k]);
      if (dec != declared.end() && !(*dec->second == d))
        return err(StatusCode::kInvalidGraph, node.where() + ": output '" + pn.outputs[k] + "' is declared as " +
                                                  dec->second->to_string() + " but the op produces " + d.to_string());
      node.outputs.push_back(add_value(Value{pn.outputs[k], d, ValueKind::kIntermediate, nid, false, nullptr}));
    }
    g.nodes_.push_back(std::move(node));
  }
  for (const auto& [name, d] : declared_) {
    ValueId v = g.value_index_.count(name) ? g.value_index_.at(name) : kNoId;
    if (v == kNoId) return err(StatusCode::kInvalidGraph, "declared value '" + name + "' does not exist");
    if (!(g.values_[v].desc == d))
      return err(StatusCode::kInvalidGraph, "value '" + name + "' is declared as " + d.to_string() + " but is " +
                                                g.values_[v].desc.to_string());
  }
  for (const std::string& o : outputs_) {
    ValueId v = g.value_index_.at(o);
    g.values_[v].is_output = true;
    g.outputs_.push_back(v);
  }
  g.consumers_.resize(g.values_.size());
  for (NodeId n = 0; n < g.nodes_.size(); ++n)
    for (ValueId v : g.nodes_[n].inputs)
      if (v != kNoId && (g.consumers_[v].empty() || g.consumers_[v].back() != n)) g.consumers_[v].push_back(n);
  return g;
}

std::optional<ValueId> Graph::find_value(const std::string& name) const {
  auto it = value_index_.find(name);
  if (it == value_index_.end()) return std::nullopt;
  return it->second;
}

}  // namespace graphi::graph
