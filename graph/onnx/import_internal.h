// Internals of the ONNX importer shared by its files: the driver (graph/onnx/onnx_import.cpp) and
// the op families (graph/onnx/import_{recurrent,shape,elementwise,conv_pool,loss}.cpp). Not part of
// graph/'s interface: include only from graph/onnx/.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "graph/graph_builder.h"
#include "graph/onnx/onnx_fold.h"
#include "graph/onnx/onnx_import.h"
#include "graph/onnx/onnx_proto.h"

namespace graphi::graph::onnx_import {

using onnx::HostTensor;

// graphi's dtype of ONNX element type `t` (FLOAT, INT32, INT64), or nullopt.
std::optional<DType> graphi_dtype(int32_t t);
// ONNX element type of graphi dtype `d`.
int32_t onnx_type_of(DType d);
// Constant `h` in graphi's form (BOOL as float32 0/1); `what` starts the error for other types.
Result<std::shared_ptr<Tensor>> graphi_tensor(const onnx::HostTensor& h, const std::string& what);

// Int8MatMul's operands from 2-D 8-bit weights W [K, N] with a zero point (none, one, or one per
// column) and a FLOAT scale (one or one per column), shared by the QDQ and quantize_dynamic
// paths: W minus its zero point as a float32 constant of integers, and the scale as a vector.
// nullopt when a difference leaves int8; *bad (if given) is then its flat index.
struct Int8MatMulWeights {
  HostTensor w, scale;
};
std::optional<Int8MatMulWeights> int8_matmul_weights(const HostTensor& w,
                                                     const HostTensor* zero_point,
                                                     const HostTensor& scale,
                                                     size_t* bad = nullptr);

// A value while importing: an import-time constant (folded or an initializer) or a run-time value.
struct ValState {
  bool is_const = false;
  std::shared_ptr<const HostTensor> host;  // constants
  TensorDesc desc;                         // runtime values; constants once converted
  std::shared_ptr<const Tensor> tensor;    // graphi form of a constant, once made
  std::string graph_name;                  // name in the builder ("" = not added yet)
  // A run-time Slice whose result is empty (a zero-length dim): never emitted; a Concat drops
  // it (empty_slice.cpp), any other reader is refused.
  bool empty = false;
};

// Imports one ONNX model: validates versions, adds inputs, translates the nodes in topological
// order, adds outputs, then builds and validates the Graph.
class Importer {
 public:
  Importer(const std::string& source, const ShapeInferencer& shapes, const ImportOptions& opts,
           onnx::Model& m)
      : src_(source), shapes_(shapes), opts_(opts), m_(m), b_(source) {}

  Result<Graph> run();

