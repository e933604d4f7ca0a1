// The engine thread with the fake model: concurrent submissions from several threads all end with their exact
// outputs; admission refusals are synchronous; the pool returns to baseline.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>

#include "fake_model.h"

using namespace keel;
using namespace keel::testing;

namespace {
class WaitingSink final : public RequestSink {
 public:
  bool on_token(const GeneratedToken& t) override {
    tokens.push_back(t.id);
    return true;
  }
  void on_finish(FinishReason r, const Error*) override { done.set_value(r); }
  std::vector<int32_t> tokens;
  std::promise<FinishReason> done;
};
}  // namespace

TEST(Engine, ConcurrentSubmissionsEndWithTheirOutputs) {
  MemoryPool pool("cpu", 1 << 22);
  FakeModel model(pool, FakeSizes{});
  Engine engine(model, pool, {.n_slots = 3, .ctx_size = 1024, .prefill_chunk_size = 16});
  std::vector<std::thread> clients;
  std::vector<std::vector<int32_t>> got(8), want(8);
  for (int c = 0; c < 8; ++c) {
    clients.emplace_back([&, c] {
      std::vector<int32_t> prompt(static_cast<size_t>(20 + 37 * c), static_cast<int32_t>(c));
      auto sink = std::make_shared<WaitingSink>();
      auto fut = sink->done.get_future();
      Request r;
      r.prompt = prompt;
      r.max_new_tokens = 9;
      r.chooser = std::make_unique<GreedyChooser>();
      r.sink = sink;
      engine.submit(std::move(r));
      ASSERT_EQ(fut.wait_for(std::chrono::seconds(30)), std::future_status::ready);
      EXPECT_EQ(fut.get(), FinishReason::length);
      got[c] = sink->tokens;
      want[c] = FakeModel::expected_output(prompt, 9, {}, 1024, 37);
    });
  }
  for (auto& t : clients) t.join();
  for (int c = 0; c < 8; ++c) EXPECT_EQ(got[c], want[c]) << c;
  // The loop updates its stats after the step that finished the last request.
  for (int i = 0; i < 100 && engine.stats().running > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(pool.in_use(), engine.stats().scheduler.prompt_cache_bytes);  // baseline: the prompt cache alone
}

TEST(Engine, RefusesSynchronously) {
  MemoryPool pool("cpu", 1 << 22);
  FakeModel model(pool, FakeSizes{});
  Engine engine(model, pool, {.n_slots = 1, .ctx_size = 64, .prefill_chunk_size = 16});
  Request r;
  r.prompt = std::vector<int32_t>(64, 1);
  r.max_new_tokens = 1;
  r.chooser = std::make_unique<GreedyChooser>();
  try {
    engine.submit(std::move(r));
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::context_length_exceeded);
    EXPECT_NE(std::string(e.what()).find("64 tokens"), std::string::npos);
  }
  EXPECT_EQ(pool.stats().allocations, 0);
}
