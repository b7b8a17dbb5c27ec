#include "tests/support/reference_gemm_conv.h"

#include <omp.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <thread>

#include "graph/graph_builder.h"
#include "graph/npy.h"
#include "ops/registry.h"
#include "tests/support/test_util.h"

namespace graphi::test {

namespace {

float at(const Tensor& t, int64_t i) { return t.data_as<float>()[i]; }

// Row-major strides of a shape.
std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

}  // namespace

Tensor matmul_ref(const Tensor& a, const Tensor& b) {
  // Promote 1-D operands, as numpy does, and remember which dims to drop from the result.
  Shape as = a.shape(), bs = b.shape();
  const bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) as.insert(as.begin(), 1);
  if (b_vec) bs.push_back(1);
  const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  GRAPHI_CHECK(bs[bs.size() - 2] == k, "matmul_ref: inner dims");
  // Broadcast batch dims, right-aligned.
  const size_t rank = std::max(as.size(), bs.size());
  Shape ab(rank, 1), bb(rank, 1);
  std::copy(as.begin(), as.end(), ab.begin() + (rank - as.size()));
  std::copy(bs.begin(), bs.end(), bb.begin() + (rank - bs.size()));
  Shape batch(rank - 2);
  for (size_t i = 0; i + 2 < rank; ++i) {
    GRAPHI_CHECK(ab[i] == bb[i] || ab[i] == 1 || bb[i] == 1, "matmul_ref: batch dims");
    batch[i] = std::max(ab[i], bb[i]);
  }
  Shape full = batch;
  full.push_back(m);
  full.push_back(n);
  const auto ast = strides_of(ab), bst = strides_of(bb);
  const int64_t count = shape_numel(batch);
  std::vector<float> out(static_cast<size_t>(count * m * n));
  for (int64_t idx = 0; idx < count; ++idx) {
    // Coordinates of this batch; an operand's size-1 dim always reads coordinate 0.
    int64_t rest = idx, ao = 0, bo = 0;
    for (size_t d = batch.size(); d-- > 0;) {
      const int64_t c = rest % batch[d];
      rest /= batch[d];
      if (ab[d] != 1) ao += c * ast[d];
      if (bb[d] != 1) bo += c * bst[d];
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p)
          acc += static_cast<double>(at(a, ao + i * k + p)) * at(b, bo + p * n + j);
        out[(idx * m + i) * n + j] = static_cast<float>(acc);
      }
  }
  Shape result = batch;
  if (!a_vec) result.push_back(m);
  if (!b_vec) result.push_back(n);
  Tensor t(TensorDesc{DType::kF32, result});
  std::copy(out.begin(), out.end(), t.data_as<float>());
  return t;
}

Tensor gemm_ref(const Tensor& a, const Tensor& b, const Tensor* c, double alpha, double beta,
                bool trans_a, bool trans_b) {
  const int64_t m = trans_a ? a.shape()[1] : a.shape()[0];
  const int64_t k = trans_a ? a.shape()[0] : a.shape()[1];
  const int64_t n = trans_b ? b.shape()[0] : b.shape()[1];
  Tensor y(TensorDesc{DType::kF32, {m, n}});
  // C broadcast: right-aligned numpy rules onto [M, N].
  int64_t c_rows = 1, c_cols = 1;
  if (c) {
    const Shape& cs = c->shape();
    if (cs.size() >= 1) c_cols = cs.back();
    if (cs.size() == 2) c_rows = cs[0];
  }
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double av = trans_a ? at(a, p * m + i) : at(a, i * k + p);
        const double bv = trans_b ? at(b, j * k + p) : at(b, p * n + j);
        acc += av * bv;
      }
      double v = alpha * acc;
      if (c) v += beta * at(*c, (c_rows == 1 ? 0 : i) * c_cols + (c_cols == 1 ? 0 : j));
      y.data_as<float>()[i * n + j] = static_cast<float>(v);
    }
  return y;
}