 private:
  Status check_versions();
  Status add_inputs();
  // Graph input v that is also an initializer: a constant (the default), the value
  // ImportOptions::constant_inputs binds to it, or a run-time input when
  // ImportOptions::override_initializers names it.
  Status initializer_input(const onnx::ValueInfo& v, const std::string& what);
  Result<std::vector<size_t>> topo_order();
  Status import_node(const onnx::Node& n);
  // Empty run-time slices (import_empty_slice.cpp): a Slice with constant bounds whose result
  // has a zero-length dim is recorded instead of emitted (nullopt: not such a Slice); a Concat
  // drops such inputs; any other node reading one is refused.
  std::optional<Status> import_empty_slice(const onnx::Node& n, const std::string& where);
  Result<std::optional<onnx::Node>> without_empty_inputs(const onnx::Node& n,
                                                         const std::string& where);
  // A run-time Split with constant sizes, some of them 0 (tf2onnx's GRU cell when the recurrent
  // bias is absent: split [H, H, 0]): the empty pieces are recorded like empty slices and the
  // node returned splits into the others (nullopt: not such a Split).
  Result<std::optional<onnx::Node>> without_empty_pieces(const onnx::Node& n,
                                                         const std::string& where);
  // One ONNX node on its way to graphi ops. `name` is its graphi node name, `outs` its outputs
  // (trailing absent ones dropped), `ins` its inputs (a family may drop trailing ones).
  struct NodeIn {
    const onnx::Node& n;
    const std::string& where;
    std::string name;
    std::vector<std::string> ins, outs;
    Status need(size_t k) const;  // input k present, or an error naming it
  };
  // The op families (graph/onnx/import_*.cpp): each rewrites the nodes of its ops and returns
  // their status, or returns nullopt for a node it leaves to graphi's op of the same name.
  std::optional<Status> translate_recurrent(NodeIn& io);
  std::optional<Status> translate_shape(NodeIn& io);
  std::optional<Status> translate_elementwise(NodeIn& io);
  std::optional<Status> translate_conv_pool(NodeIn& io);
  std::optional<Status> translate_control_flow(NodeIn& io);
  // Attention-23/24 as its function body (graph/onnx/import_attention.cpp).
  std::optional<Status> translate_attention(NodeIn& io);  // and RotaryEmbedding, TensorScatter
  // QuantizeLinear / DequantizeLinear on run-time values (graph/onnx/import_quantize.cpp).
  std::optional<Status> translate_quantize(NodeIn& io);
  // A run-time QuantizeLinear waiting for its DequantizeLinear consumers.
  struct PendingQuant {
    std::string x, where;
    double scale = 1.0;
    int64_t zero_point = 0, qmin = 0, qmax = 255;
  };
  std::unordered_map<std::string, PendingQuant> pending_quant_;  // by the quantized value's name
  // A QuantizeLinear -> DequantizeLinear pair's output (by name), emitted as QuantizeDequantize
  // only when a node other than an Int8MatMul reads it (materialize_qdq; import_node asks before
  // each node, add_outputs for graph outputs): a MatMul of it by DequantizeLinear'd int8 weights
  // reads x itself.
  struct LazyQdq {
    PendingQuant q;
    std::string name, where;
    bool emitted = false;
  };
  std::unordered_map<std::string, LazyQdq> lazy_qdq_;
  Status materialize_qdq(const std::string& v);
  Status materialize_qdq_inputs(const onnx::Node& n);
  // The constants DequantizeLinear folded (by the folded value's name), from their int8 input.
  struct DequantizedConstant {
    std::string q, scale, zero_point;
    int64_t axis = 1;
    bool blocked = false;
  };
  std::unordered_map<std::string, DequantizedConstant> dequantized_constants_;
  // MatMul(a QDQ pair's output, DequantizeLinear'd 8-bit weights) as Int8MatMul: its weights
  // (W minus zero point) and scale, or nullopt when the MatMul is not of that form.
  std::optional<Int8MatMulWeights> int8_qdq_weights(const std::string& a, const std::string& b);
  std::unordered_map<std::string, Int8MatMulWeights> int8_weights_;  // by "a\nb", until emitted
  std::optional<Status> int8_qdq_matmul(NodeIn& io);
  // quantize_dynamic's MatMuls (graph/onnx/import_dynamic_quantize.cpp): a DynamicQuantizeLinear
  // -> MatMulInteger -> Cast -> Mul chain, or com.microsoft.DynamicQuantizeMatMul, as graphi's
  // Int8MatMul. nullopt: not such a node.
  std::optional<Status> import_dynamic_quantize(const onnx::Node& n, const std::string& where);
  struct DqChain {
    std::string x, w, w_zero_point, w_scale;
    std::string where;      // the MatMulInteger's / ConvInteger's
    size_t integer_op = 0;  // its node index
  };
  Status plan_dynamic_quantize_chains(const onnx::Node& dql, const std::string& where);
  Status emit_dynamic_quantize_matmul(const onnx::Node& n, const DqChain& c,
                                      const std::string& bias, const std::string& where);
  Status emit_dynamic_quantize_conv(const onnx::Node& n, const DqChain& c,
                                    const std::string& where);
  std::unordered_map<size_t, DqChain> dq_chain_end_;  // by the chain's last Mul's node index
  // x -> its DynamicQuantizeDequantize output (ConvInteger chains of one x share it).
  std::unordered_map<std::string, std::string> dq_dequantized_;
  std::unordered_set<size_t> dq_chain_inner_;  // its MatMulInteger, Cast and scale Mul
  Status rotary_embedding(NodeIn& io);
  Status tensor_scatter(NodeIn& io);
  // An ONNX BOOL value (a BOOL input or initializer, a value_info of BOOL, or the output of a
  // comparison / logical op / Cast to BOOL); graphi holds it as float32 0 / 1.
  bool is_bool_value(const std::string& v) const;
  // An If on a run-time condition: both branches and a Where per output.
  Status import_runtime_if(NodeIn& io);
  // Imports an If's then_branch / else_branch subgraph in place; returns it.
  Result<const onnx::GraphProto*> import_branch(
      const onnx::Node& n, const char* branch,
      const std::string& where);  // If (inlined), Loop, Scan
  // NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss (graph/onnx/import_loss.cpp)
  std::optional<Status> translate_loss(NodeIn& io);
  // DFT-20's axis input made DFT-17's attribute (graph/onnx/import_signal.cpp)
  std::optional<Status> translate_signal(NodeIn& io);
  // Sequence ops (graph/onnx/import_sequence.cpp), before the inputs are checked as tensors:
  // resolved at import time into seqs_; nullopt for other ops (refused if they read a sequence).
  std::optional<Status> translate_sequence(const onnx::Node& n, const std::string& where);
  // Constant position input k of a sequence op on a sequence of `size` tensors, made >= 0.
  Result<int64_t> const_position(const onnx::Node& n, size_t k, int64_t size, bool insert,
                                 const std::string& where);
  Status unroll_loop(NodeIn& io);  // a Loop whose trip count and conditions are constants
  // Names the subgraphs of n's attributes (If's branches, recursively) define and read, and the
  // values of the enclosing graphs they read: an If depends on those like on its inputs.
  static void subgraph_names(const onnx::Node& n, std::set<std::string>* defined,
                             std::set<std::string>* read);
  static std::vector<std::string> outer_reads(const onnx::Node& n);

