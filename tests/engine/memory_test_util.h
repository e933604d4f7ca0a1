// Shared pieces of the memory tests (tests/engine/memory_*_test.cpp): real models (the transformers fixtures,
// or random weights from their configs when a test needs more positions than a fixture states), requests run
// through the Scheduler, and measurements from the pool and from the kernel (VmHWM).
#pragma once
#include <fcntl.h>
#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../fixtures/model_fixtures.h"
#include "backend/cpu/cpu_backend.h"
#include "core/sysmem.h"
#include "engine/scheduler.h"
#include "fake_model.h"
#include "load/config.h"
#include "models/loader.h"
#include "models/random_weights.h"
#include "models/registry.h"

namespace keel::testing {

inline std::string fixture_dir(const std::string& name) {
  return std::string(KEEL_SOURCE_DIR) + "/tests/fixtures/" + name;
}

// One fixture per registered model type (tests/fixtures/models.txt).
inline std::vector<std::string> model_fixtures() {
  return model_fixture_names();
}

// A model with its own pool (limit changed by the tests) on a 2-thread CPU backend.
struct PooledModel {
  std::unique_ptr<MemoryPool> pool = std::make_unique<MemoryPool>("cpu", int64_t{8} << 30);
  std::unique_ptr<CpuBackend> be = std::make_unique<CpuBackend>(*pool, 2);
  models::LoadedModel loaded;
  Model& model() { return *loaded.model; }
};

// The fixture as transformers wrote it (real weights, mmap'd).
inline std::unique_ptr<PooledModel> fixture_model(const std::string& name) {
  auto m = std::make_unique<PooledModel>();
  m->loaded = models::load_model(fixture_dir(name), *m->be);
  return m;
}

// The fixture's config with room for `positions` tokens, on random weights, with one layer of each kind it
// has (the first of each (kind, ffn) pair, in order): every mechanism once, for tests whose cost grows with
// length.
inline std::unique_ptr<PooledModel> long_random_model(const std::string& name, int64_t positions) {
  auto m = std::make_unique<PooledModel>();
  ModelConfig cfg = models::load_model_config(fixture_dir(name));
  cfg.max_position_embeddings = positions;
  std::vector<LayerSpec> distinct;
  for (const LayerSpec& l : cfg.layers)
    if (std::none_of(distinct.begin(), distinct.end(),
                     [&](const LayerSpec& d) { return d.kind == l.kind && d.ffn == l.ffn; }))
      distinct.push_back(l);
  cfg.layers = distinct;
  m->loaded = models::random_weights_model(cfg, DType::bf16, *m->be, 5, name + " (random weights)");
  return m;
}

inline std::vector<int32_t> test_prompt(int64_t n, int64_t vocab, uint64_t seed) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 12345;
  for (int32_t& id : ids) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    id = static_cast<int32_t>(x % static_cast<uint64_t>(vocab));
  }
  return ids;
}

// Greedy, and keeps every logits row it was shown.
class LogitsChooser final : public TokenChooser {
 public:
  explicit LogitsChooser(std::vector<std::vector<float>>* rows) : rows_(rows) {}
  GeneratedToken choose(std::span<const float> logits, std::span<const int32_t>) override {
    rows_->emplace_back(logits.begin(), logits.end());
    GeneratedToken t;
    t.id = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    return t;
  }

 private:
  std::vector<std::vector<float>>* rows_;
};

struct RequestResult {
  std::vector<int32_t> tokens;
  std::vector<std::vector<float>> logits;  // one row per generated token
  FinishReason reason = FinishReason::error;
  std::optional<ErrorCode> error_code;
  std::string error_message;
  bool refused = false;  // submit() threw
  SchedulerStats stats;
};

// Submits a greedy request for `gen` tokens after `prompt`; the returned sink records what happens to it.
inline std::shared_ptr<RecordingSink> submit_greedy(Scheduler& sched, std::vector<int32_t> prompt,
                                                    int64_t gen) {
  auto sink = std::make_shared<RecordingSink>();
  Request r;
  r.prompt = std::move(prompt);
  r.max_new_tokens = gen;
  r.chooser = std::make_unique<GreedyChooser>();
  r.sink = sink;
  sched.submit(std::move(r));
  return sink;
}

