// Naive references for MatMul, Gemm, Conv, MaxPool and AveragePool, written straight from the
// numpy / ONNX definitions with double accumulation; used only by tests as the independent
// truth for every kernel in ops/. Plus a harness that runs every kernel of an op's list (not
// only the one the registry would select) and one that runs a kernel from two threads at once.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace graphi::test {

// numpy.matmul: 1-D A is a row vector, 1-D B a column vector (the added dim is removed from the
// result); leading dims broadcast.
Tensor matmul_ref(const Tensor& a, const Tensor& b);

// ONNX Gemm: alpha * op(A) op(B) + beta * C, C (optional, may be nullptr) broadcast to [M, N].
Tensor gemm_ref(const Tensor& a, const Tensor& b, const Tensor* c, double alpha, double beta,
                bool trans_a, bool trans_b);

struct Window2d {
  std::array<int64_t, 2> kernel{1, 1};  // pools only; Conv takes it from W
  std::array<int64_t, 2> strides{1, 1};
  std::array<int64_t, 4> pads{0, 0, 0, 0};  // top, left, bottom, right
  std::array<int64_t, 2> dilations{1, 1};   // Conv and the pools
};

// ONNX Conv on NCHW X, W [M, C/group, kH, kW], optional bias [M].
Tensor conv2d_ref(const Tensor& x, const Tensor& w, const Tensor* bias, const Window2d& win,
                  int64_t group);
// ONNX MaxPool (padding never wins) and AveragePool (count_include_pad selects the divisor).
Tensor maxpool2d_ref(const Tensor& x, const Window2d& win);
Tensor avgpool2d_ref(const Tensor& x, const Window2d& win, bool count_include_pad);

// One kernel of an op's list, run on a one-node graph.
struct KernelRun {
  std::string kernel;     // Kernel::name()
  bool accepted = false;  // init() succeeded (then `outputs` holds its result)
  std::string reason;     // why init() declined
  std::vector<Tensor> outputs;
};

// Builds the one-node graph (inputs flagged in `constant` become constants, as in
// run_single_op), then for every kernel of the op's registry list in order: init, and if it
// accepts, run once on a team of `threads` (inside an OpenMP region unless the kernel opens its
// own). Shape-inference errors come back as the Status.
Result<std::vector<KernelRun>> run_every_kernel(const std::string& op,
                                                const graph::Attributes& attrs,
                                                const std::vector<Tensor>& inputs, int threads = 1,
                                                const std::vector<bool>& constant = {});

// run_every_kernel on teams of 1 and 2, each kernel that accepts checked (Catch2 CHECKs) against
// `expected` within relative error `tol`; the last kernel (the generic fallback) must accept.
// Returns the names of the kernels that accepted on the 1-thread team, in list order.
std::vector<std::string> check_every_kernel(const std::string& op, const graph::Attributes& attrs,
                                            const std::vector<Tensor>& inputs,
                                            const std::vector<bool>& constant,
                                            const Tensor& expected, double tol);

// Selects the op's kernel for a team of `threads`, then runs that one kernel object from two
// std::threads at the same time (each with its own scratch and outputs), `repeats` times each.
// Returns both threads' last outputs and the kernel name.
struct ConcurrentRun {
  std::string kernel;
  std::vector<Tensor> first, second;
};
Result<ConcurrentRun> run_concurrently(const std::string& op, const graph::Attributes& attrs,
                                       const std::vector<Tensor>& inputs, int threads,
                                       const std::vector<bool>& constant, int repeats);

// One ONNX backend node test case (Debian's libonnx-testdata: model.onnx plus
// test_data_set_0/{input,output}_N.pb), converted by /usr/bin/python3 with the onnx package:
// ONNX's own expected outputs, fully independent of graphi's kernels and of the references above.
struct OnnxNodeCase {
  std::string name;  // "test_gemm_alpha"
  std::string op;    // "Gemm"
  graph::Attributes attrs;
  std::vector<Tensor> inputs, outputs;
};
// The cases named (directories under /usr/share/libonnx-testdata/data/node), or
// StatusCode::kUnsupported when the test data or python3-onnx is not installed (callers skip).
Result<std::vector<OnnxNodeCase>> load_onnx_node_cases(const std::vector<std::string>& names);

}  // namespace graphi::test
