// The one harness every op test uses (docs/OPS.md): the backends to run on, fresh random inputs with the seed
// printed on failure, tolerance checks that name the worst element, bitwise equality, and workspace
// measurement.
//
//   TEST(Rope, MatchesReference) {
//     KEEL_TEST_RNG(rng);                               // fresh seed; KEEL_TEST_SEED=<n> replays one
//     for (OpBackend* ob : op_backends()) {
//       SCOPED_TRACE(ob->name);
//       Tensor x = random_tensor(*ob, rng, DType::f32, {7, 4, 64});
//       std::vector<double> ref = ...;                  // plain double loops over values(x)
//       int64_t peak = pool_peak_during(ob->pool(), [&] { ops::rope(ob->be(), ...); });
//       EXPECT_TRUE(all_close(values(out), ref, 1e-6 * max_abs(ref), 1e-5));
//       EXPECT_TRUE(workspace_ok(peak, ops::rope_workspace_bytes(...)));
//     }
//   }
//
// Tensors made here live in the backend's pool (host memory for the CPU backend). values() and tensor_from()
// are the only ways tests move data in and out, so a device backend later adds its copies there.
#pragma once
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/reference/reference_backend.h"
#ifdef KEEL_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "backend/cuda/cuda_backend.h"
#endif
#include "core/dtype.h"
#include "core/pool.h"
#include "core/tensor.h"
#include "core/weight.h"
#include "load/weight_store.h"

