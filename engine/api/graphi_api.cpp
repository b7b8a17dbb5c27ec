// The public C++ API (include/graphi/graphi.hpp) over the internal engine::Session: loading and
// passes as `graphi run` does them, Arrays <-> internal Tensors, Status -> ApiError, and no
// exception ever leaves a public function.
#include "graphi/graphi.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <new>
#include <set>
#include <string>

#include "engine/batch_slices.h"
#include "engine/model_loader.h"
#include "engine/session.h"
#include "engine/training_session.h"
#include "graph/onnx/onnx_import.h"
#include "profiler/batch_split_choice.h"
#include "profiler/chrome_trace.h"
#include "profiler/plan_choice.h"
#include "profiler/split_check.h"

namespace graphi {
namespace {

ApiError to_error(const Status& s) { return ApiError{s.code(), s.message()}; }

// The plan line ("graphi: plan auto: 2x1 cpf (...)") goes to stderr once per distinct line and
// process: a user sees what was chosen for each model, a server that opens the same model for
// every replica does not repeat it. Session::plan() returns it every time.
void say_plan_once(const std::string& line) {
  static std::mutex mutex;
  static std::set<std::string> said;
  std::lock_guard<std::mutex> lock(mutex);
  if (said.insert(line).second) std::fprintf(stderr, "%s\n", line.c_str());
}

// Runs `f` (returning Expected<T>) and turns an escaping exception into an ApiError.
template <typename F>
auto guarded(const char* what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return ApiError{StatusCode::kOutOfMemory, std::string(what) + ": out of memory"};
  } catch (const std::exception& e) {
    return ApiError{StatusCode::kInternal, std::string(what) + ": " + e.what()};
  } catch (...) {
    return ApiError{StatusCode::kInternal, std::string(what) + ": unknown exception"};
  }
}

bool valid_dtype(DType t) { return t == DType::kF32 || t == DType::kI32 || t == DType::kI64; }

TensorInfo info_of(const graph::Graph& g, graph::ValueId id) {
  const graph::Value& v = g.value(id);
  return TensorInfo{v.name, v.desc.dtype, v.desc.shape};
}

// Owning storage holding an internal Tensor (64-byte aligned), so outputs move without a copy.
std::shared_ptr<void> hold(Tensor t) {
  auto p = std::make_shared<Tensor>(std::move(t));
  return std::shared_ptr<void>(p, p->data());
}

// Checks an input Array and copies it into an internal Tensor.
Result<Tensor> to_tensor(const Array& a) {
  const std::string where = "input '" + a.name() + "'";
  if (!valid_dtype(a.dtype()))
    return Status::invalid_argument(where + ": unknown dtype value " +
                                    std::to_string(static_cast<int32_t>(a.dtype())));
  int64_t n = 1;
  for (int64_t d : a.shape()) {
    if (d < 0) return Status::invalid_argument(where + ": negative dimension " + std::to_string(d));
    if (d > 0 && n > (int64_t{1} << 48) / d)
      return Status::invalid_argument(where + ": shape has too many elements");
    n *= d;
  }
  if (n > 0 && a.data() == nullptr)
    return Status::invalid_argument(where + ": data pointer is null");
  Tensor t(TensorDesc{a.dtype(), a.shape()});
  if (t.bytes() > 0) std::memcpy(t.data(), a.data(), t.bytes());
  return t;
}

// The import options of `options` (options.dims for an .onnx file's symbolic dims).
Result<graph::ImportOptions> import_options(const SessionOptions& options,
                                            std::map<std::string, Tensor>* defaults) {
  graph::ImportOptions onnx;
  onnx.max_memory = options.max_memory;
  onnx.override_initializers.insert(options.override_initializers.begin(),
                                    options.override_initializers.end());
  onnx.initializer_defaults = defaults;
  for (const auto& [name, value] : options.dims) {
    if (value < 1)
      return Status::invalid_argument("dims: '" + name + "' must be a positive integer, got " +
                                      std::to_string(value));
    onnx.dims[name] = value;
  }
  for (const auto& [name, shape] : options.input_shapes) onnx.input_shapes[name] = shape;
  return onnx;
}

// Reads `path` with import_options(options).
Result<std::shared_ptr<const graph::Graph>> load(
    const std::string& path, const SessionOptions& options,
    std::map<std::string, Tensor>* defaults = nullptr) {
  GRAPHI_ASSIGN_OR_RETURN(graph::ImportOptions onnx, import_options(options, defaults));
  return engine::load_model(path, onnx);
}

}  // namespace

