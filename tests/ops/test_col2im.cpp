// Col2Im (ops/col2im.cpp) against a loop written from ONNX's definition (every block element of
// every block position added into the image element it covers), and against PyTorch's nn.Fold
// example; 1-, 2- and 3-D images with strides, dilations and pads, teams of 1 and 3 threads; its
// errors.
#include <catch2/catch.hpp>

#include "ops/registry.h"
#include "tests/support/op_runner.h"
#include "tests/support/test_util.h"

using namespace graphi;
using graphi::test::run_single_op;

namespace {

constexpr auto ints = test::i64_tensor;

struct Case {
  std::vector<int64_t> image, block, dilations, pads, strides;
};

int64_t count(const Case& c, size_t d) {
  const size_t k = c.image.size();
  return (c.image[d] + c.pads[d] + c.pads[k + d] - c.dilations[d] * (c.block[d] - 1) - 1) /
             c.strides[d] +
         1;
}

// Y[n, ch, pos] += X[n, ch * B + b, l]: pos = l's block origin * stride - pad + b * dilation.
Tensor col2im_ref(const Tensor& x, const Case& c) {
  const size_t k = c.image.size();
  int64_t bsize = 1, npos = 1;
  for (size_t d = 0; d < k; ++d) {
    bsize *= c.block[d];
    npos *= count(c, d);
  }
  const int64_t n = x.shape()[0], ch = x.shape()[1] / bsize;
  Shape out{n, ch};
  out.insert(out.end(), c.image.begin(), c.image.end());
  Tensor y(TensorDesc{DType::kF32, out});
  std::vector<double> acc(static_cast<size_t>(y.numel()), 0.0);
  const int64_t plane = y.numel() / (n * ch);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t q = 0; q < ch; ++q)
      for (int64_t b = 0; b < bsize; ++b)
        for (int64_t l = 0; l < npos; ++l) {
          std::vector<int64_t> bi(k), li(k);
          for (int64_t d = static_cast<int64_t>(k) - 1, rb = b, rl = l; d >= 0; --d) {
            bi[size_t(d)] = rb % c.block[size_t(d)];
            rb /= c.block[size_t(d)];
            li[size_t(d)] = rl % count(c, size_t(d));
            rl /= count(c, size_t(d));
          }
          int64_t off = 0;
          bool in = true;
          for (size_t d = 0; d < k; ++d) {
            const int64_t p = li[d] * c.strides[d] - c.pads[d] + bi[d] * c.dilations[d];
            in = in && p >= 0 && p < c.image[d];
            off = off * c.image[d] + p;
          }
          if (in)
            acc[size_t((i * ch + q) * plane + off)] +=
                x.data_as<float>()[((i * ch + q) * bsize + b) * npos + l];
        }
  for (int64_t e = 0; e < y.numel(); ++e) y.data_as<float>()[e] = float(acc[size_t(e)]);
  return y;
}

graph::Attributes attrs(const Case& c) {
  graph::Attributes a;
  a.set("dilations", c.dilations);
  a.set("pads", c.pads);
  a.set("strides", c.strides);
  return a;
}

}  // namespace

TEST_CASE("Col2Im matches the ONNX definition in 1, 2 and 3 spatial dims", "[ops][col2im]") {
  const std::vector<std::pair<Case, int64_t>> cases = {
      {{{5, 5}, {1, 5}, {1, 1}, {0, 0, 0, 0}, {1, 1}}, 1},  // ONNX's test_col2im
      {{{5, 5}, {2, 2}, {1, 1}, {0, 0, 0, 0}, {1, 1}}, 3},  // overlapping blocks add up
      {{{9, 7}, {3, 2}, {2, 1}, {1, 0, 2, 1}, {2, 3}}, 2},  // dilation, pads, strides
      {{{10}, {3}, {2}, {1, 2}, {3}}, 4},                   // 1-D
      {{{4, 5, 3}, {2, 3, 1}, {1, 1, 2}, {0, 1, 1, 1, 0, 0}, {2, 1, 1}}, 2}};  // 3-D
  for (const auto& [c, ch] : cases) {
    int64_t bsize = 1, npos = 1;
    for (size_t d = 0; d < c.image.size(); ++d) {
      bsize *= c.block[d];
      npos *= count(c, d);
    }
    const Tensor x = test::random_tensor({DType::kF32, {2, ch * bsize, npos}}, 3 + bsize);
    const Tensor want = col2im_ref(x, c);
    for (int threads : {1, 3}) {
      INFO("image " << shape_to_string(c.image) << " block " << shape_to_string(c.block) << ", "
                    << threads << " threads");
      auto r = run_single_op("Col2Im", attrs(c), {x, ints(c.image), ints(c.block)}, 1, threads,
                             {false, true, true});
      if (!r.is_ok()) FAIL(r.status().message());
      CHECK(r->kernel == "col2im_f32");
      REQUIRE(r->outputs[0].desc() == want.desc());
      CHECK(test::max_rel_error(r->outputs[0], want) < 1e-6);
    }
  }
}

