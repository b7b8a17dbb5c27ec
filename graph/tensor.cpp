#include "graph/tensor.h"

#include <cstdlib>
#include <new>

namespace graphi {

std::string shape_to_string(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string TensorDesc::to_string() const {
  return std::string(dtype_name(dtype)) + shape_to_string(shape);
}

void Tensor::Free::operator()(void* p) const { std::free(p); }

static void* alloc_aligned(size_t bytes) {
  // aligned_alloc needs a size that is a multiple of the alignment, and a non-zero size.
  size_t rounded = ((bytes + 63) / 64) * 64;
  if (rounded == 0) rounded = 64;
  void* p = std::aligned_alloc(64, rounded);
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, rounded);
  return p;
}

Tensor::Tensor(TensorDesc desc) : desc_(std::move(desc)), data_(alloc_aligned(desc_.bytes())) {}

Tensor::Tensor(const Tensor& o) : desc_(o.desc_) {
  if (o.data_) {
    data_.reset(alloc_aligned(desc_.bytes()));
    std::memcpy(data_.get(), o.data_.get(), desc_.bytes());
  }
}

Tensor& Tensor::operator=(const Tensor& o) {
  if (this != &o) {
    Tensor copy(o);
    *this = std::move(copy);
  }
  return *this;
}

}  // namespace graphi
