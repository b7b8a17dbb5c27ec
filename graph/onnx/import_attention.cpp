// ONNX's transformer ops of opset 23+, each as its function body and ONNX's reference compute it
// (RotaryEmbedding and TensorScatter at the end of the file). Attention-23/24 (what torch.onnx
// writes for scaled_dot_product_attention at opset >= 23): Q and K each scaled by sqrt(scale)
// (default 1 / sqrt(head size)), MatMul, the softcap, the additive bias (causal, sliding window,
// attn_mask: a bool one as 0 / -inf, a float one added, a short last dim padded), Softmax, rows
// with no attendable key set to 0, MatMul with V. 3-D inputs [B, S, H * D] are split into heads
// and merged back; K / V heads are repeated for grouped-query attention (q_num_heads a multiple
// of kv_num_heads); past_key / past_value are concatenated in front of K / V and are
// present_key / present_value; nonpad_kv_seqlen (an external cache's valid lengths, at run
// time) offsets the causal frontier and the window per batch and masks the padding keys;
// qk_matmul_output is the stage its mode names. Refused by name: non-float32 inputs.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "graph/onnx/import_internal.h"

namespace graphi::graph::onnx_import {

using onnx::HostTensor;

namespace {

// ONNX ops whose output is BOOL (graphi holds such values as float32 0 / 1).
bool bool_op(const onnx::Node& p) {
  static const char* kOps[] = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Not",
                               "And",   "Or",   "Xor",     "IsNaN",       "IsInf"};
  for (const char* op : kOps)
    if (p.op == op) return true;
  const onnx::Attr* to = p.op == "Cast" ? p.attr("to") : nullptr;
  return to && to->i == onnx::kBool;
}

}  // namespace

bool Importer::is_bool_value(const std::string& v) const {
  if (std::find(bool_values_.begin(), bool_values_.end(), v) != bool_values_.end()) return true;
  for (const onnx::ValueInfo& vi : m_.graph.value_info)
    if (vi.name == v) return vi.is_tensor && vi.elem_type == onnx::kBool;
  for (const onnx::Node& p : m_.graph.nodes)
    for (const std::string& o : p.outputs)
      if (o == v) return bool_op(p);
  return false;
}

