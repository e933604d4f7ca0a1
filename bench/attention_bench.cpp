// ops::attention: prefill chunks and decode over a growing KV cache, with the workspace the pool measured.
// Prefill: a chunk of T = 128 queries at the end of a kv_len-token prompt (offset kv_len − 128), 16 query
// heads over 2 KV heads (qwen3_5 full attention: head_dim 256; nemotron_h-like: 128). Counters: tok/s
// (queries), GFLOP/s (4·D·n_q per query-key pair, causal pairs only), ws_bytes (pool peak − before, measured
// on the last iteration) and ws_planned (attention_workspace_bytes) — both must stay flat as kv_len grows 1K
// → 16K.
// DecodeF16Layers: one decode step's attention over 28 layers' f16 caches (below).
//   build-X/bench/attention_bench [--benchmark_filter=Prefill]
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/tensor.h"
#include "ops/attention.h"

using namespace keel;

namespace {

Tensor random(MemoryPool& pool, std::initializer_list<int64_t> shape, std::mt19937& gen) {
  Tensor t = Tensor::empty(pool, DType::f32, shape, "bench");
  std::uniform_real_distribution<float> u(-1, 1);
  for (int64_t i = 0; i < t.numel(); ++i) t.ptr<float>()[i] = u(gen);
  return t;
}

// Args: head_dim, kv_len, T (queries per call), threads.
void BM_Attention(benchmark::State& state) {
  const int64_t D = state.range(0), kv_len = state.range(1), T = state.range(2), n_q = 16, n_kv = 2;
  const int threads = static_cast<int>(state.range(3));
  MemoryPool pool("cpu", int64_t{8} << 30);
  CpuBackend be(pool, threads);
  std::mt19937 gen(1);
  Tensor k = random(pool, {kv_len, n_kv, D}, gen), v = random(pool, {kv_len, n_kv, D}, gen);
  Tensor q = random(pool, {T, n_q, D}, gen), out = Tensor::empty(pool, DType::f32, {T, n_q, D}, "out");
  const ops::AttentionParams p{kv_len - T, std::nullopt};
  int64_t ws = 0;
  for (auto _ : state) {
    const int64_t before = pool.in_use();
    pool.mark_peak();
    ops::attention(be, q, k, v, out, p);
    ws = pool.peak() - before;
    benchmark::DoNotOptimize(out.data());
  }
  const double pairs = static_cast<double>(T) * (kv_len - T) + T * (T + 1) / 2.0;
  state.counters["tok/s"] =
      benchmark::Counter(static_cast<double>(T), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GFLOP/s"] =
      benchmark::Counter(4.0 * D * n_q * pairs * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["ws_bytes"] = static_cast<double>(ws);
  state.counters["ws_planned"] = static_cast<double>(ops::attention_workspace_bytes(be, T, n_q, n_kv, D, D));
  state.SetLabel(be.name());
}

// Decode over f16 caches as a model's step reads them: `layers` distinct caches (one per attention layer, so
// together they are far past the last-level cache and each is read from memory), one query row each, the
// Qwen3-0.6B shape by default (16 query / 8 KV heads × 128). Args: kv_len, n_q, n_kv, threads; 28 layers.
// Counter: GB/s of cache read (K and V of every layer).
void BM_DecodeF16Layers(benchmark::State& state) {
  const int64_t kv_len = state.range(0), n_q = state.range(1), n_kv = state.range(2), D = 128, layers = 28;
  const int threads = static_cast<int>(state.range(3));
  MemoryPool pool("cpu", int64_t{8} << 30);
  CpuBackend be(pool, threads);
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<Tensor> k, v;
  for (int64_t l = 0; l < layers; ++l)
    for (std::vector<Tensor>* c : {&k, &v}) {
      Tensor t = Tensor::empty(pool, DType::f16, {kv_len, n_kv, D}, "bench cache");
      for (int64_t i = 0; i < t.numel(); ++i) t.ptr<uint16_t>()[i] = f32_to_f16(u(gen));
      c->push_back(std::move(t));
    }
  Tensor q = random(pool, {1, n_q, D}, gen), out = Tensor::empty(pool, DType::f32, {1, n_q, D}, "out");
  const ops::AttentionParams p{kv_len - 1, std::nullopt};
  for (auto _ : state) {
    for (int64_t l = 0; l < layers; ++l) ops::attention(be, q, k[l], v[l], out, p);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(layers * 2 * kv_len * n_kv * D * 2) * 1e-9,
                                              benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(be.name());
}

}  // namespace

BENCHMARK(BM_DecodeF16Layers)
    ->Name("DecodeF16Layers")
    ->ArgNames({"kv_len", "n_q", "n_kv", "threads"})
    ->ArgsProduct({{512, 2048, 8192}, {16}, {8}, {2}})
    ->Args({2048, 32, 2, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK(BM_Attention)
    ->Name("Prefill")
    ->ArgNames({"D", "kv_len", "T", "threads"})
    ->ArgsProduct({{128, 256}, {1024, 2048, 4096, 8192, 16384}, {128}, {1}})
    ->Unit(benchmark::kMillisecond);

BENCHMARK(BM_Attention)
    ->Name("Decode")
    ->ArgNames({"D", "kv_len", "T", "threads"})
    ->ArgsProduct({{128, 256}, {1024, 16384}, {1}, {1}})
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