  // Opset < 7 binary ops with broadcast = 1 align B at `axis`; rewrite to numpy broadcasting.
  Result<onnx::Node> legacy_broadcast(const onnx::Node& n, const std::string& where);
  // graphi's IntBinary (ops/int_arith.cpp) node `name`: out = a `op` b on int32/int64 values.
  Status emit_int_binary(const std::string& op, const std::string& name, const std::string& a,
                         const std::string& b, const std::string& out, const onnx::Node& n,
                         const std::string& where);
  Status translate(const onnx::Node& n, const std::string& where);
  // The static shape of n's input k (a constant's or a run-time value's), before the node is
  // translated; an error naming the input when it is missing.
  Result<Shape> input_shape(const onnx::Node& n, size_t k, const std::string& where);
  // Inference BatchNormalization whose scale, B, mean or var is computed at run time.
  Status batch_norm_run_time_stats(const onnx::Node& n, const std::string& name,
                                   const std::vector<std::string>& ins,
                                   const std::vector<std::string>& outs, const TensorDesc& x,
                                   const std::string& where);
  // Conv/MaxPool/AveragePool with auto_pad SAME_UPPER, SAME_LOWER or VALID (tf2onnx writes
  // them): the same node with explicit pads, computed from the static input shape.
  Result<onnx::Node> explicit_pads(const onnx::Node& n, const std::string& where);
  // ConvTranspose with auto_pad SAME_UPPER/SAME_LOWER/VALID or output_shape: the same node with
  // explicit pads and output_padding, as ONNX's spec and ONNX Runtime compute them.
  Result<onnx::Node> transpose_pads(const onnx::Node& n, const std::string& where);
  // MaxPool/AveragePool with ceil_mode = 1: the same pool with ceil_mode = 0 and extra end
  // padding that yields the same windows (PyTorch's and ONNX's rule: a last window must start
  // inside the input or the begin padding).
  Result<onnx::Node> ceil_mode_as_pads(const onnx::Node& n, const std::string& where);
  // Conv, ConvTranspose, MaxPool, AveragePool on [N, C, L]: the 2-D op on [N, C, 1, L].
  Status translate_1d(const onnx::Node& n, const std::string& name,
                      const std::vector<std::string>& ins, const std::vector<std::string>& outs,
                      const TensorDesc& x, const std::string& where);
  // LSTM/GRU/RNN with activations the fused sequence kernels do not run (ops/rnn/rnn_sequence.h:
  // only Sigmoid/Tanh gates for LSTM/GRU, Tanh/Relu/Sigmoid for RNN, no activation_alpha/beta):
  // unrolled over the time steps into plain graphi ops, with ONNX's semantics (graph/onnx/ONNX.md).
  static bool rnn_needs_unrolling(const onnx::Node& n);
  // ONNX Runtime's com.microsoft DynamicQuantizeLSTM as the ONNX LSTM it quantizes: weights
  // dequantized into importer constants, graphi_rnn_weights = "int8" (import_quantized_lstm.cpp).
  Result<onnx::Node> dynamic_quantize_lstm_as_lstm(const onnx::Node& n, const std::string& where);
  Status translate_rnn_unrolled(const onnx::Node& n, const std::string& name,
                                const std::vector<std::string>& ins, const std::string& where);
  Status add_outputs();
  // Whether value `v` is read by a node or is a graph output (the training-mode outputs of
  // Dropout and BatchNormalization are accepted when nothing reads them).
  bool is_read(const std::string& v) const;
  void report(const char* stage, size_t done, size_t total) const {
    if (opts_.progress) opts_.progress(LoadProgress{stage, done, total});
  }

