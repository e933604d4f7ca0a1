// Shared checks of a model against its transformers reference fixture (tests/fixtures/<name>/: the bf16 model
// folder and reference.safetensors with float64-mode outputs of transformers 5.17, written by
// tools/make_reference.py). Each tests/models/<model_type>_test.cpp names one TEST per check, so a planted
// bug fails a named test.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "../load/test_files.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/reference/reference_backend.h"
#ifdef KEEL_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#endif
#include "core/error.h"
#include "core/pool.h"
#include "load/weight_store.h"
#include "models/decoder.h"
#include "models/loader.h"

namespace keel::testing {

inline std::string fixture_dir(const std::string& name) {
  return std::string(KEEL_SOURCE_DIR) + "/tests/fixtures/" + name;
}

// The reference tensors, widened to double.
struct Reference {
  WeightStore store;
  explicit Reference(const std::string& name)
      : store(WeightStore::open_file(fixture_dir(name) + "/reference.safetensors")) {}
  std::vector<double> f(const std::string& key) const {
    Tensor t = store.get(key);
    std::vector<double> v(static_cast<size_t>(t.numel()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = t.ptr<const float>()[i];
    return v;
  }
  std::vector<int32_t> ids(const std::string& key) const {
    Tensor t = store.get(key);
    std::vector<int32_t> v(static_cast<size_t>(t.numel()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>(t.ptr<const int64_t>()[i]);
    return v;
  }
  int64_t dim(const std::string& key, int d) const { return store.get(key).dim(d); }
};

// Which backend a model test runs on: the CPU (every check), or the float64 reference backend (the fixture
// checks: hidden states and prompt log-probs, which prove the op seam end to end; slow, so only those).
enum class TestBackend { cpu, reference, cuda };

// The CUDA entry (tests/models/cuda_models_test.cpp, built with KEEL_CUDA) runs on keel's own device pool:
// one cudaMalloc cut up by cuda::ArenaAllocator, as `keel --device cuda` uses.
inline std::unique_ptr<DeviceAllocator> make_test_allocator(TestBackend kind, int64_t bytes) {
#ifdef KEEL_HAVE_CUDA
  if (kind == TestBackend::cuda) return std::make_unique<cuda::ArenaAllocator>(0, bytes);
#endif
  (void)kind, (void)bytes;
  return nullptr;
}

inline std::unique_ptr<Backend> make_test_backend(TestBackend kind, MemoryPool& pool, int threads) {
  if (kind == TestBackend::reference) return std::make_unique<ReferenceBackend>(pool);
#ifdef KEEL_HAVE_CUDA
  if (kind == TestBackend::cuda) return std::make_unique<CudaBackend>(pool, 0);
#endif
  if (kind == TestBackend::cuda) throw_error(ErrorCode::unsupported, "this test binary has no CUDA");
  return std::make_unique<CpuBackend>(pool, threads);
}

// A model on a 2-thread CPU backend (or the reference or CUDA backend) with its own pool.
struct ModelUnderTest {
  static constexpr int64_t kPoolBytes = int64_t{8} << 30;
  std::unique_ptr<DeviceAllocator> allocator;
  MemoryPool pool;
  std::unique_ptr<Backend> be;
  models::LoadedModel loaded;
  explicit ModelUnderTest(const std::string& dir, int threads = 2, TestBackend kind = TestBackend::cpu,
                          DType kv_cache = DType::f32)
      : allocator(make_test_allocator(kind, kPoolBytes)),
        pool(kind == TestBackend::cuda ? "cuda:0" : "cpu", kPoolBytes, allocator.get()),
        be(make_test_backend(kind, pool, threads)),
        loaded(models::load_model(dir, *be, kv_cache)) {}
  Model& model() { return *loaded.model; }
  models::DecoderModel& decoder() { return dynamic_cast<models::DecoderModel&>(*loaded.model); }
};

// Runs `ids` through a fresh state in chunks of `chunk` tokens, asking for logits at every position; returns
// log-softmax rows [ids.size(), V] in double.
inline std::vector<double> log_softmax_rows(const float* logits, int64_t rows, int64_t V) {
  std::vector<double> out(static_cast<size_t>(rows * V));
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = logits + r * V;
    double m = *std::max_element(x, x + V), s = 0;
    for (int64_t i = 0; i < V; ++i) s += std::exp(double(x[i]) - m);
    const double lse = m + std::log(s);
    for (int64_t i = 0; i < V; ++i) out[static_cast<size_t>(r * V + i)] = double(x[i]) - lse;
  }
  return out;
}

inline std::vector<double> prefill_logprobs(Model& model, const std::vector<int32_t>& ids, int64_t chunk) {
  const int64_t T = static_cast<int64_t>(ids.size()), V = model.vocab_size();
  auto state = model.new_state(T);
  std::vector<double> out;
  for (int64_t b = 0; b < T; b += chunk) {
    const int64_t n = std::min(chunk, T - b);
    StepItem item{state.get(), std::span<const int32_t>(ids.data() + b, static_cast<size_t>(n)), n, nullptr};
    Tensor logits = model.forward({&item, 1});
    std::vector<float> host;
    std::vector<double> lp = log_softmax_rows(model.host_logits(logits, host).data(), n, V);
    out.insert(out.end(), lp.begin(), lp.end());
  }
  return out;
}

inline int64_t argmax_row(const std::vector<double>& lp, int64_t row, int64_t V) {
  const double* x = lp.data() + row * V;
  return std::max_element(x, x + V) - x;
}

// ---- the checks
// ------------------------------------------------------------------------------------------------

// Every layer's residual stream (index 0: embeddings) within relative L2 `tol` of the reference
// hidden_states.
inline void check_hidden_states(const std::string& name, double tol = 1e-5,
                                TestBackend backend = TestBackend::cpu) {
  Reference ref(name);
  ModelUnderTest m(fixture_dir(name), 2, backend);
  SCOPED_TRACE(m.be->name());
  const std::vector<int32_t> ids = ref.ids("prompt_ids");
  const std::vector<double> hs = ref.f("hidden_states");
  const int64_t n_layers = ref.dim("hidden_states", 0), T = ref.dim("hidden_states", 1),
                d = ref.dim("hidden_states", 2);
  ASSERT_EQ(n_layers, m.decoder().num_layers() + 1);
  std::vector<double> rel(static_cast<size_t>(n_layers), -1);
  m.decoder().set_hidden_observer([&](int64_t layer, const Tensor& h) {
    double num = 0, den = 0;
    std::vector<float> host(static_cast<size_t>(T * d));  // h [T, d] contiguous, on any backend
    m.be->download(h, host.data(), 4 * T * d);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t i = 0; i < d; ++i) {
        const double r = hs[static_cast<size_t>((layer * T + t) * d + i)],
                     x = host[static_cast<size_t>(t * d + i)];
        num += (x - r) * (x - r);
        den += r * r;
      }
    rel[static_cast<size_t>(layer)] = std::sqrt(num / den);
  });
  auto state = m.model().new_state(T);
  StepItem item{state.get(), ids, 1, nullptr};
  m.model().forward({&item, 1});
  std::printf("%s: relative L2 of hidden states per layer:", name.c_str());
  for (double r : rel) std::printf(" %.2e", r);
  std::printf("\n");
  for (int64_t l = 0; l < n_layers; ++l) {
    EXPECT_GE(rel[static_cast<size_t>(l)], 0) << "layer " << l << " not observed";
    EXPECT_LE(rel[static_cast<size_t>(l)], tol) << "hidden state after layer " << l << " (0: embeddings)";
  }
}

// max |Δ log-prob| ≤ tol at every prompt position; argmax identical wherever the reference's top-2 gap >
// 2·tol.
inline void check_prompt_logprobs(const std::string& name, double tol = 1e-3,
                                  TestBackend backend = TestBackend::cpu, DType kv_cache = DType::f32) {
  Reference ref(name);
  ModelUnderTest m(fixture_dir(name), 2, backend, kv_cache);
  SCOPED_TRACE(m.be->name());
  const std::vector<int32_t> ids = ref.ids("prompt_ids");
  const std::vector<double> want = ref.f("logprobs"), gap = ref.f("top2_gap");
  const std::vector<int32_t> want_argmax = ref.ids("argmax");
  const int64_t T = static_cast<int64_t>(ids.size()), V = m.model().vocab_size();
  ASSERT_EQ(static_cast<int64_t>(want.size()), T * V);
  std::vector<double> got = prefill_logprobs(m.model(), ids, T);
  double worst = 0;
  int64_t worst_at = 0, compared = 0;
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t i = 0; i < V; ++i) {
      const double e = std::abs(got[static_cast<size_t>(t * V + i)] - want[static_cast<size_t>(t * V + i)]);
      if (e > worst) worst = e, worst_at = t;
    }
    if (gap[static_cast<size_t>(t)] > 2 * tol) {
      ++compared;
      EXPECT_EQ(argmax_row(got, t, V), want_argmax[static_cast<size_t>(t)]) << "argmax at position " << t;
    }
  }
  std::printf("%s: max |Δ log-prob| %.3e at position %lld; argmax compared at %lld of %lld positions\n",
              name.c_str(), worst, static_cast<long long>(worst_at), static_cast<long long>(compared),
              static_cast<long long>(T));
  EXPECT_LE(worst, tol) << "max |Δ log-prob| at position " << worst_at;
  EXPECT_GT(compared, T / 2);
}

// Prefill (logits for the last token), then decode teacher-forced through the reference's greedy tokens: each
// of the 24 rows within tol of the reference's, whatever the gaps.
inline void check_decode_teacher_forced(const std::string& name, double tol = 1e-3,
                                        TestBackend backend = TestBackend::cpu, DType kv_cache = DType::f32) {
  Reference ref(name);
  ModelUnderTest m(fixture_dir(name), 2, backend, kv_cache);
  std::vector<float> host;
  const std::vector<int32_t> ids = ref.ids("prompt_ids"), greedy = ref.ids("greedy_tokens");
  const std::vector<double> want = ref.f("greedy_logprobs");
  const int64_t V = m.model().vocab_size(), steps = static_cast<int64_t>(greedy.size());
  auto state = m.model().new_state(static_cast<int64_t>(ids.size() + greedy.size()));
  StepItem item{state.get(), ids, 1, nullptr};
  Tensor logits = m.model().forward({&item, 1});
  double worst_all = 0;
  for (int64_t s = 0; s < steps; ++s) {
    std::vector<double> lp = log_softmax_rows(m.model().host_logits(logits, host).data(), 1, V);
    double worst = 0;
    for (int64_t i = 0; i < V; ++i)
      worst = std::max(worst, std::abs(lp[static_cast<size_t>(i)] - want[static_cast<size_t>(s * V + i)]));
    worst_all = std::max(worst_all, worst);
    EXPECT_LE(worst, tol) << "decode step " << s;
    if (s + 1 == steps) break;
    StepItem next{state.get(), std::span<const int32_t>(&greedy[static_cast<size_t>(s)], 1), 1, nullptr};
    logits = m.model().forward({&next, 1});
  }
  EXPECT_EQ(state->tokens(), static_cast<int64_t>(ids.size()) + steps - 1);
  std::printf("%s: decode teacher-forced, max |Δ log-prob| %.3e over %lld steps\n", name.c_str(), worst_all,
              static_cast<long long>(steps));
}

// Free greedy generation (the model's own argmax fed back) equals the reference's tokens up to the first step
// whose reference top-2 gap is below 2·tol (a near-tie either side may take).
inline void check_free_greedy(const std::string& name, double tol = 1e-3,
                              TestBackend backend = TestBackend::cpu) {
  Reference ref(name);
  ModelUnderTest m(fixture_dir(name), 2, backend);
  std::vector<float> host;
  const std::vector<int32_t> ids = ref.ids("prompt_ids"), greedy = ref.ids("greedy_tokens");
  const std::vector<double> gap = ref.f("greedy_top2_gap");
  const int64_t V = m.model().vocab_size();
  auto state = m.model().new_state(static_cast<int64_t>(ids.size() + greedy.size()));
  StepItem item{state.get(), ids, 1, nullptr};
  Tensor logits = m.model().forward({&item, 1});
  int64_t matched = 0;
  for (size_t s = 0; s < greedy.size(); ++s) {
    const float* x = m.model().host_logits(logits, host).data();
    const int32_t tok = static_cast<int32_t>(std::max_element(x, x + V) - x);
    if (gap[s] < 2 * tol) break;
    ASSERT_EQ(tok, greedy[s]) << "greedy step " << s;
    ++matched;
    StepItem next{state.get(), std::span<const int32_t>(&tok, 1), 1, nullptr};
    logits = m.model().forward({&next, 1});
  }
  EXPECT_GE(matched, 8) << "too few greedy steps before a near-tie to mean anything";
}

// Prefill in chunks of 1, 7, Q−1, Q+1, 64 and all at once: log-probs within tol of the one-shot run, same
// argmax wherever the reference's gap allows.
inline void check_chunked_prefill(const std::string& name, int64_t Q, double tol = 1e-4,
                                  TestBackend backend = TestBackend::cpu) {
  Reference ref(name);
  ModelUnderTest m(fixture_dir(name), 2, backend);
  const std::vector<int32_t> ids = ref.ids("prompt_ids");
  const std::vector<double> gap = ref.f("top2_gap");
  const int64_t T = static_cast<int64_t>(ids.size()), V = m.model().vocab_size();
  const std::vector<double> whole = prefill_logprobs(m.model(), ids, T);
  for (int64_t chunk : {int64_t{1}, int64_t{7}, Q - 1, Q + 1, int64_t{64}}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    const std::vector<double> lp = prefill_logprobs(m.model(), ids, chunk);
    double worst = 0;
    for (size_t i = 0; i < lp.size(); ++i) worst = std::max(worst, std::abs(lp[i] - whole[i]));
    EXPECT_LE(worst, tol);
    for (int64_t t = 0; t < T; ++t)
      if (gap[static_cast<size_t>(t)] > 2e-3) {
        EXPECT_EQ(argmax_row(lp, t, V), argmax_row(whole, t, V)) << "position " << t;
      }
  }
}

// A sequence's logits are bit-identical whether it runs alone or inside steps shared with other sequences (a
// prefill chunk and a decode token beside it), whatever its position in the step.
inline void check_batch_invariance(const std::string& name) {
  Reference ref(name);
  ModelUnderTest m(fixture_dir(name));
  const std::vector<int32_t> p = ref.ids("prompt_ids");
  const int64_t V = m.model().vocab_size();
  std::vector<int32_t> a(p.begin(), p.begin() + 101), b(p.begin() + 150, p.begin() + 200),
      c(p.rbegin(), p.rbegin() + 8);
  auto span = [](const std::vector<int32_t>& v, size_t from, size_t n) {
    return std::span<const int32_t>(v.data() + from, n);
  };
  // Alone: A in chunks of 40, 60, then one decode token.
  std::vector<std::vector<float>> alone;
  {
    auto sa = m.model().new_state(128);
    for (auto [from, n, k] : {std::tuple{0, 40, 3}, std::tuple{40, 60, 2}, std::tuple{100, 1, 1}}) {
      StepItem it{sa.get(), span(a, from, n), k, nullptr};
      Tensor l = m.model().forward({&it, 1});
      alone.emplace_back(l.ptr<float>(), l.ptr<float>() + k * V);
    }
  }
  // Shared: the same A steps, with B and C around it.
  auto sa = m.model().new_state(128), sb = m.model().new_state(128), sc = m.model().new_state(128);
  std::vector<std::vector<StepItem>> steps = {{{sb.get(), span(b, 0, 30), 1, nullptr},
                                               {sa.get(), span(a, 0, 40), 3, nullptr},
                                               {sc.get(), span(c, 0, 5), 1, nullptr}},
                                              {{sc.get(), span(c, 5, 1), 1, nullptr},
                                               {sa.get(), span(a, 40, 60), 2, nullptr},
                                               {sb.get(), span(b, 30, 17), 0, nullptr}},
                                              {{sa.get(), span(a, 100, 1), 1, nullptr},
                                               {sc.get(), span(c, 6, 1), 1, nullptr},
                                               {sb.get(), span(b, 47, 3), 2, nullptr}}};
  for (size_t s = 0; s < steps.size(); ++s) {
    Tensor l = m.model().forward(steps[s]);
    int64_t row = 0;
    for (const StepItem& it : steps[s]) {
      if (it.state == sa.get()) {
        ASSERT_EQ(std::memcmp(l.ptr<float>() + row * V, alone[s].data(), alone[s].size() * 4), 0)
            << "step " << s;
      }
      row += it.n_logits;
    }
    ASSERT_EQ(row, l.dim(0));
  }
}

// The prompt cache's operations: a copied state continues exactly as the original (bitwise); an
// attention-only model's state cut back to t tokens and fed tokens t.. again gives the logits of the uncut
// run; a recurrent one refuses the cut and stays unchanged, unless it kept a checkpoint at t.
inline void check_state_copy_and_truncate(const std::string& name) {
  Reference ref(name);
  ModelUnderTest m(fixture_dir(name));
  const std::vector<int32_t> p = ref.ids("prompt_ids");
  const int64_t V = m.model().vocab_size();
  auto run = [&](SequenceState* st, int64_t from, int64_t n) {
    StepItem it{st, std::span<const int32_t>(p.data() + from, static_cast<size_t>(n)), 1, nullptr};
    Tensor l = m.model().forward({&it, 1});
    return std::vector<float>(l.ptr<float>(), l.ptr<float>() + V);
  };
  auto a = m.model().new_state(200);
  run(a.get(), 0, 90);
  std::unique_ptr<SequenceState> b = m.model().copy_state(*a);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->tokens(), 90);
  EXPECT_EQ(b->bytes(), a->bytes());
  // A copy with room for more tokens (a cached state reused by a longer request) continues the same way.
  std::unique_ptr<SequenceState> big = m.model().copy_state(*a, 400);
  ASSERT_TRUE(big);
  EXPECT_EQ(big->capacity(), 400);
  EXPECT_EQ(big->tokens(), 90);
  const std::vector<float> la = run(a.get(), 90, 20), lb = run(b.get(), 90, 20);
  EXPECT_EQ(std::memcmp(la.data(), lb.data(), la.size() * 4), 0);
  const std::vector<float> lbig = run(big.get(), 90, 20);
  EXPECT_EQ(std::memcmp(la.data(), lbig.data(), la.size() * 4), 0);
  if (m.model().can_truncate_states()) {
    ASSERT_TRUE(m.model().truncate_state(*b, 60));
    EXPECT_EQ(b->tokens(), 60);
    const std::vector<float> lc = run(b.get(), 60, 50);
    EXPECT_EQ(std::memcmp(la.data(), lc.data(), la.size() * 4), 0);
  } else {
    EXPECT_FALSE(m.model().truncate_state(*b, 60));
    EXPECT_EQ(b->tokens(), 110);
    EXPECT_EQ(m.model().truncation_point(*b, 60), 0);
    // A checkpoint at 60 lets the state return there: fed tokens 60.. again after a detour to 90, it gives
    // the bits of a state that took the same pieces without the detour.
    auto c = m.model().new_state(200);
    run(c.get(), 0, 60);
    const int64_t plain = c->bytes();
    ASSERT_TRUE(m.model().checkpoint_state(*c));
    EXPECT_GT(c->checkpoint_bytes(), 0);
    EXPECT_EQ(c->bytes(), plain + c->checkpoint_bytes());
    run(c.get(), 60, 30);
    EXPECT_EQ(m.model().truncation_point(*c, 75), 60);
    EXPECT_EQ(m.model().truncation_point(*c, 59), 0);
    EXPECT_EQ(m.model().truncation_point(*c, 95), 90);
    ASSERT_TRUE(m.model().truncate_state(*c, 60));
    EXPECT_EQ(c->tokens(), 60);
    const std::vector<float> lc = run(c.get(), 60, 50);
    auto d = m.model().new_state(200);
    run(d.get(), 0, 60);
    const std::vector<float> ld = run(d.get(), 60, 50);
    EXPECT_EQ(std::memcmp(lc.data(), ld.data(), lc.size() * 4), 0);
    EXPECT_GT(m.model().drop_checkpoints(*c), 0);
    EXPECT_EQ(c->bytes(), d->bytes());
    // After a failed step (states half-updated), restore_checkpoint puts states and tokens back.
    auto e = m.model().new_state(200);
    EXPECT_FALSE(m.model().restore_checkpoint(*e));
    run(e.get(), 0, 60);
    ASSERT_TRUE(m.model().checkpoint_state(*e));
    run(e.get(), 60, 20);
    ASSERT_TRUE(m.model().restore_checkpoint(*e));
    EXPECT_EQ(e->tokens(), 60);
    const std::vector<float> le = run(e.get(), 60, 50);
    EXPECT_EQ(std::memcmp(le.data(), ld.data(), le.size() * 4), 0);
  }
}

