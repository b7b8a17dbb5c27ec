#include "models/pytorch_rnn_weights.h"

#include <cstring>
#include <set>

#include "graph/npy.h"

namespace graphi::models {

namespace {

// ONNX gate block k takes PyTorch gate block kSrc[k] (see the header and ops/rnn/RNN_PYTORCH.md).
constexpr int kLstmSrc[4] = {0, 3, 1, 2};  // ONNX (i, o, f, c) <- PyTorch (i, f, g, o)
constexpr int kGruSrc[3] = {1, 0, 2};      // ONNX (z, r, h) <- PyTorch (r, z, n)
constexpr int kRnnSrc[1] = {0};

const int* gate_source(PytorchRnnMode mode) {
  switch (mode) {
    case PytorchRnnMode::kLstm:
      return kLstmSrc;
    case PytorchRnnMode::kGru:
      return kGruSrc;
    default:
      return kRnnSrc;
  }
}

std::string key(const char* what, int64_t layer, int d) {
  return std::string(what) + "_l" + std::to_string(layer) + (d == 1 ? "_reverse" : "");
}

// Copies the G row blocks (each H rows of `cols` floats) of `src` into `dst` in ONNX order.
void reorder_rows(const float* src, float* dst, const int* order, int gates, int64_t hidden,
                  int64_t cols) {
  const int64_t block = hidden * cols;
  for (int g = 0; g < gates; ++g)
    std::memcpy(dst + g * block, src + order[g] * block, block * sizeof(float));
}

Tensor i64_vector(const std::vector<int64_t>& v) {
  Tensor t(TensorDesc{DType::kI64, {static_cast<int64_t>(v.size())}});
  for (size_t i = 0; i < v.size(); ++i) t.data_as<int64_t>()[i] = v[i];
  return t;
}

}  // namespace

const char* pytorch_rnn_mode_name(PytorchRnnMode mode) {
  switch (mode) {
    case PytorchRnnMode::kLstm:
      return "LSTM";
    case PytorchRnnMode::kGru:
      return "GRU";
    case PytorchRnnMode::kRnnTanh:
      return "RNN_TANH";
    case PytorchRnnMode::kRnnRelu:
      return "RNN_RELU";
  }
  return "?";
}

Result<PytorchRnnMode> parse_pytorch_rnn_mode(const std::string& name) {
  for (PytorchRnnMode m : {PytorchRnnMode::kLstm, PytorchRnnMode::kGru, PytorchRnnMode::kRnnTanh,
                           PytorchRnnMode::kRnnRelu})
    if (name == pytorch_rnn_mode_name(m)) return m;
  return Status::invalid_argument("unknown PyTorch RNN mode '" + name +
                                  "' (LSTM, GRU, RNN_TANH or RNN_RELU)");
}

int PytorchRnnConfig::gates() const {
  return mode == PytorchRnnMode::kLstm ? 4 : mode == PytorchRnnMode::kGru ? 3 : 1;
}

const char* PytorchRnnConfig::onnx_op() const {
  return mode == PytorchRnnMode::kLstm ? "LSTM" : mode == PytorchRnnMode::kGru ? "GRU" : "RNN";
}

namespace {

Status check_config(const PytorchRnnConfig& cfg) {
  const std::string m = std::string("PyTorch ") + pytorch_rnn_mode_name(cfg.mode);
  if (cfg.input_size < 1 || cfg.hidden_size < 1 || cfg.num_layers < 1)
    return Status::invalid_argument(
        m + ": input_size, hidden_size and num_layers must be >= 1, got " +
        std::to_string(cfg.input_size) + ", " + std::to_string(cfg.hidden_size) + ", " +
        std::to_string(cfg.num_layers));
  return Status::ok();
}

// Every key the config uses with its expected shape, in state_dict order.
std::vector<std::pair<std::string, Shape>> expected_keys(const PytorchRnnConfig& cfg) {
  const int64_t G = cfg.gates(), H = cfg.hidden_size, D = cfg.directions();
  std::vector<std::pair<std::string, Shape>> keys;
  for (int64_t l = 0; l < cfg.num_layers; ++l)
    for (int d = 0; d < D; ++d) {
      const int64_t in = l == 0 ? cfg.input_size : D * H;
      keys.push_back({key("weight_ih", l, d), {G * H, in}});
      keys.push_back({key("weight_hh", l, d), {G * H, H}});
      if (cfg.bias) {
        keys.push_back({key("bias_ih", l, d), {G * H}});
        keys.push_back({key("bias_hh", l, d), {G * H}});
      }
    }
  return keys;
}

}  // namespace

Result<std::vector<OnnxRnnLayer>> onnx_layers_from_pytorch(const PytorchRnnConfig& cfg,
                                                           const StateDict& sd) {
  GRAPHI_RETURN_IF_ERROR(check_config(cfg));
  const std::string m = std::string("PyTorch ") + pytorch_rnn_mode_name(cfg.mode);
  const auto keys = expected_keys(cfg);
  std::set<std::string> known;
  for (const auto& [k, shape] : keys) {
    known.insert(k);
    auto it = sd.find(k);
    if (it == sd.end())
      return Status::invalid_argument(m + " state_dict: missing '" + k + "' (expected float32" +
                                      shape_to_string(shape) + ")");
    const Tensor& t = it->second;
    if (t.dtype() != DType::kF32 || t.shape() != shape)
      return Status::invalid_argument(m + " state_dict: '" + k + "' is " + t.desc().to_string() +
                                      ", expected float32" + shape_to_string(shape) +
                                      " (input_size " + std::to_string(cfg.input_size) +
                                      ", hidden_size " + std::to_string(cfg.hidden_size) +
                                      (cfg.bidirectional ? ", bidirectional)" : ")"));
  }
  for (const auto& [k, t] : sd) {
    if (known.count(k)) continue;
    if (k.rfind("weight_hr", 0) == 0)
      return Status::unsupported(m + " state_dict: '" + k +
                                 "' is a projection (proj_size > 0), which graphi's ONNX "
                                 "sequence ops do not support");
    return Status::invalid_argument(
        m + " state_dict: unexpected key '" + k + "' for " + std::to_string(cfg.num_layers) +
        " layer(s)" + (cfg.bidirectional ? ", bidirectional" : "") +
        (cfg.bias ? "" : ", bias=False") + " (wrong config, or strip the module's prefix)");
  }

  const int G = cfg.gates();
  const int64_t H = cfg.hidden_size, D = cfg.directions();
  const int* order = gate_source(cfg.mode);
  std::vector<OnnxRnnLayer> layers;
  for (int64_t l = 0; l < cfg.num_layers; ++l) {
    const int64_t in = l == 0 ? cfg.input_size : D * H;
    OnnxRnnLayer layer;
    layer.op = cfg.onnx_op();
    layer.attrs.set("hidden_size", H);
    layer.attrs.set("direction", std::string(cfg.bidirectional ? "bidirectional" : "forward"));
    layer.attrs.set("layout", int64_t{cfg.batch_first ? 1 : 0});
    if (cfg.mode == PytorchRnnMode::kGru) layer.attrs.set("linear_before_reset", int64_t{1});
    if (cfg.mode == PytorchRnnMode::kRnnRelu) layer.attrs.set("activations", std::string("Relu"));
    layer.w = Tensor(TensorDesc{DType::kF32, {D, G * H, in}});
    layer.r = Tensor(TensorDesc{DType::kF32, {D, G * H, H}});
    if (cfg.bias) layer.b = Tensor(TensorDesc{DType::kF32, {D, 2 * G * H}});
    for (int d = 0; d < D; ++d) {
      reorder_rows(sd.at(key("weight_ih", l, d)).data_as<float>(),
                   layer.w.data_as<float>() + d * G * H * in, order, G, H, in);
      reorder_rows(sd.at(key("weight_hh", l, d)).data_as<float>(),
                   layer.r.data_as<float>() + d * G * H * H, order, G, H, H);
      if (cfg.bias) {
        float* b = layer.b->data_as<float>() + d * 2 * G * H;
        reorder_rows(sd.at(key("bias_ih", l, d)).data_as<float>(), b, order, G, H, 1);
        reorder_rows(sd.at(key("bias_hh", l, d)).data_as<float>(), b + G * H, order, G, H, 1);
      }
    }
    layers.push_back(std::move(layer));
  }
  return layers;
}

Result<StateDict> read_pytorch_state_dict_npy(const PytorchRnnConfig& cfg, const std::string& dir) {
  GRAPHI_RETURN_IF_ERROR(check_config(cfg));
  StateDict sd;
  for (const auto& [k, shape] : expected_keys(cfg)) {
    GRAPHI_ASSIGN_OR_RETURN(Tensor t, graph::read_npy(dir + "/" + k + ".npy"));
    sd.emplace(k, std::move(t));
  }
  return sd;
}

Status add_pytorch_rnn(graph::GraphBuilder& b, const PytorchRnnConfig& cfg,
                       const std::vector<OnnxRnnLayer>& layers, const PytorchRnnIo& io) {
  GRAPHI_RETURN_IF_ERROR(check_config(cfg));
  const std::string m = std::string("PyTorch ") + pytorch_rnn_mode_name(cfg.mode);
  if (layers.size() != static_cast<size_t>(cfg.num_layers))
    return Status::invalid_argument(m + ": " + std::to_string(layers.size()) +
                                    " ONNX layers for num_layers " +
                                    std::to_string(cfg.num_layers));
  const bool lstm = cfg.mode == PytorchRnnMode::kLstm;
  if (!lstm && (!io.c0.empty() || !io.c_n.empty()))
    return Status::invalid_argument(m + ": c0 / c_n exist only for LSTM");
  if (lstm && io.h0.empty() != io.c0.empty())
    return Status::invalid_argument(m + ": give both h0 and c0 or neither (as PyTorch does)");
  const int64_t L = cfg.num_layers, D = cfg.directions(), H = cfg.hidden_size;
  const bool bf = cfg.batch_first;
  const std::string& p = io.prefix;

  b.add_constant(p + "shape/merge_dirs", i64_vector({0, 0, -1}));
  if (!bf && D == 1) b.add_constant(p + "shape/drop_dir", i64_vector({0, -1, H}));
  graph::Attributes swap01;  // [D, B, H] <-> [B, D, H]
  swap01.set("perm", std::vector<int64_t>{1, 0, 2});

  // Per-layer initial states [D, B, H] (layout 1: [B, D, H]).
  auto split_state = [&](const std::string& state, const char* what) {
    std::vector<std::string> parts;
    if (state.empty()) return std::vector<std::string>(L, "");
    if (L == 1) {
      parts.push_back(state);
    } else {
      for (int64_t l = 0; l < L; ++l) parts.push_back(p + what + "/l" + std::to_string(l));
      graph::Attributes a;
      a.set("axis", int64_t{0});
      a.set("split", std::vector<int64_t>(L, D));
      b.add_node("Split", p + what + "/split", {state}, parts, a);
    }
    if (bf)
      for (int64_t l = 0; l < L; ++l) {
        const std::string t = p + what + "/l" + std::to_string(l) + "/bdh";
        b.add_node("Transpose", t, {parts[l]}, {t}, swap01);
        parts[l] = t;
      }
    return parts;
  };
  const std::vector<std::string> h0 = split_state(io.h0, "h0");
  const std::vector<std::string> c0 = lstm ? split_state(io.c0, "c0") : std::vector<std::string>(L);

  std::string x = io.input;
  std::vector<std::string> yh, yc;
  for (int64_t l = 0; l < L; ++l) {
    const OnnxRnnLayer& layer = layers[l];
    const std::string n = p + "l" + std::to_string(l);
    b.add_constant(n + "/W", layer.w);
    b.add_constant(n + "/R", layer.r);
    if (layer.b) b.add_constant(n + "/B", *layer.b);
    std::vector<std::string> in = {x,          n + "/W", n + "/R", layer.b ? n + "/B" : "",
                                   io.lengths, h0[l]};
    if (lstm) in.push_back(c0[l]);
    while (!in.empty() && in.back().empty()) in.pop_back();
    std::vector<std::string> out = {n + "/Y", n + "/Y_h"};
    if (lstm) out.push_back(n + "/Y_c");
    b.add_node(layer.op, n, in, out, layer.attrs);
    // Y [T, D, B, H] / [B, T, D, H] -> [T, B, D*H] / [B, T, D*H].
    const std::string next = l + 1 == L ? io.output : n + "/out";
    if (bf) {
      b.add_node("Reshape", next, {n + "/Y", p + "shape/merge_dirs"}, {next});
    } else if (D == 1) {
      b.add_node("Reshape", next, {n + "/Y", p + "shape/drop_dir"}, {next});
    } else {
      graph::Attributes a;
      a.set("perm", std::vector<int64_t>{0, 2, 1, 3});
      b.add_node("Transpose", n + "/Y_tbdh", {n + "/Y"}, {n + "/Y_tbdh"}, a);
      b.add_node("Reshape", next, {n + "/Y_tbdh", p + "shape/merge_dirs"}, {next});
    }
    x = next;
    yh.push_back(n + "/Y_h");
    if (lstm) yc.push_back(n + "/Y_c");
  }
  // Final states: [D, B, H] per layer (transposed back from layout 1), stacked to [L*D, B, H].
  auto gather = [&](std::vector<std::string> parts, const std::string& name) {
    if (name.empty()) return;
    if (bf)
      for (std::string& s : parts) {
        const std::string t = s + "/dbh";
        b.add_node("Transpose", t, {s}, {t}, swap01);
        s = t;
      }
    if (parts.size() == 1) {
      b.add_node("Identity", name, parts, {name});
    } else {
      graph::Attributes a;
      a.set("axis", int64_t{0});
      b.add_node("Concat", name, parts, {name}, a);
    }
  };
  gather(yh, io.h_n);
  if (lstm) gather(yc, io.c_n);
  return Status::ok();
}

Result<graph::Graph> build_pytorch_rnn_graph(const PytorchRnnConfig& cfg, const StateDict& sd,
                                             const PytorchRnnGraphOptions& opt,
                                             const graph::ShapeInferencer& shapes) {
  GRAPHI_ASSIGN_OR_RETURN(std::vector<OnnxRnnLayer> layers, onnx_layers_from_pytorch(cfg, sd));
  if (opt.seq < 1 || opt.batch < 1)
    return Status::invalid_argument("PyTorch RNN graph: seq and batch must be >= 1, got " +
                                    std::to_string(opt.seq) + ", " + std::to_string(opt.batch));
  const bool lstm = cfg.mode == PytorchRnnMode::kLstm;
  const int64_t T = opt.seq, B = opt.batch, H = cfg.hidden_size,
                LD = cfg.num_layers * cfg.directions();
  graph::GraphBuilder b(std::string("pytorch ") + pytorch_rnn_mode_name(cfg.mode));
  PytorchRnnIo io;
  b.add_input("input", TensorDesc{DType::kF32, cfg.batch_first ? Shape{B, T, cfg.input_size}
                                                               : Shape{T, B, cfg.input_size}});
  if (opt.with_lengths) {
    b.add_input("lengths", TensorDesc{DType::kI64, {B}});
    io.lengths = "lengths";
  }
  if (opt.with_initial_state) {
    b.add_input("h0", TensorDesc{DType::kF32, {LD, B, H}});
    io.h0 = "h0";
    if (lstm) {
      b.add_input("c0", TensorDesc{DType::kF32, {LD, B, H}});
      io.c0 = "c0";
    }
  }
  if (lstm) io.c_n = "c_n";
  GRAPHI_RETURN_IF_ERROR(add_pytorch_rnn(b, cfg, layers, io));
  b.add_output("output");
  b.add_output("h_n");
  if (lstm) b.add_output("c_n");
  return b.finish(shapes);
}

}  // namespace graphi::models
