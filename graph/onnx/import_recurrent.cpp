// ONNX import, recurrent ops: LSTM/GRU/RNN nodes whose activations the fused sequence kernels do
// not run are unrolled over the time steps into plain graphi ops (the fused ones pass through to
// graphi's op of the same name in the driver, graph/onnx/onnx_import.cpp).
#include <cctype>
#include <set>

#include "graph/onnx/import_internal.h"

namespace graphi::graph::onnx_import {

using onnx::HostTensor;

std::optional<Status> Importer::translate_recurrent(NodeIn& io) {
  const onnx::Node& n = io.n;
  const std::string& op = n.op;
  const std::string& where = io.where;
  [[maybe_unused]] const std::string& name = io.name;
  [[maybe_unused]] std::vector<std::string>& ins = io.ins;
  [[maybe_unused]] const std::vector<std::string>& outs = io.outs;
  [[maybe_unused]] auto need = [&](size_t k) { return io.need(k); };
  if ((op == "LSTM" || op == "GRU" || op == "RNN") && rnn_needs_unrolling(n))
    return translate_rnn_unrolled(n, name, ins, where);
  return std::nullopt;
}

bool Importer::rnn_needs_unrolling(const onnx::Node& n) {
  for (const char* k : {"activation_alpha", "activation_beta"})
    if (const onnx::Attr* a = n.attr(k); a && !a->floats.empty()) return true;
  const onnx::Attr* acts = n.attr("activations");
  if (!acts) return false;
  const std::vector<std::string> lstm = {"sigmoid", "tanh", "tanh"}, gru = {"sigmoid", "tanh"};
  for (size_t k = 0; k < acts->strings.size(); ++k) {
    std::string a = acts->strings[k];
    for (char& c : a) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (n.op == "LSTM" && a != lstm[k % 3]) return true;
    if (n.op == "GRU" && a != gru[k % 2]) return true;
    if (n.op == "RNN" && a != "tanh" && a != "relu" && a != "sigmoid") return true;
  }
  return false;
}

Status Importer::translate_rnn_unrolled(const onnx::Node& n, const std::string& name,
                                        const std::vector<std::string>& ins,
                                        const std::string& where) {
  const bool lstm = n.op == "LSTM", gru = n.op == "GRU";
  const int64_t G = lstm ? 4 : gru ? 3 : 1;
  const size_t per_dir = lstm ? 3 : gru ? 2 : 1;
  auto attr_i = [&](const char* k, int64_t d) {
    const onnx::Attr* a = n.attr(k);
    return a ? a->i : d;
  };
  auto in = [&](size_t k) { return k < ins.size() ? ins[k] : std::string(); };
  for (const onnx::Attr& a : n.attrs) {
    static const std::set<std::string> known = {
        "activations",         "activation_alpha", "activation_beta", "clip",
        "direction",           "hidden_size",      "input_forget",    "layout",
        "linear_before_reset", "output_sequence"};
    if (!known.count(a.name))
      return Status::invalid_graph(where + ": unknown attribute '" + a.name + "'");
  }
  const size_t max_outputs = lstm ? 3 : 2;
  if (n.outputs.size() > max_outputs)
    return Status::invalid_graph(where + ": " + n.op + " has 1 to " + std::to_string(max_outputs) +
                                 " outputs (Y, Y_h" + (lstm ? ", Y_c" : "") + "), got " +
                                 std::to_string(n.outputs.size()));
  const onnx::Attr* dir_a = n.attr("direction");
  const std::string direction = dir_a ? dir_a->s : "forward";
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    return Status::invalid_graph(where + ": attribute 'direction' must be forward, reverse or " +
                                 "bidirectional, got '" + direction + "'");
  const int64_t D = direction == "bidirectional" ? 2 : 1;
  const int64_t layout = attr_i("layout", 0);
  if (layout != 0 && layout != 1)
    return Status::invalid_graph(where + ": attribute 'layout' must be 0 or 1");
  const bool input_forget = lstm && attr_i("input_forget", 0) != 0;
  const bool lbr = gru && attr_i("linear_before_reset", 0) != 0;
  const onnx::Attr* clip_a = n.attr("clip");
  const double clip = clip_a ? clip_a->f : 0.0;
  if (clip_a && !(clip > 0.0))
    return Status::invalid_graph(where + ": attribute 'clip' must be positive");

  // Activations per direction, with activation_alpha / activation_beta consumed in order by the
  // activations that take them (as ONNX Runtime does); defaults as the ONNX operators'.
  struct Act {
    std::string name;
    double alpha = 0, beta = 0;
  };
  std::vector<std::string> names;
  if (const onnx::Attr* a = n.attr("activations")) names = a->strings;
  const std::vector<std::string> defaults =
      lstm  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
      : gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
            : std::vector<std::string>{"Tanh"};
  if (names.empty()) names = defaults;
  std::vector<float> alphas, betas;
  if (const onnx::Attr* a = n.attr("activation_alpha")) alphas = a->floats;
  if (const onnx::Attr* a = n.attr("activation_beta")) betas = a->floats;
  if (names.size() == per_dir && D == 2) {
    // Whether the second direction reuses the first one's alpha/beta or takes the next
    // values (ONNX Runtime) is not defined: refuse rather than guess.
    if (n.attr("activations") && (!alphas.empty() || !betas.empty()))
      return Status::unsupported(where + ": attribute 'activations' lists one direction's " +
                                 "functions for a bidirectional " + n.op +
                                 " together with activation_alpha/activation_beta; which values "
                                 "the second direction takes is ambiguous: list the functions "
                                 "of both directions");
    const std::vector<std::string> one = names;
    names.insert(names.end(), one.begin(), one.end());
  }
  if (names.size() != per_dir * static_cast<size_t>(D))
    return Status::invalid_graph(where + ": attribute 'activations' has " +
                                 std::to_string(names.size()) + " names; " + n.op + " needs " +
                                 std::to_string(per_dir) + " per direction");
  size_t ai = 0, bi = 0;
  std::vector<Act> acts;
  for (const std::string& raw : names) {
    Act a;
    for (char c : raw) a.name += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    struct Default {
      const char* name;
      int params;  // 0: none, 1: alpha, 2: alpha and beta
      double alpha, beta;
    };
    static const Default kActs[] = {{"sigmoid", 0, 0, 0},
                                    {"tanh", 0, 0, 0},
                                    {"relu", 0, 0, 0},
                                    {"softsign", 0, 0, 0},
                                    {"softplus", 0, 0, 0},
                                    {"leakyrelu", 1, 0.01, 0},
                                    {"elu", 1, 1.0, 0},
                                    {"thresholdedrelu", 1, 1.0, 0},
                                    {"hardsigmoid", 2, 0.2, 0.5},
                                    {"affine", 2, 1.0, 0.0},
                                    {"scaledtanh", 2, 1.0, 1.0}};
    const Default* d = nullptr;
    for (const Default& k : kActs)
      if (a.name == k.name) d = &k;
    if (!d)
      return Status::unsupported(where + ": attribute 'activations': '" + raw +
                                 "' is not supported (Sigmoid, Tanh, Relu, Softsign, Softplus, "
                                 "LeakyRelu, Elu, ThresholdedRelu, HardSigmoid, Affine, "
                                 "ScaledTanh)");
    a.alpha = d->alpha;
    a.beta = d->beta;
    const bool has_alpha = d->params >= 1 && ai < alphas.size();
    const bool has_beta = d->params >= 2 && bi < betas.size();
    if (has_alpha) a.alpha = alphas[ai++];
    if (has_beta) a.beta = betas[bi++];
    // The spec says "defaults of the corresponding ONNX operators"; ONNX Runtime uses 0 for
    // these three. Rather than pick one, ask for the values.
    const bool ambiguous =
        a.name == "affine" || a.name == "scaledtanh" || a.name == "thresholdedrelu";
    if (ambiguous && (!has_alpha || (d->params >= 2 && !has_beta)))
      return Status::unsupported(where + ": attribute 'activations': '" + raw +
                                 "' without its activation_alpha" +
                                 (d->params >= 2 ? "/activation_beta" : "") +
                                 " values is not supported (its defaults are ambiguous: the "
                                 "ONNX operator's or ONNX Runtime's 0)");
    acts.push_back(a);
  }

  // Inputs and their shapes.
  for (size_t k = 0; k < 3; ++k)
    if (in(k).empty())
      return Status::invalid_graph(where + ": input " + std::to_string(k) + " is missing");
  GRAPHI_ASSIGN_OR_RETURN(TensorDesc x, desc_of(in(0), where));
  GRAPHI_ASSIGN_OR_RETURN(TensorDesc w, desc_of(in(1), where));
  GRAPHI_ASSIGN_OR_RETURN(TensorDesc r, desc_of(in(2), where));
  if (x.rank() != 3 || x.dtype != DType::kF32 || w.dtype != DType::kF32 || r.dtype != DType::kF32 ||
      r.rank() != 3)
    return Status::invalid_graph(where + ": X " + x.to_string() + ", W " + w.to_string() +
                                 " and R " + r.to_string() + " must be 3-D float32");
  const int64_t T = layout ? x.shape[1] : x.shape[0], B = layout ? x.shape[0] : x.shape[1],
                I = x.shape[2], H = attr_i("hidden_size", r.shape[2]);
  if (T < 1 || B < 1 || I < 1 || H < 1)
    return Status::invalid_graph(where + ": X " + x.to_string() + " with hidden_size " +
                                 std::to_string(H) + " has an empty dimension");
  // Each step becomes ~30 graphi nodes; 2048 steps load in about 3 s (engine::plan_memory grows
  // faster than linearly with the node count), so longer sequences are refused, not hung on.
  constexpr int64_t kMaxUnrolledSteps = 2048;
  if (T * D > kMaxUnrolledSteps)
    return Status::unsupported(where + ": " + n.op + " with these activations runs unrolled, " +
                               "and " + std::to_string(T) + " steps x " + std::to_string(D) +
                               " directions exceed the limit of " +
                               std::to_string(kMaxUnrolledSteps));
  auto expect = [&](size_t k, const char* field, const Shape& want) -> Status {
    if (in(k).empty()) return Status::ok();
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(in(k), where));
    if (d.shape == want && (k == 4 || d.dtype == DType::kF32)) return Status::ok();
    return Status::invalid_graph(where + ": input " + std::to_string(k) + " (" + field + ") is " +
                                 d.to_string() + ", expected float32" + shape_to_string(want) +
                                 " (from X " + x.to_string() + ", hidden_size " +
                                 std::to_string(H) + ", direction " + direction + ")");
  };
  const Shape state = layout ? Shape{B, D, H} : Shape{D, B, H};
  GRAPHI_RETURN_IF_ERROR(expect(1, "W", {D, G * H, I}));
  GRAPHI_RETURN_IF_ERROR(expect(2, "R", {D, G * H, H}));
  GRAPHI_RETURN_IF_ERROR(expect(3, "B", {D, 2 * G * H}));
  GRAPHI_RETURN_IF_ERROR(expect(5, "initial_h", state));
  if (lstm) {
    GRAPHI_RETURN_IF_ERROR(expect(6, "initial_c", state));
    GRAPHI_RETURN_IF_ERROR(expect(7, "P", {D, 3 * H}));
  }
  if (!in(4).empty()) {
    GRAPHI_ASSIGN_OR_RETURN(TensorDesc d, desc_of(in(4), where));
    if (d.shape != Shape{B} || (d.dtype != DType::kI32 && d.dtype != DType::kI64))
      return Status::invalid_graph(where + ": input 4 (sequence_lens) is " + d.to_string() +
                                   ", expected int32 or int64[" + std::to_string(B) + "]");
  }

