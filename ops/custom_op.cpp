#include "ops/custom_op.h"

#include <cstdio>
#include <exception>

namespace graphi::ops {

namespace {

class FunctionKernel final : public Kernel {
 public:
  explicit FunctionKernel(CustomKernelFn fn) : fn_(fn) {}
  Status init(const KernelContext&) override { return Status::ok(); }
  void run(const TeamContext& team, const Buffers& io) const noexcept override {
    try {
      fn_(team, io);
    } catch (const std::exception& e) {
      fail(team, std::string("threw: ") + e.what());
    } catch (...) {
      fail(team, "threw an exception that is not a std::exception");
    }
  }
  const char* name() const override { return "function_kernel"; }

 private:
  static void fail(const TeamContext& team, const std::string& what) noexcept {
    if (team.failure) {
      team.fail(what);
      return;
    }
    // Run outside an engine (no failure channel): nothing can carry the error on.
    std::fprintf(stderr, "graphi: a custom function kernel %s outside an engine\n", what.c_str());
    std::terminate();
  }
  CustomKernelFn fn_;
};

}  // namespace

std::unique_ptr<Kernel> make_function_kernel(CustomKernelFn fn) {
  return std::make_unique<FunctionKernel>(fn);
}

Status register_custom_op(OpDef def) {
  const std::string where = "register_custom_op: op type '" + def.type + "'";
  if (def.type.empty()) return Status::invalid_argument("register_custom_op: empty op type");
  for (unsigned char c : def.type)
    if (c <= ' ' || c == 0x7F)
      return Status::invalid_argument(
          where + ": the type must not contain whitespace or control characters");
  if (!def.infer) return Status::invalid_argument(where + ": no shape rule (OpDef::infer)");
  if (!def.cost) return Status::invalid_argument(where + ": no cost hint (OpDef::cost)");
  if (def.kernels.empty()) return Status::invalid_argument(where + ": no kernels (OpDef::kernels)");
  for (size_t i = 0; i < def.kernels.size(); ++i)
    if (!def.kernels[i])
      return Status::invalid_argument(where + ": kernel factory " + std::to_string(i) + " is null");
  Status s = Registry::add_to_process_table(std::move(def));
  if (!s.is_ok())
    return Status::invalid_argument("register_custom_op: " + s.message() + " (built-in or custom)");
  return s;
}

}  // namespace graphi::ops
