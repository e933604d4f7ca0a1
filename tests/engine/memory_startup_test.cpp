// The startup check (check_startup_memory): weights + one sequence's state at a minimal context + the
// smallest step. Checked against what really happens: at a limit of exactly that total, a one-token prompt is
// served through the Scheduler (so the footprint is enough); one byte less and the check refuses, giving the
// numbers.
#include "memory_test_util.h"

namespace keel::testing {
namespace {

TEST(MemoryStartup, FootprintServesAOneTokenPromptAndOneByteLessIsRefused) {
  for (const std::string& name : model_fixtures()) {
    SCOPED_TRACE(name);
    std::unique_ptr<PooledModel> m = fixture_model(name);
    const StartupFootprint f = startup_footprint(m->model(), *m->pool);
    EXPECT_EQ(f.loaded, m->pool->in_use());
    EXPECT_GT(f.state, 0);
    EXPECT_GT(f.step, 0);

    m->pool->set_limit(f.total());
    EXPECT_NO_THROW(check_startup_memory(m->model(), *m->pool));
    SchedulerConfig sc;
    sc.ctx_size = 2;
    sc.prompt_cache_entries = 0;
    RequestResult r = run_request(m->model(), *m->pool, {7}, 1, sc);
    EXPECT_FALSE(r.refused) << r.error_message;
    EXPECT_EQ(r.reason, FinishReason::length) << r.error_message;
    EXPECT_EQ(r.tokens.size(), 1u);
    EXPECT_EQ(r.stats.failed_steps, 0);

    m->pool->set_limit(f.total() - 1);
    try {
      check_startup_memory(m->model(), *m->pool);
      ADD_FAILURE() << "a limit one byte short was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::out_of_memory);
      const std::string msg = e.what();
      for (int64_t n : {f.total(), f.total() - 1})
        EXPECT_NE(msg.find(std::to_string(n)), std::string::npos) << msg;
      for (int64_t n : {f.loaded, f.state, f.step})
        EXPECT_NE(msg.find(format_bytes(n)), std::string::npos) << msg;
      EXPECT_NE(msg.find("--memory-limit"), std::string::npos) << msg;
    }
  }
}

}  // namespace
}  // namespace keel::testing
