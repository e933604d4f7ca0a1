// specs/memory.md promise 3 on the fixtures' real weights: nothing kills the process, and pressure never
// changes an answer. The oracle for every output is the same prompt prefilled in one shot with no limit.
//  - Limits too tight for a long prompt: each request is refused up front with the numbers, or served (with
//    smaller steps) with the one-shot's tokens and logits.
//  - Several sequences under a tight limit (the scheduler picks chunks, defers): each gets its one-shot
//    output.
//  - The N-th allocation refused, for every N over a short request and sampled N over a long one: each run
//    ends with the unfailed run's tokens or a clean out_of_memory error, and the pool is back at its baseline
//    (+ the prompt cache) when the scheduler is idle.
//  - Allocations refused on every step, or by storage that runs out before the pool's limit: the request ends
//    with a retryable error in a bounded number of steps (or is served), and the scheduler goes on.
#include <cstdio>

#include "memory_test_util.h"

namespace keel::testing {
namespace {

constexpr int64_t kUnlimited = int64_t{8} << 30;

// Logits rows compared as log-probabilities (a split changes float summation order, not the distribution).
double max_logprob_diff(const std::vector<float>& a, const std::vector<float>& b) {
  auto lse = [](const std::vector<float>& x) {
    double m = *std::max_element(x.begin(), x.end()), s = 0;
    for (float v : x) s += std::exp(double(v) - m);
    return m + std::log(s);
  };
  if (a.size() != b.size()) return INFINITY;
  const double la = lse(a), lb = lse(b);
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs((a[i] - la) - (b[i] - lb)));
  return worst;
}

void expect_same_output(const RequestResult& got, const RequestResult& want) {
  EXPECT_EQ(got.tokens, want.tokens);
  ASSERT_EQ(got.logits.size(), want.logits.size());
  for (size_t i = 0; i < got.logits.size(); ++i)
    EXPECT_LE(max_logprob_diff(got.logits[i], want.logits[i]), 1e-4) << "token " << i;
}

RequestResult one_shot(PooledModel& m, const std::vector<int32_t>& prompt, int64_t gen) {
  m.pool->set_limit(kUnlimited);
  SchedulerConfig sc;
  sc.ctx_size = static_cast<int64_t>(prompt.size()) + gen;
  sc.prefill_chunk_size = static_cast<int64_t>(prompt.size());
  sc.prompt_cache_entries = 0;
  RequestResult r = run_request(m.model(), *m.pool, prompt, gen, sc);
  EXPECT_EQ(r.reason, FinishReason::length);
  EXPECT_EQ(r.stats.shrunk_steps, 0);
  return r;
}

TEST(MemoryPressure, TightLimitsRefuseWithTheNumbersOrServeTheOneShotOutput) {
  for (const std::string& name : model_fixtures()) {
    SCOPED_TRACE(name);
    std::unique_ptr<PooledModel> m = fixture_model(name);
    Model& model = m->model();
    const int64_t L = 600, gen = 4, baseline = m->pool->in_use();
    const std::vector<int32_t> prompt = test_prompt(L, model.vocab_size(), 21);
    const RequestResult want = one_shot(*m, prompt, gen);
    // The least a 600-token request can run with: its state and a one-token step after the whole prompt.
    StepShapeItem last{1, L, 1};
    const int64_t least = model.state_bytes(L + 1, L + gen) + model.step_transient_bytes({&last, 1});
    int refused = 0, served_shrunk = 0;
    for (double f : {0.5, 0.999, 1.0, 1.02, 1.2, 2.0}) {
      SCOPED_TRACE("limit factor " + std::to_string(f));
      const int64_t limit = baseline + static_cast<int64_t>(f * static_cast<double>(least));
      m->pool->set_limit(limit);
      m->pool->mark_peak();
      SchedulerConfig sc;
      sc.ctx_size = L + gen;
      sc.prefill_chunk_size = 512;
      sc.prompt_cache_entries = 0;
      RequestResult r = run_request(model, *m->pool, prompt, gen, sc);
      if (r.refused) {
        ++refused;
        EXPECT_EQ(r.error_code, ErrorCode::context_length_exceeded);
        EXPECT_NE(r.error_message.find(std::to_string(L)), std::string::npos) << r.error_message;
        EXPECT_NE(r.error_message.find(std::to_string(limit)), std::string::npos) << r.error_message;
        EXPECT_LT(f, 1.0) << "refused a request that fits";
      } else {
        EXPECT_GE(f, 1.0) << "admitted a request that cannot fit";
        EXPECT_EQ(r.reason, FinishReason::length) << r.error_message;
        EXPECT_EQ(r.stats.failed_steps, 0);
        expect_same_output(r, want);
        served_shrunk += r.stats.shrunk_steps > 0 ? 1 : 0;
      }
      EXPECT_EQ(m->pool->in_use(), baseline);
      EXPECT_LE(m->pool->peak(), limit);
    }
    EXPECT_EQ(refused, 2);
    EXPECT_GE(served_shrunk, 3);
  }
}

TEST(MemoryPressure, SequencesUnderATightLimitEachGetTheirOneShotOutput) {
  for (const std::string& name : model_fixtures()) {
    SCOPED_TRACE(name);
    std::unique_ptr<PooledModel> m = fixture_model(name);
    Model& model = m->model();
    const int64_t gen = 5, baseline = m->pool->in_use();
    std::vector<std::vector<int32_t>> prompts;
    std::vector<RequestResult> want;
    for (int64_t len : {700, 650, 600}) {
      prompts.push_back(test_prompt(len, model.vocab_size(), 40 + static_cast<uint64_t>(len)));
      want.push_back(one_shot(*m, prompts.back(), gen));
    }
    // Room for the first two sequences' states and a step of 64 tokens: the third waits, and chunks shrink.
    SchedulerConfig sc;
    sc.n_slots = 3;
    sc.ctx_size = 720;
    sc.prefill_chunk_size = 256;
    StepShapeItem step{64, 0, 1};
    m->pool->set_limit(baseline + model.state_bytes(0, 705) + model.state_bytes(0, 655) +
                       model.step_transient_bytes({&step, 1}));
    m->pool->mark_peak();
    Scheduler sched(model, *m->pool, sc);
    std::vector<std::vector<std::vector<float>>> logits(prompts.size());
    std::vector<std::shared_ptr<RecordingSink>> sinks;
    for (size_t i = 0; i < prompts.size(); ++i) {
      sinks.push_back(std::make_shared<RecordingSink>());
      Request r;
      r.prompt = prompts[i];
      r.max_new_tokens = gen;
      r.chooser = std::make_unique<LogitsChooser>(&logits[i]);
      r.sink = sinks.back();
      sched.submit(std::move(r));
    }
    sched.run_until_idle();
    const SchedulerStats& st = sched.stats();
    std::printf("%s: %lld steps, %lld shrunk, %lld deferred, %lld preempted, %lld failed\n", name.c_str(),
                static_cast<long long>(st.steps), static_cast<long long>(st.shrunk_steps),
                static_cast<long long>(st.deferred), static_cast<long long>(st.preemptions),
                static_cast<long long>(st.failed_steps));
    EXPECT_GT(st.shrunk_steps, 0) << "the limit did not press";
    EXPECT_GT(st.deferred, 0) << "the limit did not press";
    for (size_t i = 0; i < prompts.size(); ++i) {
      SCOPED_TRACE("sequence " + std::to_string(i));
      EXPECT_EQ(sinks[i]->reason, FinishReason::length) << sinks[i]->error_message;
      RequestResult got;
      got.tokens = sinks[i]->tokens;
      got.logits = logits[i];
      expect_same_output(got, want[i]);
    }
    EXPECT_LE(m->pool->peak(), m->pool->limit());
    EXPECT_EQ(m->pool->in_use(), baseline + st.prompt_cache_bytes);
  }
}

// Runs `prompt` once per N in `ns` with the N-th allocation refused. Returns how many runs ended in an error.
int fail_each(PooledModel& m, const std::vector<int32_t>& prompt, int64_t gen, int64_t chunk,
              const std::vector<int64_t>& ns, const RequestResult& want) {
  int errors = 0;
  const int64_t baseline = m.pool->in_use();
  for (int64_t n : ns) {
    SCOPED_TRACE("allocation " + std::to_string(n));
    SchedulerConfig sc;
    sc.ctx_size = static_cast<int64_t>(prompt.size()) + gen;
    sc.prefill_chunk_size = chunk;
    Scheduler sched(m.model(), *m.pool, sc);
    auto sink = submit_greedy(sched, prompt, gen);
    m.pool->fail_nth_allocation(n);
    sched.run_until_idle();
    m.pool->fail_nth_allocation(0);
    EXPECT_EQ(sink->finishes, 1);
    if (sink->reason == FinishReason::error) {
      ++errors;
      EXPECT_EQ(sink->error_code, ErrorCode::out_of_memory) << sink->error_message;
    } else {
      EXPECT_EQ(sink->reason, FinishReason::length);
      EXPECT_EQ(sink->tokens, want.tokens);
    }
    EXPECT_EQ(m.pool->in_use(), baseline + sched.stats().prompt_cache_bytes);
  }
  return errors;
}

TEST(MemoryPressure, EveryAllocationRefusedInTurnShortRequest) {
  for (const std::string& name : model_fixtures()) {
    SCOPED_TRACE(name);
    std::unique_ptr<PooledModel> m = fixture_model(name);
    const std::vector<int32_t> prompt = test_prompt(25, m->model().vocab_size(), 77);
    const int64_t gen = 3, chunk = 10;  // three prefill steps (the last one short) and two decode steps
    const RequestResult want = one_shot(*m, prompt, gen);
    const int64_t before = m->pool->stats().allocations;
    SchedulerConfig sc;
    sc.ctx_size = 28;
    sc.prefill_chunk_size = chunk;
    const RequestResult unfailed = run_request(m->model(), *m->pool, prompt, gen, sc);
    ASSERT_EQ(unfailed.tokens, want.tokens);
    const int64_t total = m->pool->stats().allocations - before;
    std::vector<int64_t> ns;
    for (int64_t n = 1; n <= total + 2; ++n) ns.push_back(n);
    const int errors = fail_each(*m, prompt, gen, chunk, ns, want);
    std::printf("%s: %lld allocations per request; each refused in turn: %d runs ended in a clean error\n",
                name.c_str(), static_cast<long long>(total), errors);
    EXPECT_GT(total, 50);
  }
}

TEST(MemoryPressure, SampledAllocationsRefusedLongRequest) {
  for (const std::string& name : model_fixtures()) {
    SCOPED_TRACE(name);
    std::unique_ptr<PooledModel> m = fixture_model(name);
    const std::vector<int32_t> prompt = test_prompt(600, m->model().vocab_size(), 78);
    const int64_t gen = 3, chunk = 128;
    const RequestResult want = one_shot(*m, prompt, gen);
    const int64_t before = m->pool->stats().allocations;
    SchedulerConfig sc;
    sc.ctx_size = 603;
    sc.prefill_chunk_size = chunk;
    const RequestResult unfailed = run_request(m->model(), *m->pool, prompt, gen, sc);
    ASSERT_EQ(unfailed.tokens, want.tokens);
    const int64_t total = m->pool->stats().allocations - before;
    std::vector<int64_t> ns = {1, 2, total, total - 1};
    uint64_t x = 99;
    for (int i = 0; i < 10; ++i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      ns.push_back(1 + static_cast<int64_t>(x % static_cast<uint64_t>(total)));
    }
    fail_each(*m, prompt, gen, chunk, ns, want);
  }
}

TEST(MemoryPressure, PersistentFailureEndsTheRequestWithARetryableErrorAndTheNextOneIsServed) {
  for (const std::string& name : model_fixtures()) {
    SCOPED_TRACE(name);
    std::unique_ptr<PooledModel> m = fixture_model(name);
    const int64_t baseline = m->pool->in_use();
    const std::vector<int32_t> doomed = test_prompt(300, m->model().vocab_size(), 5),
                               next = test_prompt(200, m->model().vocab_size(), 6);
    const RequestResult want = one_shot(*m, next, 3);
    SchedulerConfig sc;
    sc.ctx_size = 400;
    sc.prefill_chunk_size = 64;
    Scheduler sched(m->model(), *m->pool, sc);
    auto sink = submit_greedy(sched, doomed, 3);
    ASSERT_TRUE(sched.step());  // one chunk in, then every step's first allocation is refused
    for (int i = 0; i < 50 && sink->finishes == 0; ++i) {
      m->pool->fail_nth_allocation(1);
      sched.step();
    }
    m->pool->fail_nth_allocation(0);
    ASSERT_EQ(sink->finishes, 1);
    EXPECT_EQ(sink->reason, FinishReason::error);
    EXPECT_EQ(sink->error_code, ErrorCode::out_of_memory) << sink->error_message;
    EXPECT_EQ(sched.stats().failed_memory, 1);
    EXPECT_EQ(m->pool->in_use(), baseline + sched.stats().prompt_cache_bytes);
    // The scheduler goes on: the next request gets its one-shot output.
    auto sink2 = submit_greedy(sched, next, 3);
    sched.run_until_idle();
    EXPECT_EQ(sink2->reason, FinishReason::length) << sink2->error_message;
    EXPECT_EQ(sink2->tokens, want.tokens);
  }
}

// Storage that runs out before the pool's limit does (a cgroup or ulimit the pool was not told about): the
// pool believes it has room, the allocator refuses, and the allocations truly fail.
class BudgetAllocator final : public DeviceAllocator {
 public:
  explicit BudgetAllocator(int64_t budget) : budget_(budget) {}
  void* allocate(int64_t bytes, int64_t alignment) override {
    if (live_ + bytes > budget_) return nullptr;
    void* p = host_.allocate(bytes, alignment);
    if (p) live_ += bytes;
    return p;
  }
  void release(void* ptr, int64_t bytes) override {
    live_ -= bytes;
    host_.release(ptr, bytes);
  }

