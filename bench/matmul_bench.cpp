// ops::matmul throughput. Prefill: GFLOP/s (2·T·in·out per call) and the fraction of the fp32 FMA peak of the
// threads used, peak = threads × GHz × 2 FMA units × 16 lanes × 2 flops (GHz from /proc/cpuinfo "cpu MHz").
// Decode (T = 1): GB/s of weight bytes streamed (packed: words, scales and biases).
//   build-X/bench/matmul_bench --benchmark_filter=Prefill
#include <benchmark/benchmark.h>

#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/tensor.h"
#include "core/weight.h"
#include "ops/matmul.h"

using namespace keel;

namespace {

double cpu_ghz() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("cpu MHz", 0) == 0) return std::stod(line.substr(line.find(':') + 1)) / 1000.0;
  return 0;
}

void fill(Tensor& t, std::mt19937& gen) {
  std::uniform_real_distribution<float> u(-1, 1);
  for (int64_t i = 0; i < t.numel(); ++i) {
    float v = u(gen);
    if (t.dtype() == DType::f32) t.ptr<float>()[i] = v;
    if (t.dtype() == DType::bf16) t.ptr<uint16_t>()[i] = f32_to_bf16(v);
    if (t.dtype() == DType::f16) t.ptr<uint16_t>()[i] = f32_to_f16(v);
  }
}

