// Einsum (ONNX opset 12): any number of float32 operands, explicit ('ij,jk->ik') or implicit
// ('ij,jk': the letters used once, sorted) output, repeated letters within an operand
// (diagonals, traces), '...' with numpy broadcasting of the ellipsis dims. Straight from the
// definition: each output element sums the product of the operands over every value of the
// summed letters (in double). General, not fast: meant for the small einsums exported models
// carry (rotary-embedding outer products, odd diagonals and traces).
//
// Two-operand einsums that are a (batched) matrix product go to oneDNN's matmul instead
// (EinsumGemmKernel): every letter is a batch letter (both operands and the output), a row
// letter (first operand and output), a column letter (second operand and output) or a
// contracted letter (both operands, not the output). Each operand and the output is then a
// strided [batch, rows, cols] view when its letters of each group are adjacent and in the same
// order; an operand that is not is first copied into that layout in scratch (the output is
// computed in scratch and copied out). Attention's 'bhqd,bhkd->bhqk' needs no copy at all.
// Anything else (a letter repeated within an operand, a letter summed in one operand only,
// more than two operands) stays on the direct loop.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <limits>
#include <utility>

#include "ops/onednn.h"
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
  // op_labels[k][d]: the label of dim d of operand k (ellipsis dims resolved).
  std::vector<std::vector<int>> op_labels;
  bool repeated = false;  // some operand repeats a letter (a diagonal)
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
  p.op_labels.assign(terms.size(), {});
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
      if (seen[static_cast<size_t>(l)]) p.repeated = true;
      seen[static_cast<size_t>(l)] = true;
      p.op_labels[k].push_back(l);
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

