// Chrome Trace Event Format (the JSON Object Format: {"traceEvents": [...], "otherData": {...}}),
// as Perfetto and chrome://tracing read it. Tracks (tids of pid 1): executor e is tid e + 1,
// then the scheduler role, the bootstrap executor and, when any op ran there, the client thread.
#include "profiler/chrome_trace.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

namespace graphi::profiler {

namespace {

using nlohmann::json;

struct Tracks {
  int executors;
  int tid(int32_t executor) const {
    if (executor >= 0) return executor + 1;
    if (executor == engine::kBootstrapExecutor) return executors + 2;
    return executors + 3;  // inline on the client thread
  }
  int scheduler() const { return executors + 1; }
};

json tensor_list(const engine::Plan& plan, std::span<const graph::ValueId> ids, uint64_t& total) {
  json list = json::array();
  for (graph::ValueId v : ids) {
    if (v == graph::kNoId) {
      list.push_back(nullptr);  // absent optional input: keeps slot positions
      continue;
    }
    const graph::Value& val = plan.graph().value(v);
    total += val.desc.bytes();
    list.push_back({{"name", val.name},
                    {"dtype", dtype_name(val.desc.dtype)},
                    {"shape", val.desc.shape},
                    {"bytes", val.desc.bytes()}});
  }
  return list;
}

json thread_meta(int tid, const std::string& name, int sort) {
  return json::array({{{"ph", "M"}, {"pid", 1}, {"tid", tid}, {"name", "thread_name"}, {"args", {{"name", name}}}},
                      {{"ph", "M"}, {"pid", 1}, {"tid", tid}, {"name", "thread_sort_index"}, {"args", {{"sort_index", sort}}}}});
}

const char* kind_name(engine::SchedulerSpan::Kind k) {
  switch (k) {
    case engine::SchedulerSpan::kHandOff: return "hand-off";
    case engine::SchedulerSpan::kIdle: return "idle";
    case engine::SchedulerSpan::kStep: return "step";
  }
  return "?";
}

}  // namespace

std::string chrome_trace_json(const engine::Plan& plan, const engine::RunTrace& trace) {
  const graph::Graph& g = plan.graph();
  const Tracks tracks{trace.executors};
  const uint64_t t0 = trace.run_start_ns;
  auto us = [&](uint64_t ns) { return static_cast<double>(static_cast<int64_t>(ns - t0)) * 1e-3; };

  json events = json::array();
  events.push_back({{"ph", "M"}, {"pid", 1}, {"name", "process_name"}, {"args", {{"name", "graphi " + g.source()}}}});
  const std::string team = std::to_string(trace.threads) + (trace.threads == 1 ? " thread" : " threads");
  for (int e = 0; e < trace.executors; ++e)
    for (json& m : thread_meta(tracks.tid(e), "executor " + std::to_string(e) + " (" + team + ")", e)) events.push_back(m);
  for (json& m : thread_meta(tracks.scheduler(), "scheduler (" + trace.scheduler + ")", trace.executors)) events.push_back(m);
  for (json& m : thread_meta(tracks.tid(engine::kBootstrapExecutor), "bootstrap", trace.executors + 1))
    events.push_back(m);
  bool inline_ops = false;
  for (const engine::OpSpan& s : trace.ops) inline_ops |= s.executor == engine::kInlineExecutor;
  if (inline_ops)
    for (json& m : thread_meta(tracks.tid(engine::kInlineExecutor), "client (inline)", trace.executors + 2))
      events.push_back(m);

  for (const engine::OpSpan& s : trace.ops) {
    if (s.node >= plan.num_nodes()) continue;
    const graph::Node& node = g.node(s.node);
    uint64_t bytes_in = 0, bytes_out = 0;
    json inputs = tensor_list(plan, plan.inputs(s.node), bytes_in);
    json outputs = tensor_list(plan, plan.outputs(s.node), bytes_out);
    std::span<const graph::NodeId> succ = plan.successors(s.node);
    events.push_back({{"ph", "X"},
                      {"pid", 1},
                      {"tid", tracks.tid(s.executor)},
                      {"name", node.op},
                      {"cat", "op"},
                      {"ts", us(s.start_ns)},
                      {"dur", static_cast<double>(s.end_ns - s.start_ns) * 1e-3},
                      {"args",
                       {{"node", node.name},
                        {"node_id", s.node},
                        {"op", node.op},
                        {"kernel", plan.kernel_name(s.node)},
                        {"executor", s.executor},
                        {"team", s.team},
                        {"level", plan.level(s.node)},
                        {"inputs", std::move(inputs)},
                        {"outputs", std::move(outputs)},
                        {"bytes_in", bytes_in},
                        {"bytes_out", bytes_out},
                        {"successors", std::vector<uint32_t>(succ.begin(), succ.end())}}}});
  }
  for (const engine::SchedulerSpan& s : trace.scheduler_spans) {
    std::string name = kind_name(s.kind);
    if (s.kind == engine::SchedulerSpan::kHandOff) name += " -> executor " + std::to_string(s.executor);
    json ev = {{"ph", "X"},
               {"pid", 1},
               {"tid", tracks.scheduler()},
               {"name", name},
               {"cat", "scheduler"},
               {"ts", us(s.start_ns)},
               {"dur", static_cast<double>(s.end_ns - s.start_ns) * 1e-3}};
    if (s.executor >= 0) ev["args"] = {{"executor", s.executor}};
    events.push_back(std::move(ev));
  }
  json doc = {{"traceEvents", std::move(events)},
              {"displayTimeUnit", "ns"},
              {"otherData",
               {{"source", g.source()},
                {"scheduler", trace.scheduler},
                {"executors", trace.executors},
                {"threads", trace.threads},
                {"nodes", plan.num_nodes()},
                {"run_start_ns", trace.run_start_ns},
                {"makespan_us", static_cast<double>(trace.run_end_ns - trace.run_start_ns) * 1e-3}}}};
  return doc.dump();
}

Status write_chrome_trace(const std::string& path, const engine::Plan& plan, const engine::RunTrace& trace) {
  if (trace.run_end_ns == 0)
    return Status::invalid_argument(path + ": no trace to write (tracing was off, or nothing ran yet)");
  const std::string text = chrome_trace_json(plan, trace);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Status::io_error(path + ": cannot open for writing (" + std::strerror(errno) + ")");
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) return Status::io_error(path + ": write failed (" + std::strerror(errno) + ")");
  return Status::ok();
}

}  // namespace graphi::profiler