// Args: T, in, out, weight dtype (0 f32, 1 bf16, 2 f16), threads, isa (CpuIsa value).
void BM_Matmul(benchmark::State& state) {
  const int64_t T = state.range(0), in = state.range(1), out = state.range(2);
  const DType wt = state.range(3) == 0 ? DType::f32 : state.range(3) == 1 ? DType::bf16 : DType::f16;
  const int threads = static_cast<int>(state.range(4));
  const auto isa = static_cast<CpuIsa>(state.range(5));
  MemoryPool pool("cpu", int64_t{8} << 30);
  CpuBackend be(pool, threads, isa);
  std::mt19937 gen(1);
  Tensor x = Tensor::empty(pool, DType::f32, {T, in}, "x");
  Tensor w = Tensor::empty(pool, wt, {out, in}, "w");
  Tensor y = Tensor::empty(pool, DType::f32, {T, out}, "y");
  fill(x, gen);
  fill(w, gen);
  for (auto _ : state) {
    ops::matmul(be, x, w, y);
    benchmark::DoNotOptimize(y.data());
  }
  const double flops = 2.0 * T * in * out;
  state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["peak_frac"] = benchmark::Counter(flops / (threads * cpu_ghz() * 1e9 * 2 * 16 * 2),
                                                   benchmark::Counter::kIsIterationInvariantRate);
  state.counters["W_GB/s"] = benchmark::Counter(static_cast<double>(w.nbytes()) * 1e-9,
                                                benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(be.name() + " w=" + std::string(dtype_name(wt)));
}

// The timed loop of the streaming benches: each call multiplies x by the next of `ws` (cycling); GB/s of one
// weight's bytes per call.
template <class W>
void stream(benchmark::State& state, CpuBackend& be, const Tensor& x, const std::vector<W>& ws, Tensor& y) {
  size_t i = 0;
  for (auto _ : state) {
    ops::matmul(be, x, ws[i++ % ws.size()], y);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["W_GB/s"] = benchmark::Counter(static_cast<double>(ws[0].nbytes()) * 1e-9,
                                                benchmark::Counter::kIsIterationInvariantRate);
}

// Decode GEMV over a model's worth of distinct matrices (Args: in, out, copies, threads): each call reads the
// next copy, so the weights stream from memory as a decode step's do (copies × in × out × 2 bytes ≫ the L3),
// not from the cache that one matrix called again would sit in. GB/s of weight bytes.
void BM_DecodeStream(benchmark::State& state) {
  const int64_t in = state.range(0), out = state.range(1), copies = state.range(2);
  const int threads = static_cast<int>(state.range(3));
  MemoryPool pool("cpu", int64_t{8} << 30);
  CpuBackend be(pool, threads);
  std::mt19937 gen(1);
  Tensor x = Tensor::empty(pool, DType::f32, {1, in}, "x");
  Tensor y = Tensor::empty(pool, DType::f32, {1, out}, "y");
  fill(x, gen);
  std::vector<Tensor> ws;
  for (int64_t c = 0; c < copies; ++c) {
    ws.push_back(Tensor::empty(pool, DType::bf16, {out, in}, "w"));
    fill(ws.back(), gen);
  }
  stream(state, be, x, ws, y);
  state.SetLabel(be.name());
}

// Decode GEMV over MLX-packed matrices (Args: in, out, bits, copies, threads; group 64, bf16 scales and
// biases, random words): as DecodeStream, GB/s of the packed bytes.
void BM_PackedDecodeStream(benchmark::State& state) {
  const int64_t in = state.range(0), out = state.range(1), copies = state.range(3);
  const auto bits = static_cast<int32_t>(state.range(2));
  const int threads = static_cast<int>(state.range(4));
  constexpr int32_t kGroup = 64;
  MemoryPool pool("cpu", int64_t{8} << 30);
  CpuBackend be(pool, threads);
  std::mt19937 gen(1);
  Tensor x = Tensor::empty(pool, DType::f32, {1, in}, "x");
  Tensor y = Tensor::empty(pool, DType::f32, {1, out}, "y");
  fill(x, gen);
  std::vector<Weight> ws;
  for (int64_t c = 0; c < copies; ++c) {
    Tensor words = Tensor::empty(pool, DType::u32, {out, in * bits / 32}, "words");
    for (int64_t i = 0; i < words.numel(); ++i) words.ptr<uint32_t>()[i] = static_cast<uint32_t>(gen());
    Tensor scales = Tensor::empty(pool, DType::bf16, {out, in / kGroup}, "scales");
    Tensor biases = Tensor::empty(pool, DType::bf16, {out, in / kGroup}, "biases");
    fill(scales, gen);
    fill(biases, gen);
    ws.push_back(Weight::packed(words, scales, biases, bits, kGroup, "w"));
  }
  stream(state, be, x, ws, y);
  state.SetLabel(be.name() + " " + std::to_string(bits) + "-bit");
}

constexpr int64_t kAvx512 = static_cast<int64_t>(CpuIsa::avx512), kAvx2 = static_cast<int64_t>(CpuIsa::avx2);

}  // namespace

// Prefill at 512×2048×2048.
BENCHMARK(BM_Matmul)
    ->Name("Prefill")
    ->ArgNames({"T", "in", "out", "wt", "threads", "isa"})
    ->Args({512, 2048, 2048, 1, 1, kAvx512})
    ->Args({512, 2048, 2048, 1, 2, kAvx512})
    ->Args({512, 2048, 2048, 0, 1, kAvx512})
    ->Args({512, 2048, 2048, 2, 1, kAvx512})
    ->Args({512, 2048, 2048, 1, 1, kAvx2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Decode GEMV: 2048×2048 (8 MB bf16, cache-resident) and 8192×16384 (256 MB bf16, streamed from memory).
BENCHMARK(BM_Matmul)
    ->Name("Decode")
    ->ArgNames({"T", "in", "out", "wt", "threads", "isa"})
    ->Args({1, 2048, 2048, 1, 1, kAvx512})
    ->Args({1, 2048, 2048, 1, 2, kAvx512})
    ->Args({1, 8192, 16384, 1, 1, kAvx512})
    ->Args({1, 8192, 16384, 1, 2, kAvx512})
    ->Args({1, 8192, 16384, 0, 2, kAvx512})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// The Qwen3-0.6B shape's MLP matrices (gate/up 1024 → 3072 and down 3072 → 1024, 6 MB bf16 each), 64 copies.
BENCHMARK(BM_DecodeStream)
    ->Name("DecodeStream")
    ->ArgNames({"in", "out", "copies", "threads"})
    ->Args({1024, 3072, 64, 1})
    ->Args({1024, 3072, 64, 2})
    ->Args({3072, 1024, 64, 2})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// 2048 × 2048 matrices MLX-packed (4.3 MB at 8 bits, 1.2 MB at 2 bits), 64 copies (streamed, not cached),
// every bit width at 2 threads, 2, 3 and 4 bits at 1 (steadier on a shared machine); and one copy at one
// thread, every width: the matrix stays in the L2/L3, so the time is the kernel's instructions, not the
// memory's (on the Zen 5 of 2026-12-08, 2 and 4 bits took 117 and 125 µs: instruction-bound alike).
BENCHMARK(BM_PackedDecodeStream)
    ->Name("PackedDecodeStream")
    ->ArgNames({"in", "out", "bits", "copies", "threads"})
    ->Args({2048, 2048, 2, 64, 2})
    ->Args({2048, 2048, 3, 64, 2})
    ->Args({2048, 2048, 4, 64, 2})
    ->Args({2048, 2048, 5, 64, 2})
    ->Args({2048, 2048, 6, 64, 2})
    ->Args({2048, 2048, 8, 64, 2})
    ->Args({2048, 2048, 2, 64, 1})
    ->Args({2048, 2048, 3, 64, 1})
    ->Args({2048, 2048, 4, 64, 1})
    ->Args({2048, 2048, 2, 1, 1})
    ->Args({2048, 2048, 3, 1, 1})
    ->Args({2048, 2048, 4, 1, 1})
    ->Args({2048, 2048, 5, 1, 1})
    ->Args({2048, 2048, 6, 1, 1})
    ->Args({2048, 2048, 8, 1, 1})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

BENCHMARK_MAIN();