  // Plain-op builders. Every value and node gets a fresh name under the ONNX node's.
  int counter = 0;
  auto op = [&](const std::string& gop, const std::vector<std::string>& args,
                Attributes a = {}) -> Result<std::string> {
    const std::string v = fresh(name + "/" + gop + "_" + std::to_string(counter++));
    GRAPHI_RETURN_IF_ERROR(emit(gop, v, args, {v}, std::move(a), where, nullptr));
    return v;
  };
  // Distinct bases: fresh() probes base, base_1, base_2, ... (quadratic for a repeated base).
  auto scalar = [&](double v) {
    HostTensor t = HostTensor::make(onnx::kFloat, {1});
    t.f[0] = v;
    return add_const(name + "/c" + std::to_string(counter++), std::move(t));
  };
  auto ints = [&](std::vector<int64_t> v) {
    return add_ints_const(name + "/i" + std::to_string(counter++), std::move(v));
  };
  auto slice = [&](const std::string& v, int64_t axis, int64_t b, int64_t e) {
    return op("Slice", {v, ints({b}), ints({e}), ints({axis})});
  };
  auto reshape = [&](const std::string& v, std::vector<int64_t> shape) {
    return op("Reshape", {v, ints(std::move(shape))});
  };
  auto transpose = [&](const std::string& v, std::vector<int64_t> perm) {
    Attributes a;
    a.set("perm", perm);
    return op("Transpose", {v}, std::move(a));
  };
  auto concat = [&](const std::vector<std::string>& vs, int64_t axis) -> Result<std::string> {
    if (vs.size() == 1) return vs[0];
    Attributes a;
    a.set("axis", axis);
    return op("Concat", vs, std::move(a));
  };
  auto clipped = [&](const std::string& v) -> Result<std::string> {
    if (!clip_a) return v;
    Attributes a;
    a.set("min", -clip);
    a.set("max", clip);
    return op("Clip", {v}, std::move(a));
  };
  auto activate = [&](const Act& a, const std::string& v0) -> Result<std::string> {
    GRAPHI_ASSIGN_OR_RETURN(std::string v, clipped(v0));
    if (a.name == "sigmoid") return op("Sigmoid", {v});
    if (a.name == "tanh") return op("Tanh", {v});
    if (a.name == "relu") return op("Relu", {v});
    if (a.name == "softsign") return op("Softsign", {v});
    if (a.name == "softplus") return op("Softplus", {v});
    if (a.name == "affine") {
      GRAPHI_ASSIGN_OR_RETURN(std::string m, op("Mul", {v, scalar(a.alpha)}));
      return op("Add", {m, scalar(a.beta)});
    }
    if (a.name == "scaledtanh") {
      GRAPHI_ASSIGN_OR_RETURN(std::string m, op("Mul", {v, scalar(a.beta)}));
      GRAPHI_ASSIGN_OR_RETURN(std::string t, op("Tanh", {m}));
      return op("Mul", {t, scalar(a.alpha)});
    }
    Attributes at;
    at.set("alpha", a.alpha);
    if (a.name == "hardsigmoid") {
      at.set("beta", a.beta);
      return op("HardSigmoid", {v}, std::move(at));
    }
    if (a.name == "leakyrelu") return op("LeakyRelu", {v}, std::move(at));
    if (a.name == "elu") return op("Elu", {v}, std::move(at));
    return op("ThresholdedRelu", {v}, std::move(at));
  };

