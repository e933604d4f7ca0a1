#include "core/tensor.h"

#include <fmt/format.h>

#include "core/error.h"

namespace keel {

void Tensor::set_contiguous(const int64_t* shape, int ndim) {
  if (ndim < 0 || ndim > kMaxDims)
    throw_error(ErrorCode::invalid_argument, "tensor rank {} > {}", ndim, kMaxDims);
  ndim_ = ndim;
  shape_ = {1, 1, 1, 1};
  for (int i = 0; i < ndim; ++i) {
    if (shape[i] < 0) throw_error(ErrorCode::invalid_argument, "negative dimension {}", shape[i]);
    shape_[i] = shape[i];
  }
  const DTypeInfo& info = dtype_info(dtype_);
  if (ndim > 0 && shape_[ndim - 1] % info.block_elems != 0)
    throw_error(ErrorCode::invalid_argument, "{} row of {} elements is not whole blocks of {}", info.name,
                shape_[ndim - 1], info.block_elems);
  // Innermost stride: bytes per element (plain types) or per block (packed types, innermost stays
  // contiguous).
  stride_ = {0, 0, 0, 0};
  int64_t stride = 0;
  for (int i = ndim - 1; i >= 0; --i) {
    if (i == ndim - 1) {
      stride_[i] = info.block_bytes;
      stride = info.block_bytes * (shape_[i] / info.block_elems);
    } else {
      stride_[i] = stride;
      stride *= shape_[i];
    }
  }
}

Tensor Tensor::empty(MemoryPool& pool, DType dtype, std::initializer_list<int64_t> shape,
                     std::string_view what) {
  return empty(pool, dtype, shape.begin(), static_cast<int>(shape.size()), what);
}

Tensor Tensor::empty(MemoryPool& pool, DType dtype, const int64_t* shape, int ndim, std::string_view what) {
  Tensor t;
  t.dtype_ = dtype;
  t.set_contiguous(shape, ndim);
  auto bytes = dtype_bytes(dtype, t.numel());
  if (!bytes)
    throw_error(ErrorCode::invalid_argument, "{}: size of {} {} overflows", what, t.shape_string(),
                dtype_name(dtype));
  t.owner_ = std::make_shared<Allocation>(pool.allocate(*bytes, what));
  t.data_ = t.owner_->data();
  return t;
}

Tensor Tensor::borrow(void* data, DType dtype, std::initializer_list<int64_t> shape) {
  return borrow(data, dtype, shape.begin(), static_cast<int>(shape.size()));
}

Tensor Tensor::borrow(void* data, DType dtype, const int64_t* shape, int ndim) {
  Tensor t;
  t.dtype_ = dtype;
  t.set_contiguous(shape, ndim);
  t.data_ = data;
  return t;
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int i = 0; i < ndim_; ++i) n *= shape_[i];
  return n;
}

int64_t Tensor::nbytes() const {
  return dtype_bytes(dtype_, numel()).value_or(-1);
}

bool Tensor::is_contiguous() const {
  if (ndim_ == 0) return true;
  const DTypeInfo& info = dtype_info(dtype_);
  int64_t expect = info.block_bytes;
  for (int i = ndim_ - 1; i >= 0; --i) {
    if (shape_[i] != 1 && stride_[i] != expect) return false;
    expect *= (i == ndim_ - 1) ? shape_[i] / info.block_elems : shape_[i];
  }
  return true;
}

std::string Tensor::shape_string() const {
  std::string s = "[";
  for (int i = 0; i < ndim_; ++i) s += fmt::format("{}{}", i ? ", " : "", shape_[i]);
  return s + "]";
}

Tensor Tensor::slice(int dim, int64_t start, int64_t length) const {
  if (dim < 0) dim += ndim_;
  if (dim < 0 || dim >= ndim_ || start < 0 || length < 0 || start + length > shape_[dim])
    throw_error(ErrorCode::invalid_argument, "slice [{}, {}) of dim {} out of {}", start, start + length, dim,
                shape_string());
  Tensor t = *this;
  t.data_ = static_cast<char*>(data_) + start * stride_[dim];
  t.shape_[dim] = length;
  return t;
}

Tensor Tensor::reshape(std::initializer_list<int64_t> shape) const {
  return reshape(shape.begin(), static_cast<int>(shape.size()));
}

Tensor Tensor::reshape(const int64_t* shape, int ndim) const {
  if (!is_contiguous()) throw_error(ErrorCode::invalid_argument, "reshape of a non-contiguous tensor");
  Tensor t = *this;
  t.set_contiguous(shape, ndim);
  if (t.numel() != numel())
    throw_error(ErrorCode::invalid_argument, "reshape {} -> {} changes the element count", shape_string(),
                t.shape_string());
  return t;
}

Tensor Tensor::select(int64_t i0) const {
  if (ndim_ < 1 || i0 < 0 || i0 >= shape_[0])
    throw_error(ErrorCode::invalid_argument, "select {} out of {}", i0, shape_string());
  Tensor t = *this;
  t.data_ = static_cast<char*>(data_) + i0 * stride_[0];
  for (int i = 0; i + 1 < kMaxDims; ++i) {
    t.shape_[i] = shape_[i + 1];
    t.stride_[i] = stride_[i + 1];
  }
  t.shape_[kMaxDims - 1] = 1;
  t.stride_[kMaxDims - 1] = 0;
  t.ndim_ = ndim_ - 1;
  return t;
}

Tensor Tensor::strided_view(std::initializer_list<int64_t> shape, std::initializer_list<int64_t> stride_bytes,
                            int64_t offset_bytes) const {
  if (shape.size() != stride_bytes.size() || shape.size() > kMaxDims)
    throw_error(ErrorCode::invalid_argument, "strided_view: {} dims, {} strides", shape.size(),
                stride_bytes.size());
  Tensor t = *this;
  t.ndim_ = static_cast<int>(shape.size());
  t.shape_ = {1, 1, 1, 1};
  t.stride_ = {0, 0, 0, 0};
  int i = 0;
  for (int64_t s : shape) t.shape_[i++] = s;
  i = 0;
  for (int64_t s : stride_bytes) t.stride_[i++] = s;
  t.data_ = static_cast<char*>(data_) + offset_bytes;
  return t;
}

}  // namespace keel