size_t dtype_bytes(DType t) { return valid_dtype(t) ? dtype_size(t) : 0; }
const char* dtype_str(DType t) { return valid_dtype(t) ? dtype_name(t) : "unknown"; }

// ---- Array ----

Array::Array(TensorInfo info) : info_(std::move(info)) {
  // A bad dtype or negative dim gives an empty owning Array rather than a crash; run() rejects it.
  bool ok = valid_dtype(info_.dtype);
  for (int64_t d : info_.shape) ok = ok && d >= 0;
  owned_ = true;
  if (!ok) return;
  storage_ = hold(Tensor(TensorDesc{info_.dtype, info_.shape}));
  data_ = storage_.get();
}

Array Array::view(std::string name, DType dtype, std::vector<int64_t> shape, const void* data) {
  Array a;
  a.info_ = TensorInfo{std::move(name), dtype, std::move(shape)};
  a.data_ = data;
  a.owned_ = false;
  return a;
}

Array Array::copy_of(std::string name, DType dtype, std::vector<int64_t> shape, const void* data) {
  Array a(TensorInfo{std::move(name), dtype, std::move(shape)});
  if (a.data_ != nullptr && data != nullptr && a.bytes() > 0)
    std::memcpy(const_cast<void*>(a.data_), data, a.bytes());
  return a;
}

Array Array::clone() const { return copy_of(info_.name, info_.dtype, info_.shape, data_); }

// ---- Session ----

struct Session::Impl {
  std::unique_ptr<engine::Session> session;  // declared first: destroyed last
  // Set when the batch runs in slices (then `session` is null: slices owns the Session).
  std::unique_ptr<engine::BatchSlices> slices;
  SessionOptions options;
  std::vector<TensorInfo> inputs, outputs;
  std::vector<std::string> bool_values;  // graph/onnx/onnx_import.h kBoolValuesKey
  std::vector<std::string> float16_values, bfloat16_values;  // kFloat16ValuesKey, ...
  // Initializers that options.override_initializers made inputs: fed when run() has none.
  std::map<std::string, Tensor> defaults;
  std::string passes;
  std::string plan;  // plan_summary()
  // run() calls inside this Session, counted from their first statement: a caller still copying
  // its inputs has not reached engine::Session::run (which counts its own callers) yet, so the
  // destructor cancels the engine's runs, then waits here for every caller to leave before the
  // engine Session goes.
  mutable std::mutex callers_mutex;
  std::condition_variable callers_left;
  int callers = 0;

  engine::Session& active() const { return slices ? slices->session() : *session; }

  ~Impl() {
    if (session) session->cancel();
    if (slices) slices->session().cancel();
    std::unique_lock<std::mutex> lock(callers_mutex);
    callers_left.wait(lock, [&] { return callers == 0; });
  }
};

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

Expected<ModelSignature> read_signature(const std::string& path,
                                        const std::vector<std::string>& override_initializers) {
  return guarded("read_signature", [&]() -> Expected<ModelSignature> {
    ModelSignature sig;
    std::error_code ec;
    if (!std::filesystem::exists(path, ec) || std::filesystem::is_directory(path, ec))
      return to_error(Status::io_error(path + ": no such model file"));
    if (std::filesystem::path(path).extension() == ".graphi") {  // static shapes
      Result<std::shared_ptr<const graph::Graph>> g = engine::load_model(path);
      if (!g.is_ok()) return to_error(g.status());
      auto declared = [&](graph::ValueId id) {
        const graph::Value& v = (*g)->value(id);
        return DeclaredTensor{v.name, v.desc.dtype, false,
                              true,   v.desc.shape, std::vector<std::string>(v.desc.shape.size())};
      };
      for (graph::ValueId id : (*g)->inputs()) sig.inputs.push_back(declared(id));
      for (graph::ValueId id : (*g)->outputs()) sig.outputs.push_back(declared(id));
      return sig;
    }
    Result<graph::DeclaredSignature> d = graph::read_onnx_signature(
        path, std::set<std::string>(override_initializers.begin(), override_initializers.end()));
    if (!d.is_ok()) return to_error(d.status());
    auto declared = [](const graph::DeclaredValue& v) {
      return DeclaredTensor{v.name,  v.dtype,     v.is_bool,    v.has_shape,
                            v.shape, v.dim_names, v.is_float16, v.is_bfloat16};
    };
    for (const graph::DeclaredValue& v : d->inputs) sig.inputs.push_back(declared(v));
    for (const graph::DeclaredValue& v : d->outputs) sig.outputs.push_back(declared(v));
    sig.dynamic = d->dynamic();
    return sig;
  });
}

