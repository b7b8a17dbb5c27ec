// graphi's public C++ API: open a model file, run it, read the outputs. Self-contained: it
// includes only the standard library and graphi/types.h, never an internal header (pimpl), so
// an application needs include/graphi/ and libgraphi.so only. Needs C++17 (engine/api/README.md).
//
//   auto s = graphi::Session::open("model.onnx", {.executors = 2, .threads = 1,  // C++20
//                                                 .scheduler = "cpf"});
//   if (!s) { std::cerr << s.error().message << "\n"; return 1; }
//   std::vector<float> x(4 * 16);
//   auto out = s->run({graphi::Array::view("x", graphi::DType::kF32, {4, 16}, x.data())});
//   if (!out) ...;  const float* probs = (*out)[0].data_as<float>();
//
// Errors: no function of this API throws for a failed operation. Failures come back as an
// Expected<T> holding an ApiError (a StatusCode from graphi/types.h and a message that names the
// file, input or node). Calling value() on a failed Expected is a programming error and throws
// std::logic_error carrying the message. Memory exhaustion is reported as kOutOfMemory.
//
// Thread safety: a Session's const accessors may be called from any number of threads. run()
// may be called from several threads at once; the calls are serialized (one run at a time, in
// no particular order), each returns its own outputs. Different Sessions are independent.
//
// Lifetime: a Session may be destroyed while other threads are inside its run(). The run in
// progress is cancelled: the ops already started finish, no further op starts, and its run()
// returns kInvalidArgument with a message containing "run cancelled: the Session is being
// destroyed" (a run that had already finished its last op returns its outputs normally). Every
// call waiting for its turn returns the same error without running. The destructor blocks
// until all those calls have returned and the engine's threads are joined. A call that starts
// after the destructor has begun, or races with its start (not yet inside run()), uses freed
// memory, as with any destroyed object: stop issuing new calls first. Moving from or assigning
// to a Session while another thread may be inside its run() is not allowed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "graphi/types.h"

#if defined(_WIN32)
#define GRAPHI_API
#else
#define GRAPHI_API __attribute__((visibility("default")))
#endif

namespace graphi {

// Why an operation failed: code (never kOk) and a human-readable message.
struct ApiError {
  StatusCode code = StatusCode::kInternal;
  std::string message;
};

// A value or the ApiError that explains why there is none.
template <typename T>
class Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  Expected(ApiError error) : v_(std::move(error)) {}  // NOLINT
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  // The error; a default ApiError{kOk, ""} when ok() (so logging it is always safe).
  ApiError error() const { return ok() ? ApiError{StatusCode::kOk, ""} : std::get<1>(v_); }
  T& value() & {
    check();
    return std::get<0>(v_);
  }
  const T& value() const& {
    check();
    return std::get<0>(v_);
  }
  T&& value() && {
    check();
    return std::get<0>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  void check() const {
    if (!ok())
      throw std::logic_error("graphi: value() of a failed result: " + std::get<1>(v_).message);
  }
  std::variant<T, ApiError> v_;
};

// Bytes per element of `t` (4 for f32/i32, 8 for i64; 0 for an unknown value).
GRAPHI_API size_t dtype_bytes(DType t);
// "float32", "int32", "int64" (numpy names).
GRAPHI_API const char* dtype_str(DType t);

// Name, element type and shape of a graph input or output.
struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  size_t bytes() const { return static_cast<size_t>(numel()) * dtype_bytes(dtype); }
};

// A named, dense, row-major tensor. Either owns its bytes (Array(info) zero-filled, copy_of,
// and every output of run()) or borrows the caller's (view: the caller keeps the memory alive
// and unchanged while the Array is used). Copying an Array is cheap and shares the bytes (like
// a numpy view); clone() makes an owning deep copy.
class GRAPHI_API Array {
 public:
  Array() = default;
  explicit Array(TensorInfo info);  // owning, zero-filled, 64-byte aligned
  // Borrows `data` (numel(shape) elements of `dtype`); run() only reads it.
  static Array view(std::string name, DType dtype, std::vector<int64_t> shape, const void* data);
  // Owning copy of `data`.
  static Array copy_of(std::string name, DType dtype, std::vector<int64_t> shape, const void* data);

  const TensorInfo& info() const { return info_; }
  const std::string& name() const { return info_.name; }
  DType dtype() const { return info_.dtype; }
  const std::vector<int64_t>& shape() const { return info_.shape; }
  int64_t numel() const { return info_.numel(); }
  size_t bytes() const { return info_.bytes(); }
  bool owns_data() const { return owned_; }

  const void* data() const { return data_; }
  // Writable pointer of an owning Array; nullptr for a view (its bytes belong to the caller).
  void* mutable_data() { return owned_ ? const_cast<void*>(data_) : nullptr; }
  template <typename T>
  const T* data_as() const {
    return static_cast<const T*>(data_);
  }
  template <typename T>
  T* mutable_data_as() {
    return static_cast<T*>(mutable_data());
  }
  Array clone() const;