Tensor conv2d_ref(const Tensor& x, const Tensor& w, const Tensor* bias, const Window2d& win,
                  int64_t group) {
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t M = w.shape()[0], CG = w.shape()[1], KH = w.shape()[2], KW = w.shape()[3];
  const auto [sh, sw] = win.strides;
  const auto [dh, dw] = win.dilations;
  const int64_t pt = win.pads[0], pl = win.pads[1], pb = win.pads[2], pr = win.pads[3];
  const int64_t OH = (H + pt + pb - (dh * (KH - 1) + 1)) / sh + 1;
  const int64_t OW = (W + pl + pr - (dw * (KW - 1) + 1)) / sw + 1;
  GRAPHI_CHECK(CG * group == C && M % group == 0, "conv2d_ref: groups");
  const int64_t MG = M / group;
  Tensor y(TensorDesc{DType::kF32, {N, M, OH, OW}});
  for (int64_t b = 0; b < N; ++b)
    for (int64_t m = 0; m < M; ++m) {
      const int64_t g = m / MG;
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          double acc = bias ? at(*bias, m) : 0.0;
          for (int64_t c = 0; c < CG; ++c)
            for (int64_t ky = 0; ky < KH; ++ky)
              for (int64_t kx = 0; kx < KW; ++kx) {
                // Padded coordinates: outside [0, H) x [0, W) reads zero.
                const int64_t iy = oy * sh + ky * dh - pt, ix = ox * sw + kx * dw - pl;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                acc += static_cast<double>(at(x, ((b * C + g * CG + c) * H + iy) * W + ix)) *
                       at(w, ((m * CG + c) * KH + ky) * KW + kx);
              }
          y.data_as<float>()[((b * M + m) * OH + oy) * OW + ox] = static_cast<float>(acc);
        }
    }
  return y;
}

namespace {

Tensor pool_ref(const Tensor& x, const Window2d& win, bool is_max, bool count_include_pad) {
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const auto [KH, KW] = win.kernel;
  const auto [sh, sw] = win.strides;
  const int64_t pt = win.pads[0], pl = win.pads[1], pb = win.pads[2], pr = win.pads[3];
  const auto [dh, dw] = win.dilations;
  const int64_t OH = (H + pt + pb - ((KH - 1) * dh + 1)) / sh + 1,
                OW = (W + pl + pr - ((KW - 1) * dw + 1)) / sw + 1;
  Tensor y(TensorDesc{DType::kF32, {N, C, OH, OW}});
  for (int64_t p = 0; p < N * C; ++p)
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox) {
        double best = -std::numeric_limits<double>::infinity(), sum = 0;
        int64_t real = 0;
        for (int64_t ky = 0; ky < KH; ++ky)
          for (int64_t kx = 0; kx < KW; ++kx) {
            const int64_t iy = oy * sh + ky * dh - pt, ix = ox * sw + kx * dw - pl;
            if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;  // a pad element
            const double v = at(x, (p * H + iy) * W + ix);
            best = std::max(best, v);
            sum += v;
            ++real;
          }
        const double v =
            is_max ? best : sum / static_cast<double>(count_include_pad ? KH * KW : real);
        y.data_as<float>()[(p * OH + oy) * OW + ox] = static_cast<float>(v);
      }
  return y;
}

}  // namespace

Tensor maxpool2d_ref(const Tensor& x, const Window2d& win) { return pool_ref(x, win, true, false); }
Tensor avgpool2d_ref(const Tensor& x, const Window2d& win, bool count_include_pad) {
  return pool_ref(x, win, false, count_include_pad);
}