CostHint cost_einsum(const graph::Node& node, std::span<const TensorDesc* const> in,
                     std::span<const TensorDesc* const> out) {
  double bytes = static_cast<double>(out[0]->bytes());
  for (const TensorDesc* d : in)
    if (d) bytes += static_cast<double>(d->bytes());
  // Two flops per output element and summed index (the shape rule already accepted the node).
  const std::string where = node.where();
  double flops = 2.0 * static_cast<double>(out[0]->numel());
  Result<EinsumPlan> p = plan_einsum(NodeView{node, in, {}, where});
  if (p.is_ok())
    for (int l : p->sum_labels) flops *= static_cast<double>(p->size[l]);
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

// ---------------------------------------------------------------------------------------------
// The matrix-product fast path.

// Copies a tensor of `n` dims (sizes `size`) between two strided layouts (element strides);
// the innermost dim is the loop, the others an odometer.
void strided_copy(const float* src, const int64_t* src_stride, float* dst,
                  const int64_t* dst_stride, const int64_t* size, int n) noexcept {
  if (n == 0) {
    *dst = *src;
    return;
  }
  int64_t outer = 1;
  for (int d = 0; d + 1 < n; ++d) outer *= size[d];
  const int64_t inner = size[n - 1], si = src_stride[n - 1], di = dst_stride[n - 1];
  int64_t idx[kMaxLabels] = {};
  int64_t so = 0, dof = 0;
  for (int64_t o = 0; o < outer; ++o) {
    const float* s = src + so;
    float* t = dst + dof;
    if (si == 1 && di == 1) {
      std::copy(s, s + inner, t);
    } else {
      for (int64_t i = 0; i < inner; ++i) t[i * di] = s[i * si];
    }
    for (int d = n - 2; d >= 0; --d) {
      so += src_stride[d];
      dof += dst_stride[d];
      if (++idx[d] < size[d]) break;
      so -= idx[d] * src_stride[d];
      dof -= idx[d] * dst_stride[d];
      idx[d] = 0;
    }
  }
}

// One of A, B, Y as a [batch, rows, cols] matrix view, or a copy into that layout.
struct GemmOperand {
  std::vector<int> labels;       // batch, row and col letters in the view's order
  std::vector<int64_t> strides;  // the tensor's own element stride of each of them
  int64_t dims[3] = {1, 1, 1};
  int64_t view_strides[3] = {1, 1, 1};  // of the view on the tensor itself (when !packed)
  bool packed = false;        // copied to / from a dense [batch, rows, cols] scratch buffer
  size_t scratch_offset = 0;  // bytes into the kernel's scratch, when packed
  int64_t numel() const { return dims[0] * dims[1] * dims[2]; }
};

// Builds the view of a tensor whose letter strides are `stride` over the three groups. False
// when a group's letters are not adjacent and in order in the tensor (not one stride).
bool make_view(const std::vector<int>* groups, const EinsumPlan& p,
               const std::vector<int64_t>& stride, GemmOperand& v) {
  bool ok = true;
  for (int g = 0; g < 3; ++g) {
    int64_t size = 1, st = 1;
    const std::vector<int>& ls = groups[g];
    for (size_t i = 0; i < ls.size(); ++i) {
      v.labels.push_back(ls[i]);
      v.strides.push_back(stride[static_cast<size_t>(ls[i])]);
      size *= p.size[ls[i]];
      if (i + 1 < ls.size() && stride[static_cast<size_t>(ls[i])] !=
                                   stride[static_cast<size_t>(ls[i + 1])] * p.size[ls[i + 1]])
        ok = false;
    }
    if (!ls.empty()) st = stride[static_cast<size_t>(ls.back())];
    v.dims[g] = size;
    v.view_strides[g] = st;
  }
  // Strides of size-1 dims address nothing; make them those of a plain row- or column-major
  // matrix so oneDNN recognizes the layout.
  int64_t* vs = v.view_strides;
  if (v.dims[1] == 1) vs[1] = vs[2] == 1 ? v.dims[2] : 1;
  if (v.dims[2] == 1) vs[2] = vs[1] == 1 ? v.dims[1] : 1;
  if (v.dims[0] == 1) vs[0] = std::max(v.dims[1] * vs[1], v.dims[2] * vs[2]);
  // oneDNN wants one of the matrix strides to be 1 (row- or column-major matrices).
  if (v.dims[1] > 1 && v.dims[2] > 1 && v.view_strides[1] != 1 && v.view_strides[2] != 1)
    ok = false;
  return ok;
}

class EinsumGemmKernel final : public Kernel {
 public:
  const char* name() const override { return "einsum_onednn"; }
  bool opens_own_region() const override { return true; }
  size_t scratch_bytes() const override { return scratch_bytes_; }

  Status init(const KernelContext& ctx) override {
    GRAPHI_ASSIGN_OR_RETURN(p_, plan_einsum(NodeView::of_kernel(ctx)));
    if (p_.strides.size() != 2) return Status::unsupported("not two operands");
    if (p_.repeated) return Status::unsupported("a letter repeats within an operand");
    for (int l = 0; l < p_.num_labels; ++l)
      if (p_.size[l] == 0) return Status::unsupported("an empty dim");
    std::vector<bool> in_out(static_cast<size_t>(p_.num_labels), false);
    for (int l : p_.out_labels) in_out[static_cast<size_t>(l)] = true;
    auto in_op = [&](size_t k, int l) { return p_.strides[k][static_cast<size_t>(l)] != 0; };
    // Groups (size-1 letters index nothing and are left out): batch, rows (M), cols (N) in
    // output order, contracted (K) in A's order.
    std::vector<int> batch, rows, cols, red;
    for (int l : p_.out_labels) {
      if (p_.size[l] == 1) continue;
      const bool a = in_op(0, l), b = in_op(1, l);
      if (a && b)
        batch.push_back(l);
      else if (a)
        rows.push_back(l);
      else if (b)
        cols.push_back(l);
      else
        return Status::unsupported("an output letter is in neither operand");
    }
    for (int l : p_.op_labels[0]) {
      if (p_.size[l] == 1 || in_out[static_cast<size_t>(l)]) continue;
      if (!in_op(1, l)) return Status::unsupported("a letter is summed in operand 0 only");
      red.push_back(l);
    }
    for (int l : p_.op_labels[1])
      if (p_.size[l] > 1 && !in_out[static_cast<size_t>(l)] && !in_op(0, l))
        return Status::unsupported("a letter is summed in operand 1 only");
    std::vector<int64_t> out_stride(static_cast<size_t>(p_.num_labels), 0);
    int64_t st = 1;
    for (size_t d = p_.out_labels.size(); d-- > 0;) {
      out_stride[static_cast<size_t>(p_.out_labels[d])] = st;
      st *= p_.size[p_.out_labels[d]];
    }
    const std::vector<int> a_groups[3] = {batch, rows, red}, b_groups[3] = {batch, red, cols},
                           y_groups[3] = {batch, rows, cols};
    bool view_ok[3];
    view_ok[0] = make_view(a_groups, p_, p_.strides[0], ops_[0]);
    view_ok[1] = make_view(b_groups, p_, p_.strides[1], ops_[1]);
    view_ok[2] = make_view(y_groups, p_, out_stride, ops_[2]);
    for (int i = 0; i < 3; ++i) ops_[i].packed = !view_ok[i];
    // A column-major output (e.g. 'bij,bjk->bki') is the row-major Y^T = B^T A^T: oneDNN
    // takes that directly, where it declines a column-major destination.
    const GemmOperand& y = ops_[2];
    swap_ = !y.packed && y.dims[1] > 1 && y.dims[2] > 1 && y.view_strides[2] != 1;
    // If oneDNN declines the strided views, copy everything into dense layouts and retry.
    Result<std::unique_ptr<onednn::Primitive>> prim = make(ctx.team_size);
    if (!prim.is_ok() && !(ops_[0].packed && ops_[1].packed && ops_[2].packed)) {
      for (GemmOperand& o : ops_) o.packed = true;
      swap_ = false;
      prim = make(ctx.team_size);
    }
    if (!prim.is_ok()) return prim.status();
    prim_ = std::move(prim).value();
    size_t bytes = (prim_->scratch_bytes() + 63) / 64 * 64;
    for (GemmOperand& o : ops_) {
      if (!o.packed) continue;
      o.scratch_offset = bytes;
      bytes += (static_cast<size_t>(o.numel()) * sizeof(float) + 63) / 64 * 64;
    }
    scratch_bytes_ = bytes;
    numel_ = shape_numel(p_.out);
    return Status::ok();
  }

  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    char* scratch = static_cast<char*>(team.scratch);
    const float* a = static_cast<const float*>(io.inputs[0]);
    const float* b = static_cast<const float*>(io.inputs[1]);
    float* y = static_cast<float*>(io.outputs[0]);
    if (ops_[0].packed) a = pack(0, a, scratch);
    if (ops_[1].packed) b = pack(1, b, scratch);
    float* dst = ops_[2].packed ? reinterpret_cast<float*>(scratch + ops_[2].scratch_offset) : y;
    if (swap_) std::swap(a, b);
    // The packed operands follow the primitive's scratchpad: a 1-thread twin may use as much.
    if (!prim_->execute(a, b, nullptr, dst, team.scratch, team.nthr, prim_->scratch_bytes())) {
      static std::atomic<bool> warned{false};
      if (!warned.exchange(true))
        std::fprintf(stderr, "graphi: einsum_onednn: oneDNN execution failed; output set to NaN\n");
      std::fill(y, y + numel_, std::numeric_limits<float>::quiet_NaN());
      return;
    }
    if (ops_[2].packed) {
      const GemmOperand& o = ops_[2];
      strided_copy(dst, packed_strides_[2].data(), y, o.strides.data(), packed_sizes_[2].data(),
                   static_cast<int>(o.labels.size()));
    }
  }

 private:
  std::vector<int64_t> sizes(const GemmOperand& o) const {
    std::vector<int64_t> s;
    for (int l : o.labels) s.push_back(p_.size[l]);
    return s;
  }
  std::vector<int64_t> dense_strides(const GemmOperand& o) const {
    std::vector<int64_t> s(o.labels.size(), 1);
    for (size_t i = o.labels.size(); i-- > 1;) s[i - 1] = s[i] * p_.size[o.labels[i]];
    return s;
  }
  // Copies operand i into its dense [batch, rows, cols] scratch buffer.
  const float* pack(int i, const float* src, char* scratch) const noexcept {
    const GemmOperand& o = ops_[i];
    float* dst = reinterpret_cast<float*>(scratch + o.scratch_offset);
    strided_copy(src, o.strides.data(), dst, packed_strides_[i].data(), packed_sizes_[i].data(),
                 static_cast<int>(o.labels.size()));
    return dst;
  }

  Result<std::unique_ptr<onednn::Primitive>> make(int team_size) {
    onednn::MatMulSpec spec;
    onednn::Layout* layouts[3] = {&spec.src, &spec.weights, &spec.dst};
    for (int i = 0; i < 3; ++i) {
      const GemmOperand& o = ops_[i];
      layouts[i]->dims = {o.dims[0], o.dims[1], o.dims[2]};
      if (o.packed)
        layouts[i]->strides = {o.dims[1] * o.dims[2], o.dims[2], 1};
      else
        layouts[i]->strides = {o.view_strides[0], o.view_strides[1], o.view_strides[2]};
      packed_sizes_[i] = sizes(o);
      packed_strides_[i] = dense_strides(o);
    }
    if (swap_) {  // Y^T = B^T A^T: transpose every view, exchange the operands
      for (onednn::Layout* l : layouts) {
        std::swap(l->dims[1], l->dims[2]);
        std::swap(l->strides[1], l->strides[2]);
      }
      std::swap(spec.src, spec.weights);
    }
    return onednn::make_matmul(spec, team_size);
  }

  EinsumPlan p_;
  GemmOperand ops_[3];  // A, B, Y
  std::vector<int64_t> packed_sizes_[3], packed_strides_[3];
  std::unique_ptr<onednn::Primitive> prim_;
  size_t scratch_bytes_ = 0;
  int64_t numel_ = 0;
  bool swap_ = false;  // oneDNN computes Y^T = B^T A^T (a column-major output view)
};

std::unique_ptr<Kernel> make_einsum() { return std::make_unique<EinsumKernel>(); }
std::unique_ptr<Kernel> make_einsum_gemm() { return std::make_unique<EinsumGemmKernel>(); }

}  // namespace

void register_einsum_op(Registry& r) {
  r.add({"Einsum", infer_einsum, cost_einsum, false, {make_einsum_gemm, make_einsum}});
}

}  // namespace graphi::ops
