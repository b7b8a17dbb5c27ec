// SessionOptions::rnn_weights: the storage precision of the fused LSTM/GRU/RNN kernels' weights
// for a whole graph ("fp32" | "bf16" | "int8"; ops/rnn/rnn_sequence.h, docs/RNN_KERNELS.md). The
// option becomes the node attribute graphi_rnn_weights on every LSTM, GRU and RNN node that does
// not set it itself (a node's own attribute wins; the precision a model file stores, e.g. an LSTM
// imported from ONNX Runtime's DynamicQuantizeLSTM, graphi_rnn_file_weights, does not: "fp32"
// then computes it from the dequantized weights).
#pragma once

#include <memory>
#include <string>

#include "graph/graph.h"

namespace graphi::engine {

// `g` itself when `precision` is "", or fp32 and no node has a file precision, or the graph has
// no recurrent node; else a copy with the attribute set. An unknown precision is kInvalidArgument
// (naming the option and the accepted values).
Result<std::shared_ptr<const graph::Graph>> apply_rnn_weights(std::shared_ptr<const graph::Graph> g,
                                                              const std::string& precision);

}  // namespace graphi::engine
