#include "models/rnn_spec.h"

namespace graphi::models {

namespace {
Status check_range(const std::string& cell, const char* field, int64_t v, int64_t max) {
  if (v < 1 || v > max)
    return Status::invalid_argument(cell + ": " + field + " must be in [1, " + std::to_string(max) +
                                    "], got " + std::to_string(v));
  return Status::ok();
}
}  // namespace

int64_t rnn_parameter_count(const RnnSpec& s, int gates) {
  int64_t n = 0;
  for (int64_t l = 0; l < s.layers; ++l) {
    const int64_t in = l == 0 ? s.input : s.hidden;
    n += in * gates * s.hidden + s.hidden * gates * s.hidden + gates * s.hidden;
    if (gates == 3 && s.linear_before_reset) n += gates * s.hidden;  // separate recurrent bias
  }
  return n;
}

Status validate_rnn_spec(const RnnSpec& s, const std::string& cell, int gates) {
  GRAPHI_RETURN_IF_ERROR(check_range(cell, "input", s.input, kMaxRnnFeatures));
  GRAPHI_RETURN_IF_ERROR(check_range(cell, "hidden", s.hidden, kMaxRnnFeatures));
  GRAPHI_RETURN_IF_ERROR(check_range(cell, "layers", s.layers, kMaxRnnLayers));
  GRAPHI_RETURN_IF_ERROR(check_range(cell, "batch", s.batch, kMaxRnnBatch));
  GRAPHI_RETURN_IF_ERROR(check_range(cell, "seq", s.seq, kMaxRnnSeq));
  if (s.layers * s.seq > kMaxRnnSteps)
    return Status::invalid_argument(
        cell + ": layers * seq must be at most " + std::to_string(kMaxRnnSteps) +
        " (the graph is unrolled), got " + std::to_string(s.layers * s.seq));
  const int64_t bytes = rnn_parameter_count(s, gates) * 4;
  if (bytes > kMaxRnnParameterBytes)
    return Status::invalid_argument(cell + ": the weights would take " +
                                    std::to_string(bytes >> 20) + " MiB, more than the limit of " +
                                    std::to_string(kMaxRnnParameterBytes >> 20) + " MiB");
  return Status::ok();
}

std::string rnn_spec_to_string(const RnnSpec& s) {
  return "E=" + std::to_string(s.input) + " H=" + std::to_string(s.hidden) +
         " L=" + std::to_string(s.layers) + " B=" + std::to_string(s.batch) +
         " T=" + std::to_string(s.seq) + " seed=" + std::to_string(s.seed) +
         (s.linear_before_reset ? " linear_before_reset" : "");
}

}  // namespace graphi::models
