// ToBlocked / FromBlocked on every kernel of their lists (oneDNN's reorder, the plain loops)
// against the index map of nChw{B}c written out, blocks 8 and 16, pixel counts that are and are
// not multiples of the block, channel counts that are not (the last block padded with zeros, and
// FromBlocked ignoring whatever the padding holds), teams of 1 and 2; and the round trip.
#include <algorithm>
#include <catch2/catch.hpp>

#include "graph/attributes.h"
#include "tests/support/op_runner.h"
#include "tests/support/reference_gemm_conv.h"
#include "tests/support/test_util.h"

using namespace graphi;

TEST_CASE("ToBlocked and FromBlocked match the nChwBc index map on every kernel", "[ops][layout]") {
  for (int64_t b : {8, 16}) {
    // oneDNN's reorder takes tensors of >= 4096 elements (the loops are cheaper below).
    for (const Shape& shape : {Shape{2, 32, 9, 13}, Shape{1, 64, 8, 8}, Shape{2, 32, 5, 7},
                               Shape{1, 16, 4, 4}, Shape{3, 48, 1, 1}, Shape{2, 24, 9, 13},
                               Shape{1, 58, 8, 9}, Shape{3, 3, 5, 7}, Shape{1, 12, 2, 2}}) {
      const int64_t n = shape[0], c = shape[1], hw = shape[2] * shape[3];
      const int64_t cb = (c + b - 1) / b;  // blocks, the last one padded when b does not divide c
      const Tensor x = test::random_tensor(TensorDesc{DType::kF32, shape}, 7);
      // y[i][ch / b][p][ch % b] = x[i][ch][p]; the padding lanes (ch >= c) are 0
      Tensor want(TensorDesc{DType::kF32, {n, cb, shape[2], shape[3], b}});
      std::fill(want.data_as<float>(), want.data_as<float>() + want.numel(), 0.0f);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t ch = 0; ch < c; ++ch)
          for (int64_t p = 0; p < hw; ++p)
            want.data_as<float>()[((i * cb + ch / b) * hw + p) * b + ch % b] =
                x.data_as<float>()[(i * c + ch) * hw + p];
      // FromBlocked's input with padding lanes that hold something else (it must drop them).
      Tensor dirty(want.desc());
      std::copy(want.data_as<float>(), want.data_as<float>() + want.numel(),
                dirty.data_as<float>());
      for (int64_t i = 0; i < n; ++i)
        for (int64_t ch = c; ch < cb * b; ++ch)
          for (int64_t p = 0; p < hw; ++p)
            dirty.data_as<float>()[((i * cb + ch / b) * hw + p) * b + ch % b] = 1e30f;
      graph::Attributes attrs;
      attrs.set("block", b);
      if (c % b != 0) attrs.set("channels", c);
      for (int threads : {1, 2}) {
        INFO("block " << b << " shape " << x.desc().to_string() << " threads " << threads);
        // Every kernel of `op` on `in` gives `out` exactly; oneDNN's only from 4096 elements.
        auto check = [&](const char* op, const Tensor& in, const Tensor& out) {
          auto runs = test::run_every_kernel(op, attrs, {in}, threads, {false});
          REQUIRE(runs.is_ok());
          for (const test::KernelRun& r : *runs) {
            INFO(op << " kernel " << r.kernel);
            const bool onednn = r.kernel.find("onednn") != std::string::npos;
            CHECK(r.accepted == (!onednn || out.numel() >= 4096));
            if (!r.accepted) continue;
            REQUIRE(r.outputs[0].desc() == out.desc());
            CHECK(test::max_rel_error(r.outputs[0], out) == 0.0);
          }
        };
        check("ToBlocked", x, want);
        check("FromBlocked", dirty, x);
      }
    }
  }
}

TEST_CASE("FromBlocked refuses channels outside its last block, ToBlocked a non-NCHW input",
          "[ops][layout][errors]") {
  auto error_of = [](const char* op, const graph::Attributes& attrs, const Tensor& in) {
    auto r = test::run_single_op(op, attrs, {in});
    REQUIRE_FALSE(r.is_ok());
    return r.status().message();
  };
  const Tensor blocked = test::random_tensor(TensorDesc{DType::kF32, {1, 2, 3, 3, 16}}, 3);
  for (int64_t channels : {16, 33, 0}) {
    graph::Attributes attrs;
    attrs.set("block", int64_t{16});
    attrs.set("channels", channels);
    INFO("channels " << channels);
    CHECK_THAT(error_of("FromBlocked", attrs, blocked),
               Catch::Matchers::Contains("attribute 'channels' = " + std::to_string(channels) +
                                         " does not fit 2 blocks of 16 (it must be in (16, 32])"));
  }
  graph::Attributes attrs;
  attrs.set("block", int64_t{8});
  CHECK_THAT(
      error_of("ToBlocked", attrs, test::random_tensor(TensorDesc{DType::kF32, {2, 5, 3}}, 4)),
      Catch::Matchers::Contains("input must be NCHW, got float32[2, 5, 3]"));
}
