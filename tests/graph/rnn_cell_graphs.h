// Unrolled, stacked LSTM / GRU networks built from plain ops the way torch.onnx.export writes
// the hand-written cells of tests/data/onnx_cells/gen_onnx_cells.py (node for node; x[t] as
// Slice + Reshape), optionally with a defect that makes a cell only look like one. Used by the
// graph pass tests.
#pragma once

#include "tests/graph/pass_test_util.h"

namespace graphi::test {

enum class Cell {
  kLstmChunk,
  kLstmSplit,
  kLstmPerGate,
  kLstmConcat,
  kLstmGemmC,  // tf2onnx's unrolled Keras cell: Gemm(x, W, C = h R) + b, Split into i, f, g, o
  kGruLbr,
  kGruCanonical
};
enum class Defect { kNone, kReluCandidate, kInputWeight, kExtraUse, kTwoMinusZ, kSigmoidN };

inline bool is_lstm(Cell c) { return c != Cell::kGruLbr && c != Cell::kGruCanonical; }

struct CellSpec {
  Cell cell;
  int64_t input, hidden, layers, batch, seq;
  Defect defect = Defect::kNone;
  bool swap_z = false;  // GRU written with z and 1 - z swapped (h = z * n + (1 - z) * h)
};

// A stacked, unrolled network of `spec.cell`: inputs x [T, B, I], h0 (and c0) [L, B, H];
// outputs y [T, B, H], h_n (and c_n) [L, B, H], as the PyTorch model of gen_onnx_cells.py.
inline Result<graph::Graph> build_cells(const CellSpec& s) {
  NetBuilder n;
  const int64_t T = s.seq, B = s.batch, H = s.hidden, L = s.layers;
  const bool lstm = is_lstm(s.cell);
  n.b.add_input("x", {DType::kF32, {T, B, s.input}});
  n.b.add_input("h0", {DType::kF32, {L, B, H}});
  if (lstm) n.b.add_input("c0", {DType::kF32, {L, B, H}});
  std::vector<std::string> seq;
  for (int64_t t = 0; t < T; ++t) seq.push_back(n.row("x", t, B, s.input));
  std::vector<std::string> hn, cn;
  auto act = [&](const std::string& op, const std::string& v) { return n.node(op, {v}); };
  for (int64_t l = 0; l < L; ++l) {
    const int64_t I = l == 0 ? s.input : H;
    std::string h = n.row("h0", l, B, H), c = lstm ? n.row("c0", l, B, H) : "";
    // Weights, laid out as PyTorch holds them ([out, in]) or as the export folds them.
    std::string Wx, Wh_t, b1, b2;
    std::vector<std::string> Wg, bg, Ug;
    switch (s.cell) {
      case Cell::kLstmChunk:
      case Cell::kLstmSplit:
        if (s.defect == Defect::kInputWeight) {
          Wx = "Wx" + std::to_string(l);
          n.b.add_input(Wx, {DType::kF32, {I, 4 * H}});
        } else {
          Wx = n.weight({I, 4 * H});
        }
        Wh_t = n.weight({4 * H, H});
        b1 = n.weight({4 * H});
        b2 = n.weight({4 * H});
        break;
      case Cell::kLstmPerGate:
        for (int k = 0; k < 4; ++k) {
          Wg.push_back(n.weight({H, I}));
          bg.push_back(n.weight({H}));
          Ug.push_back(n.weight({H, H}));
        }
        break;
      case Cell::kLstmConcat:
        Wx = n.weight({4 * H, I + H});
        b1 = n.weight({4 * H});
        break;
      case Cell::kLstmGemmC:
        Wx = n.weight({I, 4 * H});
        Wh_t = n.weight({H, 4 * H});
        b1 = n.weight({4 * H});
        break;
      case Cell::kGruLbr:
        Wx = n.weight({3 * H, I});
        b1 = n.weight({3 * H});
        Wh_t = n.weight({3 * H, H});
        b2 = n.weight({3 * H});
        break;
      case Cell::kGruCanonical:
        Wx = n.weight({I, 3 * H});
        b1 = n.weight({3 * H});
        Wg = {n.weight({H, 2 * H}), n.weight({H, H})};
        break;
    }
    std::vector<std::string> out;
    for (int64_t t = 0; t < T; ++t) {
      const std::string& x = seq[t];
      if (lstm) {
        std::string i, f, g, o;
        const char* g_act = s.defect == Defect::kReluCandidate ? "Relu" : "Tanh";
        // The cell from its four gate pre-activations in PyTorch's order i, f, g, o.
        auto gates_i_f_g_o = [&](const std::vector<std::string>& p) {
          i = act("Sigmoid", p[0]);
          f = act("Sigmoid", p[1]);
          g = act(g_act, p[2]);
          o = act("Sigmoid", p[3]);
          c = n.node("Add", {n.node("Mul", {f, c}), n.node("Mul", {i, g})});
          h = n.node("Mul", {o, act("Tanh", c)});
        };
        if (s.cell == Cell::kLstmChunk || s.cell == Cell::kLstmSplit) {
          graph::Attributes perm;
          perm.set("perm", std::vector<int64_t>{1, 0});
          std::string a = n.node("Add", {n.node("MatMul", {x, Wx}), b1});
          a = n.node("Add", {a, n.node("MatMul", {h, n.node("Transpose", {Wh_t}, perm)})});
          a = n.node("Add", {a, b2});
          if (s.defect == Defect::kExtraUse && t == 1) n.b.add_output(a);
          std::vector<std::string> p;
          if (s.cell == Cell::kLstmSplit) {
            graph::Attributes ax;
            ax.set("axis", int64_t{1});
            p = n.multi("Split", {a, n.ints({H, H, H, H})}, 4, ax);
          } else {
            for (int k = 0; k < 4; ++k) p.push_back(n.slice(a, 1, k * H, (k + 1) * H));
          }
          gates_i_f_g_o(p);
        } else if (s.cell == Cell::kLstmGemmC) {
          graph::Attributes gemm;
          gemm.set("transA", int64_t{0});
          gemm.set("transB", int64_t{0});
          const std::string a =
              n.node("Add", {n.node("Gemm", {x, Wx, n.node("MatMul", {h, Wh_t})}, gemm), b1});
          graph::Attributes ax;
          ax.set("axis", int64_t{1});
          gates_i_f_g_o(n.multi("Split", {a}, 4, ax));
        } else if (s.cell == Cell::kLstmPerGate) {
          // Gates written in the order f, o, g, i; x side Gemm(transB), h side MatMul by an
          // Identity'd constant (how the export shares a bias-free Linear's weight).
          auto pre = [&](int k, bool h_first) {
            std::string gx = n.gemm(x, Wg[k], bg[k], true);
            std::string gh = n.node("MatMul", {h, n.node("Identity", {Ug[k]})});
            return h_first ? n.node("Add", {gh, gx}) : n.node("Add", {gx, gh});
          };
          f = act("Sigmoid", pre(0, false));
          o = act("Sigmoid", pre(1, true));
          g = act(g_act, pre(2, false));
          i = act("Sigmoid", pre(3, false));
          c = n.node("Add", {n.node("Mul", {i, g}), n.node("Mul", {c, f})});
          h = n.node("Mul", {act("Tanh", c), o});
        } else {
          std::string a = n.gemm(n.concat({x, h}, 1), Wx, b1, true);
          std::vector<std::string> p;  // o, g, i, f
          for (int k = 0; k < 4; ++k) p.push_back(n.slice(a, 1, k * H, (k + 1) * H));
          c = n.node("Add", {n.node("Mul", {act("Sigmoid", p[3]), c}),
                             n.node("Mul", {act("Sigmoid", p[2]), act(g_act, p[1])})});
          h = n.node("Mul", {act("Sigmoid", p[0]), act("Tanh", c)});
        }
      } else if (s.cell == Cell::kGruLbr) {
        const std::string gi = n.gemm(x, Wx, b1, true), gh = n.gemm(h, Wh_t, b2, true);
        std::vector<std::string> pi, ph;
        for (int k = 0; k < 3; ++k) {
          pi.push_back(n.slice(gi, 1, k * H, (k + 1) * H));
          ph.push_back(n.slice(gh, 1, k * H, (k + 1) * H));
        }
        const std::string r = act("Sigmoid", n.node("Add", {pi[0], ph[0]}));
        const std::string z = act("Sigmoid", n.node("Add", {pi[1], ph[1]}));
        const std::string nn = act(s.defect == Defect::kSigmoidN ? "Sigmoid" : "Tanh",
                                   n.node("Add", {pi[2], n.node("Mul", {r, ph[2]})}));
        const std::string one = n.scalar(s.defect == Defect::kTwoMinusZ ? 2.0f : 1.0f);
        if (s.swap_z)
          h = n.node("Add", {n.node("Mul", {z, nn}), n.node("Mul", {n.node("Sub", {one, z}), h})});
        else
          h = n.node("Add", {n.node("Mul", {n.node("Sub", {one, z}), nn}), n.node("Mul", {z, h})});
      } else {
        const std::string gx = n.node("Add", {n.node("MatMul", {x, Wx}), b1});
        const std::string zr =
            act("Sigmoid", n.node("Add", {n.slice(gx, 1, 0, 2 * H), n.node("MatMul", {h, Wg[0]})}));
        const std::string z = n.slice(zr, 1, 0, H), r = n.slice(zr, 1, H, 2 * H);
        const std::string nn =
            act(s.defect == Defect::kSigmoidN ? "Sigmoid" : "Tanh",
                n.node("Add", {n.slice(gx, 1, 2 * H, 3 * H),
                               n.node("MatMul", {n.node("Mul", {r, h}), Wg[1]})}));
        if (s.swap_z)
          h = n.node("Add", {h, n.node("Mul", {z, n.node("Sub", {nn, h})})});
        else
          h = n.node("Add", {nn, n.node("Mul", {z, n.node("Sub", {h, nn})})});
      }
      out.push_back(h);
    }
    seq = out;
    hn.push_back(h);
    cn.push_back(c);
  }
  auto stack = [&](const std::vector<std::string>& vs, const std::string& name) {
    std::vector<std::string> parts;
    for (const std::string& v : vs) parts.push_back(n.reshape(v, {1, B, H}));
    graph::Attributes ax;
    ax.set("axis", int64_t{0});
    n.b.add_node("Concat", name, parts, {name}, ax);
    n.b.add_output(name);
  };
  stack(seq, "y");
  stack(hn, "h_n");
  if (lstm) stack(cn, "c_n");
  return n.finish();
}

inline const char* cell_name(Cell c) {
  switch (c) {
    case Cell::kLstmChunk:
      return "lstm chunk (Slices)";
    case Cell::kLstmSplit:
      return "lstm chunk (Split with sizes input)";
    case Cell::kLstmPerGate:
      return "lstm one Linear per gate";
    case Cell::kLstmConcat:
      return "lstm [x, h] W";
    case Cell::kLstmGemmC:
      return "lstm Gemm(x, W, C = h R) (tf2onnx)";
    case Cell::kGruLbr:
      return "gru linear before reset";
    case Cell::kGruCanonical:
      return "gru canonical";
  }
  return "?";
}

}  // namespace graphi::test