namespace keel::testing {

// ---- backends
// ---------------------------------------------------------------------------------------------------

struct OpBackend {
  std::string name;
  std::unique_ptr<DeviceAllocator> allocator;  // the CUDA backend's (managed memory, below)
  std::unique_ptr<MemoryPool> pool_;
  std::unique_ptr<Backend> backend;
  std::optional<CpuIsa> cpu_isa;  // set for the CPU backends (tests of ISA- or thread-specific behaviour)
  int threads = 1;
  bool cuda = false;
  Backend& be() { return *backend; }
  MemoryPool& pool() { return *pool_; }
  bool is_cpu() const { return cpu_isa.has_value(); }
  bool is_cuda() const { return cuda; }
  bool is_reference() const { return !is_cpu() && !is_cuda(); }
};

// A backend built for the harness, with its own pool (1 GiB limit) so workspace peaks are per backend.
inline std::unique_ptr<OpBackend> make_op_backend(std::function<std::unique_ptr<Backend>(MemoryPool&)> make,
                                                  std::unique_ptr<DeviceAllocator> allocator = nullptr,
                                                  const char* pool_name = "cpu") {
  auto ob = std::make_unique<OpBackend>();
  ob->allocator = std::move(allocator);
  ob->pool_ = std::make_unique<MemoryPool>(pool_name, int64_t{1} << 30, ob->allocator.get());
  ob->backend = make(*ob->pool_);
  ob->name = ob->backend->name();
  return ob;
}

#ifdef KEEL_HAVE_CUDA
// The op tests' CUDA pool only: memory the host can read and write too (cudaMallocManaged), so the tests'
// inputs and checks stay the plain host loops they are for every backend, and CUDA_LAUNCH_BLOCKING=1 (set
// before the runtime starts) makes every kernel finish before its op returns. keel's own device pool is
// plain cudaMalloc (cuda::ArenaAllocator); the model and server tests on the GPU run on that.
class ManagedAllocator final : public DeviceAllocator {
 public:
  void* allocate(int64_t bytes, int64_t) override {
    void* p = nullptr;
    return cudaMallocManaged(&p, static_cast<size_t>(bytes > 0 ? bytes : 1)) == cudaSuccess ? p : nullptr;
  }
  void release(void* ptr, int64_t) override { cudaFree(ptr); }
};

// Whether the CUDA backend is in op_backends(): built with CUDA and a device present. When it is, every
// backend's pool is managed memory, so inputs made on one backend (tests compare backends on the same
// tensors) are readable by all.
inline bool cuda_in_tests() {
  static const bool yes = [] {
    setenv("CUDA_LAUNCH_BLOCKING", "1", 0);  // before the runtime's first call
    std::string why;
    if (cuda::device_count(&why) > 0) return true;
    std::printf("op_harness: no CUDA device (%s): the CUDA backend is not tested here\n", why.c_str());
    return false;
  }();
  return yes;
}
#endif

// Every backend the op tests run on, built once per test binary, in this order: a CpuBackend for each ISA
// this CPU has (generic, avx2, avx512, avx512_bf16; KEEL_CPU_ISA caps the list) with 3 threads (more threads
// than the CI's cores, so uneven splits happen), the best ISA with 1 thread, and the ReferenceBackend
// (float64; tests compare it with the same references and tolerances, and skip a check only where it states
// why), then the CudaBackend on cuda:0 when built with KEEL_CUDA and a GPU is present.
inline std::vector<OpBackend*> op_backends() {
  static std::vector<std::unique_ptr<OpBackend>> all = [] {
    std::vector<std::unique_ptr<OpBackend>> v;
    auto allocator = []() -> std::unique_ptr<DeviceAllocator> {
#ifdef KEEL_HAVE_CUDA
      if (cuda_in_tests()) return std::make_unique<ManagedAllocator>();
#endif
      return nullptr;
    };
    auto add_cpu = [&](CpuIsa isa, int threads) {
      v.push_back(make_op_backend(
          [&](MemoryPool& pool) { return std::make_unique<CpuBackend>(pool, threads, isa); }, allocator()));
      v.back()->cpu_isa = static_cast<CpuBackend&>(v.back()->be()).isa();
      v.back()->threads = threads;
    };
    for (CpuIsa isa : {CpuIsa::generic, CpuIsa::avx2, CpuIsa::avx512, CpuIsa::avx512_bf16})
      if (isa <= cpu_isa()) add_cpu(isa, 3);
    add_cpu(cpu_isa(), 1);
    v.push_back(make_op_backend([](MemoryPool& pool) { return std::make_unique<ReferenceBackend>(pool); },
                                allocator()));
#ifdef KEEL_HAVE_CUDA
    if (cuda_in_tests()) {
      v.push_back(make_op_backend([](MemoryPool& pool) { return std::make_unique<CudaBackend>(pool, 0); },
                                  std::make_unique<ManagedAllocator>(), "cuda:0"));
      v.back()->cuda = true;
    }
#endif
    return v;
  }();
  std::vector<OpBackend*> out;
  for (auto& ob : all) out.push_back(ob.get());
  return out;
}

// A WeightStore whose tensors every backend of op_backends() can read: with a GPU in the list, each tensor
// is copied on first use into managed memory (WeightStore::place_with, the mechanism `keel --device cuda`
// uses with device memory); without one the mapped views stay as they are.
inline void share_with_backends(WeightStore& store) {
#ifdef KEEL_HAVE_CUDA
  if (!cuda_in_tests()) return;
  static ManagedAllocator managed;
  static MemoryPool pool("managed (test weights)", int64_t{8} << 30, &managed);
  store.place_with([](const std::string& name, const Tensor& mapped) {
    Tensor t = Tensor::empty(pool, mapped.dtype(), mapped.shape().data(), mapped.ndim(), name);
    std::memcpy(t.data(), mapped.data(), static_cast<size_t>(mapped.nbytes()));
    return t;
  });
#else
  (void)store;
#endif
}

// The CPU backends of op_backends() only (checks of the CPU's own tiling, threads or ISA paths).
inline std::vector<OpBackend*> cpu_op_backends() {
  std::vector<OpBackend*> out;
  for (OpBackend* ob : op_backends())
    if (ob->is_cpu()) out.push_back(ob);
  return out;
}

// ---- random inputs
// ----------------------------------------------------------------------------------------------

// A fresh seed per test (std::random_device), or KEEL_TEST_SEED=<n> to replay a failure.
class TestRng {
 public:
  TestRng() {
    const char* env = std::getenv("KEEL_TEST_SEED");
    seed_ = env ? std::strtoull(env, nullptr, 10)
                : (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
    gen_.seed(seed_);
  }
  uint64_t seed() const { return seed_; }
  std::string describe() const {
    return "random seed " + std::to_string(seed_) + " (replay: KEEL_TEST_SEED=" + std::to_string(seed_) + ")";
  }
  double uniform(double lo = -1.0, double hi = 1.0) {
    return std::uniform_real_distribution<double>(lo, hi)(gen_);
  }
  double normal(double mean = 0.0, double stddev = 1.0) {
    return std::normal_distribution<double>(mean, stddev)(gen_);
  }
  int64_t integer(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(gen_);
  }  // [lo, hi]
  std::mt19937_64& engine() { return gen_; }

 private:
  uint64_t seed_;
  std::mt19937_64 gen_;
};

// Declares `TestRng var` and puts its seed on every failure message in the enclosing scope.
#define KEEL_TEST_RNG(var)      \
  ::keel::testing::TestRng var; \
  SCOPED_TRACE(var.describe())

// ---- moving values in and out
// ----------------------------------------------------------------------------------

// The element at flat row-major index `i` of the view's shape, as double (f32/f16/bf16/i32/i64).
inline double element(const Tensor& t, int64_t i) {
  int64_t idx[kMaxDims] = {0, 0, 0, 0};
  for (int d = t.ndim() - 1; d >= 0; --d) {
    idx[d] = i % t.dim(d);
    i /= t.dim(d);
  }
  const void* p = t.at(idx[0], idx[1], idx[2], idx[3]);
  switch (t.dtype()) {
    case DType::f32:
      return *static_cast<const float*>(p);
    case DType::bf16:
      return bf16_to_f32(*static_cast<const uint16_t*>(p));
    case DType::f16:
      return f16_to_f32(*static_cast<const uint16_t*>(p));
    case DType::i32:
      return *static_cast<const int32_t*>(p);
    case DType::i64:
      return static_cast<double>(*static_cast<const int64_t*>(p));
    default:
      ADD_FAILURE() << "element(): dtype " << dtype_name(t.dtype()) << " not readable";
      return 0;
  }
}

inline void set_element(const Tensor& t, int64_t i, double value) {
  int64_t idx[kMaxDims] = {0, 0, 0, 0};
  for (int d = t.ndim() - 1; d >= 0; --d) {
    idx[d] = i % t.dim(d);
    i /= t.dim(d);
  }
  void* p = t.at(idx[0], idx[1], idx[2], idx[3]);
  switch (t.dtype()) {
    case DType::f32:
      *static_cast<float*>(p) = static_cast<float>(value);
      break;
    case DType::bf16:
      *static_cast<uint16_t*>(p) = f32_to_bf16(static_cast<float>(value));
      break;
    case DType::f16:
      *static_cast<uint16_t*>(p) = f32_to_f16(static_cast<float>(value));
      break;
    case DType::i32:
      *static_cast<int32_t*>(p) = static_cast<int32_t>(value);
      break;
    case DType::i64:
      *static_cast<int64_t*>(p) = static_cast<int64_t>(value);
      break;
    default:
      ADD_FAILURE() << "set_element(): dtype " << dtype_name(t.dtype()) << " not writable";
  }
}

// All elements of a (possibly strided) view in row-major order, as the values the kernel sees (bf16/f16
// widened exactly), so references are built from the same rounded numbers.
inline std::vector<double> values(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = element(t, i);
  return v;
}

// A new contiguous tensor on the backend holding `v` (rounded to dtype).
inline Tensor tensor_from(OpBackend& ob, DType dtype, std::initializer_list<int64_t> shape,
                          const std::vector<double>& v, std::string_view what = "test input") {
  Tensor t = Tensor::empty(ob.pool(), dtype, shape, what);
  EXPECT_EQ(static_cast<int64_t>(v.size()), t.numel())
      << "tensor_from: value count vs shape " << t.shape_string();
  for (int64_t i = 0; i < t.numel() && i < static_cast<int64_t>(v.size()); ++i)
    set_element(t, i, v[static_cast<size_t>(i)]);
  return t;
}

// Uniform in [-scale, scale], rounded to dtype.
inline Tensor random_tensor(OpBackend& ob, TestRng& rng, DType dtype, std::initializer_list<int64_t> shape,
                            double scale = 1.0, std::string_view what = "random input") {
  Tensor t = Tensor::empty(ob.pool(), dtype, shape, what);
  for (int64_t i = 0; i < t.numel(); ++i) set_element(t, i, rng.uniform(-scale, scale));
  return t;
}

// An output tensor filled with NaN, so an element the kernel forgets to write fails every comparison.
inline Tensor nan_tensor(OpBackend& ob, std::initializer_list<int64_t> shape,
                         std::string_view what = "output") {
  Tensor t = Tensor::empty(ob.pool(), DType::f32, shape, what);
  for (int64_t i = 0; i < t.numel(); ++i) t.ptr<float>()[i] = std::nanf("");
  return t;
}

// ---- packed weights

// A packed (MLX affine) weight built here, bit by bit, with its dequantized values W = scale·q + bias:
// element i of a row sits in bits [i·b, i·b + b) of the row's little-endian u32 stream.
struct PackedCase {
  Weight w;
  std::vector<double> dense;  // [rows, cols]
};

// Scales uniform in ±scale_amp, biases in ±bias_amp, both stored as scale_dtype; q uniform in [0, 2^bits).
inline PackedCase make_packed(OpBackend& ob, TestRng& rng, int64_t rows, int64_t cols, int32_t bits,
                              int32_t group, DType scale_dtype = DType::bf16, double scale_amp = 0.05,
                              double bias_amp = 0.2) {
  const int64_t n_words = cols * bits / 32, groups = cols / group;
  Tensor words = Tensor::empty(ob.pool(), DType::u32, {rows, n_words}, "packed words");
  std::fill_n(words.ptr<uint32_t>(), rows * n_words, 0u);
  Tensor scales = random_tensor(ob, rng, scale_dtype, {rows, groups}, scale_amp);
  Tensor biases = random_tensor(ob, rng, scale_dtype, {rows, groups}, bias_amp);
  const std::vector<double> s = values(scales), b = values(biases);
  PackedCase c;
  c.dense.resize(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    uint32_t* row = words.ptr<uint32_t>() + r * n_words;
    for (int64_t i = 0; i < cols; ++i) {
      const uint64_t q = static_cast<uint64_t>(rng.integer(0, (int64_t{1} << bits) - 1));
      const int64_t bit = i * bits;
      row[bit / 32] |= static_cast<uint32_t>(q << (bit % 32));
      if (bit % 32 + bits > 32) row[bit / 32 + 1] |= static_cast<uint32_t>(q >> (32 - bit % 32));
      const size_t g = static_cast<size_t>(r * groups + i / group);
      c.dense[static_cast<size_t>(r * cols + i)] = s[g] * static_cast<double>(q) + b[g];
    }
  }
  c.w = Weight::packed(words, scales, biases, bits, group, "test weight");
  return c;
}

// ---- comparisons
// ------------------------------------------------------------------------------------------------

inline double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

// |actual − ref| ≤ atol + rtol·|ref| for every element (NaN anywhere fails). On failure: how many fail, and
// the worst one (largest excess over its allowance) with its index, both values and the allowance.
inline ::testing::AssertionResult all_close(const std::vector<double>& actual, const std::vector<double>& ref,
                                            double atol, double rtol) {
  if (actual.size() != ref.size())
    return ::testing::AssertionFailure() << "size " << actual.size() << " vs reference " << ref.size();
  size_t bad = 0, worst = 0;
  double worst_excess = -1, max_diff = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double diff = std::fabs(actual[i] - ref[i]);
    double allowed = atol + rtol * std::fabs(ref[i]);
    bool ok = diff <= allowed;  // false for NaN
    if (!std::isnan(diff)) max_diff = std::max(max_diff, diff);
    double excess = std::isnan(diff) ? INFINITY : diff - allowed;
    if (!ok) {
      ++bad;
      if (excess > worst_excess) worst_excess = excess, worst = i;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess() << "max |diff| " << max_diff;
  return ::testing::AssertionFailure()
         << bad << " of " << ref.size() << " elements outside atol " << atol << " + rtol " << rtol
         << "·|ref|; worst at flat index " << worst << ": actual " << actual[worst] << ", reference "
         << ref[worst] << ", |diff| " << std::fabs(actual[worst] - ref[worst]) << ", allowed "
         << atol + rtol * std::fabs(ref[worst]);
}

inline ::testing::AssertionResult all_close(const Tensor& actual, const std::vector<double>& ref, double atol,
                                            double rtol) {
  return all_close(values(actual), ref, atol, rtol);
}

// Same shape, dtype and bits in every element (the batch-invariance and pieces-vs-whole checks).
inline ::testing::AssertionResult bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.numel() != b.numel() || a.dtype() != b.dtype())
    return ::testing::AssertionFailure()
           << "shape/dtype differ: " << a.shape_string() << " " << dtype_name(a.dtype()) << " vs "
           << b.shape_string() << " " << dtype_name(b.dtype());
  int64_t size = dtype_info(a.dtype()).block_bytes;
  for (int64_t i = 0; i < a.numel(); ++i) {
    int64_t ia[kMaxDims] = {0, 0, 0, 0}, ib[kMaxDims] = {0, 0, 0, 0}, r = i, s = i;
    for (int d = a.ndim() - 1; d >= 0; --d) ia[d] = r % a.dim(d), r /= a.dim(d);
    for (int d = b.ndim() - 1; d >= 0; --d) ib[d] = s % b.dim(d), s /= b.dim(d);
    if (std::memcmp(a.at(ia[0], ia[1], ia[2], ia[3]), b.at(ib[0], ib[1], ib[2], ib[3]),
                    static_cast<size_t>(size)))
      return ::testing::AssertionFailure() << "first difference at flat index " << i << ": " << element(a, i)
                                           << " vs " << element(b, i) << " (of " << a.numel() << ")";
  }
  return ::testing::AssertionSuccess();
}

// A row computed alone (or in a smaller batch) against the same row inside a larger batch: the same bits on
// the CPU and reference backends (their sums do not depend on the batch). The CUDA matmul's do (a GEMV for
// T ≤ 8, cuBLAS beyond; docs/CUDA.md), so on CUDA the rows must agree within a few f32 roundings of the
// row's scale instead: |a − b| ≤ 1e-5·max|b| + 1e-5·|b|.
inline ::testing::AssertionResult batch_invariant(const OpBackend& ob, const Tensor& a, const Tensor& b) {
  if (!ob.is_cuda()) return bitwise_equal(a, b);
  const std::vector<double> vb = values(b);
  return all_close(values(a), vb, 1e-5 * max_abs(vb), 1e-5);
}

// ---- workspace
// --------------------------------------------------------------------------------------------------

// Bytes the pool's high-water mark rose above its in_use before `fn` (allocate outputs before calling this).
inline int64_t pool_peak_during(MemoryPool& pool, const std::function<void()>& fn) {
  int64_t before = pool.in_use();
  pool.mark_peak();
  fn();
  EXPECT_EQ(pool.in_use(), before) << "the op did not return all its workspace to the pool";
  return pool.peak() - before;
}

// docs/OPS.md: measured ≤ planned ≤ 1.25 × measured (both 0 for an op without workspace).
inline ::testing::AssertionResult workspace_ok(int64_t measured, int64_t planned) {
  if (measured <= planned && 4 * planned <= 5 * measured) return ::testing::AssertionSuccess();
  if (measured == 0 && planned == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "workspace: measured pool peak " << measured << " bytes, planned "
                                       << planned << " bytes (need measured ≤ planned ≤ 1.25·measured)";
}

// ---- offsets past 2^31
// -----------------------------------------------------------------------------------------

// A large range of address space (PROT_NONE, nothing committed) in which tests make small pieces readable and
// writable, so a view whose byte strides exceed 2^31 (or 2^32) can be real memory without allocating
// gigabytes:
//   SparseArena arena(int64_t{40} << 30);
//   char* row5 = arena.commit(5 * stride, 4096);   // only these pages become usable
// A kernel that computes an offset in 32 bits touches a PROT_NONE page (the test crashes) or the wrong row.
class SparseArena {
 public:
  explicit SparseArena(int64_t bytes) : bytes_(bytes) {
    base_ = ::mmap(nullptr, static_cast<size_t>(bytes), PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base_ == MAP_FAILED) base_ = nullptr;
  }
  ~SparseArena() {
    if (base_) ::munmap(base_, static_cast<size_t>(bytes_));
  }
  SparseArena(const SparseArena&) = delete;
  SparseArena& operator=(const SparseArena&) = delete;
  bool ok() const { return base_ != nullptr; }
  char* base() const { return static_cast<char*>(base_); }
  // Makes [offset, offset + bytes) readable and writable (zero-filled); returns base() + offset.
  char* commit(int64_t offset, int64_t bytes) {
    const int64_t page = ::sysconf(_SC_PAGESIZE);
    int64_t begin = offset / page * page, end = (offset + bytes + page - 1) / page * page;
    EXPECT_EQ(::mprotect(base() + begin, static_cast<size_t>(end - begin), PROT_READ | PROT_WRITE), 0);
    return base() + offset;
  }

 private:
  void* base_ = nullptr;
  int64_t bytes_ = 0;
};

}  // namespace keel::testing
