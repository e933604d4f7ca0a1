// The startup check (check_startup_memory): weights + one sequence's state at a minimal context + the
// smallest step. Checked against what really happens: at a limit of exactly that total, a one-token prompt is
// served through the Scheduler (so the footprint is enough); one byte less and the check refuses, giving the
// numbers.
#include <filesystem>

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

// The commands call it: `keel run` and `keel bench` (2 threads, as planned here) refuse to start one byte
// below the footprint, giving the numbers, and run at it.
TEST(MemoryStartup, RunAndBenchRefuseToStartBelowTheFootprint) {
  const std::string keel = std::string(KEEL_BINARY_DIR) + "/keel";
  ASSERT_TRUE(std::filesystem::exists(keel)) << keel << " is missing: build the keel target first";
  std::unique_ptr<PooledModel> m = fixture_model("llama");
  const StartupFootprint f = startup_footprint(m->model(), *m->pool);
  const std::string log = std::string(KEEL_BINARY_DIR) + "/memory_startup_test.log";
  for (const char* command : {"run", "bench"}) {
    SCOPED_TRACE(command);
    auto launch = [&](int64_t limit) {
      std::vector<std::string> argv = {keel,
                                       command,
                                       "-m",
                                       fixture_dir("llama"),
                                       "-t",
                                       "2",
                                       "--memory-limit",
                                       std::to_string(limit) + "B"};
      for (const char* a : std::string(command) == "run"
                               ? std::vector<const char*>{"--prompt-ids", "5", "-n", "1"}
                               : std::vector<const char*>{"--prompt-lengths", "1", "--gen", "0"})
        argv.push_back(a);
      return run_child(argv, log, 60);
    };
    const ChildResult below = launch(f.total() - 1);
    ASSERT_TRUE(below.exited) << below.output;
    EXPECT_EQ(below.code, 1) << below.output;
    for (const std::string& n :
         {std::to_string(f.total()), format_bytes(f.loaded), format_bytes(f.state), format_bytes(f.step)})
      EXPECT_NE(below.output.find(n), std::string::npos) << n << " not in: " << below.output;
    // keel run's sampler takes vocab × 8 bytes of candidates from the pool outside the step's plan: some
    // room.
    const ChildResult at = launch(f.total() + (64 << 10));
    ASSERT_TRUE(at.exited) << at.output;
    EXPECT_EQ(at.code, 0) << at.output;
  }
}

}  // namespace
}  // namespace keel::testing