std::optional<Status> Importer::translate_attention(NodeIn& io) {
  const onnx::Node& n = io.n;
  if (n.op == "RotaryEmbedding") return rotary_embedding(io);
  if (n.op == "TensorScatter") return tensor_scatter(io);
  if (n.op != "Attention") return std::nullopt;
  const std::string& where = io.where;
  const std::string& name = io.name;
  const std::vector<std::string>& ins = io.ins;
  const std::vector<std::string>& outs = io.outs;
  for (size_t k = 0; k < 3; ++k) GRAPHI_RETURN_IF_ERROR(io.need(k));
  auto present = [&](size_t k) { return k < ins.size() && !ins[k].empty(); };
  auto attr_i = [&](const char* a, int64_t dflt) {
    const onnx::Attr* x = n.attr(a);
    return x ? x->i : dflt;
  };
  auto attr_f = [&](const char* a) -> std::optional<double> {
    const onnx::Attr* x = n.attr(a);
    if (!x) return std::nullopt;
    return static_cast<double>(x->f);
  };
  if (present(6) && present(4))
    return Status::invalid_graph(where +
                                 ": nonpad_kv_seqlen cannot be combined with past_key / "
                                 "past_value");
  // Output 3, qk_matmul_output, by qk_matmul_output_mode: 0 / 1 the scaled Q K^T after the
  // softcap (ONNX's reference caps it in both), 2 with the bias added, 3 the probabilities.
  const std::string qk_out = outs.size() > 3 ? outs[3] : "";
  const int64_t qk_mode = attr_i("qk_matmul_output_mode", 0);
  if (!qk_out.empty() && (qk_mode < 0 || qk_mode > 3))
    return Status::invalid_graph(where + ": attribute 'qk_matmul_output_mode' = " +
                                 std::to_string(qk_mode) + " is not 0, 1, 2 or 3");
  auto expose = [&](int64_t mode, const std::string& v) -> Status {
    if (qk_out.empty() || mode != std::min<int64_t>(std::max<int64_t>(qk_mode, 1), 3))
      return Status::ok();
    return emit("Identity", fresh(name + "/qk_matmul_output"), {v}, {qk_out}, {}, where, &n);
  };
  if (present(4) != present(5))
    return Status::invalid_graph(where + ": past_key and past_value must be given together");
  const char* names[] = {"Q", "K", "V"};
  TensorDesc d[3];
  for (int k = 0; k < 3; ++k) {
    GRAPHI_ASSIGN_OR_RETURN(d[k], desc_of(ins[static_cast<size_t>(k)], where));
    if (d[k].dtype != DType::kF32 || (d[k].rank() != 3 && d[k].rank() != 4) ||
        d[k].rank() != d[0].rank() || d[k].shape[0] != d[0].shape[0])
      return Status::invalid_graph(where + ": input " + names[k] +
                                   " must be float32 [B, S, hidden] or [B, heads, S, head size] "
                                   "like Q, got " +
                                   d[k].to_string());
  }
  const bool three_d = d[0].rank() == 3;
  int64_t hq = 0, hkv = 0;
  if (three_d) {
    hq = attr_i("q_num_heads", 0);
    hkv = attr_i("kv_num_heads", 0);
    if (hq < 1 || hkv < 1 || d[0].shape[2] % hq != 0 || d[1].shape[2] % hkv != 0 ||
        d[2].shape[2] % hkv != 0)
      return Status::invalid_graph(where +
                                   ": 3-D inputs need attributes q_num_heads and "
                                   "kv_num_heads dividing the hidden sizes of Q " +
                                   d[0].to_string() + ", K " + d[1].to_string() + " and V " +
                                   d[2].to_string());
  } else {
    hq = d[0].shape[1];
    hkv = d[1].shape[1];
    if (d[2].shape[1] != hkv)
      return Status::invalid_graph(where + ": K " + d[1].to_string() + " and V " +
                                   d[2].to_string() + " must have the same number of heads");
  }
  if (hq % hkv != 0)
    return Status::invalid_graph(where + ": q_num_heads " + std::to_string(hq) +
                                 " must be a multiple of kv_num_heads " + std::to_string(hkv));
  const int64_t b = d[0].shape[0];
  auto node = [&](const std::string& tag) { return fresh(name + "/" + tag); };
  auto scalar = [&](const std::string& tag, double v) {
    HostTensor t = HostTensor::make(onnx::kFloat, {1});
    t.f[0] = v;
    return add_const(name + "/" + tag, std::move(t));
  };
  auto transpose = [&](const std::string& in, std::vector<int64_t> perm) -> Result<std::string> {
    const std::string out = node("transposed");
    Attributes a;
    a.set("perm", std::move(perm));
    GRAPHI_RETURN_IF_ERROR(emit("Transpose", out, {in}, {out}, std::move(a), where, &n));
    return out;
  };
  auto binary = [&](const char* op, const std::string& a,
                    const std::string& c) -> Result<std::string> {
    const std::string out = node(op);
    GRAPHI_RETURN_IF_ERROR(emit(op, out, {a, c}, {out}, {}, where, &n));
    return out;
  };
  // [B, S, H * D] -> [B, H, S, D].
  auto heads = [&](const std::string& in, const TensorDesc& x, int64_t h) -> Result<std::string> {
    const std::string r = node("heads");
    GRAPHI_RETURN_IF_ERROR(
        emit_reshape(r, in, {x.shape[0], x.shape[1], h, x.shape[2] / h}, {r}, where, &n));
    return transpose(r, {0, 2, 1, 3});
  };
  std::string q = ins[0], k = ins[1], v = ins[2];
  if (three_d) {
    GRAPHI_ASSIGN_OR_RETURN(q, heads(q, d[0], hq));
    GRAPHI_ASSIGN_OR_RETURN(k, heads(k, d[1], hkv));
    GRAPHI_ASSIGN_OR_RETURN(v, heads(v, d[2], hkv));
  }
  GRAPHI_ASSIGN_OR_RETURN(TensorDesc qd, desc_of(q, where));
  int64_t past_len = 0;
  if (present(4)) {
    // The cache in front of this step's keys and values: present_key / present_value.
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc pk, desc_of(ins[4], where));
    if (pk.rank() != 4)
      return Status::invalid_graph(where + ": past_key must be [B, kv heads, S, D], got " +
                                   pk.to_string());
    past_len = pk.shape[2];
    Attributes a;
    a.set("axis", int64_t{2});
    const std::string kc = outs.size() > 1 && !outs[1].empty() ? outs[1] : node("present_key");
    const std::string vc = outs.size() > 2 && !outs[2].empty() ? outs[2] : node("present_value");
    GRAPHI_RETURN_IF_ERROR(emit("Concat", node("concat_key"), {ins[4], k}, {kc}, a, where, &n));
    GRAPHI_RETURN_IF_ERROR(emit("Concat", node("concat_value"), {ins[5], v}, {vc}, a, where, &n));
    k = kc;
    v = vc;
  } else {
    for (size_t o : {size_t{1}, size_t{2}})
      if (outs.size() > o && !outs[o].empty())
        GRAPHI_RETURN_IF_ERROR(
            emit("Identity", node("present"), {o == 1 ? k : v}, {outs[o]}, {}, where, &n));
  }
  GRAPHI_ASSIGN_OR_RETURN(TensorDesc kd, desc_of(k, where));
  const int64_t sq = qd.shape[2], total = kd.shape[2];
  // Grouped-query attention: each K / V head repeated for its q_num_heads / kv_num_heads query
  // heads, in place ([h0, h0, h1, h1, ...]).
  if (hq != hkv) {
    const int64_t reps = hq / hkv;
    auto repeat = [&](const std::string& in) -> Result<std::string> {
      GRAPHI_ASSIGN_OR_RETURN(TensorDesc x, desc_of(in, where));
      const std::string u = node("unsqueezed"), e = node("repeated"), r = node("heads_repeated");
      GRAPHI_RETURN_IF_ERROR(
          emit_reshape(u, in, {x.shape[0], hkv, 1, x.shape[2], x.shape[3]}, {u}, where, &n));
      GRAPHI_RETURN_IF_ERROR(
          emit("Expand", e,
               {u, add_ints_const(e + "/shape", {x.shape[0], hkv, reps, x.shape[2], x.shape[3]})},
               {e}, {}, where, &n));
      GRAPHI_RETURN_IF_ERROR(
          emit_reshape(r, e, {x.shape[0], hq, x.shape[2], x.shape[3]}, {r}, where, &n));
      return r;
    };
    GRAPHI_ASSIGN_OR_RETURN(k, repeat(k));
    GRAPHI_ASSIGN_OR_RETURN(v, repeat(v));
  }
  // Q and K each times sqrt(scale), as the function body scales them.
  const std::optional<double> scale_attr = attr_f("scale");
  const double scale = scale_attr ? *scale_attr : 1.0 / std::sqrt(static_cast<double>(qd.shape[3]));
  const std::string s = scalar("sqrt_scale", static_cast<float>(std::sqrt(scale)));
  GRAPHI_ASSIGN_OR_RETURN(std::string qs, binary("Mul", q, s));
  GRAPHI_ASSIGN_OR_RETURN(std::string ks, binary("Mul", k, s));
  GRAPHI_ASSIGN_OR_RETURN(std::string kt, transpose(ks, {0, 1, 3, 2}));
  GRAPHI_ASSIGN_OR_RETURN(std::string logits, binary("MatMul", qs, kt));
  const std::optional<double> softcap = attr_f("softcap");
  if (softcap && *softcap > 0) {
    const std::string c = scalar("softcap", *softcap);
    GRAPHI_ASSIGN_OR_RETURN(std::string x, binary("Div", logits, c));
    const std::string t = node("tanh");
    GRAPHI_RETURN_IF_ERROR(emit("Tanh", t, {x}, {t}, {}, where, &n));
    GRAPHI_ASSIGN_OR_RETURN(logits, binary("Mul", t, c));
  }
  GRAPHI_RETURN_IF_ERROR(expose(1, logits));
  // The additive bias: causal and sliding-window terms as one constant [Sq, T] of 0 / -inf
  // (query i at absolute position i + past_len), then the mask.
  const float neg_inf = -std::numeric_limits<float>::infinity();
  const bool causal = attr_i("is_causal", 0) != 0;
  const int64_t left = attr_i("left_window_size", -1), right = attr_i("right_window_size", -1);
  std::string bias;
  bool maybe_empty_rows = false;  // a query row may have no attendable key
  if (present(6)) {
    // An external cache: nonpad_kv_seqlen L [B] valid keys per batch; the causal frontier and
    // the window are offset by L - Sq per batch and keys j >= L are padding. Each condition is
    // an int64 constant over [Sq, T] compared with L viewed as [B, 1, 1, 1].
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc ld, desc_of(ins[6], where));
    if (ld.dtype != DType::kI64 || ld.numel() != b)
      return Status::invalid_graph(where + ": nonpad_kv_seqlen must be int64 [" +
                                   std::to_string(b) + "], got " + ld.to_string());
    const std::string lens = node("nonpad_lengths");
    GRAPHI_RETURN_IF_ERROR(emit_reshape(lens, ins[6], {b, 1, 1, 1}, {lens}, where, &n));
    // cond(c): c[i, j] <= L (at_most_len) or L <= c[i, j].
    auto compare = [&](const std::string& tag, bool at_most_len,
                       const std::function<int64_t(int64_t, int64_t)>& c) -> Result<std::string> {
      HostTensor t = HostTensor::make(onnx::kInt64, {sq, total});
      for (int64_t i = 0; i < sq; ++i)
        for (int64_t j = 0; j < total; ++j) t.i[static_cast<size_t>(i * total + j)] = c(i, j);
      const std::string cst = add_const(name + "/" + tag, std::move(t)), out = node(tag);
      GRAPHI_RETURN_IF_ERROR(emit(
          "LessOrEqual", out,
          at_most_len ? std::vector<std::string>{cst, lens} : std::vector<std::string>{lens, cst},
          {out}, {}, where, &n));
      return out;
    };
    // Padding: j < L. Causal: j <= i + L - Sq. Window: i + L - Sq - j <= left, j - i - L + Sq
    // <= right.
    GRAPHI_ASSIGN_OR_RETURN(std::string allowed,
                            compare("key_valid", true, [](int64_t, int64_t j) { return j + 1; }));
    std::vector<std::string> conds;
    if (causal) {
      GRAPHI_ASSIGN_OR_RETURN(
          std::string c, compare("causal", true, [&](int64_t i, int64_t j) { return j - i + sq; }));
      conds.push_back(c);
    }
    if (left >= 0) {
      GRAPHI_ASSIGN_OR_RETURN(
          std::string c,
          compare("window_left", false, [&](int64_t i, int64_t j) { return left + j - i + sq; }));
      conds.push_back(c);
    }
    if (right >= 0) {
      GRAPHI_ASSIGN_OR_RETURN(
          std::string c,
          compare("window_right", true, [&](int64_t i, int64_t j) { return j - i + sq - right; }));
      conds.push_back(c);
    }
    for (const std::string& c : conds) {
      GRAPHI_ASSIGN_OR_RETURN(allowed, binary("And", allowed, c));
    }
    bias = node("nonpad_bias");
    GRAPHI_RETURN_IF_ERROR(emit(
        "Where", bias, {allowed, scalar("nonpad_zero", 0.0), scalar("nonpad_neg_inf", neg_inf)},
        {bias}, {}, where, &n));
    maybe_empty_rows = true;
  } else if (causal || left >= 0 || right >= 0) {
    HostTensor m = HostTensor::make(onnx::kFloat, {sq, total});
    for (int64_t i = 0; i < sq; ++i)
      for (int64_t j = 0; j < total; ++j) {
        const int64_t diff = i + past_len - j;
        const bool ok =
            (!causal || diff >= 0) && (left < 0 || diff <= left) && (right < 0 || -diff <= right);
        m.f[static_cast<size_t>(i * total + j)] = ok ? 0.0 : neg_inf;
      }
    bias = add_const(name + "/causal_bias", std::move(m));
    maybe_empty_rows = left >= 0 || right >= 0 || (causal && past_len < 0);
  }
  if (present(3)) {
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc md, desc_of(ins[3], where));
    const HostTensor* mh = host(ins[3]);
    const bool is_bool = mh ? mh->type == onnx::kBool : is_bool_value(ins[3]);
    if (md.rank() < 1 || md.rank() > 4 || md.shape.back() > total)
      return Status::invalid_graph(where + ": attn_mask " + md.to_string() +
                                   " must broadcast to [B, heads, " + std::to_string(sq) + ", " +
                                   std::to_string(total) + "]");
    std::string mask = ins[3];
    if (md.shape.back() < total) {
      // A mask shorter than the keys: the rest is masked out (False / -inf).
      std::vector<int64_t> pads(static_cast<size_t>(2 * md.rank()), 0);
      pads.back() = total - md.shape.back();
      const std::string p = node("mask_padded");
      GRAPHI_RETURN_IF_ERROR(emit("Pad", p,
                                  {mask, add_ints_const(p + "/pads", pads),
                                   scalar("mask_pad_value", is_bool ? 0.0 : neg_inf)},
                                  {p}, {}, where, &n));
      mask = p;
    }
    if (is_bool) {  // True attends: 0, False: -inf
      const std::string w = node("mask_bias");
      GRAPHI_RETURN_IF_ERROR(emit(
          "Where", w, {mask, scalar("zero", 0.0), scalar("neg_inf", neg_inf)}, {w}, {}, where, &n));
      mask = w;
    }
    if (bias.empty()) {
      bias = mask;
    } else {
      GRAPHI_ASSIGN_OR_RETURN(bias, binary("Add", bias, mask));
    }
    maybe_empty_rows = true;
  }
  if (!bias.empty()) {
    GRAPHI_ASSIGN_OR_RETURN(logits, binary("Add", logits, bias));
  }
  GRAPHI_RETURN_IF_ERROR(expose(2, logits));
  Attributes sa;
  sa.set("axis", int64_t{-1});
  std::string probs = node("softmax");
  GRAPHI_RETURN_IF_ERROR(emit("Softmax", probs, {logits}, {probs}, std::move(sa), where, &n));
  if (maybe_empty_rows) {
    // Rows whose bias is -inf everywhere attend nothing: 0, not the NaN softmax gives them.
    Attributes ra;
    ra.set("axes", std::vector<int64_t>{-1});
    ra.set("keepdims", int64_t{1});
    const std::string mx = node("bias_row_max"), ok = node("row_attends"), z = node("guarded");
    GRAPHI_RETURN_IF_ERROR(emit("ReduceMax", mx, {bias}, {mx}, std::move(ra), where, &n));
    GRAPHI_RETURN_IF_ERROR(
        emit("Greater", ok, {mx, scalar("row_neg_inf", neg_inf)}, {ok}, {}, where, &n));
    GRAPHI_RETURN_IF_ERROR(
        emit("Where", z, {ok, probs, scalar("row_zero", 0.0)}, {z}, {}, where, &n));
    probs = z;
  }
  GRAPHI_RETURN_IF_ERROR(expose(3, probs));
  if (!three_d) {
    GRAPHI_RETURN_IF_ERROR(emit("MatMul", name, {probs, v}, {outs[0]}, {}, where, &n));
    return Status::ok();
  }
  GRAPHI_ASSIGN_OR_RETURN(std::string y, binary("MatMul", probs, v));
  GRAPHI_ASSIGN_OR_RETURN(TensorDesc yd, desc_of(y, where));
  GRAPHI_ASSIGN_OR_RETURN(std::string yt, transpose(y, {0, 2, 1, 3}));
  return emit_reshape(name, yt, {b, sq, hq * yd.shape[3]}, {outs[0]}, where, &n);
}