  // Time-major X and states.
  std::string X = in(0);
  if (layout) {
    GRAPHI_ASSIGN_OR_RETURN(X, transpose(X, {1, 0, 2}));
  }
  GRAPHI_ASSIGN_OR_RETURN(std::string x2, reshape(X, {T * B, I}));
  std::string h0_all = in(5), c0_all = lstm ? in(6) : "";
  if (layout && !h0_all.empty()) {
    GRAPHI_ASSIGN_OR_RETURN(h0_all, transpose(h0_all, {1, 0, 2}));
  }
  if (layout && !c0_all.empty()) {
    GRAPHI_ASSIGN_OR_RETURN(c0_all, transpose(c0_all, {1, 0, 2}));
  }
  std::string zeros;
  {
    HostTensor t = HostTensor::make(onnx::kFloat, {B, H});
    zeros = add_const(name + "/zeros", std::move(t));
  }
  // mask_t = t < sequence_lens (float32 0/1, [B, 1]).
  std::string lens;
  if (!in(4).empty()) {
    Attributes a;
    a.set("to", int64_t{1});
    GRAPHI_ASSIGN_OR_RETURN(std::string lf, op("Cast", {in(4)}, std::move(a)));
    GRAPHI_ASSIGN_OR_RETURN(lens, reshape(lf, {B, 1}));
  }
  const std::string one = scalar(1.0);

