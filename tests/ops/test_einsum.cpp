// Einsum (ops/einsum.cpp) against a naive reference written from the definition: every output
// element is the sum, over all values of the letters not in the output, of the product of the
// operands. Checks which kernel runs: matrix-product equations (batch, row, column and
// contracted letters; transposed operands and outputs; several contracted letters; ellipsis
// broadcasting) take the oneDNN path, the others (diagonals, one-operand sums, three operands)
// stay on the direct loop. Sizes are not multiples of 16.
#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "ops/registry.h"
#include "tests/support/op_runner.h"
#include "tests/support/test_util.h"

using namespace graphi;
using graphi::test::max_rel_error;
using graphi::test::random_tensor;
using graphi::test::run_single_op;

namespace {

// Explicit equations of letters only ("ij,jk->ik"): loops over every assignment of every
// letter, in double.
Tensor reference(const std::string& eq, const std::vector<Tensor>& ins) {
  const size_t arrow = eq.find("->");
  std::vector<std::string> terms(1);
  for (char c : eq.substr(0, arrow)) {
    if (c == ',')
      terms.emplace_back();
    else
      terms.back() += c;
  }
  const std::string out = eq.substr(arrow + 2);
  std::map<char, int64_t> size;
  for (size_t k = 0; k < terms.size(); ++k)
    for (size_t d = 0; d < terms[k].size(); ++d) size[terms[k][d]] = ins[k].shape()[d];
  std::string letters;
  for (const auto& [c, n] : size) letters += c;
  Shape out_shape;
  for (char c : out) out_shape.push_back(size[c]);
  std::vector<double> acc(static_cast<size_t>(shape_numel(out_shape)), 0.0);
  std::map<char, int64_t> idx;
  for (char c : letters) idx[c] = 0;
  auto offset = [&](const std::string& t, const Shape& s) {
    int64_t off = 0;
    for (size_t d = 0; d < t.size(); ++d) off = off * s[d] + idx[t[d]];
    return off;
  };
  bool done = false;
  while (!done) {
    double prod = 1;
    for (size_t k = 0; k < terms.size(); ++k)
      prod *= ins[k].data_as<float>()[offset(terms[k], ins[k].shape())];
    acc[static_cast<size_t>(offset(out, out_shape))] += prod;
    done = true;  // unless some letter still has a next value
    for (size_t j = letters.size(); j-- > 0;) {
      if (++idx[letters[j]] < size[letters[j]]) {
        done = false;
        break;
      }
      idx[letters[j]] = 0;
    }
  }
  Tensor y(TensorDesc{DType::kF32, out_shape});
  for (size_t i = 0; i < acc.size(); ++i) y.data_as<float>()[i] = static_cast<float>(acc[i]);
  return y;
}

graph::Attributes equation(const std::string& eq) {
  graph::Attributes a;
  a.set("equation", eq);
  return a;
}

struct Case {
  std::string eq;
  std::vector<Shape> shapes;
  const char* kernel;
};

}  // namespace