// A step whose every item is cancelled throws Error(cancelled) between layers and leaves tokens() unchanged;
// one live item among cancelled ones keeps the step running.
inline void check_cancellation(const std::string& name) {
  Reference ref(name);
  ModelUnderTest m(fixture_dir(name));
  const std::vector<int32_t> p = ref.ids("prompt_ids");
  std::atomic<bool> yes{true}, no{false};
  auto a = m.model().new_state(64), b = m.model().new_state(64);
  std::vector<StepItem> both = {{a.get(), std::span<const int32_t>(p.data(), 10), 1, &yes},
                                {b.get(), std::span<const int32_t>(p.data(), 12), 1, &yes}};
  try {
    m.model().forward(both);
    ADD_FAILURE() << "a wholly cancelled step ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::cancelled) << e.what();
  }
  EXPECT_EQ(a->tokens(), 0);
  EXPECT_EQ(b->tokens(), 0);
  auto c = m.model().new_state(64), d = m.model().new_state(64);
  std::vector<StepItem> mixed = {{c.get(), std::span<const int32_t>(p.data(), 10), 1, &yes},
                                 {d.get(), std::span<const int32_t>(p.data(), 12), 1, &no}};
  Tensor l = m.model().forward(mixed);
  EXPECT_EQ(l.dim(0), 2);
  EXPECT_EQ(d->tokens(), 12);
}

