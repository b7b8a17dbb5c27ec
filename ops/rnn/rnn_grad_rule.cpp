// The gradient rule of the fused LSTM / GRU sequence ops and their training form
// (ops/rnn/rnn_train.h): the forward node saves its activations as one more output, and the rule
// emits one LSTMGrad / GRUGrad node reading them.
#include <algorithm>

#include "ops/rnn/phased_lstm.h"
#include "ops/rnn/rnn_train.h"

namespace graphi::ops {

namespace {

const char* kGradNames[] = {"X", "W", "R", "B", "", "initial_h", "initial_c", "P",
                            "", "tau", "shift", "r_on"};

// The spec of a forward node from its graph (descs of its inputs); errors name the node.
Result<RnnSpec> spec_of(const graph::Graph& g, const graph::Node& node, const std::string& where) {
  std::vector<const TensorDesc*> ins;
  for (graph::ValueId v : node.inputs)
    ins.push_back(v == graph::kNoId ? nullptr : &g.value(v).desc);
  if (node.op == kPhasedLstmOp) {
    GRAPHI_ASSIGN_OR_RETURN(PhasedSpec ps, phased_spec(node, ins, node.outputs.size(), where));
    return ps.lstm;
  }
  return rnn_spec(node, ins, node.outputs.size(), where);
}

}  // namespace

std::string rnn_grad_unsupported(const RnnSpec& s) {
  const std::string op = s.phased ? kPhasedLstmOp : rnn_cell_name(s.kind);
  if (s.has_seq_lens)
    return "the " + op + " gradient does not support input 4 (sequence_lens); pad the batch";
  if (s.clip > 0.0f) return "the " + op + " gradient does not support attribute 'clip'";
  if (s.input_forget) return "the " + op + " gradient does not support attribute 'input_forget'";
  return "";
}

std::optional<graph::passes::TrainingForm> rnn_training_form(const graph::Node& node) {
  if (node.op != "LSTM" && node.op != "GRU" && node.op != "RNN" && node.op != kPhasedLstmOp)
    return std::nullopt;
  // Unsupported features keep the node as it is; the rule then names them.
  const bool seq_lens =
      node.inputs.size() > kRnnSeqLens && node.inputs[kRnnSeqLens] != graph::kNoId;
  if (node.attrs.has("clip") || seq_lens) return std::nullopt;
  if (const graph::Attribute* f = node.attrs.find("input_forget")) {
    const auto* v = std::get_if<int64_t>(f);
    if (!v || *v != 0) return std::nullopt;
  }
  graph::passes::TrainingForm form;
  form.attrs = node.attrs;
  form.attrs.set(kRnnTrainingAttr, int64_t{1});
  form.num_outputs = node.op == "GRU" || node.op == "RNN" ? 3 : 4;  // Y, Y_h[, Y_c], then S
  return form;
}

Status rnn_grad_rule(graph::passes::GradContext& c, std::vector<std::string>& dx) {
  GRAPHI_ASSIGN_OR_RETURN(RnnSpec s, spec_of(c.g, c.node, c.where));
  if (std::string why = rnn_grad_unsupported(s); !why.empty())
    return Status::unsupported(c.where + ": " + why);
  if (!s.training)
    return Status::internal(c.where + ": the node is not in its training form (" +
                            std::string(kRnnTrainingAttr) + " = 1)");
  const bool lstm = s.kind == RnnCellKind::kLstm;
  if (c.need.size() > kRnnSeqLens && c.need[kRnnSeqLens])
    return Status::unsupported(c.where + ": sequence_lens cannot be differentiated");
  if (s.phased && c.need.size() > kPhasedTimes && c.need[kPhasedTimes])
    return Status::unsupported(c.where + ": PhasedLSTM's times cannot be differentiated");
  std::vector<std::string> ins(static_cast<size_t>(s.phased ? int{kPhasedGradInputs}
                                                             : int{kGradInputs}));
  for (size_t i = 0; i < c.node.inputs.size(); ++i)
    if (c.node.inputs[i] != graph::kNoId) ins[grad_input_slot(static_cast<int>(i))] = c.in_name(i);
  const size_t n_out = c.node.outputs.size();  // Y, Y_h[, Y_c], S
  ins[kGradY] = c.out_name(0);
  ins[kGradSaved] = c.out_name(n_out - 1);
  ins[kGradDY] = c.dy[0];
  ins[kGradDYh] = c.dy[1];
  if (lstm) ins[kGradDYc] = c.dy[2];
  if (!c.dy[n_out - 1].empty())
    return Status::internal(c.where + ": a gradient flows into the saved activations");
  std::string names;
  std::vector<size_t> slots;
  for (size_t i = 0; i < c.node.inputs.size(); ++i) {
    if (!c.need[i]) continue;
    names += (names.empty() ? "" : ",") + std::string(kGradNames[i]);
    slots.push_back(i);
  }
  if (slots.empty()) return Status::ok();
  graph::Attributes a;
  for (const auto& [k, v] : c.node.attrs.all())
    if (k != kRnnTrainingAttr) a.set(k, v);
  a.set(kRnnGradsAttr, names);
  const std::string op = (s.phased ? std::string(kPhasedLstmOp) : rnn_cell_name(s.kind)) + "Grad";
  std::vector<std::string> outs = c.e.op_n(op, ins, slots.size(), std::move(a), op);
  for (size_t k = 0; k < slots.size(); ++k) dx[slots[k]] = outs[k];
  return Status::ok();
}

}  // namespace graphi::ops