TEST_CASE("Einsum: matrix-product equations run on oneDNN and match the definition",
          "[ops][einsum]") {
  const std::vector<Case> cases = {
      {"bhqd,bhkd->bhqk", {{2, 3, 17, 13}, {2, 3, 19, 13}}, "einsum_onednn"},  // attention scores
      {"bhqk,bhkd->bhqd", {{2, 3, 17, 19}, {2, 3, 19, 13}}, "einsum_onednn"},  // attention values
      {"bij,bjk->bik", {{3, 20, 33}, {3, 33, 18}}, "einsum_onednn"},
      {"bij,bjk->bki", {{3, 20, 33}, {3, 33, 18}}, "einsum_onednn"},  // transposed output
      {"bij,bjk->kbi", {{3, 20, 33}, {3, 33, 18}}, "einsum_onednn"},  // batch stride inside
      {"xij,jk->xki", {{3, 5, 7}, {7, 4}}, "einsum_onednn"},      // output copied out of scratch
      {"ji,kj->ik", {{33, 20}, {18, 33}}, "einsum_onednn"},       // both operands transposed
      {"ikl,jkl->ij", {{7, 5, 9}, {11, 5, 9}}, "einsum_onednn"},  // two contracted letters
      {"ilk,jkl->ji", {{7, 9, 5}, {11, 5, 9}}, "einsum_onednn"},  // ... in different orders
      {"qbd,kbd->bqk", {{17, 2, 13}, {19, 2, 13}}, "einsum_onednn"},  // batch not outermost
      {"hbqd,bhkd->bhqk", {{3, 2, 17, 13}, {2, 3, 19, 13}}, "einsum_onednn"},  // batch reordered
      {"bqd,kd->bqk", {{2, 17, 13}, {19, 13}}, "einsum_onednn"},  // batch of one operand: rows
      {"ij,j->i", {{21, 33}, {33}}, "einsum_onednn"},             // matrix-vector
      {"i,i->", {{37}, {37}}, "einsum_onednn"},                   // dot product
      {"i,j->ij", {{17}, {23}}, "einsum_onednn"},                 // outer product
      {"bi,bj->bij", {{3, 17}, {3, 23}}, "einsum_onednn"},        // batched outer product
      {"ij,jk->ik", {{1, 33}, {33, 1}}, "einsum_onednn"},         // size-1 rows and cols
      // The direct loop: a diagonal, a letter summed in one operand only, three operands.
      {"ii,ij->ij", {{6, 6}, {6, 5}}, "einsum_naive"},
      {"ij,jk->i", {{4, 5}, {5, 6}}, "einsum_naive"},
      {"ij,jk,kl->il", {{3, 4}, {4, 5}, {5, 2}}, "einsum_naive"},
      {"ij->ji", {{5, 7}}, "einsum_naive"},
  };
  uint64_t seed = 500;
  for (const Case& c : cases)
    for (int threads : {1, 2}) {
      INFO(c.eq << " on " << threads << " threads");
      std::vector<Tensor> ins;
      for (const Shape& s : c.shapes)
        ins.push_back(random_tensor(TensorDesc{DType::kF32, s}, seed++));
      auto r = run_single_op("Einsum", equation(c.eq), ins, 1, threads);
      if (!r.is_ok()) FAIL(r.status().message());
      CHECK(r->kernel == c.kernel);
      const Tensor want = reference(c.eq, ins);
      REQUIRE(r->outputs[0].shape() == want.shape());
      CHECK(max_rel_error(r->outputs[0], want) < 1e-5);
    }
}

TEST_CASE("Einsum: ellipsis dims broadcast on the oneDNN path", "[ops][einsum]") {
  // test_zoo_ops.cpp checks the values of '...ij,...jk->...ik' with [2, 1, 3, 4] x [5, 4, 2]
  // (the ellipsis dims become row and column letters); here, that it takes this path.
  auto routed = run_single_op("Einsum", equation("...ij,...jk->...ik"),
                              {random_tensor(TensorDesc{DType::kF32, {2, 1, 3, 4}}, 601),
                               random_tensor(TensorDesc{DType::kF32, {5, 4, 2}}, 602)});
  if (!routed.is_ok()) FAIL(routed.status().message());
  CHECK(routed->kernel == std::string("einsum_onednn"));
  // Same batch on both sides, one of them broadcast from 1: [3, 1, 4, 5] x [3, 2, 5, 6].
  Tensor c = random_tensor(TensorDesc{DType::kF32, {3, 1, 4, 5}}, 603);
  Tensor d = random_tensor(TensorDesc{DType::kF32, {3, 2, 5, 6}}, 604);
  Tensor want(TensorDesc{DType::kF32, {3, 2, 4, 6}});
  for (int x = 0; x < 3; ++x)
    for (int y = 0; y < 2; ++y)
      for (int i = 0; i < 4; ++i)
        for (int k = 0; k < 6; ++k) {
          double s = 0;
          for (int j = 0; j < 5; ++j)
            s += static_cast<double>(c.data_as<float>()[(x * 4 + i) * 5 + j]) *
                 d.data_as<float>()[((x * 2 + y) * 5 + j) * 6 + k];
          want.data_as<float>()[((x * 2 + y) * 4 + i) * 6 + k] = static_cast<float>(s);
        }
  auto r = run_single_op("Einsum", equation("...ij,...jk->...ik"), {c, d}, 1, 2);
  if (!r.is_ok()) FAIL(r.status().message());
  CHECK(r->kernel == std::string("einsum_onednn"));
  CHECK(max_rel_error(r->outputs[0], want) < 1e-5);
}
