#include "engine/batch_slices.h"

#include <cstring>
#include <string>
#include <vector>

#include "engine/input_binding.h"

namespace graphi::engine {

Result<std::unique_ptr<BatchSlices>> BatchSlices::create(const graph::Graph& full,
                                                         std::unique_ptr<Session> slice_session,
                                                         int64_t batch, int64_t slice) {
  if (!slice_session)
    return Status::invalid_argument("BatchSlices: a graph and a Session are required");
  if (slice < 1 || batch < 2 || batch % slice != 0 || slice == batch)
    return Status::invalid_argument("BatchSlices: batch " + std::to_string(batch) +
                                    " cannot run in slices of " + std::to_string(slice));
  const graph::Graph& s = slice_session->graph();
  auto check = [&](std::span<const graph::ValueId> a, std::span<const graph::ValueId> b,
                   const char* what) -> Status {
    if (a.size() != b.size())
      return Status::invalid_argument(std::string("BatchSlices: the graphs' ") + what + " differ");
    for (size_t i = 0; i < a.size(); ++i) {
      const graph::Value& x = full.value(a[i]);
      const graph::Value& y = s.value(b[i]);
      TensorDesc want = x.desc;
      if (want.shape.empty() || want.shape[0] != batch || x.name != y.name)
        return Status::invalid_argument("BatchSlices: " + std::string(what) + " '" + x.name + "' " +
                                        x.desc.to_string() + " has no batch of " +
                                        std::to_string(batch) + " on dim 0");
      want.shape[0] = slice;
      if (y.desc != want)
        return Status::invalid_argument("BatchSlices: " + std::string(what) + " '" + x.name +
                                        "' is " + y.desc.to_string() + " in the slice graph, " +
                                        want.to_string() + " expected");
    }
    return Status::ok();
  };
  GRAPHI_RETURN_IF_ERROR(check(full.inputs(), s.inputs(), "input"));
  GRAPHI_RETURN_IF_ERROR(check(full.outputs(), s.outputs(), "output"));
  std::unique_ptr<BatchSlices> b(new BatchSlices());
  for (graph::ValueId id : full.inputs())
    b->inputs_.emplace_back(full.value(id).name, full.value(id).desc);
  for (graph::ValueId id : full.outputs())
    b->outputs_.emplace_back(full.value(id).name, full.value(id).desc);
  b->source_ = full.source();
  b->session_ = std::move(slice_session);
  b->batch_ = batch;
  b->slice_ = slice;
  return b;
}

Result<NamedTensors> BatchSlices::run(const NamedTensors& inputs) {
  // The caller's tensors in the whole graph's input order, checked (and the errors worded) as
  // Session::run checks them.
  std::vector<const Tensor*> in;
  GRAPHI_RETURN_IF_ERROR(bind_named_inputs(
      source_, inputs_.size(), [&](size_t i) -> const std::string& { return inputs_[i].first; },
      [&](size_t i) -> const TensorDesc& { return inputs_[i].second; },
      [&](const std::string& name) {
        size_t k = 0;
        while (k < inputs_.size() && inputs_[k].first != name) ++k;
        return k;
      },
      inputs, in));

  NamedTensors out;
  out.reserve(outputs_.size());
  for (const auto& [name, desc] : outputs_) out.emplace_back(name, Tensor(desc));
  // Slice p of every tensor is its p-th 1 / parts of the bytes (dim 0 outermost).
  const int64_t parts = batch_ / slice_;
  std::vector<const void*> in_p(in.size());
  std::vector<void*> out_p(out.size());
  const bool tracing = tracing_.load(std::memory_order_relaxed);
  RunTrace traced;
  for (int64_t p = 0; p < parts; ++p) {
    for (size_t k = 0; k < in.size(); ++k)
      in_p[k] = static_cast<const char*>(in[k]->data()) + p * (in[k]->bytes() / parts);
    for (size_t o = 0; o < out.size(); ++o)
      out_p[o] = static_cast<char*>(out[o].second.data()) + p * (out[o].second.bytes() / parts);
    GRAPHI_RETURN_IF_ERROR(session_->run_buffers(in_p, out_p));
    if (tracing) {
      RunTrace t = session_->last_trace();
      if (p == 0) {
        traced = std::move(t);
        continue;
      }
      traced.run_end_ns = t.run_end_ns;
      traced.ops.insert(traced.ops.end(), t.ops.begin(), t.ops.end());
      traced.scheduler_spans.insert(traced.scheduler_spans.end(), t.scheduler_spans.begin(),
                                    t.scheduler_spans.end());
    }
  }
  if (tracing) {
    std::lock_guard<std::mutex> lock(trace_mutex_);
    last_trace_ = std::move(traced);
  }
  return out;
}

void BatchSlices::set_tracing(bool on) {
  session_->set_tracing(on);
  tracing_.store(on, std::memory_order_relaxed);
}

RunTrace BatchSlices::last_trace() const {
  std::lock_guard<std::mutex> lock(trace_mutex_);
  return last_trace_;
}

}  // namespace graphi::engine