 private:
  friend class Session;
  TensorInfo info_;
  const void* data_ = nullptr;
  bool owned_ = false;
  std::shared_ptr<void> storage_;  // keeps owned bytes alive (shared by copies)
};

struct SessionOptions {
  // n executors x k threads each. 0 (the default) = the plan's split (see `plan`); setting
  // either chooses the split yourself, the other then defaults to 1.
  int executors = 0;
  int threads = 0;
  // "sequential" (reference executor on the calling thread), "cpf" (critical-path first),
  // "fifo" or "shared-queue"; "" (default) = cpf with several executors, else sequential.
  std::string scheduler;
  int ring_capacity = 1;  // scheduler -> executor ring capacity
  bool pin = true;        // pin each thread to its own core (false: let threads float)
  std::string cpuset;     // restrict pinning to these cores ("0-3,8"); empty = allowed set
  // Apply the default graph passes (LSTM/GRU/RNN cell fusion, GEMM fusion, phase hoisting,
  // reshape cleanup) after loading. false runs the graph as stored.
  bool optimize = true;
  // Values of symbolic dims of an .onnx file (e.g. {"batch", 8}); a symbolic dim without a
  // value is an error naming it.
  std::map<std::string, int64_t> dims;
  // Shapes of the inputs as you will feed them, by input name (e.g. {"X", {5, 4}}): a symbolic
  // or unnamed dim of an .onnx input (skl2onnx leaves the batch dim unnamed) that `dims` does
  // not give takes its value from here.
  std::map<std::string, std::vector<int64_t>> input_shapes;
  // How the split is chosen when executors and threads are 0 (docs/PROFILER.md):
  //   "auto"  the plan `graphi profile` cached for this graph on this machine, else a quick
  //           choice from the graph's width and the topology (all allowed cores);
  //   "none"  1x1 sequential (the behaviour before plans existed);
  //   a path  a plan file written by `graphi profile --plan-out` (an error if it was made for
  //           another graph, machine or graphi version).
  std::string plan = "auto";
  // Storage precision of the fused LSTM/GRU/RNN weights: "" or "fp32" (default), "bf16"
  // (bf16 weights, fp32 accumulation; docs/RNN_KERNELS.md). Other values: kInvalidArgument.
  std::string rnn_weights;
  // Memory budget in bytes (docs/FUZZING.md, "Bounded memory"): a model whose file, weights or
  // planned memory (weights + arena + kernel scratch) exceed it is refused before the
  // allocation with kOutOfMemory naming the file and the amounts. 0 (default): what the machine
  // has available at load time.
  uint64_t max_memory = 0;
  // Inputs of an .onnx file that are also initializers (keep_initializers_as_inputs=True exports,
  // IR < 4 files) which you want to feed. Unnamed ones stay constants (folded, weights prepacked):
  // feeding one is an error. A named one becomes an input of inputs(); run() uses the
  // initializer when you do not give it. A name that is not a graph input is kInvalidArgument.
  std::vector<std::string> override_initializers;
  // A batch of N > 1 samples (every input of an .onnx model with the same dim 0) may run as N
  // slices of one sample where the model keeps its samples apart (docs/CNN.md, "Batches in
  // slices"): "auto" measures both once per model, split and machine and keeps the faster
  // (cached); "off" never; "on" wherever the model allows; "" (default) = the environment's
  // GRAPHI_BATCH_SPLIT, else "auto". Other values: kInvalidArgument.
  std::string batch_split;
};

class GRAPHI_API Session {
 public:
  // Loads `path` (.graphi or .onnx; other extensions are recognized by content), validates it,
  // applies the default passes unless options.optimize is false, and compiles it for the
  // executors. Errors: kIoError (missing or unreadable file), kInvalidGraph / kUnsupported
  // (bad or unsupported model), kInvalidArgument (bad options), each naming the file.
  static Expected<Session> open(const std::string& path, const SessionOptions& options = {});

  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  ~Session();

  // One Array per graph input, by name, in any order. A missing, unknown or duplicated name,
  // a wrong dtype or shape, or a null data pointer is kInvalidArgument naming the input.
  // Inputs are only read. Returns the graph outputs in output order (owning Arrays, named).
  // Serialized when called from several threads (see the top of this file).
  Expected<std::vector<Array>> run(const std::vector<Array>& inputs);
  // How many run() calls are inside this Session now: the one running plus those waiting for
  // their turn, counted from run()'s first statement (a queue depth; an owner that destroys the
  // Session under load can wait until its callers are inside). 0 for a moved-from Session.
  int run_calls() const;

