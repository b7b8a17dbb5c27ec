// The C API (include/graphi/graphi.h) over the public C++ API: argument checks, the per-thread
// last error, and C views of the C++ objects. No exception crosses the C boundary.
#include "graphi/graphi.h"

#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "graphi/graphi.hpp"

static_assert(GRAPHI_OK == static_cast<int>(graphi::StatusCode::kOk));
static_assert(GRAPHI_INVALID_ARGUMENT == static_cast<int>(graphi::StatusCode::kInvalidArgument));
static_assert(GRAPHI_INVALID_GRAPH == static_cast<int>(graphi::StatusCode::kInvalidGraph));
static_assert(GRAPHI_UNSUPPORTED == static_cast<int>(graphi::StatusCode::kUnsupported));
static_assert(GRAPHI_IO_ERROR == static_cast<int>(graphi::StatusCode::kIoError));
static_assert(GRAPHI_OUT_OF_MEMORY == static_cast<int>(graphi::StatusCode::kOutOfMemory));
static_assert(GRAPHI_INTERNAL == static_cast<int>(graphi::StatusCode::kInternal));
static_assert(GRAPHI_F32 == static_cast<int>(graphi::DType::kF32));
static_assert(GRAPHI_I32 == static_cast<int>(graphi::DType::kI32));
static_assert(GRAPHI_I64 == static_cast<int>(graphi::DType::kI64));

struct graphi_session {
  graphi::Session session;
  std::string config;
};

struct graphi_trainer {
  graphi::TrainingSession session;
  std::vector<graphi::Array> weights;  // snapshot for graphi_trainer_weight
  int64_t weights_step = -1;           // steps() when the snapshot was taken
};

struct graphi_outputs {
  std::vector<graphi::Array> arrays;
};

namespace {

thread_local std::string g_last_error;

graphi_status fail(graphi_status code, std::string message) {
  try {
    g_last_error = std::move(message);
  } catch (...) {
    g_last_error.clear();
  }
  return code;
}
graphi_status fail(const graphi::ApiError& e) {
  return fail(static_cast<graphi_status>(e.code), e.message);
}
graphi_status invalid(std::string message) {
  return fail(GRAPHI_INVALID_ARGUMENT, std::move(message));
}

// Runs `f` and turns an escaping exception into a status.
template <typename F>
graphi_status guarded(F&& f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return fail(GRAPHI_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return fail(GRAPHI_INTERNAL, e.what());
  } catch (...) {
    return fail(GRAPHI_INTERNAL, "unknown exception");
  }
}

void describe(const graphi::TensorInfo& info, const void* data, graphi_tensor* t) {
  t->name = info.name.c_str();
  t->dtype = static_cast<graphi_dtype>(info.dtype);
  t->rank = static_cast<int32_t>(info.shape.size());
  t->shape = info.shape.data();
  t->data = data;
  t->bytes = info.bytes();
}

// C input tensors -> borrowed Arrays, checking pointers and byte sizes.
graphi_status to_arrays(const graphi_tensor* inputs, size_t n, std::vector<graphi::Array>* out) {
  if (n > 0 && inputs == nullptr)
    return invalid("run: inputs is NULL but num_inputs is " + std::to_string(n));
  out->reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const graphi_tensor& t = inputs[i];
    const std::string where = "run: inputs[" + std::to_string(i) + "]";
    if (t.name == nullptr) return invalid(where + ": name is NULL");
    const std::string named = where + " ('" + t.name + "')";
    const size_t elem = graphi_dtype_size(t.dtype);
    if (elem == 0) return invalid(named + ": unknown dtype " + std::to_string(t.dtype));
    if (t.rank < 0) return invalid(named + ": negative rank");
    if (t.rank > 0 && t.shape == nullptr) return invalid(named + ": shape is NULL");
    std::vector<int64_t> shape(t.shape, t.shape + t.rank);
    size_t numel = 1;
    for (int64_t d : shape) {
      if (d < 0) return invalid(named + ": negative dimension " + std::to_string(d));
      if (d > 0 && numel > (size_t{1} << 48) / static_cast<size_t>(d))
        return invalid(named + ": shape has too many elements");
      numel *= static_cast<size_t>(d);
    }
    if (t.bytes != numel * elem)
      return invalid(named + ": bytes is " + std::to_string(t.bytes) + " but the shape needs " +
                     std::to_string(numel * elem));
    if (t.bytes > 0 && t.data == nullptr) return invalid(named + ": data is NULL");
    out->push_back(
        graphi::Array::view(t.name, static_cast<graphi::DType>(t.dtype), std::move(shape), t.data));
  }
  return GRAPHI_OK;
}