// For many step shapes: measured transient (pool peak over forward, states allocated before) ≤ planned ≤ 1.25
// × measured; and the plan does not grow with the tokens already in state.
inline void check_transient_plan(const std::string& name) {
  for (int threads : {2, 3}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    Reference ref(name);
    ModelUnderTest m(fixture_dir(name), threads);
    const std::vector<int32_t> p = ref.ids("prompt_ids");
    struct Piece {
      int64_t past, n, k;
    };
    const std::vector<std::vector<Piece>> shapes = {{{0, 299, 1}},
                                                    {{0, 7, 0}},
                                                    {{0, 1, 1}},
                                                    {{100, 64, 0}},
                                                    {{250, 1, 1}},
                                                    {{0, 128, 128}},
                                                    {{50, 1, 1}, {0, 33, 0}, {64, 100, 100}},
                                                    {{10, 1, 1}, {20, 1, 1}, {30, 1, 1}, {200, 1, 1}},
                                                    {{0, 31, 1}, {0, 9, 9}}};
    for (size_t si = 0; si < shapes.size(); ++si) {
      SCOPED_TRACE("shape " + std::to_string(si));
      std::vector<std::unique_ptr<SequenceState>> states;
      std::vector<StepItem> items;
      std::vector<StepShapeItem> shape;
      for (const Piece& pc : shapes[si]) {
        states.push_back(m.model().new_state(300));
        if (pc.past > 0) {  // bring the state to `past` tokens
          StepItem pre{states.back().get(), std::span<const int32_t>(p.data(), static_cast<size_t>(pc.past)),
                       0, nullptr};
          m.model().forward({&pre, 1});
        }
        items.push_back({states.back().get(),
                         std::span<const int32_t>(p.data() + pc.past, static_cast<size_t>(pc.n)), pc.k,
                         nullptr});
        shape.push_back({pc.n, pc.past, pc.k});
      }
      const int64_t planned = m.model().step_transient_bytes(shape);
      const int64_t before = m.pool.in_use();
      m.pool.mark_peak();
      { Tensor logits = m.model().forward(items); }
      const int64_t measured = m.pool.peak() - before;
      EXPECT_LE(measured, planned);
      EXPECT_LE(planned, measured + measured / 4) << "planned " << planned << " measured " << measured;
      EXPECT_EQ(m.pool.in_use(), before);
    }
    StepShapeItem early{1, 10, 1}, late{1, 290, 1};
    EXPECT_EQ(m.model().step_transient_bytes({&early, 1}), m.model().step_transient_bytes({&late, 1}));
  }
}