  const std::vector<TensorInfo>& inputs() const;
  const std::vector<TensorInfo>& outputs() const;
  // Names of the inputs and outputs an .onnx file declares BOOL (a padding mask, `x > 0` as an
  // output). graphi has no bool dtype: they are float32 tensors of 0 and 1 here (any non-zero
  // input value counts as true); the Python module converts numpy bool arrays both ways.
  const std::vector<std::string>& bool_values() const;
  // Names of the inputs and outputs an .onnx file declares FLOAT16 / BFLOAT16. graphi holds and
  // computes them as float32 (a Cast to them inside the model rounds): they are float32 tensors
  // here; the Python module converts numpy float16 arrays both ways.
  const std::vector<std::string>& float16_values() const;
  const std::vector<std::string>& bfloat16_values() const;
  // The executor configuration actually used, e.g. "2x1 cpf on cores {0} {1}; ...".
  std::string config_summary() const;
  // What the graph passes did ("" when options.optimize was false).
  const std::string& passes_summary() const;
  // How the split was chosen, one line: "graphi: plan from cache FILE: 2x1 cpf", "graphi: plan
  // auto: 1x2 sequential (...)"; "" when executors/threads were given or plan was "none".
  // Also printed on stderr at open, once per distinct line and process.
  const std::string& plan_summary() const;
  const SessionOptions& options() const;

  // Tracing (docs/TRACING.md): record every following run op by op (start/end, executor, team)
  // and the scheduler's activity. Off by default; takes effect between runs (waits for a run in
  // flight). A moved-from Session ignores it.
  void set_tracing(bool on);
  // Writes the last traced run as Chrome Trace Event JSON (opens in Perfetto and
  // chrome://tracing) and returns the number of op events written. kInvalidArgument when no
  // run was traced yet (set_tracing(true), then run()); kIoError naming the file.
  Expected<size_t> write_trace(const std::string& path) const;

 private:
  struct Impl;
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A model's input or output as its file declares it, before symbolic dims are bound (a model
// exported with dynamic axes): what a front end shows, and what it binds from the arrays fed.
struct DeclaredTensor {
  std::string name;
  // A BOOL value is float32 0/1 here (is_bool), as in bool_values(); a FLOAT16 / BFLOAT16 one
  // float32 (is_float16, is_bfloat16), as in float16_values().
  DType dtype = DType::kF32;
  bool is_bool = false;
  bool has_shape = false;  // false: the file gives no shape
  // -1 where the dim has no size: symbolic (dim_names[i] names it, e.g. "batch") or unnamed
  // (dim_names[i] == "", skl2onnx's batch dim).
  std::vector<int64_t> shape;
  std::vector<std::string> dim_names;
  bool is_float16 = false;
  bool is_bfloat16 = false;
};
struct ModelSignature {
  std::vector<DeclaredTensor> inputs, outputs;
  bool dynamic = false;  // some input dim has no size: Session::open needs dims / input_shapes
};

// The inputs and outputs `path` declares, without compiling it (an .onnx file: nodes and weights
// are not read; a .graphi file: loaded, its shapes are static). An .onnx input that is also an
// initializer is listed only when `override_initializers` names it (as SessionOptions). Errors
// name the file: kIoError, kInvalidGraph (not a model), kUnsupported (an element type graphi
// does not run).
GRAPHI_API Expected<ModelSignature> read_signature(
    const std::string& path, const std::vector<std::string>& override_initializers = {});

// Training (docs/TRAINING.md): one step = forward, loss, gradients and the optimizer's in-place
// weight update, run as one graph. The model is used as stored (no graph passes).
struct TrainingOptions {
  std::string loss = "ce";             // "ce" (softmax cross-entropy, int64 labels), "mse", "value"
  std::string label_input = "labels";  // name of the label / target input the step adds
  std::string prediction;              // the value the loss reads; "" = the first output
  std::string optimizer = "sgd";       // "sgd" or "adam"
  double lr = 0.1, momentum = 0.0, weight_decay = 0.0;
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;  // adam
  std::vector<std::string> trainable;  // empty: every float32 constant of rank >= 1 it uses
};

class GRAPHI_API TrainingSession {
 public:
  // Loads `path` and builds its training step. options.optimize is ignored (the step graph is
  // built from the model as stored). Errors as Session::open, plus a node without a gradient
  // rule (kUnsupported, naming the op and the node).
  static Expected<TrainingSession> open(const std::string& path,
                                        const TrainingOptions& training = {},
                                        const SessionOptions& options = {});
  TrainingSession(TrainingSession&&) noexcept;
  TrainingSession& operator=(TrainingSession&&) noexcept;
  ~TrainingSession();

  // One step on a batch: one Array per input of inputs() by name. Returns the loss (computed
  // before this step's update). Not thread-safe: one step at a time.
  Expected<float> train_step(const std::vector<Array>& inputs);
  // The inputs a step reads: the model's inputs plus the label input.
  const std::vector<TensorInfo>& inputs() const;
  // Copies of the current weights, in training order.
  std::vector<Array> weights() const;
  int64_t steps() const;
  // Writes the model with the current weights as a .graphi file.
  Expected<bool> save(const std::string& path) const;

 private:
  struct Impl;
  explicit TrainingSession(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace graphi
