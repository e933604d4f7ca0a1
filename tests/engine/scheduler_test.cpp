// The scheduler against a fake model whose outputs are known without the scheduler (fake_model.h): admission,
// planning, shrinking, reclaim, failure injection, and property tests over random workloads.
#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <random>

#include "backend/cpu/cpu_backend.h"
#include "engine/sampler.h"
#include "fake_model.h"

using namespace keel;
using namespace keel::testing;

namespace {

struct Submitted {
  std::shared_ptr<RecordingSink> sink;
  std::vector<int32_t> prompt;
  int64_t max_new = 0;
  std::vector<int32_t> stops;
  std::shared_ptr<std::atomic<bool>> cancelled;
  bool refused = false;
  std::optional<ErrorCode> refusal;
};

Submitted submit(Scheduler& s, std::vector<int32_t> prompt, int64_t max_new, std::vector<int32_t> stops = {},
                 std::vector<int64_t> checkpoints = {}) {
  Submitted out;
  out.sink = std::make_shared<RecordingSink>();
  out.prompt = prompt;
  out.max_new = max_new;
  out.stops = stops;
  Request r;
  r.prompt = std::move(prompt);
  r.max_new_tokens = max_new;
  r.stop_tokens = std::move(stops);
  r.checkpoints = std::move(checkpoints);
  r.chooser = std::make_unique<GreedyChooser>();
  r.sink = out.sink;
  out.cancelled = r.cancelled;
  try {
    s.submit(std::move(r));
  } catch (const Error& e) {
    out.refused = true;
    out.refusal = e.code();
  }
  return out;
}

std::vector<int32_t> random_prompt(std::mt19937_64& rng, int64_t len, int64_t vocab) {
  std::vector<int32_t> p(static_cast<size_t>(len));
  for (auto& t : p) t = static_cast<int32_t>(rng() % static_cast<uint64_t>(vocab));
  return p;
}

}  // namespace

TEST(Scheduler, RunsOneRequestToTheExpectedOutput) {
  MemoryPool pool("cpu", 1 << 20);
  FakeModel model(pool, FakeSizes{});
  Scheduler s(model, pool, {.n_slots = 1, .ctx_size = 512, .prefill_chunk_size = 7});
  std::vector<int32_t> prompt = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4};
  Submitted r = submit(s, prompt, 10);
  s.run_until_idle();
  EXPECT_EQ(r.sink->finishes, 1);
  EXPECT_EQ(r.sink->reason, FinishReason::length);
  EXPECT_EQ(r.sink->tokens, FakeModel::expected_output(prompt, 10, {}, 512, 37));
  EXPECT_EQ(pool.in_use(), s.stats().prompt_cache_bytes);
  EXPECT_EQ(s.stats().plan_exceeded, 0);
}

TEST(Scheduler, RefusesWhatCanNeverFitBeforeAnyWork) {
  MemoryPool pool("cpu", 64 << 10);
  FakeModel model(pool, FakeSizes{});
  Scheduler s(model, pool, {.n_slots = 2, .ctx_size = 100, .prefill_chunk_size = 16});
  Submitted too_long = submit(s, std::vector<int32_t>(100, 1), 5);
  EXPECT_TRUE(too_long.refused);
  EXPECT_EQ(too_long.refusal, ErrorCode::context_length_exceeded);
  Submitted fits_exactly = submit(s, std::vector<int32_t>(99, 1), 5000);  // room for one token: not an error
  EXPECT_FALSE(fits_exactly.refused);
  // Memory: 64 KiB cannot hold 2000 tokens × 64 bytes of KV.
  Scheduler big(model, pool, {.n_slots = 1, .ctx_size = 100000, .prefill_chunk_size = 16});
  Submitted no_memory = submit(big, std::vector<int32_t>(2000, 1), 5);
  EXPECT_TRUE(no_memory.refused);
  EXPECT_EQ(no_memory.refusal, ErrorCode::context_length_exceeded);
  EXPECT_EQ(pool.stats().allocations, 0);  // no prefill work happened
  s.run_until_idle();
  EXPECT_EQ(fits_exactly.sink->reason, FinishReason::length);
  EXPECT_EQ(fits_exactly.sink->tokens.size(), 1u);  // stopped at the context's end
}

