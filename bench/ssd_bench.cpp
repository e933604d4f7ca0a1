// ops::ssd_scan over L tokens in one call at nemotron_h widths (NVIDIA-Nemotron-3-Nano-30B-A3B: 64 heads ×
// 64, 8 groups, state 128, chunk 128), and the T = 1 decode step. Counters: tok/s, ws_bytes (pool peak −
// before on the last iteration), ws_planned (ssd_scan_workspace_bytes): flat in L.
//   build-X/bench/ssd_bench
#include <benchmark/benchmark.h>

#include <random>

#include "backend/cpu/cpu_backend.h"
#include "core/tensor.h"
#include "ops/ssd_scan.h"

using namespace keel;

namespace {

Tensor random(MemoryPool& pool, std::initializer_list<int64_t> shape, std::mt19937& gen, float lo, float hi) {
  Tensor t = Tensor::empty(pool, DType::f32, shape, "bench");
  std::uniform_real_distribution<float> u(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.ptr<float>()[i] = u(gen);
  return t;
}

// Args: L (tokens per call), threads.
void BM_Ssd(benchmark::State& state) {
  const int64_t L = state.range(0), H = 64, P = 64, G = 8, N = 128, Q = 128;
  const int threads = static_cast<int>(state.range(1));
  MemoryPool pool("cpu", int64_t{8} << 30);
  CpuBackend be(pool, threads);
  std::mt19937 gen(1);
  Tensor x = random(pool, {L, H, P}, gen, -1, 1), dt = random(pool, {L, H}, gen, -3, 1);
  Tensor B = random(pool, {L, G, N}, gen, -1, 1), C = random(pool, {L, G, N}, gen, -1, 1);
  Tensor A_log = random(pool, {H}, gen, 0, 2.7f), dt_bias = random(pool, {H}, gen, -3, 0),
         D = random(pool, {H}, gen, 0, 1);
  Tensor S = random(pool, {H, P, N}, gen, -0.1f, 0.1f), y = Tensor::empty(pool, DType::f32, {L, H, P}, "y");
  int64_t ws = 0;
  for (auto _ : state) {
    const int64_t before = pool.in_use();
    pool.mark_peak();
    ops::ssd_scan(be, x, dt, B, C, A_log, dt_bias, D, S, y, {Q});
    ws = pool.peak() - before;
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["tok/s"] =
      benchmark::Counter(static_cast<double>(L), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["ws_bytes"] = static_cast<double>(ws);
  state.counters["ws_planned"] = static_cast<double>(ops::ssd_scan_workspace_bytes(be, L, H, P, G, N, Q));
  state.SetLabel(be.name());
}

}  // namespace

BENCHMARK(BM_Ssd)
    ->ArgNames({"L", "threads"})
    ->ArgsProduct({{1, 1024, 4096, 16384}, {1}})
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