Expected<Session> Session::open(const std::string& path, const SessionOptions& options) {
  return guarded(path.c_str(), [&]() -> Expected<Session> {
    auto impl = std::make_unique<Impl>();
    Result<std::shared_ptr<const graph::Graph>> loaded = load(path, options, &impl->defaults);
    if (!loaded) return to_error(loaded.status());
    std::shared_ptr<const graph::Graph> g = std::move(loaded).value();
    const std::shared_ptr<const graph::Graph> imported = g;  // before the passes
    for (const std::string& name : options.override_initializers) {
      auto v = g->find_value(name);
      if (!v || g->value(*v).kind != graph::ValueKind::kInput)
        return ApiError{StatusCode::kInvalidArgument,
                        path + ": options.override_initializers names '" + name +
                            "', which is not an input of the model"};
    }
    impl->options = options;
    if (options.optimize) {
      Result<engine::OptimizedGraph> o = engine::optimize_graph(g);
      if (!o) return to_error(o.status().with_context(path));
      impl->passes = o->summary;
      g = o->graph;
    }

    // The split: the caller's, else the plan's (profiler/plan_choice.h).
    if (options.executors < 0 || options.threads < 0)
      return ApiError{
          StatusCode::kInvalidArgument,
          "options: executors and threads must be >= 1, or 0 for the plan's split; got " +
              std::to_string(options.executors) + " x " + std::to_string(options.threads)};
    profiler::PlanRequest req;
    req.plan = options.plan.empty() ? "auto" : options.plan;
    if (options.executors > 0) req.executors = options.executors;
    if (options.threads > 0) req.threads = options.threads;
    req.scheduler = options.scheduler;
    req.cpuset = options.cpuset;
    req.pin = options.pin;
    Result<profiler::PlanChoice> chosen = profiler::choose_plan(*g, req);
    if (!chosen) return to_error(chosen.status().with_context(path));
    impl->plan = chosen->message;
    if (!impl->plan.empty()) say_plan_once(impl->plan);
    engine::SessionOptions eo = chosen->options;
    eo.ring_capacity = options.ring_capacity;
    eo.rnn_weights = options.rnn_weights;
    eo.max_memory = options.max_memory;
    Result<std::unique_ptr<engine::Session>> s = engine::Session::create(g, eo);
    if (!s) return to_error(s.status().with_context(path));
    impl->session = std::move(s).value();
    // A brief model: the analytical split timed against its contender (split_check.h).
    std::string measured;
    profiler::check_split(g, *chosen, eo, impl->session, &measured);
    if (!measured.empty()) {
      impl->plan = measured;
      say_plan_once(measured);
    }
    Result<profiler::BatchSplitPolicy> split = profiler::parse_batch_split(options.batch_split);
    if (!split) return to_error(split.status().with_context("options.batch_split"));
    std::map<std::string, Tensor> unused_defaults;
    Result<graph::ImportOptions> io = import_options(options, &unused_defaults);
    if (!io) return to_error(io.status());
    std::string said;
    Result<std::unique_ptr<engine::BatchSlices>> slices = profiler::batch_in_slices(
        path, *io, options.optimize, *split, imported, req, eo, *impl->session, &said);
    if (!slices) return to_error(slices.status().with_context(path));
    if (!said.empty()) say_plan_once(said);
    if (*slices) {
      impl->slices = std::move(slices).value();
      impl->session.reset();  // the whole batch's arena and packed weights
    }
    for (graph::ValueId id : g->inputs()) impl->inputs.push_back(info_of(*g, id));
    for (graph::ValueId id : g->outputs()) impl->outputs.push_back(info_of(*g, id));
    impl->bool_values = graph::bool_values(*g);
    impl->float16_values = graph::float16_values(*g);
    impl->bfloat16_values = graph::bfloat16_values(*g);
    return Session(std::move(impl));
  });
}

