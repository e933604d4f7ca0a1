// Tensor: a view of up to kMaxDims dimensions with 64-bit shapes and byte strides (as ggml's nb[]), over
// memory that is either owned (a pool Allocation, shared by views of it) or borrowed (mmap'd weights, a
// caller's buffer). shape[0] is the outermost dimension: a [tokens, hidden] activation has shape {tokens,
// hidden}. Quantized dtypes keep their innermost dimension contiguous; strides of outer dimensions are in
// bytes as usual.
#pragma once
#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>

#include "core/dtype.h"
#include "core/pool.h"

namespace keel {

constexpr int kMaxDims = 4;

class Tensor {
 public:
  Tensor() = default;

  // A contiguous tensor whose storage comes from `pool` (throws Error(out_of_memory) on refusal).
  static Tensor empty(MemoryPool& pool, DType dtype, std::initializer_list<int64_t> shape,
                      std::string_view what);
  static Tensor empty(MemoryPool& pool, DType dtype, const int64_t* shape, int ndim, std::string_view what);
  // A contiguous view of memory keel does not own (e.g. mmap'd weights). The caller keeps it alive.
  static Tensor borrow(void* data, DType dtype, std::initializer_list<int64_t> shape);
  static Tensor borrow(void* data, DType dtype, const int64_t* shape, int ndim);

  bool defined() const { return data_ != nullptr || numel() == 0; }
  DType dtype() const { return dtype_; }
  int ndim() const { return ndim_; }
  int64_t dim(int i) const { return shape_[i < 0 ? i + ndim_ : i]; }
  int64_t stride_bytes(int i) const { return stride_[i < 0 ? i + ndim_ : i]; }
  const std::array<int64_t, kMaxDims>& shape() const { return shape_; }
  int64_t numel() const;
  int64_t nbytes() const;  // bytes of the elements the view covers when contiguous
  bool is_contiguous() const;
  std::string shape_string() const;  // "[2, 3]"

  void* data() const { return data_; }
  template <typename T>
  T* ptr() const {
    return static_cast<T*>(data_);
  }
  // Address of element (i0, i1, ...) by byte strides; 64-bit arithmetic throughout.
  void* at(int64_t i0, int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0) const {
    return static_cast<char*>(data_) + i0 * stride_[0] + i1 * stride_[1] + i2 * stride_[2] + i3 * stride_[3];
  }

  // Views share ownership of the storage.
  Tensor slice(int dim, int64_t start, int64_t length) const;  // along one dimension
  Tensor reshape(std::initializer_list<int64_t> shape) const;  // contiguous tensors only
  Tensor reshape(const int64_t* shape, int ndim) const;
  Tensor select(int64_t i0) const;  // drops dimension 0
  // A view with explicit shape and byte strides over the same storage (tests use it for >2^31 offsets).
  Tensor strided_view(std::initializer_list<int64_t> shape, std::initializer_list<int64_t> stride_bytes,
                      int64_t offset_bytes = 0) const;

 private:
  void* data_ = nullptr;
  DType dtype_ = DType::f32;
  int ndim_ = 0;
  std::array<int64_t, kMaxDims> shape_{1, 1, 1, 1};
  std::array<int64_t, kMaxDims> stride_{0, 0, 0, 0};
  std::shared_ptr<Allocation> owner_;  // null for borrowed memory
  void set_contiguous(const int64_t* shape, int ndim);
};

}  // namespace keel
