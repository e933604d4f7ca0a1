// The memory contract on the GPU (specs/memory.md promise 2), through the Scheduler on keel's own device pool
// (one cudaMalloc cut up by cuda::ArenaAllocator, as `keel --device cuda`): for every fixture model and the
// bundled model, every step of a workload mixing prefill chunks of several sequences with decode tokens has
// measured ≤ planned ≤ 1.25 × measured (the pool's high-water mark over the step against the plan), and from
// outside, cudaMemGetInfo's free bytes do not move while the steps run: nothing is allocated on the device
// beside the pool (kernel modules are loaded eagerly so that their first use allocates nothing). Without a
// GPU every test skips, saying so.
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <string>

#include "../engine/memory_test_util.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_device.h"
#include "require_gpu.h"

namespace keel::testing {
namespace {

struct CudaModel {
  static constexpr int64_t kBytes = int64_t{4} << 30;
  cuda::ArenaAllocator arena{0, kBytes};
  MemoryPool pool{"cuda:0", kBytes, &arena};
  CudaBackend be{pool, 0};
  models::LoadedModel loaded;
  explicit CudaModel(const std::string& dir) : loaded(models::load_model(dir, be)) {}
  Model& model() { return *loaded.model; }
};

int64_t device_free_bytes() {
  size_t free_b = 0, total_b = 0;
  cuda::check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
  return static_cast<int64_t>(free_b);
}

TEST(CudaMemory, MeasuredWithinPlanForEveryMixedStep) {
  setenv("CUDA_MODULE_LOADING", "EAGER", 1);  // before the runtime starts (REQUIRE_GPU below starts it)
  REQUIRE_GPU();
  std::vector<std::string> dirs;
  for (const std::string& name : model_fixtures()) dirs.push_back(fixture_dir(name));
  dirs.push_back(std::string(KEEL_SOURCE_DIR) + "/models/keel-brown-nemotron-h-8m");
  for (const std::string& dir : dirs) {
    SCOPED_TRACE(dir);
    CudaModel m(dir);
    const int64_t baseline = m.pool.in_use();
    SchedulerConfig sc;
    sc.n_slots = 3;
    sc.ctx_size = 1200;
    sc.prefill_chunk_size = 96;
    Scheduler sched(m.model(), m.pool, sc);
    std::vector<std::shared_ptr<RecordingSink>> sinks;
    int64_t i = 0;
    for (int64_t len : {900, 250, 37, 400}) {  // the fourth waits for a slot, then joins decoding sequences
      sinks.push_back(submit_greedy(
          sched, test_prompt(len, m.model().vocab_size(), 100 + static_cast<uint64_t>(i++)), 6));
    }
    int64_t checked = 0, mixed = 0, last_steps = 0, free_after_first = -1, worst_permille = 0;
    int64_t free_moved = 0;
    while (sched.step()) {
      const SchedulerStats& st = sched.stats();
      if (st.steps == last_steps) continue;  // a reclaim, not a step
      last_steps = st.steps;
      const int64_t measured = st.last_measured_transient, planned = st.last_planned_transient;
      EXPECT_LE(measured, planned) << "step " << st.steps;
      EXPECT_LE(planned, measured + measured / 4)
          << "step " << st.steps << ": planned " << planned << " measured " << measured;
      if (measured > 0) worst_permille = std::max(worst_permille, 1000 * planned / measured);
      const int64_t free_now = device_free_bytes();
      if (free_after_first < 0)
        free_after_first = free_now;
      else
        free_moved = std::max(free_moved, std::abs(free_now - free_after_first));
      ++checked;
      mixed += sched.running() > 1 ? 1 : 0;
    }
    std::printf(
        "%s: %lld steps (%lld mixed), planned/measured at most %.3f, device free bytes moved by %lld\n",
        dir.c_str(), static_cast<long long>(checked), static_cast<long long>(mixed), worst_permille / 1000.0,
        static_cast<long long>(free_moved));
    EXPECT_GT(checked, 20);
    EXPECT_GT(mixed, 10);
    EXPECT_EQ(free_moved, 0) << "device memory was allocated outside the pool while steps ran";
    EXPECT_EQ(sched.stats().plan_exceeded, 0);
    EXPECT_EQ(sched.stats().failed_steps, 0);
    for (const auto& s : sinks) EXPECT_EQ(s->reason, FinishReason::length) << s->error_message;
    EXPECT_EQ(m.pool.in_use(), baseline + sched.stats().prompt_cache_bytes);
  }
}

}  // namespace
}  // namespace keel::testing