// A copy of the fixture folder whose model.safetensors is rewritten by `edit(name, dtype, shape, bytes)`,
// which may drop a tensor (return false) or change it; config.json transformed by `config_edit`.
template <typename Edit>
void write_edited_fixture(const std::string& name, const std::string& out_dir, Edit edit,
                          const std::function<std::string(std::string)>& config_edit = nullptr) {
  const std::string src = fixture_dir(name);
  WeightStore store = WeightStore::open(src);
  SafetensorsBuilder b;
  for (const std::string& n : store.names()) {
    Tensor t = store.get(n);
    std::string dtype = t.dtype() == DType::bf16 ? "BF16" : t.dtype() == DType::f16 ? "F16" : "F32";
    std::vector<int64_t> shape(t.shape().begin(), t.shape().begin() + t.ndim());
    std::string bytes(static_cast<const char*>(t.data()), static_cast<size_t>(t.nbytes()));
    if (edit(n, shape, bytes)) b.add(n, dtype, shape, bytes);
  }
  write_file(out_dir + "/model.safetensors", b.build());
  std::ifstream in(src + "/config.json");
  std::stringstream ss;
  ss << in.rdbuf();
  write_file(out_dir + "/config.json", config_edit ? config_edit(ss.str()) : ss.str());
}

inline void expect_load_error(const std::string& dir, ErrorCode code,
                              const std::vector<std::string>& mentions) {
  MemoryPool pool("cpu", int64_t{1} << 30);
  CpuBackend be(pool, 1);
  try {
    models::load_model(dir, be);
    ADD_FAILURE() << "loading " << dir << " did not fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const std::string& s : mentions)
      EXPECT_NE(std::string(e.what()).find(s), std::string::npos) << e.what();
  }
}

