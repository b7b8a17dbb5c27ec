// _graphi: the pybind11 binding of the public C++ API (include/graphi/graphi.hpp). Only the
// native part lives here; python/graphi/__init__.py adds the dict/list handling and dtype
// checks on top. Inputs reach the engine as Array views of the numpy buffers (no copy here; the
// engine copies each input once into its own aligned buffers), outputs come back as numpy arrays
// that own the engine's output Arrays (no copy).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "graphi/graphi.hpp"

namespace py = pybind11;

namespace {

// The Python exception class _graphi.Error (a RuntimeError with a `code` attribute). Created
// once at import and never freed (module lifetime).
PyObject* g_error_class = nullptr;

const char* code_name(graphi::StatusCode c) {
  switch (c) {
    case graphi::StatusCode::kOk:
      return "ok";
    case graphi::StatusCode::kInvalidArgument:
      return "invalid_argument";
    case graphi::StatusCode::kInvalidGraph:
      return "invalid_graph";
    case graphi::StatusCode::kUnsupported:
      return "unsupported";
    case graphi::StatusCode::kIoError:
      return "io_error";
    case graphi::StatusCode::kOutOfMemory:
      return "out_of_memory";
    case graphi::StatusCode::kInternal:
      return "internal";
  }
  return "internal";
}

[[noreturn]] void raise_error(const graphi::ApiError& e) {
  py::handle cls(g_error_class);
  py::object inst = cls(e.message);
  inst.attr("code") = code_name(e.code);
  PyErr_SetObject(g_error_class, inst.ptr());
  throw py::error_already_set();
}

[[noreturn]] void raise_error(graphi::StatusCode code, std::string message) {
  raise_error(graphi::ApiError{code, std::move(message)});
}

py::dtype numpy_dtype(graphi::DType t) {
  switch (t) {
    case graphi::DType::kF32:
      return py::dtype::of<float>();
    case graphi::DType::kI32:
      return py::dtype::of<int32_t>();
    case graphi::DType::kI64:
      return py::dtype::of<int64_t>();
  }
  raise_error(graphi::StatusCode::kInternal,
              "graphi: unknown dtype " + std::to_string(static_cast<int>(t)));
}

// The graphi dtype of a native-byte-order float32/int32/int64 numpy dtype; false otherwise.
bool graphi_dtype(const py::dtype& d, graphi::DType* out) {
  if (d.equal(py::dtype::of<float>())) {
    *out = graphi::DType::kF32;
    return true;
  }
  if (d.equal(py::dtype::of<int32_t>())) {
    *out = graphi::DType::kI32;
    return true;
  }
  if (d.equal(py::dtype::of<int64_t>())) {
    *out = graphi::DType::kI64;
    return true;
  }
  return false;
}

py::tuple info_tuple(const graphi::TensorInfo& t) {
  py::tuple shape(t.shape.size());
  for (size_t i = 0; i < t.shape.size(); ++i) shape[i] = t.shape[i];
  return py::make_tuple(t.name, graphi::dtype_str(t.dtype), shape);
}

// A numpy array that owns (a shared copy of) an output Array: the capsule keeps the bytes alive.
py::array to_numpy(const graphi::Array& a) {
  auto* keep = new graphi::Array(a);  // shares the bytes, no copy
  py::capsule owner(keep, [](void* p) { delete static_cast<graphi::Array*>(p); });
  std::vector<py::ssize_t> shape(a.shape().begin(), a.shape().end());
  // C-order strides computed here: pybind11 < 2.12 derives default strides from the dtype's
  // item size read through numpy 1's struct layout, which under numpy 2 reads 0 (every stride
  // 0: each element a copy of the first, silently).
  std::vector<py::ssize_t> strides(shape.size());
  py::ssize_t step = a.dtype() == graphi::DType::kI64 ? 8 : 4;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = step;
    step *= shape[i];
  }
  // Outputs own their bytes, so the array may be writable (torch.from_numpy wants that).
  return py::array(numpy_dtype(a.dtype()), shape, strides, keep->mutable_data(), owner);
}

// `inputs`: (name, array) pairs. Each array must be a C-contiguous, aligned, native-order
// float32/int32/int64 ndarray (graphi/__init__.py converts or rejects everything else); it
// is only read. Returns borrowing Arrays.
std::vector<graphi::Array> views_of(const std::vector<std::pair<std::string, py::array>>& inputs) {
  std::vector<graphi::Array> views;
  views.reserve(inputs.size());
  for (const auto& [name, arr] : inputs) {
    graphi::DType dt;
    if (!graphi_dtype(arr.dtype(), &dt))
      raise_error(graphi::StatusCode::kInvalidArgument,
                  "input '" + name + "': dtype " + std::string(py::str(arr.dtype())) +
                      " is not supported (float32, int32 or int64 in native byte order)");
    const int flags = py::detail::array_proxy(arr.ptr())->flags;
    if (!(flags & py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_) ||
        !(flags & py::detail::npy_api::NPY_ARRAY_ALIGNED_))
      raise_error(graphi::StatusCode::kInvalidArgument,
                  "input '" + name + "': array is not C-contiguous and aligned");
    std::vector<int64_t> shape(arr.shape(), arr.shape() + arr.ndim());
    views.push_back(graphi::Array::view(name, dt, std::move(shape), arr.data()));
  }
  return views;
}

