// LSTM, GRU and RNN sequence ops: their attributes and inputs checked against ONNX's semantics
// (ops/rnn/rnn_sequence.h), and their output shapes.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include "ops/rnn/rnn_sequence.h"
#include "ops/rnn/rnn_sequence_kernel.h"
#include "ops/rnn/rnn_train.h"
#include "ops/shape_rules.h"

namespace graphi::ops {

const char* rnn_cell_name(RnnCellKind kind) {
  switch (kind) {
    case RnnCellKind::kLstm:
      return "LSTM";
    case RnnCellKind::kGru:
      return "GRU";
    case RnnCellKind::kRnn:
      return "RNN";
  }
  return "?";
}

const char* rnn_weights_name(RnnWeights w) {
  return w == RnnWeights::kBf16 ? "bf16" : w == RnnWeights::kInt8 ? "int8" : "fp32";
}

Result<RnnWeights> parse_rnn_weights(const std::string& v, const std::string& what) {
  std::string l;
  for (char ch : v) l += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (l == "fp32" || l == "f32" || l == "float32" || l == "float") return RnnWeights::kF32;
  if (l == "bf16" || l == "bfloat16") return RnnWeights::kBf16;
  if (l == "int8" || l == "s8") return RnnWeights::kInt8;
  return Status::invalid_argument(what + " = '" + v + "': expected fp32, bf16 or int8");
}

namespace {

using rnn_wcs::split_names;

RnnCellKind kind_of(const std::string& op) {
  if (op == "LSTM") return RnnCellKind::kLstm;
  if (op == "GRU") return RnnCellKind::kGru;
  return RnnCellKind::kRnn;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// "input 1 (W)"
std::string input_name(int i) {
  static const char* names[] = {"X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"};
  return "input " + std::to_string(i) + " (" + names[i] + ")";
}

}  // namespace

Result<RnnSpec> rnn_spec(const graph::Node& node, std::span<const TensorDesc* const> inputs,
                         size_t num_outputs, const std::string& where) {
  RnnSpec s;
  s.kind = kind_of(node.op);
  const bool lstm = s.kind == RnnCellKind::kLstm, gru = s.kind == RnnCellKind::kGru;
  const size_t max_inputs = lstm ? 8 : 6;
  const size_t max_outputs = lstm ? 3 : 2;
  const char* op = rnn_cell_name(s.kind);
  NodeView v{node, inputs, {}, where};
  GRAPHI_RETURN_IF_ERROR(expect_inputs(v, 3, max_inputs, 3));
  GRAPHI_ASSIGN_OR_RETURN(int64_t training,
                          graph::attr_int(node.attrs, where, kRnnTrainingAttr, 0));
  if (training != 0 && training != 1)
    return Status::invalid_graph(where + ": attribute '" + std::string(kRnnTrainingAttr) +
                                 "' must be 0 or 1, got " + std::to_string(training));
  s.training = training == 1;
  if (s.training && num_outputs != max_outputs + 1)
    return Status::invalid_graph(where + ": " + op + " in training form (" + kRnnTrainingAttr +
                                 " = 1) has " + std::to_string(max_outputs + 1) +
                                 " outputs (Y, Y_h" + (lstm ? ", Y_c" : "") +
                                 ", saved activations), got " + std::to_string(num_outputs));
  if (!s.training && (num_outputs < 1 || num_outputs > max_outputs))
    return Status::invalid_graph(where + ": " + op + " has 1 to " + std::to_string(max_outputs) +
                                 " outputs (Y, Y_h" + (lstm ? ", Y_c" : "") + "), got " +
                                 std::to_string(num_outputs));
  s.num_outputs = static_cast<int>(num_outputs);

  // Attributes: known names only, so a typo is not silently ignored.
  std::vector<std::string> known = {
      "hidden_size", "direction",         "layout",          "clip",
      "activations", "activation_alpha",  "activation_beta", kWcsShuffleAttr,
      kScheduleAttr, kScheduleSearchAttr, kRnnWeightsAttr,   kRnnFileWeightsAttr};
  known.push_back(kRnnTrainingAttr);
  if (lstm) known.push_back("input_forget");
  if (gru) known.push_back("linear_before_reset");
  for (const auto& [name, value] : node.attrs.all()) {
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    std::string list;
    for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
    return Status::invalid_graph(where + ": unknown attribute '" + name + "' for " + op +
                                 " (known: " + list + ")");
  }
  GRAPHI_ASSIGN_OR_RETURN(std::string direction,
                          graph::attr_string(node.attrs, where, "direction", "forward"));
  if (direction == "forward") {
    s.num_directions = 1;
  } else if (direction == "reverse") {
    s.num_directions = 1;
    s.reverse_only = true;
  } else if (direction == "bidirectional") {
    s.num_directions = 2;
  } else {
    return Status::invalid_graph(where +
                                 ": attribute 'direction' must be forward, reverse or "
                                 "bidirectional, got '" +
                                 direction + "'");
  }
  GRAPHI_ASSIGN_OR_RETURN(int64_t layout, graph::attr_int(node.attrs, where, "layout", 0));
  if (layout != 0 && layout != 1)
    return Status::invalid_graph(where + ": attribute 'layout' must be 0 or 1, got " +
                                 std::to_string(layout));
  s.layout = static_cast<int>(layout);
  if (node.attrs.has("clip")) {
    GRAPHI_ASSIGN_OR_RETURN(double clip, graph::attr_float(node.attrs, where, "clip", 0.0));
    if (!(clip > 0.0) || !std::isfinite(clip))
      return Status::invalid_graph(where +
                                   ": attribute 'clip' must be a positive finite number, got " +
                                   std::to_string(clip));
    s.clip = static_cast<float>(clip);
  }
  if (lstm) {
    GRAPHI_ASSIGN_OR_RETURN(int64_t f, graph::attr_int(node.attrs, where, "input_forget", 0));
    if (f != 0 && f != 1)
      return Status::invalid_graph(where + ": attribute 'input_forget' must be 0 or 1, got " +
                                   std::to_string(f));
    s.input_forget = f == 1;
  }
  if (gru) {
    GRAPHI_ASSIGN_OR_RETURN(int64_t l,
                            graph::attr_int(node.attrs, where, "linear_before_reset", 0));
    if (l != 0 && l != 1)
      return Status::invalid_graph(
          where + ": attribute 'linear_before_reset' must be 0 or 1, got " + std::to_string(l));
    s.linear_before_reset = l == 1;
  }
  GRAPHI_ASSIGN_OR_RETURN(int64_t shuffle, graph::attr_int(node.attrs, where, kWcsShuffleAttr, 0));
  if (shuffle != 0 && shuffle != 1)
    return Status::invalid_graph(where + ": attribute '" + std::string(kWcsShuffleAttr) +
                                 "' must be 0 or 1, got " + std::to_string(shuffle));
  s.wcs_shuffle = shuffle == 1;
  GRAPHI_ASSIGN_OR_RETURN(s.forced_schedule,
                          graph::attr_string(node.attrs, where, kScheduleAttr, ""));
  if (node.attrs.has(kScheduleSearchAttr)) {
    GRAPHI_ASSIGN_OR_RETURN(int64_t search,
                            graph::attr_int(node.attrs, where, kScheduleSearchAttr, 0));
    if (search != 0 && search != 1)
      return Status::invalid_graph(where + ": attribute '" + std::string(kScheduleSearchAttr) +
                                   "' must be 0 or 1, got " + std::to_string(search));
    s.schedule_search = static_cast<int>(search);
  }
  {
    const char* key = node.attrs.has(kRnnWeightsAttr) || !node.attrs.has(kRnnFileWeightsAttr)
                          ? kRnnWeightsAttr
                          : kRnnFileWeightsAttr;
    GRAPHI_ASSIGN_OR_RETURN(std::string w, graph::attr_string(node.attrs, where, key, "fp32"));
    GRAPHI_ASSIGN_OR_RETURN(s.weights,
                            parse_rnn_weights(w, where + ": attribute '" + std::string(key) + "'"));
    if (s.training && s.weights != RnnWeights::kF32)
      return Status::unsupported(where + ": attribute '" + std::string(key) + "' = '" + w +
                                 "' is for inference only (graphi_training = 1)");
  }
  // Activations: the ONNX defaults, and for RNN any of Tanh/Relu/Sigmoid per direction.
  {
    const int per_dir = lstm ? 3 : gru ? 2 : 1;
    const std::vector<std::string> defaults =
        lstm  ? std::vector<std::string>{"sigmoid", "tanh", "tanh"}
        : gru ? std::vector<std::string>{"sigmoid", "tanh"}
              : std::vector<std::string>{"tanh"};
    GRAPHI_ASSIGN_OR_RETURN(std::string acts,
                            graph::attr_string(node.attrs, where, "activations", ""));
    std::vector<std::string> names;
    if (!acts.empty()) names = split_names(acts);
    if (!names.empty() && names.size() != static_cast<size_t>(per_dir) &&
        names.size() != static_cast<size_t>(per_dir * s.num_directions))
      return Status::invalid_graph(where + ": attribute 'activations' = '" + acts + "' has " +
                                   std::to_string(names.size()) + " names; " + op + " needs " +
                                   std::to_string(per_dir) + " per direction (" +
                                   std::to_string(s.num_directions) + " direction" +
                                   (s.num_directions > 1 ? "s" : "") + ")");
    for (int d = 0; d < s.num_directions; ++d) {
      for (int k = 0; k < per_dir; ++k) {
        std::string name = defaults[k];
        if (!names.empty()) {
          const size_t idx = names.size() == static_cast<size_t>(per_dir) ? k : d * per_dir + k;
          name = lower(names[idx]);
        }
        if (s.kind == RnnCellKind::kRnn) {
          if (name == "tanh")
            s.activation[d] = RnnActivation::kTanh;
          else if (name == "relu")
            s.activation[d] = RnnActivation::kRelu;
          else if (name == "sigmoid")
            s.activation[d] = RnnActivation::kSigmoid;
          else
            return Status::unsupported(where + ": RNN activation '" + name +
                                       "' is not supported (Tanh, Relu or Sigmoid)");
        } else if (name != defaults[k]) {
          std::string want;
          for (const std::string& n : defaults) want += (want.empty() ? "" : ",") + n;
          return Status::unsupported(where + ": " + op + " activations '" + acts +
                                     "' are not supported; only the defaults (" + want +
                                     " per direction)");
        }
      }
    }
  }

  // After the activations, so an unsupported activation is named rather than its alpha.
  for (const char* a : {"activation_alpha", "activation_beta"}) {
    const graph::Attribute* attr = node.attrs.find(a);
    if (!attr) continue;
    const auto* floats = std::get_if<std::vector<double>>(attr);
    if (floats && floats->empty()) continue;
    return Status::unsupported(where + ": attribute '" + a +
                               "' is not supported (no supported activation takes parameters)");
  }

  // Shapes.
  for (int i : {kRnnX, kRnnW, kRnnR})
    if (inputs[i]->dtype != DType::kF32)
      return Status::invalid_graph(where + ": " + input_name(i) + " must be float32, got " +
                                   inputs[i]->to_string());
  const TensorDesc& x = *inputs[kRnnX];
  const TensorDesc& r = *inputs[kRnnR];
  if (x.rank() != 3)
    return Status::invalid_graph(where + ": " + input_name(kRnnX) + " must be 3-D " +
                                 (s.layout == 0 ? "[seq_length, batch_size, input_size]"
                                                : "[batch_size, seq_length, input_size]") +
                                 ", got " + x.to_string());
  if (r.rank() != 3)
    return Status::invalid_graph(where + ": " + input_name(kRnnR) +
                                 " must be 3-D [num_directions, G*hidden_size, hidden_size], got " +
                                 r.to_string());
  s.seq_len = s.layout == 0 ? x.shape[0] : x.shape[1];
  s.batch = s.layout == 0 ? x.shape[1] : x.shape[0];
  s.input_size = x.shape[2];
  if (s.seq_len < 1 || s.batch < 1 || s.input_size < 1)
    return Status::invalid_graph(
        where + ": " + input_name(kRnnX) + " " + x.to_string() +
        " has an empty dimension (sequence, batch and input sizes must be >= 1)");
  if (node.attrs.has("hidden_size")) {
    GRAPHI_ASSIGN_OR_RETURN(s.hidden, graph::attr_int(node.attrs, where, "hidden_size"));
    // Bounded so gates * hidden_size cannot overflow (a corrupt attribute, not a model).
    if (s.hidden < 1 || s.hidden >= (int64_t{1} << 31))
      return Status::invalid_graph(where + ": attribute 'hidden_size' must be in [1, 2^31), got " +
                                   std::to_string(s.hidden));
  } else {
    s.hidden = r.shape[2];
    if (s.hidden < 1)
      return Status::invalid_graph(where + ": " + input_name(kRnnR) + " " + r.to_string() +
                                   " gives hidden_size " + std::to_string(s.hidden));
  }
  s.gates = lstm ? 4 : gru ? 3 : 1;
  const int64_t D = s.num_directions, G = s.gates, H = s.hidden, B = s.batch;
  const std::string g_h = G == 1 ? "hidden_size" : std::to_string(G) + "*hidden_size";
  const std::string context = "from X " + x.to_string() + (s.layout ? " (layout 1)" : "") +
                              ", hidden_size " + std::to_string(H) + ", direction " + direction;
  auto expect = [&](int i, const Shape& want, const std::string& dims) -> Status {
    const TensorDesc& d = *inputs[i];
    if (d.shape == want) return Status::ok();
    return Status::invalid_graph(where + ": " + input_name(i) + " is " + d.to_string() +
                                 ", expected " + shape_to_string(want) + " = " + dims + " (" +
                                 context + ")");
  };
  GRAPHI_RETURN_IF_ERROR(
      expect(kRnnW, {D, G * H, s.input_size}, "[num_directions, " + g_h + ", input_size]"));
  GRAPHI_RETURN_IF_ERROR(
      expect(kRnnR, {D, G * H, H}, "[num_directions, " + g_h + ", hidden_size]"));
  auto present = [&](int i) {
    return static_cast<size_t>(i) < inputs.size() && inputs[i] != nullptr;
  };
  auto expect_f32 = [&](int i) -> Status {
    if (inputs[i]->dtype == DType::kF32) return Status::ok();
    return Status::invalid_graph(where + ": " + input_name(i) + " must be float32, got " +
                                 inputs[i]->to_string());
  };
  if (present(kRnnB)) {
    GRAPHI_RETURN_IF_ERROR(expect_f32(kRnnB));
    GRAPHI_RETURN_IF_ERROR(expect(kRnnB, {D, 2 * G * H}, "[num_directions, 2*" + g_h + "]"));
    s.has_bias = true;
  }
  if (present(kRnnSeqLens)) {
    const TensorDesc& d = *inputs[kRnnSeqLens];
    if (d.dtype != DType::kI32 && d.dtype != DType::kI64)
      return Status::invalid_graph(where + ": " + input_name(kRnnSeqLens) +
                                   " must be int32 or int64, got " + d.to_string());
    GRAPHI_RETURN_IF_ERROR(expect(kRnnSeqLens, {B}, "[batch_size]"));
    s.has_seq_lens = true;
    s.seq_lens_dtype = d.dtype;
  }
  const Shape state = s.layout == 0 ? Shape{D, B, H} : Shape{B, D, H};
  const std::string state_dims = s.layout == 0 ? "[num_directions, batch_size, hidden_size]"
                                               : "[batch_size, num_directions, hidden_size]";
  if (present(kRnnInitialH)) {
    GRAPHI_RETURN_IF_ERROR(expect_f32(kRnnInitialH));
    GRAPHI_RETURN_IF_ERROR(expect(kRnnInitialH, state, state_dims));
    s.has_initial_h = true;
  }
  if (lstm && present(kRnnInitialC)) {
    GRAPHI_RETURN_IF_ERROR(expect_f32(kRnnInitialC));
    GRAPHI_RETURN_IF_ERROR(expect(kRnnInitialC, state, state_dims));
    s.has_initial_c = true;
  }
  if (lstm && present(kRnnP)) {
    GRAPHI_RETURN_IF_ERROR(expect_f32(kRnnP));
    GRAPHI_RETURN_IF_ERROR(expect(kRnnP, {D, 3 * H}, "[num_directions, 3*hidden_size]"));
    s.has_peephole = true;
  }
  return s;
}

std::vector<TensorDesc> rnn_output_descs(const RnnSpec& s) {
  const int64_t D = s.num_directions, B = s.batch, H = s.hidden, T = s.seq_len;
  std::vector<TensorDesc> out;
  out.push_back({DType::kF32, s.layout == 0 ? Shape{T, D, B, H} : Shape{B, T, D, H}});
  const Shape state = s.layout == 0 ? Shape{D, B, H} : Shape{B, D, H};
  const int states = s.training ? s.num_outputs - 1 : s.num_outputs;
  for (int i = 1; i < states; ++i) out.push_back({DType::kF32, state});
  if (s.training) out.push_back({DType::kF32, {D, T * B, rnn_saved_blocks(s) * H}});  // S
  return out;
}

}  // namespace graphi::ops

namespace graphi::ops::rnn_wcs {

std::vector<std::string> split_names(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    size_t b = cur.find_first_not_of(" \t"), e = cur.find_last_not_of(" \t");
    out.push_back(b == std::string::npos ? std::string() : cur.substr(b, e - b + 1));
    cur.clear();
  };
  for (char c : s) {
    if (c == ',')
      flush();
    else
      cur += c;
  }
  flush();
  return out;
}

}  // namespace graphi::ops::rnn_wcs