  std::vector<std::string> y_dirs, h_dirs, c_dirs;
  const bool want_y = !n.outputs.empty() && !n.outputs[0].empty();
  for (int64_t d = 0; d < D; ++d) {
    const Act* f = &acts[static_cast<size_t>(d) * per_dir];
    auto dir_slice = [&](const std::string& v, std::vector<int64_t> shape) -> Result<std::string> {
      GRAPHI_ASSIGN_OR_RETURN(std::string s, slice(v, 0, d, d + 1));
      return reshape(s, std::move(shape));
    };
    // X W^T + Wb for every step at once: [T, B, G*H].
    GRAPHI_ASSIGN_OR_RETURN(std::string wd, dir_slice(in(1), {G * H, I}));
    GRAPHI_ASSIGN_OR_RETURN(std::string wt, transpose(wd, {1, 0}));
    GRAPHI_ASSIGN_OR_RETURN(std::string xw, op("MatMul", {x2, wt}));
    std::string wb, rb;
    if (!in(3).empty()) {
      GRAPHI_ASSIGN_OR_RETURN(std::string bd, dir_slice(in(3), {2 * G * H}));
      GRAPHI_ASSIGN_OR_RETURN(wb, slice(bd, 0, 0, G * H));
      GRAPHI_ASSIGN_OR_RETURN(rb, slice(bd, 0, G * H, 2 * G * H));
      GRAPHI_ASSIGN_OR_RETURN(xw, op("Add", {xw, wb}));
    }
    GRAPHI_ASSIGN_OR_RETURN(xw, reshape(xw, {T, B, G * H}));
    GRAPHI_ASSIGN_OR_RETURN(std::string rd, dir_slice(in(2), {G * H, H}));
    GRAPHI_ASSIGN_OR_RETURN(std::string rt, transpose(rd, {1, 0}));  // [H, G*H]
    std::string rt_zr, rt_h, rb_zr, rb_h;
    if (gru) {
      GRAPHI_ASSIGN_OR_RETURN(rt_zr, slice(rt, 1, 0, 2 * H));
      GRAPHI_ASSIGN_OR_RETURN(rt_h, slice(rt, 1, 2 * H, 3 * H));
      if (!rb.empty()) {
        GRAPHI_ASSIGN_OR_RETURN(rb_zr, slice(rb, 0, 0, 2 * H));
        GRAPHI_ASSIGN_OR_RETURN(rb_h, slice(rb, 0, 2 * H, 3 * H));
      }
    }
    std::string pi, po, pf;
    if (lstm && !in(7).empty()) {
      GRAPHI_ASSIGN_OR_RETURN(std::string pd, dir_slice(in(7), {3 * H}));
      GRAPHI_ASSIGN_OR_RETURN(pi, slice(pd, 0, 0, H));
      GRAPHI_ASSIGN_OR_RETURN(po, slice(pd, 0, H, 2 * H));
      GRAPHI_ASSIGN_OR_RETURN(pf, slice(pd, 0, 2 * H, 3 * H));
    }
    std::string h = zeros, c = zeros;
    if (!h0_all.empty()) {
      GRAPHI_ASSIGN_OR_RETURN(h, dir_slice(h0_all, {B, H}));
    }
    if (!c0_all.empty()) {
      GRAPHI_ASSIGN_OR_RETURN(c, dir_slice(c0_all, {B, H}));
    }
    auto add_opt = [&](const std::string& a, const std::string& b) -> Result<std::string> {
      if (b.empty()) return a;
      return op("Add", {a, b});
    };
    const bool reverse = direction == "reverse" || d == 1;
    std::vector<std::string> ys(static_cast<size_t>(T));
    for (int64_t k = 0; k < T; ++k) {
      const int64_t t = reverse ? T - 1 - k : k;
      GRAPHI_ASSIGN_OR_RETURN(std::string xt, slice(xw, 0, t, t + 1));
      GRAPHI_ASSIGN_OR_RETURN(xt, reshape(xt, {B, G * H}));
      std::string h_new, c_new;
      if (lstm) {
        GRAPHI_ASSIGN_OR_RETURN(std::string hr, op("MatMul", {h, rt}));
        GRAPHI_ASSIGN_OR_RETURN(hr, add_opt(hr, rb));
        GRAPHI_ASSIGN_OR_RETURN(std::string g, op("Add", {xt, hr}));
        GRAPHI_ASSIGN_OR_RETURN(std::string gi, slice(g, 1, 0, H));
        GRAPHI_ASSIGN_OR_RETURN(std::string go, slice(g, 1, H, 2 * H));
        GRAPHI_ASSIGN_OR_RETURN(std::string gf, slice(g, 1, 2 * H, 3 * H));
        GRAPHI_ASSIGN_OR_RETURN(std::string gc, slice(g, 1, 3 * H, 4 * H));
        if (!pi.empty()) {
          GRAPHI_ASSIGN_OR_RETURN(std::string pci, op("Mul", {c, pi}));
          GRAPHI_ASSIGN_OR_RETURN(gi, op("Add", {gi, pci}));
          GRAPHI_ASSIGN_OR_RETURN(std::string pcf, op("Mul", {c, pf}));
          GRAPHI_ASSIGN_OR_RETURN(gf, op("Add", {gf, pcf}));
        }
        GRAPHI_ASSIGN_OR_RETURN(std::string ig, activate(f[0], gi));
        std::string fg;
        if (input_forget) {
          GRAPHI_ASSIGN_OR_RETURN(fg, op("Sub", {one, ig}));
        } else {
          GRAPHI_ASSIGN_OR_RETURN(fg, activate(f[0], gf));
        }
        GRAPHI_ASSIGN_OR_RETURN(std::string cg, activate(f[1], gc));
        GRAPHI_ASSIGN_OR_RETURN(std::string fc, op("Mul", {fg, c}));
        GRAPHI_ASSIGN_OR_RETURN(std::string icg, op("Mul", {ig, cg}));
        GRAPHI_ASSIGN_OR_RETURN(c_new, op("Add", {fc, icg}));
        if (!po.empty()) {
          GRAPHI_ASSIGN_OR_RETURN(std::string pco, op("Mul", {c_new, po}));
          GRAPHI_ASSIGN_OR_RETURN(go, op("Add", {go, pco}));
        }
        GRAPHI_ASSIGN_OR_RETURN(std::string og, activate(f[0], go));
        GRAPHI_ASSIGN_OR_RETURN(std::string hc, activate(f[2], c_new));
        GRAPHI_ASSIGN_OR_RETURN(h_new, op("Mul", {og, hc}));
      } else if (gru) {
        GRAPHI_ASSIGN_OR_RETURN(std::string hzr, op("MatMul", {h, rt_zr}));
        GRAPHI_ASSIGN_OR_RETURN(hzr, add_opt(hzr, rb_zr));
        GRAPHI_ASSIGN_OR_RETURN(std::string xzr, slice(xt, 1, 0, 2 * H));
        GRAPHI_ASSIGN_OR_RETURN(std::string zr, op("Add", {xzr, hzr}));
        GRAPHI_ASSIGN_OR_RETURN(std::string gz, slice(zr, 1, 0, H));
        GRAPHI_ASSIGN_OR_RETURN(std::string gr, slice(zr, 1, H, 2 * H));
        GRAPHI_ASSIGN_OR_RETURN(std::string z, activate(f[0], gz));
        GRAPHI_ASSIGN_OR_RETURN(std::string rg, activate(f[0], gr));
        GRAPHI_ASSIGN_OR_RETURN(std::string xh, slice(xt, 1, 2 * H, 3 * H));
        std::string hh;
        if (lbr) {
          GRAPHI_ASSIGN_OR_RETURN(std::string m, op("MatMul", {h, rt_h}));
          GRAPHI_ASSIGN_OR_RETURN(m, add_opt(m, rb_h));
          GRAPHI_ASSIGN_OR_RETURN(std::string rm, op("Mul", {rg, m}));
          GRAPHI_ASSIGN_OR_RETURN(hh, op("Add", {xh, rm}));
        } else {
          GRAPHI_ASSIGN_OR_RETURN(std::string rh, op("Mul", {rg, h}));
          GRAPHI_ASSIGN_OR_RETURN(std::string m, op("MatMul", {rh, rt_h}));
          GRAPHI_ASSIGN_OR_RETURN(m, add_opt(m, rb_h));
          GRAPHI_ASSIGN_OR_RETURN(hh, op("Add", {xh, m}));
        }
        GRAPHI_ASSIGN_OR_RETURN(std::string nh, activate(f[1], hh));
        GRAPHI_ASSIGN_OR_RETURN(std::string omz, op("Sub", {one, z}));
        GRAPHI_ASSIGN_OR_RETURN(std::string a1, op("Mul", {omz, nh}));
        GRAPHI_ASSIGN_OR_RETURN(std::string a2, op("Mul", {z, h}));
        GRAPHI_ASSIGN_OR_RETURN(h_new, op("Add", {a1, a2}));
      } else {
        GRAPHI_ASSIGN_OR_RETURN(std::string hr, op("MatMul", {h, rt}));
        GRAPHI_ASSIGN_OR_RETURN(hr, add_opt(hr, rb));
        GRAPHI_ASSIGN_OR_RETURN(std::string g, op("Add", {xt, hr}));
        GRAPHI_ASSIGN_OR_RETURN(h_new, activate(f[0], g));
      }
      std::string y = h_new;
      if (!lens.empty()) {
        // Past a sequence's length: the state stays, the output is 0 (ONNX).
        GRAPHI_ASSIGN_OR_RETURN(std::string m, op("Less", {scalar(static_cast<double>(t)), lens}));
        GRAPHI_ASSIGN_OR_RETURN(y, op("Where", {m, h_new, zeros}));
        GRAPHI_ASSIGN_OR_RETURN(h_new, op("Where", {m, h_new, h}));
        if (lstm) {
          GRAPHI_ASSIGN_OR_RETURN(c_new, op("Where", {m, c_new, c}));
        }
      }
      h = h_new;
      c = c_new;
      if (want_y) {
        GRAPHI_ASSIGN_OR_RETURN(ys[static_cast<size_t>(t)], reshape(y, {1, 1, B, H}));
      }
    }
    if (want_y) {
      GRAPHI_ASSIGN_OR_RETURN(std::string yd, concat(ys, 0));
      y_dirs.push_back(yd);
    }
    GRAPHI_ASSIGN_OR_RETURN(std::string hd, reshape(h, {1, B, H}));
    h_dirs.push_back(hd);
    if (lstm) {
      GRAPHI_ASSIGN_OR_RETURN(std::string cd, reshape(c, {1, B, H}));
      c_dirs.push_back(cd);
    }
  }
  // Outputs (only the ones the node names).
  const std::vector<std::vector<std::string>*> parts = {&y_dirs, &h_dirs, &c_dirs};
  for (size_t k = 0; k < n.outputs.size() && k < parts.size(); ++k) {
    if (n.outputs[k].empty()) continue;
    GRAPHI_ASSIGN_OR_RETURN(std::string v, concat(*parts[k], k == 0 ? 1 : 0));
    if (layout) {
      GRAPHI_ASSIGN_OR_RETURN(v, transpose(v, k == 0 ? std::vector<int64_t>{2, 0, 1, 3}
                                                     : std::vector<int64_t>{1, 0, 2}));
    }
    GRAPHI_RETURN_IF_ERROR(emit("Identity", fresh(name + "/out" + std::to_string(k)), {v},
                                {n.outputs[k]}, {}, where, nullptr));
  }
  return Status::ok();
}

}  // namespace graphi::graph::onnx_import