class PySession {
 public:
  PySession(const std::string& path, int executors, int threads, const std::string& scheduler,
            bool pin, bool optimize, const std::map<std::string, int64_t>& dims, int ring_capacity,
            const std::string& cpuset, const std::string& plan, const std::string& rnn_weights,
            uint64_t max_memory, const std::map<std::string, std::vector<int64_t>>& input_shapes,
            const std::vector<std::string>& override_initializers, const std::string& batch_split) {
    graphi::SessionOptions o;
    o.override_initializers = override_initializers;
    o.batch_split = batch_split;
    o.rnn_weights = rnn_weights;
    o.plan = plan;
    o.max_memory = max_memory;
    o.executors = executors;
    o.threads = threads;
    o.scheduler = scheduler;
    o.pin = pin;
    o.optimize = optimize;
    o.dims = dims;
    o.input_shapes = input_shapes;
    o.ring_capacity = ring_capacity;
    o.cpuset = cpuset;
    graphi::Expected<graphi::Session> s = [&] {
      py::gil_scoped_release nogil;  // loading and compiling a model can take a while
      return graphi::Session::open(path, o);
    }();
    if (!s) raise_error(s.error());
    session_ = std::make_unique<graphi::Session>(std::move(*s));
  }

  // `inputs`: (name, array) pairs. Each array must be a C-contiguous, aligned, native-order
  // float32/int32/int64 ndarray (graphi/__init__.py converts or rejects everything else); it
  // is only read.
  py::list run(const std::vector<std::pair<std::string, py::array>>& inputs) {
    std::vector<graphi::Array> views = views_of(inputs);
    // `inputs` holds references to the arrays, so their buffers stay alive without the GIL.
    graphi::Expected<std::vector<graphi::Array>> out = [&] {
      py::gil_scoped_release nogil;
      return session_->run(views);
    }();
    if (!out) raise_error(out.error());
    py::list result;
    for (const graphi::Array& a : *out) result.append(py::make_tuple(a.name(), to_numpy(a)));
    return result;
  }

  py::list inputs() const { return infos(session_->inputs()); }
  py::list outputs() const { return infos(session_->outputs()); }
  std::vector<std::string> bool_values() const { return session_->bool_values(); }
  std::vector<std::string> float16_values() const { return session_->float16_values(); }
  std::vector<std::string> bfloat16_values() const { return session_->bfloat16_values(); }
  std::string config() const { return session_->config_summary(); }
  std::string passes() const { return session_->passes_summary(); }
  std::string plan() const { return session_->plan_summary(); }
  void set_tracing(bool on) {
    py::gil_scoped_release nogil;  // waits for a run in flight on another thread
    session_->set_tracing(on);
  }
  size_t write_trace(const std::string& path) const {
    graphi::Expected<size_t> n = session_->write_trace(path);
    if (!n) raise_error(n.error());
    return *n;
  }

 private:
  static py::list infos(const std::vector<graphi::TensorInfo>& v) {
    py::list l;
    for (const graphi::TensorInfo& t : v) l.append(info_tuple(t));
    return l;
  }
  std::unique_ptr<graphi::Session> session_;
};

// graphi.TrainingSession's native part: train_step on numpy arrays, weights as numpy copies.
class PyTrainingSession {
 public:
  PyTrainingSession(const std::string& path, const std::string& loss,
                    const std::string& label_input, const std::string& prediction,
                    const std::string& optimizer, double lr, double momentum, double weight_decay,
                    int executors, int threads, const std::string& scheduler, bool pin) {
    graphi::TrainingOptions t;
    t.loss = loss;
    t.label_input = label_input;
    t.prediction = prediction;
    t.optimizer = optimizer;
    t.lr = lr;
    t.momentum = momentum;
    t.weight_decay = weight_decay;
    graphi::SessionOptions o;
    o.executors = executors;
    o.threads = threads;
    o.scheduler = scheduler;
    o.pin = pin;
    auto s = [&] {
      py::gil_scoped_release nogil;
      return graphi::TrainingSession::open(path, t, o);
    }();
    if (!s) raise_error(s.error());
    session_ = std::make_unique<graphi::TrainingSession>(std::move(*s));
  }
  float train_step(const std::vector<std::pair<std::string, py::array>>& inputs) {
    std::vector<graphi::Array> views = views_of(inputs);
    graphi::Expected<float> loss = [&] {
      py::gil_scoped_release nogil;
      return session_->train_step(views);
    }();
    if (!loss) raise_error(loss.error());
    return *loss;
  }
  py::list weights() const {
    py::list l;
    for (const graphi::Array& a : session_->weights())
      l.append(py::make_tuple(a.name(), to_numpy(a)));
    return l;
  }
  py::list inputs() const {
    py::list l;
    for (const graphi::TensorInfo& t : session_->inputs()) l.append(info_tuple(t));
    return l;
  }
  int64_t steps() const { return session_->steps(); }
  void save(const std::string& path) const {
    auto r = session_->save(path);
    if (!r) raise_error(r.error());
  }