TEST_CASE("Col2Im: PyTorch's nn.Fold of ones counts the blocks covering each element",
          "[ops][col2im]") {
  // F.fold(torch.ones(1, 4, 9), (4, 4), 2): a 2x2 block at each of 3x3 positions, stride 1;
  // PyTorch gives the coverage counts [[1,2,2,1],[2,4,4,2],[2,4,4,2],[1,2,2,1]].
  Tensor x(TensorDesc{DType::kF32, {1, 4, 9}});
  std::fill(x.data_as<float>(), x.data_as<float>() + 36, 1.0f);
  const Case c{{4, 4}, {2, 2}, {1, 1}, {0, 0, 0, 0}, {1, 1}};
  auto r =
      run_single_op("Col2Im", attrs(c), {x, ints({4, 4}), ints({2, 2})}, 1, 1, {false, true, true});
  if (!r.is_ok()) FAIL(r.status().message());
  const float want[16] = {1, 2, 2, 1, 2, 4, 4, 2, 2, 4, 4, 2, 1, 2, 2, 1};
  for (int i = 0; i < 16; ++i) CHECK(r->outputs[0].data_as<float>()[i] == want[i]);
}

TEST_CASE("Col2Im refuses bad nodes naming the field", "[ops][col2im]") {
  auto err = [](const Result<test::OpRun>& r) {
    REQUIRE_FALSE(r.is_ok());
    return r.status().message();
  };
  const Tensor x(TensorDesc{DType::kF32, {1, 5, 5}});
  const std::vector<bool> consts{false, true, true};
  CHECK_THAT(err(run_single_op("Col2Im", {}, {x, ints({5, 5}), ints({1, 5})}, 1, 1, {})),
             Catch::Contains("must be a constant"));
  CHECK_THAT(err(run_single_op("Col2Im", {}, {x, ints({5, 5}), ints({5})}, 1, 1, consts)),
             Catch::Contains("same number"));
  CHECK_THAT(err(run_single_op("Col2Im", {}, {x, ints({5, 5}), ints({1, 4})}, 1, 1, consts)),
             Catch::Contains("dim 1 must be a multiple of 4"));
  CHECK_THAT(err(run_single_op("Col2Im", {}, {x, ints({5, 6}), ints({1, 5})}, 1, 1, consts)),
             Catch::Contains("dim 2 must be 10"));
  CHECK_THAT(err(run_single_op("Col2Im", {}, {x, ints({5, 5}), ints({1, 7})}, 1, 1, consts)),
             Catch::Contains("does not fit"));
  graph::Attributes a;
  a.set("strides", std::vector<int64_t>{1, 0});
  CHECK_THAT(err(run_single_op("Col2Im", a, {x, ints({5, 5}), ints({1, 5})}, 1, 1, consts)),
             Catch::Contains("attribute 'strides' [1, 0] must be >= 1"));
  a.set("strides", std::vector<int64_t>{1});
  CHECK_THAT(err(run_single_op("Col2Im", a, {x, ints({5, 5}), ints({1, 5})}, 1, 1, consts)),
             Catch::Contains("attribute 'strides' [1] must have 2 entries"));
}