// RotaryEmbedding-23 as ONNX's reference computes it, in the input's own layout: the caches
// gathered at position_ids (or given per batch and position), the first rotary_embedding_dim
// (default: all) entries of each head rotated as pairs (x1, x2) -> (cos x1 - sin x2, sin x1 +
// cos x2), the pairs being the two halves, or neighbours when interleaved ([.., D/2, 2] views
// instead of step-2 slices), the rest passed through.
Status Importer::rotary_embedding(NodeIn& io) {
  const onnx::Node& n = io.n;
  const std::string& where = io.where;
  const std::string& name = io.name;
  const std::vector<std::string>& ins = io.ins;
  for (size_t k = 0; k < 3; ++k) GRAPHI_RETURN_IF_ERROR(io.need(k));
  GRAPHI_ASSIGN_OR_RETURN(TensorDesc x, desc_of(ins[0], where));
  if (x.dtype != DType::kF32 || (x.rank() != 3 && x.rank() != 4))
    return Status::invalid_graph(where +
                                 ": input X must be float32 [B, heads, S, D] or [B, S, "
                                 "hidden], got " +
                                 x.to_string());
  const onnx::Attr* nh = n.attr("num_heads");
  const onnx::Attr* rd_attr = n.attr("rotary_embedding_dim");
  const onnx::Attr* il = n.attr("interleaved");
  const bool interleaved = il && il->i != 0;
  const bool four_d = x.rank() == 4;
  const int64_t b = x.shape[0], s = four_d ? x.shape[2] : x.shape[1];
  int64_t heads = four_d ? x.shape[1] : (nh ? nh->i : 0);
  if (heads < 1 || (!four_d && x.shape[2] % heads != 0))
    return Status::invalid_graph(where + ": a 3-D X " + x.to_string() +
                                 " needs attribute num_heads dividing its hidden size");
  const int64_t d = four_d ? x.shape[3] : x.shape[2] / heads;
  const int64_t rd = rd_attr && rd_attr->i > 0 ? rd_attr->i : d;
  if (rd > d || rd % 2 != 0)
    return Status::invalid_graph(where + ": rotary_embedding_dim " + std::to_string(rd) +
                                 " must be even and at most the head size " + std::to_string(d));
  const int64_t half = rd / 2;
  auto node = [&](const std::string& tag) { return fresh(name + "/" + tag); };
  auto op = [&](const char* type, std::vector<std::string> in,
                Attributes a = {}) -> Result<std::string> {
    const std::string out = node(type);
    GRAPHI_RETURN_IF_ERROR(emit(type, out, in, {out}, std::move(a), where, &n));
    return out;
  };
  auto reshape = [&](const std::string& in, const Shape& shape) -> Result<std::string> {
    const std::string out = node("reshaped");
    GRAPHI_RETURN_IF_ERROR(emit_reshape(out, in, shape, {out}, where, &n));
    return out;
  };
  auto slice = [&](const std::string& in, int64_t axis, int64_t lo, int64_t hi) {
    return op("Slice",
              {in, add_ints_const(name + "/starts", {lo}), add_ints_const(name + "/ends", {hi}),
               add_ints_const(name + "/axes", {axis})});
  };
  // X as [B, heads, S, D] (4-D) or [B, S, heads, D] (3-D); the caches broadcast over heads.
  std::string xs = ins[0];
  if (!four_d) {
    GRAPHI_ASSIGN_OR_RETURN(xs, reshape(xs, {b, s, heads, d}));
  }
  const Shape cache_shape = four_d ? Shape{b, 1, s, half} : Shape{b, s, 1, half};
  std::string cs[2];
  for (int k = 0; k < 2; ++k) {
    std::string c = ins[static_cast<size_t>(1 + k)];
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc cd, desc_of(c, where));
    if (cd.shape.empty() || cd.shape.back() != half)
      return Status::invalid_graph(
          where + ": " + (k == 0 ? "cos_cache " : "sin_cache ") + cd.to_string() +
          " must end in rotary_embedding_dim / 2 = " + std::to_string(half));
    if (ins.size() > 3 && !ins[3].empty()) {
      Attributes ga;
      ga.set("axis", int64_t{0});
      GRAPHI_ASSIGN_OR_RETURN(c, op("Gather", {c, ins[3]}, std::move(ga)));
    }
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc gd, desc_of(c, where));
    if (gd.numel() != b * s * half)
      return Status::invalid_graph(where + ": the " + (k == 0 ? "cos" : "sin") + " cache " +
                                   gd.to_string() + " (at position_ids) must hold [B, S, " +
                                   std::to_string(half) + "] values");
    GRAPHI_ASSIGN_OR_RETURN(c, reshape(c, cache_shape));
    if (interleaved) {
      Shape with_pair = cache_shape;
      with_pair.push_back(1);
      GRAPHI_ASSIGN_OR_RETURN(c, reshape(c, with_pair));
    }
    cs[k] = c;
  }
  std::string rot = xs, pass;
  if (rd < d) {
    GRAPHI_ASSIGN_OR_RETURN(rot, slice(xs, 3, 0, rd));
    GRAPHI_ASSIGN_OR_RETURN(pass, slice(xs, 3, rd, d));
  }
  std::string x1, x2;
  Shape pairs;
  if (interleaved) {  // [.., rd] as [.., rd / 2, 2]: the pair elements on the last axis
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc rdsc, desc_of(rot, where));
    pairs = rdsc.shape;
    Shape view = pairs;
    view.back() = half;
    view.push_back(2);
    GRAPHI_ASSIGN_OR_RETURN(std::string v, reshape(rot, view));
    GRAPHI_ASSIGN_OR_RETURN(x1, slice(v, 4, 0, 1));
    GRAPHI_ASSIGN_OR_RETURN(x2, slice(v, 4, 1, 2));
  } else {
    GRAPHI_ASSIGN_OR_RETURN(x1, slice(rot, 3, 0, half));
    GRAPHI_ASSIGN_OR_RETURN(x2, slice(rot, 3, half, rd));
  }
  GRAPHI_ASSIGN_OR_RETURN(std::string c1, op("Mul", {cs[0], x1}));
  GRAPHI_ASSIGN_OR_RETURN(std::string s2, op("Mul", {cs[1], x2}));
  GRAPHI_ASSIGN_OR_RETURN(std::string real, op("Sub", {c1, s2}));
  GRAPHI_ASSIGN_OR_RETURN(std::string s1, op("Mul", {cs[1], x1}));
  GRAPHI_ASSIGN_OR_RETURN(std::string c2, op("Mul", {cs[0], x2}));
  GRAPHI_ASSIGN_OR_RETURN(std::string imag, op("Add", {s1, c2}));
  Attributes last;
  last.set("axis", int64_t{-1});
  GRAPHI_ASSIGN_OR_RETURN(std::string rotated, op("Concat", {real, imag}, last));
  if (interleaved) {
    GRAPHI_ASSIGN_OR_RETURN(rotated, reshape(rotated, pairs));
  }
  std::string y = rotated;
  if (!pass.empty()) {
    GRAPHI_ASSIGN_OR_RETURN(y, op("Concat", {rotated, pass}, last));
  }
  if (!four_d) return emit_reshape(name, y, x.shape, {io.outs[0]}, where, &n);
  return emit("Identity", name, {y}, {io.outs[0]}, {}, where, &n);
}

