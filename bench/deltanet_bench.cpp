// ops::gated_deltanet over L tokens in one call at qwen3_5 widths (Qwen3.5-35B-A3B linear attention: 16 key
// heads, 32 value heads, 128 × 128, chunk 64), and the T = 1 decode step, in both forms (recurrent, chunked
// WY). Counters: tok/s, ws_bytes (pool peak − before on the last iteration), ws_planned
// (gated_deltanet_workspace_bytes): flat in L.
//   build-X/bench/deltanet_bench
#include <benchmark/benchmark.h>

#include <random>

#include "backend/cpu/cpu_backend.h"
#include "core/tensor.h"
#include "ops/gated_deltanet.h"

using namespace keel;

namespace {

Tensor random(MemoryPool& pool, std::initializer_list<int64_t> shape, std::mt19937& gen, float lo, float hi) {
  Tensor t = Tensor::empty(pool, DType::f32, shape, "bench");
  std::uniform_real_distribution<float> u(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.ptr<float>()[i] = u(gen);
  return t;
}

// Args: L (tokens per call), threads, form (0 recurrent, 1 chunked WY).
void BM_DeltaNet(benchmark::State& state) {
  const int64_t L = state.range(0), Hk = 16, Hv = 32, Dk = 128, Dv = 128;
  const int threads = static_cast<int>(state.range(1));
  const ops::GatedDeltaNetParams p{
      64, true, 1e-6f, state.range(2) ? ops::GatedDeltaNetForm::chunked : ops::GatedDeltaNetForm::recurrent};
  MemoryPool pool("cpu", int64_t{8} << 30);
  CpuBackend be(pool, threads);
  std::mt19937 gen(1);
  Tensor q = random(pool, {L, Hk, Dk}, gen, -1, 1), k = random(pool, {L, Hk, Dk}, gen, -1, 1);
  Tensor v = random(pool, {L, Hv, Dv}, gen, -1, 1);
  Tensor a = random(pool, {L, Hv}, gen, -3, 1), b = random(pool, {L, Hv}, gen, -2, 2);
  Tensor A_log = random(pool, {Hv}, gen, -4, 2.7f), dt_bias = random(pool, {Hv}, gen, -1, 1);
  Tensor S = random(pool, {Hv, Dk, Dv}, gen, -0.1f, 0.1f),
         out = Tensor::empty(pool, DType::f32, {L, Hv, Dv}, "o");
  int64_t ws = 0;
  for (auto _ : state) {
    const int64_t before = pool.in_use();
    pool.mark_peak();
    ops::gated_deltanet(be, q, k, v, a, b, A_log, dt_bias, S, out, p);
    ws = pool.peak() - before;
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["tok/s"] =
      benchmark::Counter(static_cast<double>(L), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["ws_bytes"] = static_cast<double>(ws);
  state.counters["ws_planned"] =
      static_cast<double>(ops::gated_deltanet_workspace_bytes(be, L, Hv, Dk, Dv, p));
  state.SetLabel(be.name());
}

}  // namespace

BENCHMARK(BM_DeltaNet)
    ->ArgNames({"L", "threads", "chunked"})
    ->ArgsProduct({{1, 1024, 4096, 16384}, {1}, {0, 1}})
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
