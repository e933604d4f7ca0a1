#include "core/tensor.h"

#include <gtest/gtest.h>

#include "core/error.h"

using namespace keel;

TEST(Tensor, ContiguousLayoutAndViews) {
  MemoryPool pool("cpu", 1 << 20);
  Tensor t = Tensor::empty(pool, DType::f32, {2, 3, 4}, "t");
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.nbytes(), 96);
  EXPECT_EQ(pool.in_use(), 96);
  EXPECT_EQ(t.stride_bytes(0), 48);
  EXPECT_EQ(t.stride_bytes(2), 4);
  for (int i = 0; i < 24; ++i) t.ptr<float>()[i] = static_cast<float>(i);
  Tensor s = t.slice(1, 1, 2);
  EXPECT_FALSE(s.is_contiguous());
  EXPECT_EQ(*static_cast<float*>(s.at(1, 1, 3)), 1 * 12 + 2 * 4 + 3);
  Tensor r = t.select(1);
  EXPECT_EQ(r.ndim(), 2);
  EXPECT_EQ(*static_cast<float*>(r.at(2, 1)), 12 + 8 + 1);
  EXPECT_EQ(t.reshape({6, 4}).dim(0), 6);
  EXPECT_THROW(s.reshape({6, 2}), Error);
  EXPECT_THROW(t.reshape({5, 5}), Error);
  EXPECT_THROW(t.slice(0, 1, 2), Error);
  Tensor keep = s;  // views share the storage
  t = Tensor();
  s = Tensor();
  r = Tensor();
  EXPECT_EQ(pool.in_use(), 96);
  keep = Tensor();
  EXPECT_EQ(pool.in_use(), 0);
}

TEST(Tensor, ByteOffsetsPastTwoToThe31) {
  // A view whose strides put element (1, 1) 2^33 + 2^31 bytes past the base: the address arithmetic must be
  // 64-bit. No memory is touched.
  static float base[1];
  Tensor t = Tensor::borrow(base, DType::f32, {1});
  Tensor v = t.strided_view({2, 2}, {int64_t{1} << 33, int64_t{1} << 31});
  auto* p = static_cast<char*>(v.at(1, 1));
  EXPECT_EQ(p - reinterpret_cast<char*>(base), (int64_t{1} << 33) + (int64_t{1} << 31));
}

TEST(Tensor, AllocationFailureIsAnError) {
  MemoryPool pool("cpu", 100);
  try {
    Tensor::empty(pool, DType::f32, {1000}, "kv cache");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::out_of_memory);
  }
  EXPECT_EQ(pool.in_use(), 0);
}