// Clear errors for a missing tensor, a wrong shape, an unsupported model_type.
inline void check_load_errors(const std::string& name, const std::string& victim) {
  {
    TempDir dir;
    write_edited_fixture(name, dir.path(), [&](const std::string& n, auto&, auto&) { return n != victim; });
    expect_load_error(dir.path(), ErrorCode::invalid_file, {victim});
  }
  {
    TempDir dir;
    write_edited_fixture(
        name, dir.path(), [&](const std::string& n, std::vector<int64_t>& shape, std::string& bytes) {
          if (n == victim) {  // one row fewer
            bytes.resize(bytes.size() / static_cast<size_t>(shape[0]) * static_cast<size_t>(shape[0] - 1));
            --shape[0];
          }
          return true;
        });
    expect_load_error(dir.path(), ErrorCode::invalid_file, {victim, "shape"});
  }
  {
    TempDir dir;
    write_edited_fixture(
        name, dir.path(), [](const std::string&, auto&, auto&) { return true; },
        [&](std::string cfg) {
          const std::string key = "\"model_type\": \"" + name + "\"";
          size_t at = cfg.find(key);
          if (at != std::string::npos) cfg.replace(at, key.size(), "\"model_type\": \"falcon_mamba\"");
          return cfg;
        });
    expect_load_error(dir.path(), ErrorCode::unsupported, {"falcon_mamba"});
  }
}

}  // namespace keel::testing