TEST(Scheduler, ShrinksTheStepAtPointEightOfThePlanAndRunsItAtOne) {
  FakeSizes sz;
  MemoryPool probe("cpu", 1 << 30);
  FakeModel m0(probe, sz);
  const int64_t chunk = 64;
  StepShapeItem first{chunk, 0, 0};
  int64_t planned = m0.step_transient_bytes({&first, 1}) + m0.state_bytes(chunk, 4096);
  for (double frac : {0.8, 1.0}) {
    MemoryPool pool("cpu", static_cast<int64_t>(planned * frac));
    FakeModel model(pool, sz);
    Scheduler s(model, pool, {.n_slots = 1, .ctx_size = 4096, .prefill_chunk_size = chunk});
    submit(s, std::vector<int32_t>(200, 2), 1);
    auto plan = s.plan_next();
    ASSERT_TRUE(plan);
    ASSERT_EQ(plan->items.size(), 1u);
    if (frac < 1.0) {
      EXPECT_LT(plan->items[0].n_tokens, chunk);
      EXPECT_GT(plan->items[0].n_tokens, 0);
    } else {
      EXPECT_EQ(plan->items[0].n_tokens, chunk);
    }
  }
}

TEST(Scheduler, PlanIsNeitherUnderNorWasteful) {
  FakeSizes sz;
  sz.use_fraction = 0.85;  // the fake really uses 85 % of its planned activations
  MemoryPool pool("cpu", 1 << 24);
  FakeModel model(pool, sz);
  Scheduler s(model, pool, {.n_slots = 3, .ctx_size = 2048, .prefill_chunk_size = 128});
  std::mt19937_64 rng(7);
  for (int i = 0; i < 5; ++i) submit(s, random_prompt(rng, 50 + 97 * i, 37), 8);
  while (s.step()) {
    const auto& st = s.stats();
    ASSERT_LE(st.last_measured_transient, st.last_planned_transient);
    ASSERT_LE(st.last_planned_transient, st.last_measured_transient * 5 / 4);
  }
  EXPECT_EQ(s.stats().plan_exceeded, 0);
}

TEST(Scheduler, DecodeTokensShareStepsWithALongPrefill) {
  MemoryPool pool("cpu", 1 << 24);
  FakeModel model(pool, FakeSizes{});
  Scheduler s(model, pool, {.n_slots = 2, .ctx_size = 8192, .prefill_chunk_size = 32});
  Submitted short_one = submit(s, {1, 2, 3}, 50);
  s.step();  // the short prompt is prefilled and starts decoding
  Submitted long_one = submit(s, std::vector<int32_t>(3000, 4), 2);
  int64_t tokens_during_prefill = 0;
  while (long_one.sink->tokens.empty() && s.step()) tokens_during_prefill = short_one.sink->tokens.size();
  // The long prompt needs ~94 steps of 32; the short stream kept going through them (finishing its 50
  // tokens).
  EXPECT_EQ(tokens_during_prefill, 50);
  s.run_until_idle();
  EXPECT_EQ(long_one.sink->tokens, FakeModel::expected_output(long_one.prompt, 2, {}, 8192, 37));
}

TEST(Scheduler, CancelledRequestsEndAndFreeTheirMemory) {
  MemoryPool pool("cpu", 1 << 24);
  FakeModel model(pool, FakeSizes{});
  Scheduler s(model, pool, {.n_slots = 2, .ctx_size = 8192, .prefill_chunk_size = 16});
  Submitted gone = submit(s, std::vector<int32_t>(500, 3), 5);
  Submitted stays = submit(s, std::vector<int32_t>(40, 2), 5);
  for (int i = 0; i < 5; ++i) s.step();  // both mid-prefill
  EXPECT_GT(pool.in_use(), 0);
  gone.cancelled->store(true);
  s.run_until_idle();
  EXPECT_EQ(gone.sink->reason, FinishReason::cancelled);
  EXPECT_EQ(gone.sink->finishes, 1);
  EXPECT_TRUE(gone.sink->tokens.empty());
  EXPECT_EQ(stays.sink->tokens, FakeModel::expected_output(stays.prompt, 5, {}, 8192, 37));
  EXPECT_EQ(pool.in_use(), s.stats().prompt_cache_bytes);
}