 private:
  int64_t budget_;
  HostAllocator host_;
  int64_t live_ = 0;
};

TEST(MemoryPressure, StorageThatRunsOutBeforeThePoolLimitEndsInBoundedSteps) {
  for (const std::string& name : model_fixtures()) {
    SCOPED_TRACE(name);
    std::unique_ptr<PooledModel> ref = fixture_model(name);
    const int64_t L = 1000, gen = 3;
    const std::vector<int32_t> prompt = test_prompt(L, ref->model().vocab_size(), 31);
    const RequestResult want = one_shot(*ref, prompt, gen);
    StepShapeItem quarter{L / 4, 0, 1}, full{L, 0, 1};
    const int64_t state = ref->model().state_bytes(L, L + gen),
                  f32_copies = ref->pool->in_use() - ref->loaded.weights->total_bytes();
    for (int64_t room : {ref->model().step_transient_bytes({&quarter, 1}),
                         ref->model().step_transient_bytes({&full, 1}) / 20}) {
      SCOPED_TRACE("room for a step of " + std::to_string(room) + " bytes");
      auto alloc = std::make_unique<BudgetAllocator>(f32_copies + state + room);
      PooledModel m;
      m.pool = std::make_unique<MemoryPool>("cpu", int64_t{8} << 30, alloc.get());
      m.be = std::make_unique<CpuBackend>(*m.pool, 2);
      m.loaded = models::load_model(fixture_dir(name), *m.be);
      const int64_t baseline = m.pool->in_use();
      SchedulerConfig sc;
      sc.ctx_size = L + gen;
      sc.prefill_chunk_size = L;
      Scheduler sched(m.model(), *m.pool, sc);
      auto sink = submit_greedy(sched, prompt, gen);
      int64_t steps = 0;
      while (steps < 2000 && sched.step()) ++steps;
      ASSERT_LT(steps, 2000) << "no end in sight: " << sched.stats().failed_steps << " failed steps";
      ASSERT_EQ(sink->finishes, 1);
      if (sink->reason == FinishReason::error) {
        EXPECT_EQ(sink->error_code, ErrorCode::out_of_memory) << sink->error_message;
        EXPECT_LT(room, ref->model().step_transient_bytes({&quarter, 1})) << "quarter-size steps fit";
      } else {
        EXPECT_EQ(sink->tokens, want.tokens);
      }
      EXPECT_EQ(m.pool->in_use(), baseline + sched.stats().prompt_cache_bytes);
      std::printf("%s, room %lld: %lld steps, %lld failed, %s\n", name.c_str(), static_cast<long long>(room),
                  static_cast<long long>(steps), static_cast<long long>(sched.stats().failed_steps),
                  sink->reason == FinishReason::error ? sink->error_message.c_str() : "served");
      m.loaded = models::LoadedModel();
      m.be.reset();
      m.pool.reset();
    }
  }
}

// A chooser that allocates from the pool (the sampler does: its candidates are outside the step's plan) and
// is refused: the error ends that request alone; the others get their one-shot outputs.
class RefusedChooser final : public TokenChooser {
 public:
  explicit RefusedChooser(int refuse_at) : refuse_at_(refuse_at) {}
  GeneratedToken choose(std::span<const float> logits, std::span<const int32_t>) override {
    if (++calls_ == refuse_at_)
      throw_error(ErrorCode::out_of_memory, "cpu: cannot allocate sampling candidates");
    GeneratedToken t;
    t.id = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    return t;
  }