 private:
  std::unique_ptr<graphi::TrainingSession> session_;
};

// (inputs, outputs, dynamic) of graphi::read_signature: (name, dtype, shape) per tensor, a dim
// without a size as its name (str) or None (unnamed), a shape the file does not give as None.
py::tuple read_signature(const std::string& path,
                         const std::vector<std::string>& override_initializers) {
  graphi::Expected<graphi::ModelSignature> sig =
      graphi::read_signature(path, override_initializers);
  if (!sig.ok()) raise_error(sig.error());
  auto list = [](const std::vector<graphi::DeclaredTensor>& v) {
    py::list l;
    for (const graphi::DeclaredTensor& t : v) {
      py::object shape = py::none();
      if (t.has_shape) {
        py::list dims;
        for (size_t i = 0; i < t.shape.size(); ++i) {
          if (t.shape[i] >= 0)
            dims.append(t.shape[i]);
          else if (!t.dim_names[i].empty())
            dims.append(t.dim_names[i]);
          else
            dims.append(py::none());
        }
        shape = py::tuple(dims);
      }
      const char* dtype = t.is_bool       ? "bool"
                          : t.is_float16  ? "float16"
                          : t.is_bfloat16 ? "bfloat16"
                                          : graphi::dtype_str(t.dtype);
      l.append(py::make_tuple(t.name, dtype, shape));
    }
    return l;
  };
  return py::make_tuple(list(sig->inputs), list(sig->outputs), sig->dynamic);
}

}  // namespace

PYBIND11_MODULE(_graphi, m) {
  m.doc() = "graphi native binding (use the graphi package, not this module)";
  m.attr("__version__") = GRAPHI_VERSION;  // python/CMakeLists.txt: the CMake project version
  // Error(RuntimeError) with .code ("invalid_argument", "io_error", ...); graphi.Error.
  g_error_class = PyErr_NewException("graphi.Error", PyExc_RuntimeError, nullptr);
  m.attr("Error") = py::handle(g_error_class);

  m.def("read_signature", &read_signature, py::arg("path"),
        py::arg("override_initializers") = std::vector<std::string>{});

  py::class_<PySession>(m, "Session")
      .def(py::init<const std::string&, int, int, const std::string&, bool, bool,
                    const std::map<std::string, int64_t>&, int, const std::string&,
                    const std::string&, const std::string&, uint64_t,
                    const std::map<std::string, std::vector<int64_t>>&,
                    const std::vector<std::string>&, const std::string&>(),
           py::arg("path"), py::arg("executors"), py::arg("threads"), py::arg("scheduler"),
           py::arg("pin"), py::arg("optimize"), py::arg("dims"), py::arg("ring_capacity"),
           py::arg("cpuset"), py::arg("plan"), py::arg("rnn_weights") = "",
           py::arg("max_memory") = 0,
           py::arg("input_shapes") = std::map<std::string, std::vector<int64_t>>{},
           py::arg("override_initializers") = std::vector<std::string>{},
           py::arg("batch_split") = "")
      .def("run", &PySession::run, py::arg("inputs"))
      .def("inputs", &PySession::inputs)
      .def("outputs", &PySession::outputs)
      .def("bool_values", &PySession::bool_values)
      .def("float16_values", &PySession::float16_values)
      .def("bfloat16_values", &PySession::bfloat16_values)
      .def("config", &PySession::config)
      .def("passes", &PySession::passes)
      .def("plan", &PySession::plan)
      .def("set_tracing", &PySession::set_tracing, py::arg("on"))
      .def("write_trace", &PySession::write_trace, py::arg("path"));

  py::class_<PyTrainingSession>(m, "TrainingSession")
      .def(py::init<const std::string&, const std::string&, const std::string&, const std::string&,
                    const std::string&, double, double, double, int, int, const std::string&,
                    bool>(),
           py::arg("path"), py::arg("loss"), py::arg("label_input"), py::arg("prediction"),
           py::arg("optimizer"), py::arg("lr"), py::arg("momentum"), py::arg("weight_decay"),
           py::arg("executors"), py::arg("threads"), py::arg("scheduler"), py::arg("pin"))
      .def("train_step", &PyTrainingSession::train_step, py::arg("inputs"))
      .def("weights", &PyTrainingSession::weights)
      .def("inputs", &PyTrainingSession::inputs)
      .def("steps", &PyTrainingSession::steps)
      .def("save", &PyTrainingSession::save, py::arg("path"));
}
