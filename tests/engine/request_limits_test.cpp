// Hostile request sizes and failing steps (issue 15, item 2): a max_tokens near 2^63 must not wrap the
// sequence's capacity (it is limited by the context), and a step that fails the same way every time ends its
// request after at most two attempts with that error — never an endless retry, never the other requests.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <limits>

#include "engine/engine.h"
#include "memory_test_util.h"

using namespace keel;
using namespace keel::testing;

namespace {
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

class WaitingSink final : public RequestSink {
 public:
  bool on_token(const GeneratedToken& t) override {
    tokens.push_back(t.id);
    return true;
  }
  void on_finish(FinishReason r, const Error* e) override {
    if (e) {
      code = e->code();
      message = e->what();
    }
    done.set_value(r);
  }
  std::vector<int32_t> tokens;
  std::optional<ErrorCode> code;
  std::string message;
  std::promise<FinishReason> done;
};

std::shared_ptr<WaitingSink> submit_to(Engine& engine, std::vector<int32_t> prompt, int64_t max_new) {
  auto sink = std::make_shared<WaitingSink>();
  Request r;
  r.prompt = std::move(prompt);
  r.max_new_tokens = max_new;
  r.chooser = std::make_unique<GreedyChooser>();
  r.sink = sink;
  engine.submit(std::move(r));
  return sink;
}
}  // namespace

// The fake's new_state refuses a capacity below one as a real model does; the capacity asked for is the
// context's, and generation stops there (length) with the tokens the hash chain gives.
TEST(RequestLimits, MaxTokensNearTwoToTheSixtyThreeStopsAtTheContext) {
  for (int64_t max_new : {kMax, kMax - 1, kMax - 7, kMax / 2 + 1}) {
    MemoryPool pool("cpu", 1 << 22);
    FakeModel model(pool, FakeSizes{});
    const int64_t ctx = 64;
    Scheduler sched(model, pool, {.n_slots = 1, .ctx_size = ctx, .prefill_chunk_size = 16});
    const std::vector<int32_t> prompt(20, 3);
    auto sink = submit_greedy(sched, prompt, max_new);
    sched.run_until_idle();
    EXPECT_EQ(sink->finishes, 1) << max_new;
    EXPECT_EQ(sink->reason, FinishReason::length) << max_new << ": " << sink->error_message;
    EXPECT_EQ(sink->tokens, FakeModel::expected_output(prompt, max_new, {}, ctx, 37)) << max_new;
    EXPECT_EQ(static_cast<int64_t>(sink->tokens.size()), ctx - 20) << max_new;
    ASSERT_FALSE(model.capacities.empty());
    for (int64_t c : model.capacities) EXPECT_EQ(c, ctx) << max_new;
    EXPECT_EQ(pool.in_use(), sched.stats().prompt_cache_bytes);
  }
}

// A prompt plus max_tokens that sum past the context, without overflow: the capacity is the context's.
TEST(RequestLimits, CapacityIsThePromptPlusMaxTokensOrTheContext) {
  MemoryPool pool("cpu", 1 << 22);
  FakeModel model(pool, FakeSizes{});
  Scheduler sched(model, pool, {.n_slots = 1, .ctx_size = 100, .prefill_chunk_size = 16});
  submit_greedy(sched, std::vector<int32_t>(10, 1), 5);
  submit_greedy(sched, std::vector<int32_t>(10, 2), 90);
  submit_greedy(sched, std::vector<int32_t>(10, 3), 91);
  sched.run_until_idle();
  EXPECT_EQ(model.capacities, (std::vector<int64_t>{15, 100, 100}));
}