Expected<std::vector<Array>> Session::run(const std::vector<Array>& inputs) {
  Impl* im = impl_.get();
  if (!im) return ApiError{StatusCode::kInvalidArgument, "run: the Session was moved from"};
  {
    std::lock_guard<std::mutex> lock(im->callers_mutex);
    ++im->callers;
  }
  struct Leave {
    Impl* im;
    ~Leave() {
      std::lock_guard<std::mutex> lock(im->callers_mutex);
      if (--im->callers == 0) im->callers_left.notify_all();
    }
  } leave{im};
  return guarded("run", [&]() -> Expected<std::vector<Array>> {
    engine::NamedTensors in;
    in.reserve(inputs.size());
    for (const Array& a : inputs) {
      Result<Tensor> t = to_tensor(a);
      if (!t) return to_error(t.status());
      in.emplace_back(a.name(), std::move(t).value());
    }
    for (const auto& d : im->defaults)
      if (std::none_of(inputs.begin(), inputs.end(),
                       [&](const Array& a) { return a.name() == d.first; }))
        in.emplace_back(d.first, d.second);
    Result<engine::NamedTensors> out = im->slices ? im->slices->run(in) : im->session->run(in);
    if (!out) return to_error(out.status());
    std::vector<Array> result;
    result.reserve(out->size());
    for (auto& [name, tensor] : *out) {
      Array a;
      a.info_ = TensorInfo{name, tensor.dtype(), tensor.shape()};
      a.owned_ = true;
      a.storage_ = hold(std::move(tensor));
      a.data_ = a.storage_.get();
      result.push_back(std::move(a));
    }
    return result;
  });
}

int Session::run_calls() const {
  if (!impl_) return 0;
  std::lock_guard<std::mutex> lock(impl_->callers_mutex);
  return impl_->callers;
}

// Accessors of a moved-from Session see empty lists (never a null dereference).
namespace {
const std::vector<TensorInfo> kNoInfo;
const std::string kNoString;
const SessionOptions kNoOptions;
}  // namespace

const std::vector<TensorInfo>& Session::inputs() const { return impl_ ? impl_->inputs : kNoInfo; }
const std::vector<TensorInfo>& Session::outputs() const { return impl_ ? impl_->outputs : kNoInfo; }
const std::vector<std::string>& Session::bool_values() const {
  static const std::vector<std::string> kNone;
  return impl_ ? impl_->bool_values : kNone;
}
const std::vector<std::string>& Session::float16_values() const {
  static const std::vector<std::string> kNone;
  return impl_ ? impl_->float16_values : kNone;
}
const std::vector<std::string>& Session::bfloat16_values() const {
  static const std::vector<std::string> kNone;
  return impl_ ? impl_->bfloat16_values : kNone;
}
std::string Session::config_summary() const {
  if (!impl_) return std::string();
  std::string s = impl_->active().config_summary();
  if (impl_->slices)
    s += "; batch " + std::to_string(impl_->slices->batch()) + " in slices of " +
         std::to_string(impl_->slices->slice());
  return s;
}
const std::string& Session::passes_summary() const { return impl_ ? impl_->passes : kNoString; }
const std::string& Session::plan_summary() const { return impl_ ? impl_->plan : kNoString; }
const SessionOptions& Session::options() const { return impl_ ? impl_->options : kNoOptions; }

void Session::set_tracing(bool on) {
  if (!impl_) return;
  if (impl_->slices)
    impl_->slices->set_tracing(on);
  else
    impl_->session->set_tracing(on);
}

Expected<size_t> Session::write_trace(const std::string& path) const {
  if (!impl_)
    return ApiError{StatusCode::kInvalidArgument, "write_trace: the Session was moved from"};
  return guarded("write_trace", [&]() -> Expected<size_t> {
    const engine::RunTrace t =
        impl_->slices ? impl_->slices->last_trace() : impl_->session->last_trace();
    if (t.run_end_ns == 0)
      return ApiError{StatusCode::kInvalidArgument,
                      path + ": no traced run to write (call set_tracing(true), then run())"};
    Status st = profiler::write_chrome_trace(path, impl_->active().plan(), t);
    if (!st.is_ok()) return to_error(st);
    return t.ops.size();
  });
}

