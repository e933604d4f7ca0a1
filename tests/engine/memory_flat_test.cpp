// specs/memory.md promise 1: prefill transient memory is bounded by the chunk, not by the prompt. For each
// model type, prompts of 2K to 16K tokens at a fixed chunk through the Scheduler: the transient (peak −
// loaded − state) stays within 10% of the 2K figure, by the pool's high-water mark and by the kernel's VmHWM
// of this process. The fixtures state max_position_embeddings 4096, so these run their configs with room for
// 16K on random weights.
#include <cstdio>

#include "memory_test_util.h"

namespace keel::testing {
namespace {

constexpr int64_t kChunk = 2048;

TEST(MemoryFlat, TransientFlatFrom2KTo16KByPoolAndByProcess) {
  malloc_follows_live_memory();
  const std::vector<std::string> names = model_fixtures();
  ASSERT_GE(names.size(), 3u);
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    std::unique_ptr<PooledModel> m = long_random_model(name, 1 << 15);
    measure_prefill(m->model(), *m->pool, 2048, kChunk);  // warm-up: thread stacks, first-touch of code pages
    std::vector<PrefillMeasure> rows;
    for (int64_t L : {2048, 16384}) rows.push_back(measure_prefill(m->model(), *m->pool, L, kChunk));
    const PrefillMeasure& base = rows.front();
    std::printf("%s, chunk %lld:\n", name.c_str(), static_cast<long long>(kChunk));
    for (size_t i = 0; i < rows.size(); ++i) {
      const PrefillMeasure& r = rows[i];
      std::printf("  %6lld tokens: state %9lld  transient %9lld (planned %9lld)  process transient %9lld\n",
                  static_cast<long long>(r.tokens), static_cast<long long>(r.state),
                  static_cast<long long>(r.transient()), static_cast<long long>(r.planned),
                  static_cast<long long>(r.process_transient()));
      EXPECT_LE(r.transient(), r.planned);
      EXPECT_LE(std::abs(r.transient() - base.transient()), base.transient() / 10) << "row " << i;
      EXPECT_LE(std::abs(r.process_transient() - base.process_transient()), base.process_transient() / 10)
          << "row " << i;
    }
    // The state grows with the prompt (KV rows) while the transient does not: the two are told apart.
    EXPECT_GT(rows.back().state, 4 * base.state);
  }
}

}  // namespace
}  // namespace keel::testing
