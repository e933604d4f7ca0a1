// The scheduler: the only owner of memory decisions. It admits requests into slots, plans every step from the
// model's closed-form byte counts (in-use + planned transient + state growth ≤ limit) before anything runs,
// shrinks or defers what does not fit, reclaims and retries when an allocation fails anyway, and fails a
// request alone — never the process. A step is plain data: {sequence → n_tokens}; prefill chunks and decode
// tokens share it. Not thread-safe: one thread (the Engine's loop, or a test) calls submit()/step().
#pragma once
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/pool.h"
#include "engine/prompt_cache.h"
#include "engine/request.h"
#include "models/model.h"

namespace keel {

struct SchedulerConfig {
  int n_slots = 1;                   // --parallel: sequences that hold state at once
  int64_t ctx_size = 4096;           // --ctx-size: tokens per sequence (not divided among slots)
  int64_t prefill_chunk_size = 512;  // upper bound on tokens per step; the planner may choose fewer
  // Failed steps (out of memory) a sequence may take part in without progress before it fails (503). A step
  // that fails otherwise (a model error) ends each of its sequences at the second such failure.
  int max_failed_attempts = 4;
  int prompt_cache_entries = 4;  // states kept for reuse by later prompts with the same prefix; 0: off
};

// One planned step: which sequence gets how many tokens.
struct PlannedStep {
  struct Item {
    uint64_t seq_id = 0;
    int64_t n_tokens = 0;
  };
  std::vector<Item> items;
  int64_t planned_transient = 0;  // bytes, from Model::step_transient_bytes
  int64_t planned_growth = 0;     // bytes of state the step adds
};

struct SchedulerStats {
  int64_t steps = 0;
  int64_t failed_steps = 0;     // forward threw out_of_memory
  int64_t plan_exceeded = 0;    // steps whose measured transient exceeded the plan (a bug; logged)
  int64_t shrunk_steps = 0;     // steps whose prefill chunk was cut to fit memory
  int64_t deferred = 0;         // times a waiting request could not start for lack of memory
  int64_t preemptions = 0;      // sequences dropped to free memory (re-prefilled later)
  int64_t refused_context = 0;  // submit() refusals: context_length_exceeded
  int64_t failed_memory = 0;    // requests ended with a retryable out_of_memory error
  int64_t last_planned_transient = 0;
  int64_t last_measured_transient = 0;
  int64_t max_measured_over_planned_permille = 0;  // max over steps of 1000·measured/planned
  int64_t prompt_cache_hits = 0;                   // sequences that started from a cached state
  int64_t prompt_cache_tokens = 0;                 // prompt tokens those hits did not recompute
  int64_t prompt_cache_evictions = 0;
  int64_t prompt_cache_entries = 0;  // now
  int64_t prompt_cache_bytes = 0;    // now: pool bytes the cache holds (part of the idle baseline)
};

// What a model needs before it can serve anything: the bytes loaded so far (the pool's in_use: weights and
// their f32 copies), one sequence's state at a minimal context, and the smallest step (one token, with its
// logits).
struct StartupFootprint {
  int64_t loaded = 0;
  int64_t state = 0;    // one sequence holding `context` tokens
  int64_t step = 0;     // transient of a one-token step
  int64_t context = 0;  // tokens
  int64_t total() const { return loaded + state + step; }
};
StartupFootprint startup_footprint(const Model& model, const MemoryPool& pool, int64_t context = 2);
// The check every command makes after loading (run, serve, bench): throws Error(out_of_memory) giving each of
// the footprint's numbers and the pool's limit when they do not fit. `context`: the smallest context the
// command can work with (2: one prompt token and one generated token).
void check_startup_memory(const Model& model, const MemoryPool& pool, int64_t context = 2);

// Whether sequences keep checkpoints in their prompts (see Request::checkpoints): the prompt cache is on and
// the model's states cannot be cut back anywhere (recurrent layers).
inline bool keeps_prompt_checkpoints(const Model& model, const SchedulerConfig& config) {
  return config.prompt_cache_entries > 0 && !model.can_truncate_states();
}

class Scheduler {
 public:
  // `pool` is the model's device pool; its in_use at construction is the baseline (weights + prompt cache).
  Scheduler(Model& model, MemoryPool& pool, SchedulerConfig config);
  ~Scheduler();