TEST(Scheduler, FailureAtEveryAllocationOfAShortRequest) {
  FakeSizes sz;
  std::vector<int32_t> prompt = {5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
                                 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28};
  std::vector<int32_t> want = FakeModel::expected_output(prompt, 12, {}, 1024, sz.vocab);
  int64_t clean_allocations;
  {
    MemoryPool pool("cpu", 1 << 22);
    FakeModel model(pool, sz);
    Scheduler s(model, pool, {.n_slots = 1, .ctx_size = 1024, .prefill_chunk_size = 5});
    Submitted r = submit(s, prompt, 12);
    s.run_until_idle();
    ASSERT_EQ(r.sink->tokens, want);
    clean_allocations = pool.stats().allocations;
  }
  for (bool recurrent : {true, false}) {
    sz.recurrent = recurrent;
    for (int64_t n = 1; n <= clean_allocations + 2; ++n) {
      MemoryPool pool("cpu", 1 << 22);
      FakeModel model(pool, sz);
      Scheduler s(model, pool, {.n_slots = 1, .ctx_size = 1024, .prefill_chunk_size = 5});
      Submitted r = submit(s, prompt, 12);
      pool.fail_nth_allocation(n);
      s.run_until_idle();
      ASSERT_EQ(r.sink->finishes, 1) << "n=" << n;
      if (r.sink->reason == FinishReason::error) {
        EXPECT_EQ(r.sink->error_code, ErrorCode::out_of_memory) << "n=" << n;
      } else {
        EXPECT_EQ(r.sink->tokens, want) << "n=" << n << " recurrent=" << recurrent;
      }
      EXPECT_EQ(pool.in_use(), s.stats().prompt_cache_bytes) << "n=" << n;
    }
  }
}

// Random workloads: every request ends exactly once, with its exact output or a named error; the pool never
// passes its limit and returns to baseline; nothing starves (a bounded number of steps).
TEST(Scheduler, PropertiesOverRandomWorkloads) {
  std::random_device rd;
  const uint64_t seed0 = rd();
  for (int trial = 0; trial < 300; ++trial) {
    uint64_t seed = seed0 + static_cast<uint64_t>(trial);
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    FakeSizes sz;
    sz.per_sequence = 1000 + static_cast<int64_t>(rng() % 4000);
    sz.per_token = 16 + static_cast<int64_t>(rng() % 100);
    sz.block_tokens = 1 + static_cast<int64_t>(rng() % 32);
    sz.act_per_token = 64 + static_cast<int64_t>(rng() % 1000);
    sz.recurrent = rng() % 2;
    sz.use_fraction = 0.8 + 0.2 * static_cast<double>(rng() % 100) / 100.0;
    SchedulerConfig cfg;
    cfg.n_slots = 1 + static_cast<int>(rng() % 4);
    cfg.ctx_size = 50 + static_cast<int64_t>(rng() % 400);
    cfg.prefill_chunk_size = 1 + static_cast<int64_t>(rng() % 64);
    int64_t limit = 20000 + static_cast<int64_t>(rng() % 200000);
    MemoryPool pool("cpu", limit);
    FakeModel model(pool, sz);
    Scheduler s(model, pool, cfg);
    std::vector<Submitted> reqs;
    int n_req = 1 + static_cast<int>(rng() % 10);
    int64_t steps = 0;
    for (int i = 0; i < n_req; ++i) {
      int64_t len = 1 + static_cast<int64_t>(rng() % 300);
      int64_t max_new = 1 + static_cast<int64_t>(rng() % 40);
      std::vector<int32_t> stops;
      if (rng() % 2) stops.push_back(static_cast<int32_t>(rng() % sz.vocab));
      reqs.push_back(submit(s, random_prompt(rng, len, sz.vocab), max_new, stops));
      // a few steps between arrivals, with an injected failure now and then
      int k = static_cast<int>(rng() % 5);
      for (int j = 0; j < k; ++j, ++steps) {
        if (rng() % 7 == 0) pool.fail_nth_allocation(1 + static_cast<int64_t>(rng() % 6));
        s.step();
      }
    }
    while (s.step()) {
      ASSERT_LT(++steps, 200000) << "starvation: the scheduler did not finish";
    }
    EXPECT_EQ(pool.in_use(), s.stats().prompt_cache_bytes);
    EXPECT_LE(model.max_in_use_seen, limit);
    EXPECT_EQ(s.stats().plan_exceeded, 0);
    for (auto& r : reqs) {
      if (r.refused) {
        EXPECT_EQ(r.refusal, ErrorCode::context_length_exceeded);
        EXPECT_EQ(r.sink->finishes, 0);
        continue;
      }
      ASSERT_EQ(r.sink->finishes, 1);
      if (r.sink->reason == FinishReason::error) {
        EXPECT_EQ(r.sink->error_code, ErrorCode::out_of_memory) << r.sink->error_message;
        continue;
      }
      EXPECT_EQ(r.sink->tokens,
                FakeModel::expected_output(r.prompt, r.max_new, r.stops, cfg.ctx_size, sz.vocab));
    }
  }
}