 private:
  int refuse_at_, calls_ = 0;
};

TEST(MemoryPressure, ARefusedChooserEndsItsRequestAlone) {
  for (const std::string& name : model_fixtures()) {
    SCOPED_TRACE(name);
    std::unique_ptr<PooledModel> m = fixture_model(name);
    const int64_t baseline = m->pool->in_use(), gen = 4;
    const std::vector<int32_t> a = test_prompt(120, m->model().vocab_size(), 1),
                               b = test_prompt(90, m->model().vocab_size(), 2);
    const RequestResult want = one_shot(*m, b, gen);
    SchedulerConfig sc;
    sc.n_slots = 2;
    sc.ctx_size = 200;
    sc.prefill_chunk_size = 64;
    Scheduler sched(m->model(), *m->pool, sc);
    std::vector<std::shared_ptr<RecordingSink>> sinks;
    for (int i = 0; i < 2; ++i) {
      sinks.push_back(std::make_shared<RecordingSink>());
      Request r;
      r.prompt = i == 0 ? a : b;
      r.max_new_tokens = gen;
      if (i == 0)
        r.chooser = std::make_unique<RefusedChooser>(2);
      else
        r.chooser = std::make_unique<GreedyChooser>();
      r.sink = sinks.back();
      sched.submit(std::move(r));
    }
    sched.run_until_idle();
    EXPECT_EQ(sinks[0]->finishes, 1);
    EXPECT_EQ(sinks[0]->reason, FinishReason::error);
    EXPECT_EQ(sinks[0]->error_code, ErrorCode::out_of_memory);
    EXPECT_EQ(sinks[0]->tokens.size(), 1u);
    EXPECT_EQ(sinks[1]->reason, FinishReason::length) << sinks[1]->error_message;
    EXPECT_EQ(sinks[1]->tokens, want.tokens);
    EXPECT_EQ(m->pool->in_use(), baseline + sched.stats().prompt_cache_bytes);
  }
}

}  // namespace
}  // namespace keel::testing