  // Admission: refuses at once (Error context_length_exceeded, with the token or byte counts) a request that
  // can never fit — prompt + 1 > ctx_size, or its smallest step over an empty pool exceeds the limit.
  // Otherwise queues it and returns its id. The request's sink hears nothing for a refusal: the caller
  // answers it.
  uint64_t submit(Request request);
  // The admission check alone (const, safe from any thread while another runs steps): throws as submit()
  // does.
  void check_admission(const Request& request) const;
  // Plans and runs one step (or a reclaim). Returns false when there was nothing to do.
  bool step();
  // Runs steps until every request has finished.
  void run_until_idle();

  // Bytes the pool held at construction (or after the last set_baseline); when idle the pool holds this plus
  // stats().prompt_cache_bytes.
  int64_t baseline() const { return baseline_; }
  void set_baseline(int64_t bytes) { baseline_ = bytes; }

  const SchedulerStats& stats() const { return stats_; }
  size_t waiting() const { return waiting_.size(); }
  size_t running() const { return running_.size(); }
  // The plan for the next step without running it (tests).
  std::optional<PlannedStep> plan_next();

 private:
  struct Sequence;
  bool fits(const std::vector<StepShapeItem>& shape, int64_t growth) const;
  int64_t growth_bytes(const Sequence& seq, int64_t n_tokens) const;
  // Tokens a sequence may hold: min(ctx_size, prompt + max_new_tokens), without overflow for any
  // max_new_tokens.
  int64_t capacity_for(const Request& r) const;
  StepShapeItem shape_of(const Sequence& seq, int64_t n_tokens) const;
  void admit_waiting();
  // constrained: memory cut the plan short. `alone`: plan only that sequence (one whose last step failed
  // with a model error runs by itself, so its error cannot end the others).
  std::optional<PlannedStep> plan_once(bool& constrained, const Sequence* alone);
  bool preempt_least_advanced(const Sequence* keep);
  void preempt(Sequence& seq);
  void finish(Sequence& seq, FinishReason reason, const Error* error);
  // finish(), then the sequence leaves running_.
  void finish_running(Sequence& seq, FinishReason reason, const Error* error);
  void drop_cancelled();
  bool step_or_reclaim();  // step() without its guard against failures outside run_planned

  // One step, in order: states and items for the plan (false: out of memory, handled), the forward pass,
  // its memory measured, tokens chosen and delivered, prompt checkpoints kept, finished sequences ended.
  struct StepEndings;
  void run_planned(const PlannedStep& plan);
  std::vector<Sequence*> sequences_of(const PlannedStep& plan) const;
  bool prepare_items(const PlannedStep& plan, const std::vector<Sequence*>& seqs,
                     std::vector<StepItem>& items, int64_t& state_bytes);
  void on_memory_failure(const std::vector<Sequence*>& seqs, const Error& e);
  void on_step_error(const std::vector<Sequence*>& seqs, const Error& e);
  void record_step_memory(const PlannedStep& plan, int64_t before, int64_t state_growth);
  void deliver(const std::vector<Sequence*>& seqs, const std::vector<StepItem>& items, const Tensor& logits,
               StepEndings& endings);
  void checkpoint_prompts(const std::vector<Sequence*>& seqs);
  void end_sequences(StepEndings& endings);

  // The next prompt position past the sequence's state where it keeps a checkpoint (see
  // Request::checkpoints).
  int64_t next_checkpoint(const Sequence& seq) const;
  bool checkpoints_prompts() const { return keeps_prompt_checkpoints(model_, config_); }
  void cache_lookup(Sequence& seq);
  int64_t cache_evict_one();  // bytes freed
  void update_cache_stats();

  Model& model_;
  MemoryPool& pool_;
  SchedulerConfig config_;
  std::atomic<int64_t> baseline_ = 0;
  uint64_t next_id_ = 1;
  std::deque<std::unique_ptr<Sequence>> waiting_;   // FIFO; preempted sequences go back to the front
  std::vector<std::unique_ptr<Sequence>> running_;  // in admission order
  int64_t step_token_cap_;                          // halves after a failed step; doubles back after every
  int steps_since_failure_ = 0;                     // kStepsBeforeCapGrows steps that succeed
  static constexpr int kStepsBeforeCapGrows = 16;
  PromptCache cache_;
  std::string last_unexpected_;  // what the last step that threw outside run_planned said (see step())
  SchedulerStats stats_;
  std::vector<float> logits_host_;  // [rows, vocab]: a step's logits when they live on a device
};

}  // namespace keel
