// ONNX import, ONNX Runtime's quantized LSTM: a com.microsoft DynamicQuantizeLSTM node (what
// onnxruntime.quantization.quantize_dynamic writes for an LSTM with constant weights) becomes the
// ONNX LSTM it was made from. Its int8 / uint8 W [D, I, 4H] and R [D, H, 4H], with a scale and
// zero point per direction or per direction and gate row, dequantize at import into float32
// [D, 4H, I] / [D, 4H, H] (value = (q - zero_point) * scale, ORT's arithmetic), and the LSTM
// carries graphi_rnn_file_weights = "int8" (the Session option rnn_weights = "fp32" overrides it):
// the fused kernel re-quantizes each gate row symmetrically
// (ops/rnn/gemm_int8.h), which gives back the file's own int8 values for ORT's per-row symmetric
// weights, and quantizes x and h dynamically per step, as DynamicQuantizeLSTM does. An LSTM whose
// activations the fused kernel does not run is unrolled in float32 (no int8 attribute there).
#include <cmath>
#include <set>

#include "graph/onnx/import_internal.h"

namespace graphi::graph::onnx_import {

using onnx::HostTensor;

namespace {

// The ONNX LSTM layout of one quantized weight: q [D, K, G] -> float32 [D, G, K].
Result<HostTensor> dequantize_transposed(const HostTensor& q, const HostTensor& scale,
                                         const HostTensor& zp, int64_t D, int64_t G,
                                         const std::string& what) {
  const int64_t K = q.shape[1];
  const bool per_row = scale.shape.size() == 2;
  HostTensor out = HostTensor::make(onnx::kFloat, {D, G, K});
  for (int64_t d = 0; d < D; ++d)
    for (int64_t g = 0; g < G; ++g) {
      const size_t p = static_cast<size_t>(per_row ? d * G + g : d);
      const auto s = static_cast<float>(scale.f[p]);
      if (!(s > 0.0f) || !std::isfinite(s))
        return Status::invalid_graph(what + " scale " + std::to_string(p) + " is " +
                                     std::to_string(s) + " (a scale must be positive and finite)");
      const int64_t z = zp.i[p];
      for (int64_t k = 0; k < K; ++k) {
        const int64_t v = q.i[static_cast<size_t>((d * K + k) * G + g)];
        out.f[static_cast<size_t>((d * G + g) * K + k)] =
            static_cast<double>(static_cast<float>(v - z) * s);
      }
    }
  return out;
}

}  // namespace

Result<onnx::Node> Importer::dynamic_quantize_lstm_as_lstm(const onnx::Node& n,
                                                           const std::string& where) {
  static const std::set<std::string> kAttrs = {
      "activation_alpha", "activation_beta", "activations", "clip",
      "direction",        "hidden_size",     "input_forget"};
  for (const onnx::Attr& a : n.attrs)
    if (!kAttrs.count(a.name))
      return Status::invalid_graph(where + ": unknown attribute '" + a.name +
                                   "' (DynamicQuantizeLSTM takes the LSTM attributes but layout)");
  if (n.inputs.size() != 12)
    return Status::invalid_graph(
        where + ": has " + std::to_string(n.inputs.size()) +
        " inputs; DynamicQuantizeLSTM takes 12 (X, W, R, B, sequence_lens, initial_h, initial_c, "
        "P, W_scale, W_zero_point, R_scale, R_zero_point; optional ones given as '')");
  if (n.outputs.empty() || n.outputs.size() > 3)
    return Status::invalid_graph(where + ": has " + std::to_string(n.outputs.size()) +
                                 " outputs; DynamicQuantizeLSTM has 1 to 3 (Y, Y_h, Y_c)");
  static const char* const kNames[] = {"X",         "W",           "R", "B",       "sequence_lens",
                                       "initial_h", "initial_c",   "P", "W_scale", "W_zero_point",
                                       "R_scale",   "R_zero_point"};
  for (size_t k : {0, 1, 2, 8, 9, 10, 11})
    if (n.inputs[k].empty())
      return Status::invalid_graph(where + ": input " + std::to_string(k) + " (" + kNames[k] +
                                   ") is missing");
  for (const std::string& in : n.inputs)
    if (!in.empty() && !vals_.count(in))
      return Status::internal(where + ": input '" + in + "' is not defined");
  const onnx::Attr* hs = n.attr("hidden_size");
  if (!hs || hs->i < 1)
    return Status::invalid_graph(where + ": attribute 'hidden_size' is missing or not positive");
  const int64_t H = hs->i, G = 4 * H;
  const onnx::Attr* dir = n.attr("direction");
  const std::string direction = dir ? dir->s : "forward";
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    return Status::invalid_graph(where + ": attribute 'direction' must be forward, reverse or " +
                                 "bidirectional, got '" + direction + "'");
  const int64_t D = direction == "bidirectional" ? 2 : 1;

  // Constant, of a quantized type, of the shape DynamicQuantizeLSTM defines.
  auto weight = [&](size_t k, int64_t rows) -> Result<const HostTensor*> {
    const std::string what = where + ": input " + std::to_string(k) + " (" + kNames[k] + ")";
    const HostTensor* t = host(n.inputs[k]);
    if (!t)
      return Status::unsupported(what +
                                 " is computed at run time; graphi imports "
                                 "DynamicQuantizeLSTM with constant weights");
    if (t->type != onnx::kInt8 && t->type != onnx::kUint8)
      return Status::invalid_graph(what + " is " + t->desc() + "; it must be INT8 or UINT8");
    if (t->shape != Shape{D, rows, G})
      return Status::invalid_graph(
          what + " is " + t->desc() + "; with hidden_size " + std::to_string(H) + " and " +
          std::to_string(D) + " direction(s) it must be [" + std::to_string(D) + ", " +
          (k == 1 ? "input_size" : std::to_string(rows)) + ", " + std::to_string(G) + "]");
    return t;
  };
  auto scale_and_zp =
      [&](size_t ks,
          const HostTensor& w) -> Result<std::pair<const HostTensor*, const HostTensor*>> {
    const HostTensor* s = host(n.inputs[ks]);
    const HostTensor* z = host(n.inputs[ks + 1]);
    const std::string ws = where + ": input " + std::to_string(ks) + " (" + kNames[ks] + ")";
    const std::string wz =
        where + ": input " + std::to_string(ks + 1) + " (" + kNames[ks + 1] + ")";
    if (!s) return Status::unsupported(ws + " is computed at run time; it must be a constant");
    if (!z) return Status::unsupported(wz + " is computed at run time; it must be a constant");
    if (s->type != onnx::kFloat)
      return Status::invalid_graph(ws + " is " + s->desc() + "; it must be FLOAT");
    if (s->shape != Shape{D} && s->shape != Shape{D, G})
      return Status::invalid_graph(ws + " is " + s->desc() + "; it must be [" + std::to_string(D) +
                                   "] (per direction) or [" + std::to_string(D) + ", " +
                                   std::to_string(G) + "] (per direction and gate row)");
    if (z->type != w.type || z->shape != s->shape)
      return Status::invalid_graph(wz + " is " + z->desc() + "; it must have the weights' type (" +
                                   onnx::data_type_name(w.type) + ") and the scale's shape");
    return std::make_pair(s, z);
  };
  const std::string xs = where +
                         ": input 0 (X) must be a run-time [seq_length, batch_size, "
                         "input_size] tensor";
  if (is_const(n.inputs[0])) return Status::unsupported(xs + ", not a constant");
  GRAPHI_ASSIGN_OR_RETURN(TensorDesc xd, desc_of(n.inputs[0], where));
  if (xd.shape.size() != 3) return Status::invalid_graph(xs + ", got " + xd.to_string());
  const int64_t I = xd.shape[2];
  GRAPHI_ASSIGN_OR_RETURN(const HostTensor* W, weight(1, I));
  GRAPHI_ASSIGN_OR_RETURN(const HostTensor* R, weight(2, H));
  GRAPHI_ASSIGN_OR_RETURN(auto wsz, scale_and_zp(8, *W));
  GRAPHI_ASSIGN_OR_RETURN(auto rsz, scale_and_zp(10, *R));
  GRAPHI_ASSIGN_OR_RETURN(HostTensor wf, dequantize_transposed(*W, *wsz.first, *wsz.second, D, G,
                                                               where + ": input 8 (W_scale)"));
  GRAPHI_ASSIGN_OR_RETURN(HostTensor rf, dequantize_transposed(*R, *rsz.first, *rsz.second, D, G,
                                                               where + ": input 10 (R_scale)"));

  onnx::Node lstm;
  lstm.index = n.index;
  lstm.name = n.name;
  lstm.op = "LSTM";
  lstm.outputs = n.outputs;
  lstm.attrs = n.attrs;
  lstm.inputs = {n.inputs[0], add_const(n.inputs[1] + "_dequantized", std::move(wf)),
                 add_const(n.inputs[2] + "_dequantized", std::move(rf))};
  for (size_t k = 3; k < 8; ++k) lstm.inputs.push_back(n.inputs[k]);
  while (lstm.inputs.back().empty()) lstm.inputs.pop_back();
  if (!rnn_needs_unrolling(lstm)) {
    onnx::Attr a;
    a.name = "graphi_rnn_file_weights";  // ops/rnn/rnn_sequence.h
    a.type = onnx::kAttrString;
    a.s = "int8";
    lstm.attrs.push_back(std::move(a));
  }
  return lstm;
}

}  // namespace graphi::graph::onnx_import