// A real model (the qwen3 fixture) behind the engine thread: max_tokens = INT64_MAX is served to the end of
// the context, with the tokens of the same request given the context's room as max_tokens.
TEST(RequestLimits, EngineServesMaxTokensInt64MaxOnARealModel) {
  auto m = fixture_model("qwen3");
  const int64_t ctx = 24;
  const std::vector<int32_t> prompt = test_prompt(7, m->model().vocab_size(), 3);
  std::vector<int32_t> want;
  {
    Engine engine(m->model(), *m->pool, {.n_slots = 1, .ctx_size = ctx, .prefill_chunk_size = 16});
    auto sink = submit_to(engine, prompt, ctx - 7);
    auto fut = sink->done.get_future();
    ASSERT_EQ(fut.wait_for(std::chrono::seconds(60)), std::future_status::ready);
    EXPECT_EQ(fut.get(), FinishReason::length);
    want = sink->tokens;
  }
  ASSERT_EQ(static_cast<int64_t>(want.size()), ctx - 7);
  for (int64_t max_new : {kMax, kMax - 6}) {
    Engine engine(m->model(), *m->pool, {.n_slots = 1, .ctx_size = ctx, .prefill_chunk_size = 16});
    auto sink = submit_to(engine, prompt, max_new);
    auto fut = sink->done.get_future();
    ASSERT_EQ(fut.wait_for(std::chrono::seconds(60)), std::future_status::ready) << "never answered";
    EXPECT_EQ(fut.get(), FinishReason::length) << sink->message;
    EXPECT_EQ(sink->tokens, want) << max_new;
  }
}

// A request whose every step throws (a model bug, not a lack of memory) ends with that error after at most
// two attempts; the request that shared its first step goes on alone to its exact output.
TEST(RequestLimits, ADeterministicStepErrorEndsItsRequestAfterTwoAttempts) {
  MemoryPool pool("cpu", 1 << 22);
  FakeModel model(pool, FakeSizes{});
  model.poison = 1000;  // outside the vocabulary: only the prompt below holds it
  Scheduler sched(model, pool, {.n_slots = 2, .ctx_size = 256, .prefill_chunk_size = 64});
  std::vector<int32_t> bad(30, 5), good(40, 6);
  bad[0] = 1000;
  auto bad_sink = submit_greedy(sched, bad, 8);
  auto good_sink = submit_greedy(sched, good, 8);
  for (int i = 0; i < 200 && (bad_sink->finishes == 0 || good_sink->finishes == 0); ++i) sched.step();
  EXPECT_EQ(bad_sink->finishes, 1);
  EXPECT_EQ(bad_sink->reason, FinishReason::error);
  EXPECT_EQ(bad_sink->error_code, ErrorCode::internal);
  EXPECT_NE(bad_sink->error_message.find("fake: poisoned token"), std::string::npos)
      << bad_sink->error_message;
  EXPECT_LE(model.poisoned_steps, 2);
  EXPECT_EQ(good_sink->finishes, 1);
  EXPECT_EQ(good_sink->reason, FinishReason::length) << good_sink->error_message;
  EXPECT_EQ(good_sink->tokens, FakeModel::expected_output(good, 8, {}, 256, 37));
  EXPECT_FALSE(sched.step());  // nothing left, nothing retried
  EXPECT_EQ(model.poisoned_steps, 2);
}

// The same through the engine thread: the client hears the error promptly, and the engine then serves the
// next request (no endless retry of the failed step).
TEST(RequestLimits, EngineEndsARequestWhoseStepAlwaysFails) {
  MemoryPool pool("cpu", 1 << 22);
  FakeModel model(pool, FakeSizes{});
  model.poison = 1000;
  Engine engine(model, pool, {.n_slots = 1, .ctx_size = 128, .prefill_chunk_size = 16});
  std::vector<int32_t> bad(10, 5);
  bad[9] = 1000;
  auto sink = submit_to(engine, bad, 4);
  auto fut = sink->done.get_future();
  ASSERT_EQ(fut.wait_for(std::chrono::seconds(10)), std::future_status::ready) << "never answered";
  EXPECT_EQ(fut.get(), FinishReason::error);
  EXPECT_EQ(sink->code, ErrorCode::internal);
  const std::vector<int32_t> good(12, 7);
  auto next = submit_to(engine, good, 4);
  auto next_fut = next->done.get_future();
  ASSERT_EQ(next_fut.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(next_fut.get(), FinishReason::length);
  EXPECT_EQ(next->tokens, FakeModel::expected_output(good, 4, {}, 128, 37));
}
