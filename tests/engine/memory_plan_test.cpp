// specs/memory.md promise 2 through the Scheduler, on the fixtures' real weights: the plan is neither under
// nor wasteful (measured ≤ planned ≤ 1.25 × measured) for every step of a workload that mixes prefill chunks
// of several sequences with decode tokens; and the planner acts on it: with a limit of in-use + 0.8 × planned
// it shrinks the step, with exactly in-use + planned it runs the step whole, and the step does not fail.
#include "memory_test_util.h"

namespace keel::testing {
namespace {

TEST(MemoryPlan, MeasuredWithinPlanForEveryMixedStep) {
  for (const std::string& name : model_fixtures()) {
    SCOPED_TRACE(name);
    std::unique_ptr<PooledModel> m = fixture_model(name);
    MemoryPool& pool = *m->pool;
    const int64_t baseline = pool.in_use();
    SchedulerConfig sc;
    sc.n_slots = 3;
    sc.ctx_size = 1200;
    sc.prefill_chunk_size = 96;
    Scheduler sched(m->model(), pool, sc);
    std::vector<std::shared_ptr<RecordingSink>> sinks;
    int64_t i = 0;
    for (int64_t len : {900, 250, 37, 400}) {  // the fourth waits for a slot, then joins decoding sequences
      sinks.push_back(std::make_shared<RecordingSink>());
      Request r;
      r.prompt = test_prompt(len, m->model().vocab_size(), 100 + static_cast<uint64_t>(i++));
      r.max_new_tokens = 6;
      r.chooser = std::make_unique<GreedyChooser>();
      r.sink = sinks.back();
      sched.submit(std::move(r));
    }
    int64_t checked = 0, mixed = 0, last_steps = 0;
    while (sched.step()) {
      const SchedulerStats& st = sched.stats();
      if (st.steps == last_steps) continue;  // a reclaim, not a step
      last_steps = st.steps;
      const int64_t measured = st.last_measured_transient, planned = st.last_planned_transient;
      EXPECT_LE(measured, planned) << "step " << st.steps;
      EXPECT_LE(planned, measured + measured / 4)
          << "step " << st.steps << ": planned " << planned << " measured " << measured;
      ++checked;
      mixed += sched.running() > 1 ? 1 : 0;
    }
    EXPECT_GT(checked, 20);
    EXPECT_GT(mixed, 10);
    EXPECT_EQ(sched.stats().plan_exceeded, 0);
    EXPECT_EQ(sched.stats().failed_steps, 0);
    for (const auto& s : sinks) EXPECT_EQ(s->reason, FinishReason::length) << s->error_message;
    EXPECT_EQ(pool.in_use(), baseline + sched.stats().prompt_cache_bytes);
  }
}

TEST(MemoryPlan, ShrinksBelowThePlanAndRunsAtIt) {
  for (const std::string& name : model_fixtures()) {
    SCOPED_TRACE(name);
    std::unique_ptr<PooledModel> m = fixture_model(name);
    MemoryPool& pool = *m->pool;
    SchedulerConfig sc;
    sc.ctx_size = 1100;
    sc.prefill_chunk_size = 256;
    sc.prompt_cache_entries = 0;
    Scheduler sched(m->model(), pool, sc);
    auto sink = submit_greedy(sched, test_prompt(1000, m->model().vocab_size(), 9), 2);
    ASSERT_TRUE(sched.step());  // the first chunk allocates the state
    ASSERT_EQ(sched.stats().steps, 1);

    // At exactly in-use + planned (+ the step's state growth): the whole chunk, and it runs.
    std::optional<PlannedStep> full = sched.plan_next();
    ASSERT_TRUE(full);
    ASSERT_EQ(full->items.size(), 1u);
    ASSERT_EQ(full->items[0].n_tokens, 256);
    pool.set_limit(pool.in_use() + full->planned_growth + full->planned_transient);
    std::optional<PlannedStep> again = sched.plan_next();
    ASSERT_TRUE(again);
    EXPECT_EQ(again->items[0].n_tokens, 256);
    const int64_t shrunk_before = sched.stats().shrunk_steps;
    ASSERT_TRUE(sched.step());
    EXPECT_EQ(sched.stats().steps, 2);
    EXPECT_EQ(sched.stats().failed_steps, 0);
    EXPECT_EQ(sched.stats().shrunk_steps, shrunk_before);
    EXPECT_EQ(sched.stats().last_planned_transient, full->planned_transient);
    EXPECT_LE(pool.peak(), pool.limit());

    // At in-use + 0.8 × planned: a smaller chunk, which then runs within the limit.
    pool.set_limit(int64_t{8} << 30);
    std::optional<PlannedStep> next = sched.plan_next();
    ASSERT_TRUE(next);
    ASSERT_EQ(next->items[0].n_tokens, 256);
    pool.set_limit(pool.in_use() + next->planned_growth + next->planned_transient * 8 / 10);
    std::optional<PlannedStep> small = sched.plan_next();
    ASSERT_TRUE(small);
    EXPECT_GT(small->items[0].n_tokens, 0);
    EXPECT_LT(small->items[0].n_tokens, 256);
    EXPECT_GT(sched.stats().shrunk_steps, shrunk_before);
    ASSERT_TRUE(sched.step());
    EXPECT_EQ(sched.stats().steps, 3);
    EXPECT_EQ(sched.stats().failed_steps, 0);
    EXPECT_LE(pool.peak(), pool.limit());

    pool.set_limit(int64_t{8} << 30);
    sched.run_until_idle();
    EXPECT_EQ(sink->reason, FinishReason::length) << sink->error_message;
  }
}

}  // namespace
}  // namespace keel::testing
