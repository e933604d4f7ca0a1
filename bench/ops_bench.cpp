// Throughput of the light ops (per call at prefill-like sizes), for comparison with the matmuls around them.
//   build-X/bench/ops_bench
#include <benchmark/benchmark.h>

#include <random>

#include "backend/cpu/cpu_backend.h"
#include "core/tensor.h"
#include "ops/activation.h"
#include "ops/conv1d.h"
#include "ops/norm.h"
#include "ops/rope.h"
#include "ops/sampling.h"

using namespace keel;

namespace {

struct Env {
  MemoryPool pool{"cpu", int64_t{4} << 30};
  CpuBackend be;
  std::mt19937 gen{1};
  explicit Env(int threads) : be(pool, threads) {}
  Tensor random(DType dt, std::initializer_list<int64_t> shape) {
    Tensor t = Tensor::empty(pool, dt, shape, "bench");
    std::normal_distribution<float> n(0, 1);
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (dt == DType::f32) t.ptr<float>()[i] = n(gen);
      if (dt == DType::bf16) t.ptr<uint16_t>()[i] = f32_to_bf16(n(gen));
    }
    return t;
  }
};

void elements(benchmark::State& state, int64_t n) {
  state.counters["Melem/s"] =
      benchmark::Counter(static_cast<double>(n) * 1e-6, benchmark::Counter::kIsIterationInvariantRate);
}

// SwiGLU product silu(g)·u at [512, 8192].
void BM_SiluMul(benchmark::State& state) {
  Env e(static_cast<int>(state.range(0)));
  Tensor g = e.random(DType::f32, {512, 8192}), u = e.random(DType::f32, {512, 8192});
  for (auto _ : state) ops::activation_mul(e.be, g, u, g, ops::Activation::silu);
  elements(state, 512 * 8192);
}

void BM_RmsNorm(benchmark::State& state) {
  Env e(static_cast<int>(state.range(0)));
  Tensor x = e.random(DType::f32, {512, 4096}), w = e.random(DType::bf16, {4096});
  for (auto _ : state) ops::rms_norm(e.be, x, w, x, {1e-6f, ops::NormScale::one_plus_weight});
  elements(state, 512 * 4096);
}

// q of 512 tokens × 32 heads × 128, full rotary, table built per call.
void BM_Rope(benchmark::State& state) {
  Env e(static_cast<int>(state.range(0)));
  Tensor x = e.random(DType::f32, {512, 32, 128});
  Tensor pos = Tensor::empty(e.pool, DType::i32, {512}, "positions");
  for (int i = 0; i < 512; ++i) pos.ptr<int32_t>()[i] = 4096 + i;
  for (auto _ : state) ops::rope(e.be, x, pos, x, {1e6, 128});
  elements(state, 512 * 32 * 128);
}

// Mamba2 xBC conv: 512 tokens × 10240 channels, K = 4, fused silu.
void BM_Conv1d(benchmark::State& state) {
  Env e(static_cast<int>(state.range(0)));
  Tensor x = e.random(DType::f32, {512, 10240}), w = e.random(DType::bf16, {10240, 1, 4});
  Tensor b = e.random(DType::bf16, {10240}), s = e.random(DType::f32, {3, 10240});
  Tensor out = Tensor::empty(e.pool, DType::f32, {512, 10240}, "out");
  for (auto _ : state) ops::causal_conv1d(e.be, x, w, b, s, out, {true});
  elements(state, 512 * 10240);
}

// One token from a 151936-entry vocabulary with top_k 40 / top_p 0.95 / penalties over 256 tokens of history.
void BM_Sample(benchmark::State& state) {
  Env e(1);
  Tensor logits = e.random(DType::f32, {151936});
  std::vector<int32_t> history(256);
  for (int i = 0; i < 256; ++i) history[i] = i * 37;
  ops::SamplerRng rng(1);
  ops::SamplingParams p{0.7f, static_cast<int32_t>(state.range(0)), 0.95f, 0.0f, 1.1f, 0.0f, 0.0f};
  for (auto _ : state) benchmark::DoNotOptimize(ops::sample(e.be, logits, p, history, rng));
}

}  // namespace

BENCHMARK(BM_SiluMul)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_RmsNorm)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Rope)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Conv1d)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Sample)->ArgName("top_k")->Arg(40)->Arg(0)->Unit(benchmark::kMicrosecond)->UseRealTime();

BENCHMARK_MAIN();