// ---- TrainingSession ----

struct TrainingSession::Impl {
  std::unique_ptr<engine::TrainingSession> session;
  std::vector<TensorInfo> inputs;
};

TrainingSession::TrainingSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TrainingSession::TrainingSession(TrainingSession&&) noexcept = default;
TrainingSession& TrainingSession::operator=(TrainingSession&&) noexcept = default;
TrainingSession::~TrainingSession() = default;

Expected<TrainingSession> TrainingSession::open(const std::string& path,
                                                const TrainingOptions& training,
                                                const SessionOptions& options) {
  return guarded(path.c_str(), [&]() -> Expected<TrainingSession> {
    Result<std::shared_ptr<const graph::Graph>> loaded = load(path, options);
    if (!loaded) return to_error(loaded.status());
    engine::TrainingOptions o;
    auto loss = graph::passes::loss_kind_from_name(training.loss);
    if (!loss)
      return ApiError{StatusCode::kInvalidArgument,
                      "loss must be ce, mse or value, got '" + training.loss + "'"};
    o.spec.loss = *loss;
    o.spec.label_input = training.label_input;
    o.spec.prediction = training.prediction;
    o.spec.trainable = training.trainable;
    o.spec.optimizer.kind = training.optimizer;
    o.spec.optimizer.lr = training.lr;
    o.spec.optimizer.momentum = training.momentum;
    o.spec.optimizer.weight_decay = training.weight_decay;
    o.spec.optimizer.beta1 = training.beta1;
    o.spec.optimizer.beta2 = training.beta2;
    o.spec.optimizer.epsilon = training.epsilon;
    // The profiler's cached plans are keyed by the inference graph, so a training step runs the
    // split it is given: 0 (the API's "plan's split") means 1x1 here.
    o.session.executors = std::max(options.executors, 1);
    o.session.threads = std::max(options.threads, 1);
    o.session.scheduler = !options.scheduler.empty() ? options.scheduler
                          : o.session.executors > 1  ? "cpf"
                                                     : "sequential";
    o.session.ring_capacity = options.ring_capacity;
    o.session.pin = options.pin;
    o.session.cpuset = options.cpuset;
    auto s = engine::TrainingSession::create(std::move(loaded).value(), o);
    if (!s) return to_error(s.status().with_context(path));
    auto impl = std::make_unique<Impl>();
    impl->session = std::move(s).value();
    const graph::Graph& g = impl->session->training_graph().graph;
    for (const std::string& name : impl->session->training_graph().data_inputs)
      impl->inputs.push_back(info_of(g, *g.find_value(name)));
    return TrainingSession(std::move(impl));
  });
}

Expected<float> TrainingSession::train_step(const std::vector<Array>& inputs) {
  Impl* im = impl_.get();
  if (!im)
    return ApiError{StatusCode::kInvalidArgument, "train_step: the TrainingSession was moved from"};
  return guarded("train_step", [&]() -> Expected<float> {
    engine::NamedTensors batch;
    for (const Array& a : inputs) {
      Result<Tensor> t = to_tensor(a);
      if (!t) return to_error(t.status());
      batch.emplace_back(a.name(), std::move(t).value());
    }
    Result<float> loss = im->session->train_step(batch);
    if (!loss) return to_error(loss.status());
    return *loss;
  });
}

const std::vector<TensorInfo>& TrainingSession::inputs() const {
  static const std::vector<TensorInfo> kNone;
  return impl_ ? impl_->inputs : kNone;
}

std::vector<Array> TrainingSession::weights() const {
  std::vector<Array> out;
  if (!impl_) return out;
  for (const auto& [name, t] : impl_->session->weights())
    out.push_back(Array::copy_of(name, t->dtype(), t->shape(), t->data()));
  return out;
}

int64_t TrainingSession::steps() const { return impl_ ? impl_->session->steps() : 0; }

Expected<bool> TrainingSession::save(const std::string& path) const {
  if (!impl_)
    return ApiError{StatusCode::kInvalidArgument, "save: the TrainingSession was moved from"};
  return guarded("save", [&]() -> Expected<bool> {
    Status st = impl_->session->save(path);
    if (!st) return to_error(st);
    return true;
  });
}

}  // namespace graphi