// TensorScatter-24 (a static KV cache's update): present = past_cache with `update` written at
// write_indices[b] + s (mod the cache length when mode is circular) along `axis`, as
// ScatterElements with those positions expanded to update's shape; a position past the cache
// fails the run naming the node.
Status Importer::tensor_scatter(NodeIn& io) {
  const onnx::Node& n = io.n;
  const std::string& where = io.where;
  const std::string& name = io.name;
  const std::vector<std::string>& ins = io.ins;
  for (size_t k = 0; k < 2; ++k) GRAPHI_RETURN_IF_ERROR(io.need(k));
  GRAPHI_ASSIGN_OR_RETURN(TensorDesc past, desc_of(ins[0], where));
  GRAPHI_ASSIGN_OR_RETURN(TensorDesc upd, desc_of(ins[1], where));
  const int r = past.rank();
  const onnx::Attr* ax = n.attr("axis");
  const onnx::Attr* md = n.attr("mode");
  const std::string mode = md ? md->s : "linear";
  int64_t axis = ax ? ax->i : -2;
  if (axis < 0) axis += r;
  if (r < 2 || upd.rank() != r || upd.dtype != past.dtype || axis < 1 || axis >= r ||
      (mode != "linear" && mode != "circular"))
    return Status::invalid_graph(where + ": past_cache " + past.to_string() + " and update " +
                                 upd.to_string() + " must have one rank >= 2 and dtype, axis " +
                                 std::to_string(axis) + " in [1, rank), mode linear or circular");
  for (int d = 0; d < r; ++d)
    if (d == axis ? upd.shape[static_cast<size_t>(d)] > past.shape[static_cast<size_t>(d)]
                  : upd.shape[static_cast<size_t>(d)] != past.shape[static_cast<size_t>(d)])
      return Status::invalid_graph(where + ": update " + upd.to_string() +
                                   " does not fit past_cache " + past.to_string() + " at dim " +
                                   std::to_string(d));
  const int64_t b = past.shape[0], len = upd.shape[static_cast<size_t>(axis)];
  auto node = [&](const std::string& tag) { return fresh(name + "/" + tag); };
  // write_indices as [B, 1, ...], plus 0..len-1 along the axis.
  Shape wshape(static_cast<size_t>(r), 1), sshape(static_cast<size_t>(r), 1);
  wshape[0] = b;
  sshape[static_cast<size_t>(axis)] = len;
  std::string w;
  if (ins.size() > 2 && !ins[2].empty()) {
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc wd, desc_of(ins[2], where));
    if (wd.dtype != DType::kI64 || wd.numel() != b)
      return Status::invalid_graph(where + ": write_indices must be int64 [" + std::to_string(b) +
                                   "], got " + wd.to_string());
    w = node("write_indices");
    GRAPHI_RETURN_IF_ERROR(emit_reshape(w, ins[2], wshape, {w}, where, &n));
  } else {
    HostTensor z = HostTensor::make(onnx::kInt64, wshape);
    w = add_const(name + "/write_indices", std::move(z));
  }
  HostTensor steps = HostTensor::make(onnx::kInt64, sshape);
  for (int64_t s = 0; s < len; ++s) steps.i[static_cast<size_t>(s)] = s;
  std::string pos = node("positions");
  GRAPHI_RETURN_IF_ERROR(
      emit_int_binary("Add", pos, w, add_const(name + "/steps", std::move(steps)), pos, n, where));
  if (mode == "circular") {
    HostTensor m = HostTensor::make(onnx::kInt64, {1});
    m.i[0] = past.shape[static_cast<size_t>(axis)];
    const std::string wrapped = node("wrapped");
    GRAPHI_RETURN_IF_ERROR(emit("Mod", wrapped, {pos, add_const(name + "/length", std::move(m))},
                                {wrapped}, {}, where, &n));
    pos = wrapped;
  }
  const std::string idx = node("indices");
  GRAPHI_RETURN_IF_ERROR(
      emit("Expand", idx, {pos, add_ints_const(idx + "/shape", upd.shape)}, {idx}, {}, where, &n));
  Attributes a;
  a.set("axis", axis);
  return emit("ScatterElements", name, {ins[0], idx, ins[1]}, {io.outs[0]}, std::move(a), where,
              &n);
}

}  // namespace graphi::graph::onnx_import