TEST(Scheduler, PromptCacheReusesTheLongestPrefix) {
  for (bool recurrent : {true, false}) {
    SCOPED_TRACE(recurrent ? "recurrent" : "attention-like");
    FakeSizes sz;
    sz.recurrent = recurrent;
    MemoryPool pool("cpu", 1 << 24);
    FakeModel model(pool, sz);
    Scheduler s(model, pool, {.n_slots = 1, .ctx_size = 1024, .prefill_chunk_size = 16});
    std::vector<int32_t> p1(100);
    for (size_t i = 0; i < p1.size(); ++i) p1[i] = static_cast<int32_t>(i % 30);
    Submitted a = submit(s, p1, 10);
    s.run_until_idle();
    ASSERT_EQ(a.sink->tokens, FakeModel::expected_output(p1, 10, {}, 1024, sz.vocab));
    EXPECT_GE(s.stats().prompt_cache_entries, 1);
    EXPECT_EQ(pool.in_use(), s.stats().prompt_cache_bytes);
    // Turn 2 continues the conversation: the whole of turn 1 is a prefix.
    std::vector<int32_t> p2 = p1;
    p2.insert(p2.end(), a.sink->tokens.begin(), a.sink->tokens.end());
    p2.insert(p2.end(), {7, 7, 7, 8});
    Submitted b = submit(s, p2, 6);
    s.run_until_idle();
    EXPECT_FALSE(b.refused);
    EXPECT_EQ(b.sink->reason, FinishReason::length)
        << finish_reason_name(b.sink->reason) << " " << b.sink->error_message;
    EXPECT_EQ(b.sink->finishes, 1) << b.sink->error_message << finish_reason_name(b.sink->reason);
    EXPECT_EQ(b.sink->tokens, FakeModel::expected_output(p2, 6, {}, 1024, sz.vocab));
    EXPECT_EQ(s.stats().prompt_cache_hits, 1);
    EXPECT_EQ(s.stats().prompt_cache_tokens,
              109);  // 100 prompt + 9 of the 10 generated (the last was not fed)
    // Turn 3 diverges inside turn 2's answer (a template that drops past reasoning does this): the prompt-end
    // checkpoint (recurrent) or a cut-back state (attention-like) still saves the shared prefix.
    std::vector<int32_t> p3 = p2;
    p3.push_back(3);
    Submitted c = submit(s, p3, 4);
    s.run_until_idle();
    EXPECT_EQ(c.sink->tokens, FakeModel::expected_output(p3, 4, {}, 1024, sz.vocab));
    EXPECT_EQ(s.stats().prompt_cache_hits, 2);
    // Recurrent: the checkpoint one token short of p2's end; attention-like: turn 2's state cut back to p2.
    const int64_t turn3 = static_cast<int64_t>(p2.size()) - (recurrent ? 1 : 0);
    EXPECT_EQ(s.stats().prompt_cache_tokens, 109 + turn3);
    EXPECT_EQ(pool.in_use(), s.stats().prompt_cache_bytes);
    // The same prompt twice more (a retry, a regenerate): all but its last token come from the cache each
    // time.
    for (int again = 0; again < 2; ++again) {
      Submitted d = submit(s, p3, 4);
      s.run_until_idle();
      EXPECT_EQ(d.sink->tokens, c.sink->tokens);
      EXPECT_EQ(s.stats().prompt_cache_hits, 3 + again);
      EXPECT_EQ(s.stats().prompt_cache_tokens,
                109 + turn3 + (again + 1) * (static_cast<int64_t>(p3.size()) - 1));
    }
    EXPECT_EQ(pool.in_use(), s.stats().prompt_cache_bytes);
  }
}