  std::string where_of(const onnx::Node& n) const {
    return src_ + ": node[" + std::to_string(n.index) + "] '" + n.name + "' (" + n.op + ")";
  }
  Status unsupported_op(const onnx::Node& n, const std::string& why = "") const;
  std::string fresh(const std::string& base);
  std::string node_name(const onnx::Node& n);
  // Outputs with trailing absent ones dropped and inner absent ones named.
  std::vector<std::string> outputs_of(const onnx::Node& n, const std::string& name);

  void rebatch_shape_operand(const onnx::Node& n);
  // ImportOptions::batch set: the dim 0 the file declares for every input (-1: they differ).
  int64_t declared_batch_ = 0;

  bool is_const(const std::string& v) const {
    auto it = vals_.find(v);
    return it != vals_.end() && it->second.is_const;
  }
  const HostTensor* host(const std::string& v) const {
    auto it = vals_.find(v);
    return it != vals_.end() && it->second.is_const ? it->second.host.get() : nullptr;
  }
  // Desc of a runtime value or of a constant convertible to graphi.
  Result<TensorDesc> desc_of(const std::string& v, const std::string& where);
  // Makes constant `v` a builder constant (once); returns its builder name.
  Result<std::string> ensure_graph_value(const std::string& v, const std::string& where);
  std::string add_const(const std::string& base, HostTensor t);  // a new importer constant
  std::string add_ints_const(const std::string& base, std::vector<int64_t> v);

  // Adds graphi node `op` after inferring its outputs; inputs are ONNX or importer value names.
  Status emit(const std::string& op, const std::string& name,
              const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
              Attributes attrs, const std::string& where, const onnx::Node* onnx_node);
  // A graphi Reshape of `in` to `shape` named `name`: the shape as an int64 constant input, or as
  // the 'shape' attribute for a scalar (an empty constant would be an empty tensor, refused).
  Status emit_reshape(const std::string& name, const std::string& in, const Shape& shape,
                      const std::vector<std::string>& outputs, const std::string& where,
                      const onnx::Node* onnx_node);
  Result<Attributes> convert_attrs(const onnx::Node& n, const std::string& where,
                                   const std::set<std::string>& drop = {}) const;
  // Output shape of a shape-only op (Flatten/Squeeze/Unsqueeze) on a runtime value.
  Result<Shape> shape_after(const onnx::Node& n, const TensorDesc& in, const std::string& where);

  const std::string& src_;
  const ShapeInferencer& shapes_;
  const ImportOptions& opts_;
  onnx::Model& m_;
  GraphBuilder b_;
  int64_t opset_ = 0;
  std::unordered_map<std::string, ValState> vals_;
  // Sequences of tensors (import_sequence.cpp): the value names of their elements, in order.
  std::unordered_map<std::string, std::vector<std::string>> seqs_;
  std::unordered_set<std::string> names_;  // every ONNX value name and every name we made
  std::unordered_set<std::string> node_names_;
  std::unordered_set<std::string> graph_outputs_;
  std::vector<std::string> bool_values_;  // BOOL inputs and outputs, as metadata kBoolValuesKey
  // FLOAT16 / BFLOAT16 inputs and outputs (kFloat16ValuesKey, kBfloat16ValuesKey).
  std::vector<std::string> float16_values_, bfloat16_values_;
  // Records graph input or output `name` of ONNX type `elem_type` in the list its type needs.
  void note_declared_type(const std::string& name, int32_t elem_type);
  // Folding's budget: elements all folds of this model may produce (onnx::fold_node, "Limits"
  // of graph/onnx/ONNX.md), and what they produced so far.
  int64_t fold_budget_ = onnx::kMinFoldBudget;
  int64_t folded_ = 0;
};

}  // namespace graphi::graph::onnx_import