// ---------------------------------------------------------------------------------------------
namespace {

struct OneNodeGraph {
  graph::Graph g;
  std::vector<const void*> in_ptrs;
  std::vector<TensorDesc> out_descs;
  ops::KernelContext ctx(int threads) const {
    const graph::Node& node = g.node(0);
    ops::KernelContext c{node, {}, {}, {}, threads, g.source() + ": " + node.where()};
    for (graph::ValueId v : node.inputs) {
      const graph::Value& val = g.value(v);
      c.inputs.push_back(&val.desc);
      c.const_inputs.push_back(val.kind == graph::ValueKind::kConstant ? val.data.get() : nullptr);
    }
    for (graph::ValueId v : node.outputs) c.outputs.push_back(&g.value(v).desc);
    return c;
  }
};

Result<OneNodeGraph> build(const std::string& op, const graph::Attributes& attrs,
                           const std::vector<Tensor>& inputs, const std::vector<bool>& constant) {
  graph::GraphBuilder b("<" + op + " test>");
  std::vector<std::string> in_names;
  for (size_t i = 0; i < inputs.size(); ++i) {
    in_names.push_back("in" + std::to_string(i));
    if (i < constant.size() && constant[i])
      b.add_constant(in_names.back(), inputs[i]);
    else
      b.add_input(in_names.back(), inputs[i].desc());
  }
  b.add_output("out0");
  b.add_node(op, "node", in_names, {"out0"}, attrs);
  OneNodeGraph one;
  GRAPHI_ASSIGN_OR_RETURN(one.g, b.finish(ops::Registry::get()));
  for (const Tensor& t : inputs) one.in_ptrs.push_back(t.data());
  for (graph::ValueId v : one.g.node(0).outputs) one.out_descs.push_back(one.g.value(v).desc);
  return one;
}

struct Scratch {
  explicit Scratch(size_t bytes)
      : p(bytes ? std::aligned_alloc(64, (bytes + 63) / 64 * 64) : nullptr), n(bytes) {}
  ~Scratch() { std::free(p); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  void* p;
  size_t n;
};

// One execution of `k` on a team of `threads`, the way an executor does it.
std::vector<Tensor> execute(const ops::Kernel& k, const OneNodeGraph& one, int threads) {
  std::vector<Tensor> outs;
  std::vector<void*> out_ptrs;
  for (const TensorDesc& d : one.out_descs) {
    outs.emplace_back(d);
    // Poison: a kernel that skips an element shows up as NaN.
    std::fill_n(outs.back().data_as<float>(), outs.back().numel(),
                std::numeric_limits<float>::quiet_NaN());
  }
  for (Tensor& t : outs) out_ptrs.push_back(t.data());
  Scratch scratch(k.scratch_bytes());
  ops::Buffers io{one.in_ptrs, out_ptrs};
  if (k.opens_own_region() || threads == 1) {
    omp_set_num_threads(threads);
    k.run(ops::TeamContext{0, threads, scratch.p, scratch.n}, io);
  } else {
#pragma omp parallel num_threads(threads)
    k.run(ops::TeamContext{omp_get_thread_num(), omp_get_num_threads(), scratch.p, scratch.n}, io);
  }
  return outs;
}

}  // namespace

Result<std::vector<KernelRun>> run_every_kernel(const std::string& op,
                                                const graph::Attributes& attrs,
                                                const std::vector<Tensor>& inputs, int threads,
                                                const std::vector<bool>& constant) {
  GRAPHI_ASSIGN_OR_RETURN(OneNodeGraph one, build(op, attrs, inputs, constant));
  const ops::OpDef* def = ops::Registry::get().find(op);
  GRAPHI_CHECK(def != nullptr, "run_every_kernel: unknown op " + op);
  std::vector<KernelRun> runs;
  for (ops::KernelFactory make : def->kernels) {
    std::unique_ptr<ops::Kernel> k = make();
    KernelRun r;
    r.kernel = k->name();
    Status s = k->init(one.ctx(threads));
    r.accepted = s.is_ok();
    if (!r.accepted)
      r.reason = s.message();
    else
      r.outputs = execute(*k, one, threads);
    runs.push_back(std::move(r));
  }
  return runs;
}

std::vector<std::string> check_every_kernel(const std::string& op, const graph::Attributes& attrs,
                                            const std::vector<Tensor>& inputs,
                                            const std::vector<bool>& constant,
                                            const Tensor& expected, double tol) {
  std::vector<std::string> accepted;
  for (int threads : {1, 2}) {
    auto runs = run_every_kernel(op, attrs, inputs, threads, constant);
    REQUIRE(runs.is_ok());
    REQUIRE_FALSE(runs->empty());
    CHECK(runs->back().accepted);
    for (const KernelRun& r : *runs) {
      if (!r.accepted) continue;
      if (threads == 1) accepted.push_back(r.kernel);
      INFO(op << " kernel " << r.kernel << " threads " << threads << " expected "
              << expected.desc().to_string());
      REQUIRE(r.outputs.size() == 1);
      REQUIRE(r.outputs[0].desc() == expected.desc());
      CHECK(max_rel_error(r.outputs[0], expected) <= tol);
    }
  }
  return accepted;
}

Result<ConcurrentRun> run_concurrently(const std::string& op, const graph::Attributes& attrs,
                                       const std::vector<Tensor>& inputs, int threads,
                                       const std::vector<bool>& constant, int repeats) {
  GRAPHI_ASSIGN_OR_RETURN(OneNodeGraph one, build(op, attrs, inputs, constant));
  GRAPHI_ASSIGN_OR_RETURN(std::unique_ptr<ops::Kernel> k,
                          ops::Registry::get().select(one.ctx(threads)));
  ConcurrentRun out;
  out.kernel = k->name();
  auto body = [&](std::vector<Tensor>* result) {
    for (int i = 0; i < repeats; ++i) *result = execute(*k, one, threads);
  };
  std::thread t1(body, &out.first), t2(body, &out.second);
  t1.join();
  t2.join();
  return out;
}

// ---------------------------------------------------------------------------------------------
namespace {

constexpr const char* kOnnxNodeData = "/usr/share/libonnx-testdata/data/node";

// Converts each named case into DIR/<case>/{node.json, input_N.npy, output_N.npy}.
constexpr const char* kConvertScript = R"PY(
import json, os, sys
import numpy as np
import onnx
from onnx import helper, numpy_helper
src, out = sys.argv[1], sys.argv[2]
for name in sys.argv[3:]:
    d = os.path.join(src, name)
    model = onnx.load(os.path.join(d, "model.onnx"))
    node = model.graph.node[0]
    attrs = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        if isinstance(v, bytes):
            attrs[a.name] = ["string", v.decode()]
        elif isinstance(v, int):
            attrs[a.name] = ["int", v]
        elif isinstance(v, float):
            attrs[a.name] = ["float", v]
        elif isinstance(v, list) and all(isinstance(x, int) for x in v):
            attrs[a.name] = ["ints", list(v)]
        elif isinstance(v, list):
            attrs[a.name] = ["floats", [float(x) for x in v]]
    case = os.path.join(out, name)
    os.makedirs(case, exist_ok=True)
    counts = {}
    for kind in ("input", "output"):
        i = 0
        while os.path.exists(os.path.join(d, "test_data_set_0", "%s_%d.pb" % (kind, i))):
            t = onnx.TensorProto()
            with open(os.path.join(d, "test_data_set_0", "%s_%d.pb" % (kind, i)), "rb") as f:
                t.ParseFromString(f.read())
            np.save(os.path.join(case, "%s_%d.npy" % (kind, i)), np.ascontiguousarray(numpy_helper.to_array(t)))
            i += 1
        counts[kind] = i
    with open(os.path.join(case, "node.json"), "w") as f:
        json.dump({"op": node.op_type, "attrs": attrs, "inputs": counts["input"], "outputs": counts["output"]}, f)
)PY";

}  // namespace