// A recurrent model can be cut back only to a checkpoint: chunk ends, one token short of the prompt's end,
// and the request's positions (the server gives message boundaries). A next prompt that shares 60 tokens of a
// 100-token one (chunk 64) reuses 50 when 50 was asked for, else nothing (checkpoints at 64 and 99); an
// attention-like model reuses all 60.
TEST(Scheduler, PromptCacheReusesUpToTheLastCheckpointInTheSharedPrefix) {
  for (bool recurrent : {true, false})
    for (bool boundary : {true, false}) {
      SCOPED_TRACE(::testing::Message() << (recurrent ? "recurrent" : "attention-like")
                                        << (boundary ? ", checkpoint asked at 50" : ""));
      FakeSizes sz;
      sz.recurrent = recurrent;
      MemoryPool pool("cpu", 1 << 24);
      FakeModel model(pool, sz);
      Scheduler s(model, pool, {.n_slots = 1, .ctx_size = 1024, .prefill_chunk_size = 64});
      std::vector<int32_t> p1(100);
      for (size_t i = 0; i < p1.size(); ++i) p1[i] = static_cast<int32_t>(i % 30);
      Submitted a = submit(s, p1, 3, {}, boundary ? std::vector<int64_t>{50} : std::vector<int64_t>{});
      s.run_until_idle();
      ASSERT_EQ(a.sink->tokens, FakeModel::expected_output(p1, 3, {}, 1024, sz.vocab));
      std::vector<int32_t> p2(p1.begin(), p1.begin() + 60);
      p2.insert(p2.end(), {33, 34, 35});
      Submitted b = submit(s, p2, 3);
      s.run_until_idle();
      EXPECT_EQ(b.sink->tokens, FakeModel::expected_output(p2, 3, {}, 1024, sz.vocab));
      const int64_t want = !recurrent ? 60 : boundary ? 50 : 0;
      EXPECT_EQ(s.stats().prompt_cache_tokens, want);
      EXPECT_EQ(s.stats().prompt_cache_hits, want > 0 ? 1 : 0);
      EXPECT_EQ(pool.in_use(), s.stats().prompt_cache_bytes);
    }
}

// A step that fails mid-prefill leaves a recurrent state half-updated: it goes back to its newest checkpoint
// (the last chunk's end) instead of re-prefilling from zero, and the output is still the expected one.
TEST(Scheduler, AFailedStepGoesBackToTheNewestCheckpoint) {
  int64_t restores = 0;
  for (int n = 1; n <= 6; ++n) {
    SCOPED_TRACE(::testing::Message() << "allocation " << n << " of the fourth step refused");
    FakeSizes sz;
    MemoryPool pool("cpu", 1 << 24);
    FakeModel model(pool, sz);
    Scheduler s(model, pool, {.n_slots = 1, .ctx_size = 1024, .prefill_chunk_size = 16});
    std::vector<int32_t> p(100);
    for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<int32_t>(i % 30);
    Submitted a = submit(s, p, 4);
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(s.step());
    pool.fail_nth_allocation(n);
    s.run_until_idle();
    EXPECT_EQ(a.sink->reason, FinishReason::length) << a.sink->error_message;
    EXPECT_EQ(a.sink->tokens, FakeModel::expected_output(p, 4, {}, 1024, sz.vocab));
    restores += model.restores;
    EXPECT_EQ(pool.in_use(), s.stats().prompt_cache_bytes);
  }
  EXPECT_GT(restores, 0);
}

