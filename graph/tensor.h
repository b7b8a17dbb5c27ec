// TensorDesc (dtype + static shape) and Tensor (a desc plus owned, 64-byte aligned bytes).
// Value types used by the IR, constants, the CLI and the Session API.
#pragma once

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "graph/base.h"

namespace graphi {

using Shape = std::vector<int64_t>;

std::string shape_to_string(const Shape& s);  // "[2, 3]"
int64_t shape_numel(const Shape& s);          // product of dims; 1 for a scalar

struct TensorDesc {
  DType dtype = DType::kF32;
  Shape shape;

  int64_t numel() const { return shape_numel(shape); }
  size_t bytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
  int rank() const { return static_cast<int>(shape.size()); }
  std::string to_string() const;  // "float32[2, 3]"
  bool operator==(const TensorDesc&) const = default;
};

// Owns its bytes (64-byte aligned, so SIMD kernels and oneDNN may use them directly). Copying a
// Tensor copies the bytes; moving does not.
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(TensorDesc desc);  // zero-filled
  Tensor(const Tensor& o);
  Tensor& operator=(const Tensor& o);
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;

  const TensorDesc& desc() const { return desc_; }
  DType dtype() const { return desc_.dtype; }
  const Shape& shape() const { return desc_.shape; }
  int64_t numel() const { return desc_.numel(); }
  size_t bytes() const { return desc_.bytes(); }

  void* data() { return data_.get(); }
  const void* data() const { return data_.get(); }
  template <typename T>
  T* data_as() {
    return static_cast<T*>(data());
  }
  template <typename T>
  const T* data_as() const {
    return static_cast<const T*>(data());
  }

 private:
  struct Free {
    void operator()(void* p) const;
  };
  TensorDesc desc_;
  std::unique_ptr<void, Free> data_;
};

}  // namespace graphi
