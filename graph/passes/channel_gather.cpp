#include "graph/passes/channel_gather.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "graph/passes/pass_util.h"

namespace graphi::graph::passes {
namespace {

bool f32_nchw(const Value& v) { return v.desc.dtype == DType::kF32 && v.desc.rank() == 4; }

struct Source {
  ValueId value = kNoId;
  int64_t channel = 0;
  bool operator==(const Source& o) const { return value == o.value && channel == o.channel; }
};
using ChannelMap = std::vector<Source>;

// What made a mapped value: the node and, for a shuffle, the Reshape and Transpose before it.
struct Producer {
  NodeId node = 0;
  bool concat = false;
  std::vector<NodeId> chain;
};

// The shuffle Reshape -> Transpose -> Reshape ending at node `r2`: its input x, or kNoId.
ValueId shuffle_input(const Graph& g, const Node& r2, int64_t* groups, std::vector<NodeId>* chain) {
  if (r2.op != "Reshape" || r2.inputs.empty() || r2.inputs[0] == kNoId) return kNoId;
  const ValueId t = r2.inputs[0];
  const NodeId tn = g.value(t).producer;
  if (tn == kNoId || sole_reader(g, t) == kNoId) return kNoId;
  const Node& tr = g.node(tn);
  auto perm = attr_ints(tr.attrs, "", "perm", {});
  if (tr.op != "Transpose" || tr.inputs.size() != 1 || !perm.is_ok() ||
      *perm != std::vector<int64_t>{0, 2, 1, 3, 4})
    return kNoId;
  const ValueId r = tr.inputs[0];
  const NodeId rn = g.value(r).producer;
  if (rn == kNoId || sole_reader(g, r) == kNoId) return kNoId;
  const Node& r1 = g.node(rn);
  if (r1.op != "Reshape" || r1.inputs.empty() || r1.inputs[0] == kNoId) return kNoId;
  const ValueId x = r1.inputs[0];
  const Shape& xs = g.value(x).desc.shape;
  const Shape& rs = g.value(r).desc.shape;
  if (!f32_nchw(g.value(x)) || g.value(r2.outputs[0]).desc.shape != xs || rs.size() != 5 ||
      rs[0] != xs[0] || rs[3] != xs[2] || rs[4] != xs[3] || rs[1] * rs[2] != xs[1])
    return kNoId;
  *groups = rs[1];
  *chain = {rn, tn};
  return x;
}

}  // namespace

Result<ChannelGatherResult> gather_channels(const Graph& g, const ShapeInferencer& shapes) {
  ChannelGatherResult result;
  std::unordered_map<ValueId, ChannelMap> maps;
  std::unordered_map<ValueId, Producer> made_by;
  auto expand = [&](ValueId v) -> ChannelMap {
    auto it = maps.find(v);
    if (it != maps.end()) return it->second;
    ChannelMap m;
    for (int64_t c = 0; c < g.value(v).desc.shape[1]; ++c) m.push_back({v, c});
    return m;
  };
  for (NodeId id = 0; id < g.num_nodes(); ++id) {
    const Node& n = g.node(id);
    if (n.outputs.empty() || n.inputs.empty() || n.inputs[0] == kNoId) continue;
    if (n.op == "Split" && f32_nchw(g.value(n.inputs[0])) && n.outputs.size() > 1) {
      // PyTorch's chunk along the channels: each piece is a run of the input's channels (kept
      // only when a piece flows on into a composed op: see below).
      const auto axis = node_axis(n, 4);
      auto usable = [&](ValueId o) { return o != kNoId && f32_nchw(g.value(o)); };
      if (!axis || *axis != 1 || !std::all_of(n.outputs.begin(), n.outputs.end(), usable)) continue;
      const ChannelMap whole = expand(n.inputs[0]);
      int64_t at = 0;
      for (ValueId o : n.outputs) {
        const int64_t len = g.value(o).desc.shape[1];
        maps[o] = ChannelMap(whole.begin() + at, whole.begin() + at + len);
        made_by[o] = {id, false, {}};
        at += len;
      }
      continue;
    }
    if (n.outputs.size() != 1) continue;
    const ValueId y = n.outputs[0];
    if (!f32_nchw(g.value(y))) continue;
    if (n.op == "Concat") {
      const auto axis = node_axis(n, 4);
      if (!axis || *axis != 1) continue;
      ChannelMap m;
      bool ok = true;
      for (ValueId v : n.inputs) {
        ok = ok && v != kNoId && f32_nchw(g.value(v));
        if (!ok) break;
        const ChannelMap part = expand(v);
        m.insert(m.end(), part.begin(), part.end());
      }
      if (!ok) continue;
      maps[y] = std::move(m);
      made_by[y] = {id, true, {}};
    } else if (n.op == "Slice" && f32_nchw(g.value(n.inputs[0]))) {
      const auto range = slice_range(g, n, 1);
      if (!range || range->second <= range->first) continue;
      const ChannelMap whole = expand(n.inputs[0]);
      maps[y] = ChannelMap(whole.begin() + range->first, whole.begin() + range->second);
      made_by[y] = {id, false, {}};
    } else if (n.op == "Reshape") {
      int64_t groups = 0;
      std::vector<NodeId> chain;
      const ValueId x = shuffle_input(g, n, &groups, &chain);
      if (x == kNoId) continue;
      const ChannelMap in = expand(x);
      const int64_t c = static_cast<int64_t>(in.size()), per = c / groups;
      ChannelMap m(in.size());
      // [N, g, C/g] transposed to [N, C/g, g]: output channel i * g + j is input j * C/g + i.
      for (int64_t i = 0; i < per; ++i)
        for (int64_t j = 0; j < groups; ++j)
          m[static_cast<size_t>(i * groups + j)] = in[static_cast<size_t>(j * per + i)];
      maps[y] = std::move(m);
      made_by[y] = {id, false, std::move(chain)};
    }
  }
  // A Split is worth composing only when one of its pieces is read by a composed op (a Concat,
  // Slice, Split or shuffle); one whose pieces only feed other ops (conv_merge's, feeding
  // convolutions; a bidirectional LSTM's directions) stays a Split: gathers would only copy.
  std::unordered_set<NodeId> composed_nodes;
  for (const auto& [v, p] : made_by) {
    composed_nodes.insert(p.node);
    composed_nodes.insert(p.chain.begin(), p.chain.end());
  }
  for (NodeId id = 0; id < g.num_nodes(); ++id) {
    const Node& n = g.node(id);
    if (n.op != "Split" || n.outputs.empty() || !made_by.count(n.outputs[0]) ||
        made_by.at(n.outputs[0]).node != id)
      continue;
    const bool flows_on = std::any_of(n.outputs.begin(), n.outputs.end(), [&](ValueId o) {
      return std::any_of(g.consumers(o).begin(), g.consumers(o).end(),
                         [&](NodeId c) { return composed_nodes.count(c) > 0; });
    });
    if (!flows_on)
      for (ValueId o : n.outputs) made_by.erase(o);
  }
  // Only a Concat composes nothing away by itself: without a Slice or shuffle, nothing to do.
  if (std::all_of(made_by.begin(), made_by.end(),
                  [](const auto& kv) { return kv.second.concat; })) {
    result.graph = g;
    return result;
  }

  // From the last node back: a mapped value is made only where a node that stays reads it.
  Rewrite rw(g);
  std::vector<bool> needed(g.num_values(), false);
  for (ValueId v : g.outputs()) needed[v] = true;
  std::vector<bool> composed(g.num_nodes(), false);
  for (NodeId id = static_cast<NodeId>(g.num_nodes()); id-- > 0;) {
    if (composed[id]) continue;
    const Node& n = g.node(id);
    // Composed when it made every one of its outputs' maps (a Split has several) and is not a
    // Concat something that stays reads.
    const bool mapped =
        !n.outputs.empty() && std::all_of(n.outputs.begin(), n.outputs.end(), [&](ValueId y) {
          auto it = made_by.find(y);
          return it != made_by.end() && it->second.node == id && !(it->second.concat && needed[y]);
        });
    if (!mapped) {
      for (ValueId v : n.inputs)
        if (v != kNoId) needed[v] = true;
      continue;
    }
    rw.remove(id);
    for (NodeId c : made_by.at(n.outputs[0]).chain) {
      rw.remove(c);
      composed[c] = true;
    }
    for (const ValueId& y : n.outputs) {
      if (!needed[y]) {
        ++result.composed;
        continue;
      }
      const ChannelMap& m = maps.at(y);
      std::vector<ValueId> sources;
      std::vector<int64_t> source, channel;
      for (const Source& s : m) {
        auto at = std::find(sources.begin(), sources.end(), s.value);
        if (at == sources.end()) at = sources.insert(sources.end(), s.value);
        source.push_back(at - sources.begin());
        channel.push_back(s.channel);
        needed[s.value] = true;
      }
      if (sources.size() == 1 && !g.value(y).is_output && m == expand(sources[0])) {
        rw.replace_uses(y, g.value(sources[0]).name);
        ++result.composed;
        continue;
      }
      std::vector<std::string> inputs;
      for (ValueId v : sources) inputs.push_back(g.value(v).name);
      Attributes a;
      a.set("source", source);
      a.set("channel", channel);
      const size_t k = static_cast<size_t>(&y - n.outputs.data());
      rw.add_node("ChannelGather", k == 0 ? n.name : n.name + "/" + std::to_string(k), inputs,
                  {g.value(y).name}, a);
      ++result.gathers;
    }
  }
  GRAPHI_ASSIGN_OR_RETURN(result.graph, rw.finish(shapes));
  return result;
}

}  // namespace graphi::graph::passes
