// Import-time folding of opset 17's signal generators: HannWindow, HammingWindow,
// BlackmanWindow and MelWeightMatrix (their formulas: graph/signal_math.h). Their sizes set the
// shape of their output, so graphi (static shapes) needs them known at import time anyway; the
// values then become constants, as a torch.stft export's window is.
#include <cmath>

#include "graph/onnx/onnx_fold_internal.h"
#include "graph/signal_math.h"

namespace graphi::graph::onnx::fold_detail {
namespace {

// The scalar integer input k (`what`), as ONNX requires (rank 0, or a 1-element vector as
// exporters sometimes write).
Result<int64_t> int_scalar(const Ins& in, size_t k, const char* what, const std::string& where) {
  const HostTensor* t = in[k];
  if (t->is_float() || t->numel() != 1 || t->shape.size() > 1)
    return Status::invalid_graph(where + ": input " + std::to_string(k) + " (" + what +
                                 ") must be an integer scalar, got " + t->desc());
  return t->i[0];
}

Result<double> float_scalar(const Ins& in, size_t k, const char* what, const std::string& where) {
  const HostTensor* t = in[k];
  if (!t->is_float() || t->numel() != 1 || t->shape.size() > 1)
    return Status::invalid_graph(where + ": input " + std::to_string(k) + " (" + what +
                                 ") must be a floating-point scalar, got " + t->desc());
  return t->f[0];
}

// The output_datatype attribute: a numeric ONNX type (default FLOAT).
Result<int32_t> output_type(const Node& n, const std::string& where) {
  GRAPHI_ASSIGN_OR_RETURN(int64_t t, a_int(n, "output_datatype", kFloat, where));
  switch (t) {
    case kFloat:
    case kDouble:
    case kFloat16:
    case kBfloat16:
    case kInt8:
    case kInt16:
    case kInt32:
    case kInt64:
    case kUint8:
    case kUint16:
    case kUint32:
    case kUint64:
      return static_cast<int32_t>(t);
    default:
      return Status::invalid_graph(where + ": attribute 'output_datatype' = " + std::to_string(t) +
                                   " (" + data_type_name(static_cast<int32_t>(t)) +
                                   ") is not a numeric tensor type");
  }
}

}  // namespace

Result<Outs> fold_signal(const std::string& op, const Node& n, const Ins& in,
                         const std::string& where) {
  GRAPHI_ASSIGN_OR_RETURN(int32_t type, output_type(n, where));
  if (op == "MelWeightMatrix") {
    GRAPHI_RETURN_IF_ERROR(need_inputs(in, 5, where));
    GRAPHI_ASSIGN_OR_RETURN(int64_t mels, int_scalar(in, 0, "num_mel_bins", where));
    GRAPHI_ASSIGN_OR_RETURN(int64_t length, int_scalar(in, 1, "dft_length", where));
    GRAPHI_ASSIGN_OR_RETURN(int64_t rate, int_scalar(in, 2, "sample_rate", where));
    GRAPHI_ASSIGN_OR_RETURN(double lower, float_scalar(in, 3, "lower_edge_hertz", where));
    GRAPHI_ASSIGN_OR_RETURN(double upper, float_scalar(in, 4, "upper_edge_hertz", where));
    const graph::signal::MelSpec spec{mels, length, rate, lower, upper};
    GRAPHI_RETURN_IF_ERROR(graph::signal::check_mel_spec(spec, where));
    GRAPHI_RETURN_IF_ERROR(check_size({spec.bins(), mels}, where));
    std::vector<double> w(static_cast<size_t>(spec.bins() * mels));
    graph::signal::fill_mel_weight_matrix(spec, w.data());
    HostTensor o = HostTensor::make(type, {spec.bins(), mels});
    for (size_t k = 0; k < w.size(); ++k) set_value(o, k, w[k]);
    fit_to_type(o);
    return Outs{std::move(o)};
  }
  GRAPHI_RETURN_IF_ERROR(need_inputs(in, 1, where));
  GRAPHI_ASSIGN_OR_RETURN(int64_t size, int_scalar(in, 0, "size", where));
  if (size < 1)
    return Status::invalid_graph(where + ": input 0 (size) must be at least 1, got " +
                                 std::to_string(size) + " (graphi has no empty tensors)");
  GRAPHI_RETURN_IF_ERROR(check_size({size}, where));
  GRAPHI_ASSIGN_OR_RETURN(int64_t periodic, a_int(n, "periodic", 1, where));
  if (periodic != 0 && periodic != 1)
    return Status::invalid_graph(where + ": attribute 'periodic' must be 0 or 1, got " +
                                 std::to_string(periodic));
  const graph::signal::Window kind = op == "HannWindow"      ? graph::signal::Window::kHann
                                     : op == "HammingWindow" ? graph::signal::Window::kHamming
                                                             : graph::signal::Window::kBlackman;
  const std::vector<double> w = graph::signal::window(kind, size, periodic == 1);
  HostTensor o = HostTensor::make(type, {size});
  for (size_t k = 0; k < w.size(); ++k) set_value(o, k, w[k]);
  fit_to_type(o);
  return Outs{std::move(o)};
}

}  // namespace graphi::graph::onnx::fold_detail
