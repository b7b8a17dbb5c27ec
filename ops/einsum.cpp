// Einsum (ONNX opset 12): any number of float32 operands, explicit ('ij,jk->ik') or implicit
// ('ij,jk': the letters used once, sorted) output, repeated letters within an operand
// (diagonals, traces), '...' with numpy broadcasting of the ellipsis dims. Straight from the
// definition: each output element sums the product of the operands over every value of the
// summed letters (in double). General, not fast: meant for the small einsums exported models
// carry (rotary-embedding outer products, attention written with torch.einsum on small shapes).
#include <cctype>

#include "ops/registry.h"
#include "ops/shape_rules.h"

namespace graphi::ops {
namespace {

constexpr int kMaxLabels = 16;

struct EinsumPlan {
  int num_labels = 0;
  int64_t size[kMaxLabels] = {};
  std::vector<int> out_labels;  // output dims in order
  std::vector<int> sum_labels;
  // strides[k][label]: element stride of operand k for that label (0 = absent or broadcast).
  std::vector<std::vector<int64_t>> strides;
  Shape out;
};

Result<EinsumPlan> plan_einsum(const NodeView& v) {
  const std::string& w = v.where;
  if (v.inputs.empty()) return Status::invalid_graph(w + ": Einsum needs at least one input");
  if (v.inputs.size() > 8)
    return Status::unsupported(w + ": Einsum with more than 8 operands is not supported");
  for (size_t k = 0; k < v.inputs.size(); ++k) {
    if (!v.has_input(k))
      return Status::invalid_graph(w + ": input " + std::to_string(k) + " is missing");
    GRAPHI_RETURN_IF_ERROR(expect_dtype(v, k, "Inputs", {DType::kF32}));
  }
  GRAPHI_ASSIGN_OR_RETURN(std::string eq_raw, graph::attr_string(v.node.attrs, w, "equation", ""));
  std::string eq;
  for (char c : eq_raw)
    if (c != ' ') eq += c;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms(1);
  for (char c : lhs) {
    if (c == ',')
      terms.emplace_back();
    else
      terms.back() += c;
  }
  if (terms.size() != v.inputs.size())
    return Status::invalid_graph(w + ": equation '" + eq_raw + "' has " +
                                 std::to_string(terms.size()) + " operands but the node has " +
                                 std::to_string(v.inputs.size()) + " inputs");
  EinsumPlan p;
  int label_of[128];
  std::fill(std::begin(label_of), std::end(label_of), -1);
  auto label = [&](char c) -> Result<int> {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 128 || !std::isalpha(u))
      return Status::invalid_graph(w + ": equation '" + eq_raw + "': bad character '" +
                                   std::string(1, c) + "'");
    if (label_of[u] < 0) {
      if (p.num_labels == kMaxLabels)
        return Status::unsupported(w + ": more than " + std::to_string(kMaxLabels) + " letters");
      label_of[u] = p.num_labels++;
    }
    return label_of[u];
  };
  // Ellipsis dims get labels of their own ('0'..'9' slots), right-aligned across operands.
  int ell_rank = 0;
  std::vector<std::vector<int>> op_labels(terms.size());  // per operand dim; -1-j = ellipsis j
  for (size_t k = 0; k < terms.size(); ++k) {
    const std::string& t = terms[k];
    const size_t e = t.find("...");
    const int rank = v.in(k).rank();
    int letters = 0;
    for (char c : t)
      if (c != '.') ++letters;
    const int er = e == std::string::npos ? 0 : rank - letters;
    if (er < 0 || (e == std::string::npos && letters != rank))
      return Status::invalid_graph(w + ": operand " + std::to_string(k) + " '" + t +
                                   "' does not match input " + v.in(k).to_string());
    ell_rank = std::max(ell_rank, er);
    for (size_t i = 0; i < t.size(); ++i) {
      if (t[i] == '.') {
        if (i == e)
          for (int j = 0; j < er; ++j) op_labels[k].push_back(-1 - (er - 1 - j));  // from the right
        continue;
      }
      GRAPHI_ASSIGN_OR_RETURN(int l, label(t[i]));
      op_labels[k].push_back(l);
    }
  }
  // Ellipsis labels after the letters: index num_letters + j for the j-th dim from the right.
  const int num_letters = p.num_labels;
  if (num_letters + ell_rank > kMaxLabels)
    return Status::unsupported(w + ": too many dims (at most " + std::to_string(kMaxLabels) + ")");
  p.num_labels = num_letters + ell_rank;
  for (int l = 0; l < p.num_labels; ++l) p.size[l] = 1;
  std::vector<int> count(static_cast<size_t>(p.num_labels), 0);
  p.strides.assign(terms.size(), std::vector<int64_t>(static_cast<size_t>(p.num_labels), 0));
  for (size_t k = 0; k < terms.size(); ++k) {
    const Shape& s = v.in(k).shape;
    int64_t st = 1;
    std::vector<int64_t> dim_stride(s.size());
    for (size_t d = s.size(); d-- > 0;) {
      dim_stride[d] = st;
      st *= s[d];
    }
    std::vector<bool> seen(static_cast<size_t>(p.num_labels), false);
    for (size_t d = 0; d < s.size(); ++d) {
      int l = op_labels[k][d];
      if (l < 0) l = num_letters + (-1 - l);
      int64_t& sz = p.size[l];
      if (s[d] != 1) {
        if (sz != 1 && sz != s[d])
          return Status::invalid_graph(w + ": equation '" + eq_raw + "': a dim is " +
                                       std::to_string(sz) + " in one place and " +
                                       std::to_string(s[d]) + " in another");
        sz = s[d];
        p.strides[k][static_cast<size_t>(l)] += dim_stride[d];  // repeated letter: diagonal
      }
      if (!seen[static_cast<size_t>(l)]) ++count[static_cast<size_t>(l)];
      seen[static_cast<size_t>(l)] = true;
    }
  }
  // A letter of size > 1 that is 1 in some operand would broadcast: ONNX allows it only for
  // ellipsis dims; check letters agree exactly.
  for (size_t k = 0; k < terms.size(); ++k)
    for (size_t d = 0; d < op_labels[k].size(); ++d) {
      const int l = op_labels[k][d];
      if (l >= 0 && v.in(k).shape[d] != p.size[l])
        return Status::invalid_graph(w + ": equation '" + eq_raw + "': dim " + std::to_string(d) +
                                     " of input " + std::to_string(k) + " " + v.in(k).to_string() +
                                     " is " + std::to_string(v.in(k).shape[d]) +
                                     " where its letter is " + std::to_string(p.size[l]) +
                                     " elsewhere");
    }
  // Output labels.
  std::vector<bool> in_out(static_cast<size_t>(p.num_labels), false);
  if (arrow != std::string::npos) {
    const std::string rhs = eq.substr(arrow + 2);
    for (size_t i = 0; i < rhs.size(); ++i) {
      if (rhs[i] == '.') {
        if (rhs.compare(i, 3, "...") != 0)
          return Status::invalid_graph(w + ": equation '" + eq_raw + "': bad ellipsis");
        for (int j = ell_rank - 1; j >= 0; --j) p.out_labels.push_back(num_letters + j);
        i += 2;
        continue;
      }
      const auto u = static_cast<unsigned char>(rhs[i]);
      if (u >= 128 || label_of[u] < 0)
        return Status::invalid_graph(w + ": equation '" + eq_raw + "': output letter '" +
                                     std::string(1, rhs[i]) + "' is not in any operand");
      p.out_labels.push_back(label_of[u]);
    }
  } else {  // implicit: ellipsis dims first, then letters used once, alphabetically
    for (int j = ell_rank - 1; j >= 0; --j) p.out_labels.push_back(num_letters + j);
    for (int c = 'A'; c <= 'z'; ++c)
      if (c < 128 && label_of[c] >= 0 && count[static_cast<size_t>(label_of[c])] == 1) {
        // count is per operand occurrence; a letter repeated inside one operand is summed
        int occurrences = 0;
        for (const std::string& t : terms)
          occurrences += static_cast<int>(std::count(t.begin(), t.end(), static_cast<char>(c)));
        if (occurrences == 1) p.out_labels.push_back(label_of[c]);
      }
  }
  for (int l : p.out_labels) {
    if (in_out[static_cast<size_t>(l)])
      return Status::invalid_graph(w + ": equation '" + eq_raw + "': an output letter repeats");
    in_out[static_cast<size_t>(l)] = true;
    p.out.push_back(p.size[l]);
  }
  for (int l = 0; l < p.num_labels; ++l)
    if (!in_out[static_cast<size_t>(l)]) p.sum_labels.push_back(l);
  return p;
}

Result<std::vector<TensorDesc>> infer_einsum(const graph::InferContext& ctx) {
  GRAPHI_ASSIGN_OR_RETURN(EinsumPlan p, plan_einsum(NodeView::of(ctx)));
  return std::vector<TensorDesc>{TensorDesc{DType::kF32, p.out}};
}

CostHint cost_einsum(const graph::Node&, std::span<const TensorDesc* const> in,
                     std::span<const TensorDesc* const> out) {
  double bytes = static_cast<double>(out[0]->bytes()), flops = static_cast<double>(out[0]->numel());
  for (const TensorDesc* d : in)
    if (d) {
      bytes += static_cast<double>(d->bytes());
      flops = std::max(
          flops, 2.0 * static_cast<double>(d->numel()) * static_cast<double>(out[0]->numel()));
    }
  return {flops, bytes};
}

class EinsumKernel final : public Kernel {
 public:
  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(p_, plan_einsum(NodeView::of_kernel(ctx)));
    numel_ = shape_numel(p_.out);
    sum_count_ = 1;
    for (int l : p_.sum_labels) sum_count_ *= p_.size[l];
    return Status::ok();
  }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    auto [begin, end] = team_range(numel_, team.ithr, team.nthr);
    auto* y = static_cast<float*>(io.outputs[0]);
    const size_t nk = p_.strides.size();
    const size_t no = p_.out_labels.size(), ns = p_.sum_labels.size();
    int64_t base[8] = {};
    int64_t c[kMaxLabels] = {};
    for (int64_t e = begin; e < end; ++e) {
      int64_t rem = e;
      for (size_t k = 0; k < nk && k < 8; ++k) base[k] = 0;
      for (size_t d = no; d-- > 0;) {
        const int l = p_.out_labels[d];
        const int64_t i = rem % p_.size[l];
        rem /= p_.size[l];
        for (size_t k = 0; k < nk; ++k) base[k] += i * p_.strides[k][static_cast<size_t>(l)];
      }
      for (size_t j = 0; j < ns; ++j) c[j] = 0;
      double acc = 0;
      for (int64_t s = 0; s < sum_count_; ++s) {
        double prod = 1;
        for (size_t k = 0; k < nk; ++k) {
          int64_t off = base[k];
          for (size_t j = 0; j < ns; ++j)
            off += c[j] * p_.strides[k][static_cast<size_t>(p_.sum_labels[j])];
          prod *= static_cast<const float*>(io.inputs[k])[off];
        }
        acc += prod;
        for (size_t j = ns; j-- > 0;) {
          if (++c[j] < p_.size[p_.sum_labels[j]]) break;
          c[j] = 0;
        }
      }
      y[e] = static_cast<float>(acc);
    }
  }
  const char* name() const override { return "einsum_naive"; }

 private:
  EinsumPlan p_;
  int64_t numel_ = 0, sum_count_ = 1;
};

std::unique_ptr<Kernel> make_einsum() { return std::make_unique<EinsumKernel>(); }

}  // namespace

void register_einsum_op(Registry& r) {
  r.add({"Einsum", infer_einsum, cost_einsum, false, {make_einsum}});
}

}  // namespace graphi::ops
