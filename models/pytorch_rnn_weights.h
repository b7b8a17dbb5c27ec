// PyTorch nn.LSTM / nn.GRU / nn.RNN -> graphi's ONNX sequence ops (ops/rnn/rnn_sequence.h): maps a
// module's state_dict to the W, R, B inputs of one ONNX LSTM/GRU/RNN node per stacked layer,
// and builds the graph that computes exactly what the module's forward() returns (output, h_n,
// c_n), including batch_first, initial states and packed (uneven-length) batches. The mapping is
// documented in ops/rnn/RNN_PYTORCH.md; tests/ops/test_pytorch_rnn.cpp checks it against PyTorch.
//
// In short: per layer l and direction (suffix "" or "_reverse"),
//   W[d] = reorder(weight_ih_l{l}{sfx})     [G*H, I_l]  (I_0 = input_size, I_l = D*H for l > 0)
//   R[d] = reorder(weight_hh_l{l}{sfx})     [G*H, H]
//   B[d] = [reorder(bias_ih_l{l}{sfx}), reorder(bias_hh_l{l}{sfx})]   [2*G*H]  (bias=True only)
// where reorder permutes the G row blocks of H rows: LSTM PyTorch (i, f, g, o) -> ONNX
// (i, o, f, c), GRU PyTorch (r, z, n) -> ONNX (z, r, h) (and PyTorch's GRU is ONNX's
// linear_before_reset = 1), RNN unchanged (one block; nonlinearity relu -> activations "Relu").
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph_builder.h"

namespace graphi::models {

enum class PytorchRnnMode { kLstm, kGru, kRnnTanh, kRnnRelu };

// "LSTM", "GRU", "RNN_TANH", "RNN_RELU" (PyTorch's own mode strings).
const char* pytorch_rnn_mode_name(PytorchRnnMode mode);
// Inverse of pytorch_rnn_mode_name; kInvalidArgument naming the accepted spellings.
Result<PytorchRnnMode> parse_pytorch_rnn_mode(const std::string& name);

// The constructor arguments of the PyTorch module (proj_size is not supported; dropout does not
// apply at inference).
struct PytorchRnnConfig {
  PytorchRnnMode mode = PytorchRnnMode::kLstm;
  int64_t input_size = 0;
  int64_t hidden_size = 0;
  int64_t num_layers = 1;
  bool bias = true;
  bool batch_first = false;
  bool bidirectional = false;

  int directions() const { return bidirectional ? 2 : 1; }
  int gates() const;            // 4, 3, 1
  const char* onnx_op() const;  // "LSTM", "GRU", "RNN"
};

// state_dict key -> tensor (float32), e.g. "weight_ih_l0", "bias_hh_l1_reverse".
using StateDict = std::map<std::string, Tensor>;

// One stacked layer as the inputs and attributes of one ONNX node.
struct OnnxRnnLayer {
  std::string op;           // "LSTM", "GRU" or "RNN"
  graph::Attributes attrs;  // hidden_size, direction, layout, linear_before_reset, activations
  Tensor w;                 // [D, G*H, I_l]
  Tensor r;                 // [D, G*H, H]
  std::optional<Tensor> b;  // [D, 2*G*H]; absent for bias = False
};

// Checks the config (sizes >= 1) and maps `sd`. Errors (kInvalidArgument) name the key: a
// missing tensor, a wrong dtype or shape (both shapes), a key the config does not use (e.g. a
// module with more layers than the config says); weight_hr_* (proj_size) is kUnsupported.
Result<std::vector<OnnxRnnLayer>> onnx_layers_from_pytorch(const PytorchRnnConfig& cfg,
                                                           const StateDict& sd);

// Reads <dir>/<key>.npy for every key the config uses (as tests/data/pytorch_rnn stores them).
Result<StateDict> read_pytorch_state_dict_npy(const PytorchRnnConfig& cfg, const std::string& dir);

// Value names of the module's call inside a bigger graph. Empty optional names = absent.
struct PytorchRnnIo {
  std::string input = "input";    // [T, B, input_size]; [B, T, input_size] if batch_first
  std::string lengths;            // int32/int64 [B]: a packed batch (pack_padded_sequence)
  std::string h0;                 // [L*D, B, H]
  std::string c0;                 // [L*D, B, H], LSTM only
  std::string output = "output";  // [T, B, D*H] ([B, T, D*H]); zeros past each length
  std::string h_n = "h_n";        // [L*D, B, H]; "" = not needed
  std::string c_n;                // [L*D, B, H], LSTM only; "" = not needed
  std::string prefix = "rnn/";    // prefix of every node, constant and internal value name
};

// Adds the module's computation to `b`: per layer l an ONNX node "<prefix>l<l>" (layout 1 when
// batch_first, so no transposes of X or Y), between layers a Reshape of Y [T, D, B, H] to the
// next X [T, B, D*H] (a Transpose first for bidirectional layout-0 layers), Split / Transpose of
// h0, c0 into per-layer [D, B, H] states and Concat of the per-layer Y_h / Y_c into h_n / c_n.
// `layers` from onnx_layers_from_pytorch(cfg, ...). The caller declares io.input (and the other
// inputs) and marks outputs.
Status add_pytorch_rnn(graph::GraphBuilder& b, const PytorchRnnConfig& cfg,
                       const std::vector<OnnxRnnLayer>& layers, const PytorchRnnIo& io);

// A whole graph for one module call: inputs "input" ([seq, batch, I] or [batch, seq, I]),
// "lengths" int64 [batch] if with_lengths, "h0" (and "c0" for LSTM) f32 [L*D, batch, H] if
// with_initial_state; outputs "output", "h_n" and, for LSTM, "c_n".
struct PytorchRnnGraphOptions {
  int64_t seq = 1;
  int64_t batch = 1;
  bool with_lengths = false;
  bool with_initial_state = false;
};
Result<graph::Graph> build_pytorch_rnn_graph(const PytorchRnnConfig& cfg, const StateDict& sd,
                                             const PytorchRnnGraphOptions& opt,
                                             const graph::ShapeInferencer& shapes);

}  // namespace graphi::models