Result<std::vector<OnnxNodeCase>> load_onnx_node_cases(const std::vector<std::string>& names) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(kOnnxNodeData))
    return Status::unsupported(std::string(kOnnxNodeData) +
                               " is missing (apt-get install libonnx-testdata)");
  if (std::system("/usr/bin/python3 -c 'import onnx, numpy' >/dev/null 2>&1") != 0)
    return Status::unsupported(
        "/usr/bin/python3 cannot import onnx and numpy (apt-get install python3-onnx)");
  const fs::path dir =
      scratch_dir("onnx_node_cases_" + std::to_string(std::hash<std::string>{}(names.front())));
  { std::ofstream(dir / "convert.py") << kConvertScript; }
  std::string cmd = "/usr/bin/python3 " + (dir / "convert.py").string() + " " + kOnnxNodeData +
                    " " + dir.string();
  for (const std::string& n : names) cmd += " " + n;
  cmd += " 2>&1";
  if (std::system(cmd.c_str()) != 0)
    return Status::internal("converting ONNX node cases failed: " + cmd);
  std::vector<OnnxNodeCase> cases;
  for (const std::string& n : names) {
    OnnxNodeCase c;
    c.name = n;
    std::ifstream in(dir / n / "node.json");
    nlohmann::json j = nlohmann::json::parse(in);
    c.op = j["op"].get<std::string>();
    for (const auto& [key, kv] : j["attrs"].items()) {
      const std::string kind = kv[0].get<std::string>();
      if (kind == "int")
        c.attrs.set(key, kv[1].get<int64_t>());
      else if (kind == "float")
        c.attrs.set(key, kv[1].get<double>());
      else if (kind == "ints")
        c.attrs.set(key, kv[1].get<std::vector<int64_t>>());
      else if (kind == "floats")
        c.attrs.set(key, kv[1].get<std::vector<double>>());
      else
        c.attrs.set(key, kv[1].get<std::string>());
    }
    for (const char* kind : {"input", "output"}) {
      for (int i = 0; i < j[std::string(kind) + "s"].get<int>(); ++i) {
        GRAPHI_ASSIGN_OR_RETURN(
            Tensor t,
            graph::read_npy(
                (dir / n / (std::string(kind) + "_" + std::to_string(i) + ".npy")).string()));
        (std::string(kind) == "input" ? c.inputs : c.outputs).push_back(std::move(t));
      }
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace graphi::test