TEST(Scheduler, PromptCacheGivesWayToWork) {
  FakeSizes sz;
  MemoryPool pool("cpu", 40000);
  FakeModel model(pool, sz);
  Scheduler s(model, pool, {.n_slots = 1, .ctx_size = 400, .prefill_chunk_size = 64});
  Submitted a = submit(s, std::vector<int32_t>(150, 1), 3);
  s.run_until_idle();
  EXPECT_EQ(a.sink->reason, FinishReason::length) << a.sink->error_message;
  int64_t cached = s.stats().prompt_cache_bytes;
  EXPECT_GT(cached, 0);
  // A different prompt that needs the room the cache holds.
  Submitted b = submit(s, std::vector<int32_t>(300, 2), 3);
  s.run_until_idle();
  EXPECT_EQ(b.sink->tokens, FakeModel::expected_output(b.prompt, 3, {}, 400, sz.vocab));
  EXPECT_GT(s.stats().prompt_cache_evictions, 0);
  EXPECT_EQ(pool.in_use(), s.stats().prompt_cache_bytes);
}

namespace {

class TokenRecorder final : public RequestSink {
 public:
  bool on_token(const GeneratedToken& t) override {
    tokens.push_back(t);
    return true;
  }
  void on_finish(FinishReason r, const Error* e) override {
    reason = r;
    if (e) code = e->code();
  }
  std::vector<GeneratedToken> tokens;
  FinishReason reason = FinishReason::cancelled;
  std::optional<ErrorCode> code;
};

// Four concurrent sampled requests (make_sampler: seeds, top-k, logit_bias, top_logprobs; the last with a bad
// temperature) through the scheduler, their rows sampled on the model's backend in one batch per step, or
// (batched false) each chosen on the host.
std::vector<std::shared_ptr<TokenRecorder>> run_sampled(bool batched) {
  MemoryPool pool("cpu", 1 << 22);
  CpuBackend be(pool, 1);
  FakeModel model(pool, FakeSizes{});
  model.sampling_be = batched ? &be : nullptr;
  Scheduler s(model, pool, {.n_slots = 4, .ctx_size = 256, .prefill_chunk_size = 16});
  std::vector<std::shared_ptr<TokenRecorder>> sinks;
  for (int i = 0; i < 4; ++i) {
    SamplerConfig c;
    c.seed = 100 + static_cast<uint64_t>(i);
    c.params.temperature = i == 3 ? -1.0f : 1.0f;
    c.params.top_k = i == 1 ? 3 : 0;
    c.params.presence_penalty = i == 0 ? 0.5f : 0.0f;
    c.top_logprobs = i;
    if (i == 2) c.logit_bias = {{5, -100.0f}, {7, 2.0f}};
    Request r;
    r.prompt = {1 + i, 2, 3, 4 + 2 * i};
    r.max_new_tokens = 12;
    r.chooser = make_sampler(be, c);
    sinks.push_back(std::make_shared<TokenRecorder>());
    r.sink = sinks.back();
    s.submit(std::move(r));
  }
  s.run_until_idle();
  EXPECT_EQ(pool.in_use(), s.stats().prompt_cache_bytes);
  return sinks;
}

}  // namespace

// The batch hands each request its own row's token: the same tokens, logprobs and alternatives as choosing
// each row on the host (TokenChooser::choose, today's path and the one fake models without a backend take);
// a request whose row is bad fails alone with invalid_argument.
TEST(Scheduler, BatchedSamplingMatchesHostChoosing) {
  const auto batched = run_sampled(true), host = run_sampled(false);
  for (size_t i = 0; i < 4; ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    if (i == 3) {
      EXPECT_EQ(batched[i]->reason, FinishReason::error);
      EXPECT_EQ(batched[i]->code, ErrorCode::invalid_argument);
      EXPECT_EQ(host[i]->code, ErrorCode::invalid_argument);
      EXPECT_TRUE(batched[i]->tokens.empty());
      continue;
    }
    EXPECT_EQ(batched[i]->reason, FinishReason::length);
    ASSERT_EQ(batched[i]->tokens.size(), 12u);
    ASSERT_EQ(host[i]->tokens.size(), 12u);
    for (size_t t = 0; t < 12; ++t) {
      const GeneratedToken &a = batched[i]->tokens[t], &b = host[i]->tokens[t];
      EXPECT_EQ(a.id, b.id) << "token " << t;
      EXPECT_EQ(a.logprob, b.logprob) << "token " << t;
      EXPECT_EQ(a.top, b.top) << "token " << t;
      EXPECT_EQ(a.top.size(), i) << "token " << t;
      if (i == 2) {
        EXPECT_NE(a.id, 5) << "banned";
      }
    }
  }
}