// graphi_options -> SessionOptions (NULL: defaults); `fn` names the caller in errors.
graphi_status session_options(const graphi_options* options, const std::string& fn,
                              graphi::SessionOptions* out) {
  graphi::SessionOptions& so = *out;
  if (options != nullptr) {
    so.executors = options->executors;
    so.threads = options->threads;
    so.scheduler = options->scheduler != nullptr ? options->scheduler : "";
    so.ring_capacity = options->ring_capacity;
    so.pin = options->pin != 0;
    if (options->cpuset != nullptr) so.cpuset = options->cpuset;
    so.optimize = options->optimize != 0;
    if (options->rnn_weights != nullptr) so.rnn_weights = options->rnn_weights;
    so.max_memory = options->max_memory;
    if (options->num_dims > 0 && (options->dim_names == nullptr || options->dim_values == nullptr))
      return invalid(fn + ": options->num_dims > 0 but dim_names or dim_values is NULL");
    for (size_t i = 0; i < options->num_dims; ++i) {
      if (options->dim_names[i] == nullptr)
        return invalid(fn + ": options->dim_names[" + std::to_string(i) + "] is NULL");
      so.dims[options->dim_names[i]] = options->dim_values[i];
    }
    if (options->num_override_initializers > 0 && options->override_initializers == nullptr)
      return invalid(fn +
                     ": options->num_override_initializers > 0 but override_initializers is NULL");
    for (size_t i = 0; i < options->num_override_initializers; ++i) {
      if (options->override_initializers[i] == nullptr)
        return invalid(fn + ": options->override_initializers[" + std::to_string(i) + "] is NULL");
      so.override_initializers.emplace_back(options->override_initializers[i]);
    }
  }
  return GRAPHI_OK;
}

}  // namespace

