// The CUDA groundwork (src/backend/cuda/cuda_device.h): device discovery, the device pool over one cudaMalloc
// cut up by an OffsetArena, and the fill kernel. Oracles: the runtime's own copies (cudaMemcpy back to the
// host) and the pool's numbers against the sizes asked for. Without a GPU every test skips, saying so.
#include "backend/cuda/cuda_device.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "core/pool.h"
#include "require_gpu.h"

namespace keel {
namespace {

TEST(CudaDevice, NamesTheDevicesThatExistWhenAskedForOneThatDoesNot) {
  std::string why;
  const int n = cuda::device_count(&why);
  try {
    cuda::device_info(n);  // one past the last (cuda:0 when there is none)
    FAIL() << "cuda:" << n << " should not exist";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("cuda:" + std::to_string(n)), std::string::npos) << msg;
    if (n == 0)
      EXPECT_NE(msg.find("no CUDA device"), std::string::npos) << msg;
    else
      EXPECT_NE(msg.find("this machine has " + std::to_string(n)), std::string::npos) << msg;
  }
}

TEST(CudaDevice, InfoReportsMemoryTheRuntimeSees) {
  REQUIRE_GPU();
  const cuda::DeviceInfo d = cuda::device_info(0);
  std::printf("cuda:0 %s sm_%d%d, %lld of %lld bytes free\n", d.name.c_str(), d.major, d.minor,
              static_cast<long long>(d.free_bytes), static_cast<long long>(d.total_bytes));
  EXPECT_GT(d.total_bytes, 0);
  EXPECT_GT(d.free_bytes, 0);
  EXPECT_LE(d.free_bytes, d.total_bytes);
}

TEST(CudaDevice, PoolOverTheArenaEnforcesItsLimitAndHandsOutWritableMemory) {
  REQUIRE_GPU();
  const int64_t arena_bytes = int64_t{64} << 20;
  cuda::ArenaAllocator arena(0, arena_bytes);
  MemoryPool pool("cuda:0", int64_t{48} << 20, &arena);
  Allocation a = pool.allocate(int64_t{16} << 20, "a");
  Allocation b = pool.allocate(int64_t{16} << 20, "b");
  EXPECT_FALSE(pool.try_allocate(int64_t{17} << 20, "over the limit"));  // 32 + 17 > 48 MiB
  EXPECT_EQ(pool.in_use(), int64_t{32} << 20);
  pool.set_limit(int64_t{1} << 30);  // past the arena: the arena refuses, the pool turns it into a value
  Allocation c = pool.try_allocate(int64_t{40} << 20, "bigger than what is left of the arena");
  EXPECT_FALSE(c);
  EXPECT_EQ(pool.in_use(), int64_t{32} << 20);

  const int64_t n = (int64_t{16} << 20) / 4;
  std::vector<float> host(n, -1.0f);
  ASSERT_EQ(cudaMemcpy(a.data(), host.data(), n * 4, cudaMemcpyHostToDevice), cudaSuccess);
  cuda::fill_f32(static_cast<float*>(a.data()) + 1, n - 2, 2.5f);  // all but the first and the last
  ASSERT_EQ(cudaMemcpy(host.data(), a.data(), n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(host[0], -1.0f);
  EXPECT_EQ(host[n - 1], -1.0f);
  for (int64_t i = 1; i < n - 1; ++i) ASSERT_EQ(host[i], 2.5f) << i;
  a.reset();
  b.reset();
  EXPECT_EQ(pool.in_use(), 0);
  EXPECT_EQ(arena.arena().free_bytes(), arena_bytes);
}

TEST(CudaDevice, ACudaErrorIsAnErrorValueNamingTheCallAndDoesNotStick) {
  REQUIRE_GPU();
  float* p = nullptr;
  // An invalid copy (device pointer nullptr) fails with a non-sticky error; the next call must work.
  try {
    cuda::check(cudaMemcpy(p, &p, 4, cudaMemcpyHostToDevice), "cudaMemcpy to nullptr");
    FAIL() << "copy to nullptr should fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cudaMemcpy to nullptr"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("sticky"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(cuda::context_lost());
  void* q = nullptr;
  EXPECT_EQ(cudaMalloc(&q, 1024), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  cudaFree(q);
}

}  // namespace
}  // namespace keel