// One request through a fresh Scheduler over `pool` (whatever its limit is now).
inline RequestResult run_request(Model& model, MemoryPool& pool, const std::vector<int32_t>& prompt,
                                 int64_t gen, SchedulerConfig sc) {
  RequestResult out;
  Scheduler sched(model, pool, sc);
  auto sink = std::make_shared<RecordingSink>();
  Request r;
  r.prompt = prompt;
  r.max_new_tokens = gen;
  r.chooser = std::make_unique<LogitsChooser>(&out.logits);
  r.sink = sink;
  try {
    sched.submit(std::move(r));
  } catch (const Error& e) {
    out.refused = true;
    out.error_code = e.code();
    out.error_message = e.what();
    return out;
  }
  sched.run_until_idle();
  out.tokens = sink->tokens;
  out.reason = sink->reason;
  out.error_code = sink->error_code;
  out.error_message = sink->error_message;
  out.stats = sched.stats();
  return out;
}

inline double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = a.size() == b.size() ? 0 : INFINITY;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    worst = std::max(worst, std::abs(double(a[i]) - b[i]));
  return worst;
}

// Large blocks straight from mmap and back on free, so the resident set follows live memory (glibc otherwise
// keeps freed blocks for reuse and raises its mmap threshold as it goes, which blurs VmHWM).
inline void malloc_follows_live_memory() {
  mallopt(M_MMAP_THRESHOLD, 64 << 10);
  mallopt(M_TRIM_THRESHOLD, 64 << 10);
}

// One prompt's prefill through the Scheduler, measured by the pool and by the kernel.
struct PrefillMeasure {
  int64_t tokens = 0;         // prompt length
  int64_t loaded = 0;         // pool bytes before
  int64_t peak = 0;           // pool high-water mark over the prefill steps
  int64_t state = 0;          // the sequence's state bytes
  int64_t planned = 0;        // largest planned step transient
  int64_t process_peak = 0;   // VmHWM over the prefill (reset before)
  int64_t process_after = 0;  // VmRSS right after the prefill's last step, the state still held
  int64_t steps = 0;
  int64_t transient() const { return peak - loaded - state; }
  int64_t process_transient() const { return process_peak - process_after; }
};

inline PrefillMeasure measure_prefill(Model& model, MemoryPool& pool, int64_t L, int64_t chunk,
                                      uint64_t seed = 1) {
  PrefillMeasure m;
  m.tokens = L;
  m.loaded = pool.in_use();
  SchedulerConfig sc;
  sc.ctx_size = L + 2;
  sc.prefill_chunk_size = chunk;
  sc.prompt_cache_entries = 0;
  Scheduler sched(model, pool, sc);
  auto sink = std::make_shared<RecordingSink>();
  Request r;
  r.prompt = test_prompt(L, model.vocab_size(), seed);
  r.max_new_tokens =
      2;  // the prefill's token, then one decode step: the state is still held after the prefill
  r.chooser = std::make_unique<GreedyChooser>();
  r.sink = sink;
  m.state = model.state_bytes(L, L + 2);
  EXPECT_TRUE(reset_process_peak_rss());
  sched.submit(std::move(r));
  while (sched.step()) {
    if (m.process_peak > 0) continue;
    m.peak = std::max(m.peak, pool.peak());
    m.planned = std::max(m.planned, sched.stats().last_planned_transient);
    ++m.steps;
    if (!sink->tokens.empty()) {  // the prompt's last step
      m.process_peak = process_peak_rss();
      m.process_after = process_rss();
    }
  }
  EXPECT_EQ(sink->reason, FinishReason::length) << sink->error_message;
  EXPECT_EQ(sched.stats().plan_exceeded, 0);
  EXPECT_EQ(pool.in_use(), m.loaded);
  return m;
}

// A child process (argv[0] a path), its stdout and stderr into `log_path`; SIGKILL after `timeout_s`.
struct ChildResult {
  bool exited = false;  // by exit(), not a signal
  int code = -1;        // exit status when exited
  int signal = 0;       // the signal when not exited
  bool timed_out = false;
  std::string output;  // stdout and stderr
};

inline ChildResult run_child(const std::vector<std::string>& argv, const std::string& log_path,
                             int timeout_s) {
  ChildResult r;
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(126);
  }
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      r.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  r.exited = WIFEXITED(status);
  r.code = r.exited ? WEXITSTATUS(status) : -1;
  r.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  std::ifstream in(log_path);
  std::stringstream ss;
  ss << in.rdbuf();
  r.output = ss.str();
  return r;
}

}  // namespace keel::testing