extern "C" {

const char* graphi_last_error(void) { return g_last_error.c_str(); }

const char* graphi_dtype_name(graphi_dtype dtype) {
  return graphi::dtype_str(static_cast<graphi::DType>(dtype));
}
size_t graphi_dtype_size(graphi_dtype dtype) {
  return graphi::dtype_bytes(static_cast<graphi::DType>(dtype));
}

void graphi_options_init(graphi_options* o) {
  if (o == nullptr) return;
  std::memset(o, 0, sizeof *o);
  o->executors = 0;  // 0 x 0: the plan's split (graphi_session_open_with_plan)
  o->threads = 0;
  o->scheduler = nullptr;  // cpf with several executors, else sequential
  o->ring_capacity = 1;
  o->pin = 1;
  o->cpuset = nullptr;
  o->optimize = 1;
  o->rnn_weights = nullptr;
  o->max_memory = 0;  // the available memory
  o->override_initializers = nullptr;
  o->num_override_initializers = 0;
}

graphi_status graphi_session_open(const char* path, const graphi_options* options,
                                  graphi_session** out) {
  return graphi_session_open_with_plan(path, options, nullptr, out);
}

graphi_status graphi_session_open_with_plan(const char* path, const graphi_options* options,
                                            const char* plan, graphi_session** out) {
  if (out != nullptr) *out = nullptr;
  return guarded([&]() -> graphi_status {
    if (out == nullptr) return invalid("graphi_session_open: out is NULL");
    if (path == nullptr) return invalid("graphi_session_open: path is NULL");
    graphi::SessionOptions so;
    so.plan = plan != nullptr && *plan != '\0' ? plan : "auto";
    if (graphi_status st = session_options(options, "graphi_session_open", &so); st != GRAPHI_OK)
      return st;
    graphi::Expected<graphi::Session> s = graphi::Session::open(path, so);
    if (!s) return fail(s.error());
    auto* h = new graphi_session{std::move(s).value(), {}};
    h->config = h->session.config_summary();
    *out = h;
    return GRAPHI_OK;
  });
}

void graphi_session_free(graphi_session* session) { delete session; }

size_t graphi_session_num_inputs(const graphi_session* s) {
  return s ? s->session.inputs().size() : 0;
}
size_t graphi_session_num_outputs(const graphi_session* s) {
  return s ? s->session.outputs().size() : 0;
}

graphi_status graphi_session_input(const graphi_session* s, size_t index, graphi_tensor* info) {
  if (s == nullptr || info == nullptr)
    return invalid("graphi_session_input: session or info is NULL");
  if (index >= s->session.inputs().size())
    return invalid("graphi_session_input: index " + std::to_string(index) + " out of range (" +
                   std::to_string(s->session.inputs().size()) + " inputs)");
  describe(s->session.inputs()[index], nullptr, info);
  return GRAPHI_OK;
}

graphi_status graphi_session_output(const graphi_session* s, size_t index, graphi_tensor* info) {
  if (s == nullptr || info == nullptr)
    return invalid("graphi_session_output: session or info is NULL");
  if (index >= s->session.outputs().size())
    return invalid("graphi_session_output: index " + std::to_string(index) + " out of range (" +
                   std::to_string(s->session.outputs().size()) + " outputs)");
  describe(s->session.outputs()[index], nullptr, info);
  return GRAPHI_OK;
}

int32_t graphi_session_run_calls(const graphi_session* s) {
  return s ? static_cast<int32_t>(s->session.run_calls()) : 0;
}
const char* graphi_session_config_summary(const graphi_session* s) {
  return s ? s->config.c_str() : "";
}
const char* graphi_session_passes_summary(const graphi_session* s) {
  return s ? s->session.passes_summary().c_str() : "";
}
const char* graphi_session_plan_summary(const graphi_session* s) {
  return s ? s->session.plan_summary().c_str() : "";
}

graphi_status graphi_session_set_tracing(graphi_session* s, int32_t on) {
  return guarded([&]() -> graphi_status {
    if (s == nullptr) return invalid("graphi_session_set_tracing: session is NULL");
    s->session.set_tracing(on != 0);
    return GRAPHI_OK;
  });
}

graphi_status graphi_session_write_trace(graphi_session* s, const char* path) {
  return guarded([&]() -> graphi_status {
    if (s == nullptr) return invalid("graphi_session_write_trace: session is NULL");
    if (path == nullptr) return invalid("graphi_session_write_trace: path is NULL");
    auto r = s->session.write_trace(path);
    if (!r) return fail(r.error());
    return GRAPHI_OK;
  });
}

graphi_status graphi_session_run(graphi_session* s, const graphi_tensor* inputs, size_t num_inputs,
                                 graphi_outputs** outputs) {
  if (outputs != nullptr) *outputs = nullptr;
  return guarded([&]() -> graphi_status {
    if (s == nullptr) return invalid("graphi_session_run: session is NULL");
    if (outputs == nullptr) return invalid("graphi_session_run: outputs is NULL");
    std::vector<graphi::Array> in;
    if (graphi_status st = to_arrays(inputs, num_inputs, &in); st != GRAPHI_OK) return st;
    auto r = s->session.run(in);
    if (!r) return fail(r.error());
    *outputs = new graphi_outputs{std::move(r).value()};
    return GRAPHI_OK;
  });
}

size_t graphi_outputs_count(const graphi_outputs* o) { return o ? o->arrays.size() : 0; }

graphi_status graphi_outputs_get(const graphi_outputs* o, size_t index, graphi_tensor* tensor) {
  if (o == nullptr || tensor == nullptr)
    return invalid("graphi_outputs_get: outputs or tensor is NULL");
  if (index >= o->arrays.size())
    return invalid("graphi_outputs_get: index " + std::to_string(index) + " out of range (" +
                   std::to_string(o->arrays.size()) + " outputs)");
  const graphi::Array& a = o->arrays[index];
  describe(a.info(), a.data(), tensor);
  return GRAPHI_OK;
}

void graphi_outputs_free(graphi_outputs* outputs) { delete outputs; }

graphi_status graphi_session_run_into(graphi_session* s, const graphi_tensor* inputs,
                                      size_t num_inputs, graphi_buffer* buffers,
                                      size_t num_buffers) {
  return guarded([&]() -> graphi_status {
    if (s == nullptr) return invalid("graphi_session_run_into: session is NULL");
    const std::vector<graphi::TensorInfo>& outs = s->session.outputs();
    if (num_buffers != outs.size())
      return invalid("graphi_session_run_into: num_buffers is " + std::to_string(num_buffers) +
                     " but the model has " + std::to_string(outs.size()) + " outputs");
    if (num_buffers > 0 && buffers == nullptr)
      return invalid("graphi_session_run_into: buffers is NULL");
    // Check the buffers before running (output shapes are static), so nothing is written on error.
    for (size_t i = 0; i < num_buffers; ++i) {
      buffers[i].bytes_written = 0;
      const std::string where = "graphi_session_run_into: buffers[" + std::to_string(i) +
                                "] (output '" + outs[i].name + "')";
      if (outs[i].bytes() > 0 && buffers[i].data == nullptr)
        return invalid(where + ": data is NULL");
      if (buffers[i].capacity < outs[i].bytes())
        return invalid(where + ": capacity " + std::to_string(buffers[i].capacity) +
                       " bytes, needs " + std::to_string(outs[i].bytes()));
    }
    std::vector<graphi::Array> in;
    if (graphi_status st = to_arrays(inputs, num_inputs, &in); st != GRAPHI_OK) return st;
    auto r = s->session.run(in);
    if (!r) return fail(r.error());
    for (size_t i = 0; i < num_buffers; ++i) {  // the engine checks outputs against the graph
      const graphi::Array& a = (*r)[i];
      if (a.bytes() > buffers[i].capacity)
        return fail(GRAPHI_INTERNAL, "output '" + a.name() + "' larger than declared");
    }
    for (size_t i = 0; i < num_buffers; ++i) {
      const graphi::Array& a = (*r)[i];
      if (a.bytes() > 0) std::memcpy(buffers[i].data, a.data(), a.bytes());
      buffers[i].bytes_written = a.bytes();
    }
    return GRAPHI_OK;
  });
}

void graphi_train_options_init(graphi_train_options* o) {
  if (o == nullptr) return;
  const graphi::TrainingOptions d;
  o->loss = "ce";
  o->label_input = "labels";
  o->prediction = nullptr;
  o->optimizer = "sgd";
  o->lr = d.lr;
  o->momentum = d.momentum;
  o->weight_decay = d.weight_decay;
  o->beta1 = d.beta1;
  o->beta2 = d.beta2;
  o->epsilon = d.epsilon;
}

graphi_status graphi_trainer_open(const char* path, const graphi_options* options,
                                  const graphi_train_options* train, graphi_trainer** out) {
  if (out != nullptr) *out = nullptr;
  return guarded([&]() -> graphi_status {
    if (out == nullptr) return invalid("graphi_trainer_open: out is NULL");
    if (path == nullptr) return invalid("graphi_trainer_open: path is NULL");
    graphi::SessionOptions so;
    if (graphi_status st = session_options(options, "graphi_trainer_open", &so); st != GRAPHI_OK)
      return st;
    graphi::TrainingOptions to;
    if (train != nullptr) {
      if (train->loss == nullptr || train->label_input == nullptr || train->optimizer == nullptr)
        return invalid(
            "graphi_trainer_open: train->loss, label_input and optimizer must not be NULL");
      to.loss = train->loss;
      to.label_input = train->label_input;
      to.prediction = train->prediction ? train->prediction : "";
      to.optimizer = train->optimizer;
      to.lr = train->lr;
      to.momentum = train->momentum;
      to.weight_decay = train->weight_decay;
      to.beta1 = train->beta1;
      to.beta2 = train->beta2;
      to.epsilon = train->epsilon;
    }
    graphi::Expected<graphi::TrainingSession> t = graphi::TrainingSession::open(path, to, so);
    if (!t) return fail(t.error());
    *out = new graphi_trainer{std::move(t).value(), {}, -1};
    return GRAPHI_OK;
  });
}

void graphi_trainer_free(graphi_trainer* trainer) { delete trainer; }

graphi_status graphi_trainer_step(graphi_trainer* trainer, const graphi_tensor* inputs,
                                  size_t num_inputs, float* loss) {
  return guarded([&]() -> graphi_status {
    if (trainer == nullptr) return invalid("graphi_trainer_step: trainer is NULL");
    if (loss == nullptr) return invalid("graphi_trainer_step: loss is NULL");
    std::vector<graphi::Array> arrays;
    if (graphi_status st = to_arrays(inputs, num_inputs, &arrays); st != GRAPHI_OK) return st;
    graphi::Expected<float> l = trainer->session.train_step(arrays);
    if (!l) return fail(l.error());
    *loss = *l;
    return GRAPHI_OK;
  });
}

size_t graphi_trainer_num_weights(const graphi_trainer* trainer) {
  return trainer ? trainer->session.weights().size() : 0;
}

graphi_status graphi_trainer_weight(graphi_trainer* trainer, size_t index, graphi_tensor* weight) {
  return guarded([&]() -> graphi_status {
    if (trainer == nullptr || weight == nullptr)
      return invalid("graphi_trainer_weight: trainer or weight is NULL");
    if (trainer->weights_step != trainer->session.steps() || trainer->weights.empty()) {
      trainer->weights = trainer->session.weights();
      trainer->weights_step = trainer->session.steps();
    }
    if (index >= trainer->weights.size())
      return invalid("graphi_trainer_weight: index " + std::to_string(index) + " out of range (" +
                     std::to_string(trainer->weights.size()) + " weights)");
    const graphi::Array& a = trainer->weights[index];
    describe(a.info(), a.data(), weight);
    return GRAPHI_OK;
  });
}

graphi_status graphi_trainer_save(const graphi_trainer* trainer, const char* path) {
  return guarded([&]() -> graphi_status {
    if (trainer == nullptr || path == nullptr)
      return invalid("graphi_trainer_save: trainer or path is NULL");
    graphi::Expected<bool> r = trainer->session.save(path);
    if (!r) return fail(r.error());
    return GRAPHI_OK;
  });
}

}  // extern "C"
