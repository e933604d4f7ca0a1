#include "engine/scheduler.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>

#include "backend/backend.h"
#include "core/sysmem.h"

namespace keel {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::stop:
      return "stop";
    case FinishReason::length:
      return "length";
    case FinishReason::cancelled:
      return "cancelled";
    case FinishReason::error:
      return "error";
  }
  return "?";
}

StartupFootprint startup_footprint(const Model& model, const MemoryPool& pool, int64_t context) {
  StartupFootprint f;
  f.context = std::max<int64_t>(1, context);
  f.loaded = pool.in_use();
  f.state = model.state_bytes(f.context, f.context);
  StepShapeItem one{1, f.context - 1, 1};
  f.step = model.step_transient_bytes({&one, 1});
  return f;
}

void check_startup_memory(const Model& model, const MemoryPool& pool, int64_t context) {
  const StartupFootprint f = startup_footprint(model, pool, context);
  const int64_t limit = pool.limit();
  if (f.total() <= limit) return;
  throw_error(
      ErrorCode::out_of_memory,
      "the model does not fit the memory limit: it needs {} bytes ({}) to start — {} loaded (weights), {} "
      "for one sequence's state at {} tokens, {} for the smallest step — but the limit is {} bytes ({}); "
      "raise --memory-limit to at least {}",
      f.total(), format_bytes(f.total()), format_bytes(f.loaded), format_bytes(f.state), f.context,
      format_bytes(f.step), limit, format_bytes(limit), format_bytes(f.total()));
}

struct Scheduler::Sequence {
  uint64_t id = 0;
  Request request;
  std::vector<int32_t> tokens;  // prompt + generated: everything the sequence has said
  int64_t n_prompt = 0;
  int64_t n_generated = 0;
  std::unique_ptr<SequenceState> state;  // null before its first step and after a preemption
  int failed_attempts = 0;    // failed steps (out of memory) it took part in since its last progress
  int error_attempts = 0;     // steps that failed otherwise (a model error) since its last progress
  int64_t best_in_state = 0;  // most tokens its state has held: a success below that only redoes work
  bool started = false;       // on_started was sent
  int64_t cached_tokens = 0;  // prompt tokens that came from the prompt cache

  int64_t in_state() const { return state ? state->tokens() : 0; }
  int64_t remaining() const { return static_cast<int64_t>(tokens.size()) - in_state(); }
  bool cancelled() const { return request.cancelled && request.cancelled->load(); }
};

// How the sequences of a step that ran end, if they do: in this order, those whose token could not be
// chosen, then those that finished.
struct Scheduler::StepEndings {
  std::vector<std::pair<Sequence*, Error>> failed;
  std::vector<std::pair<Sequence*, FinishReason>> done;
};

namespace {
// A step error seen this many times by a sequence without progress ends it: a deterministic error repeats.
constexpr int kErrorAttempts = 2;

Error as_error(const std::exception& e) {
  if (const auto* err = dynamic_cast<const Error*>(&e)) return *err;
  return Error(ErrorCode::internal, fmt::format("the step failed: {}", e.what()));
}
}  // namespace

Scheduler::Scheduler(Model& model, MemoryPool& pool, SchedulerConfig config)
    : model_(model),
      pool_(pool),
      config_(config),
      baseline_(pool.in_use()),
      cache_(model, std::max(0, config.prompt_cache_entries)) {
  config_.n_slots = std::max(1, config_.n_slots);
  config_.prefill_chunk_size = std::max<int64_t>(1, config_.prefill_chunk_size);
  step_token_cap_ = std::max<int64_t>(config_.prefill_chunk_size, config_.n_slots);
}

Scheduler::~Scheduler() {
  cache_.clear();
  for (auto& s : running_) finish(*s, FinishReason::cancelled, nullptr);
  running_.clear();
  while (!waiting_.empty()) {
    finish(*waiting_.front(), FinishReason::cancelled, nullptr);
    waiting_.pop_front();
  }
}

void Scheduler::check_admission(const Request& request) const {
  const int64_t n = static_cast<int64_t>(request.prompt.size());
  if (n == 0) throw_error(ErrorCode::invalid_argument, "the prompt is empty");
  if (request.max_new_tokens < 1)
    throw_error(ErrorCode::invalid_argument, "max_tokens must be at least 1 (got {})",
                request.max_new_tokens);
  if (!request.chooser) throw_error(ErrorCode::invalid_argument, "request without a token chooser");
  if (n + 1 > config_.ctx_size)
    throw_error(ErrorCode::context_length_exceeded,
                "the prompt has {} tokens but the context holds {} per sequence, leaving no room for a "
                "generated token",
                n, config_.ctx_size);
  // The smallest step this request will ever need: its whole prompt in state, one more token in flight.
  StepShapeItem last{1, n, 1};
  const int64_t state = model_.state_bytes(n + 1, capacity_for(request));
  const int64_t step = model_.step_transient_bytes({&last, 1});
  int64_t limit = pool_.limit(), base = baseline_.load(), need = 0, total = 0;
  if (state < 0 || step < 0 || __builtin_add_overflow(state, step, &need) ||
      __builtin_add_overflow(base, need, &total) || total > limit)
    throw_error(
        ErrorCode::context_length_exceeded,
        "the prompt has {} tokens; it needs {} bytes of sequence state and {} of step memory, but the memory "
        "limit of {} bytes leaves {} after the model",
        n, state, step, limit, limit - base);
}

uint64_t Scheduler::submit(Request request) {
  try {
    check_admission(request);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::context_length_exceeded) ++stats_.refused_context;
    throw;
  }
  const int64_t n = static_cast<int64_t>(request.prompt.size());
  auto seq = std::make_unique<Sequence>();
  seq->id = next_id_++;
  seq->n_prompt = n;
  seq->tokens = request.prompt;
  seq->request = std::move(request);
  uint64_t id = seq->id;
  waiting_.push_back(std::move(seq));
  return id;
}

int64_t Scheduler::capacity_for(const Request& r) const {
  // max_new_tokens is the client's and may be anything up to INT64_MAX: compare before adding.
  const int64_t n = static_cast<int64_t>(r.prompt.size()), ctx = config_.ctx_size;
  if (n >= ctx || r.max_new_tokens >= ctx - n) return ctx;
  return n + std::max<int64_t>(0, r.max_new_tokens);
}
int64_t Scheduler::growth_bytes(const Sequence& seq, int64_t n_tokens) const {
  int64_t held = seq.state ? seq.state->bytes() - seq.state->checkpoint_bytes() : 0;
  return std::max<int64_t>(0,
                           model_.state_bytes(seq.in_state() + n_tokens, capacity_for(seq.request)) - held);
}

StepShapeItem Scheduler::shape_of(const Sequence& seq, int64_t n_tokens) const {
  bool reaches_end = n_tokens == seq.remaining();
  return StepShapeItem{n_tokens, seq.in_state(), reaches_end ? 1 : 0};
}

bool Scheduler::fits(const std::vector<StepShapeItem>& shape, int64_t growth) const {
  int64_t transient = model_.step_transient_bytes(shape);
  return pool_.in_use() + transient + growth <= pool_.limit();
}

void Scheduler::admit_waiting() {
  while (static_cast<int>(running_.size()) < config_.n_slots && !waiting_.empty()) {
    running_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
    if (!running_.back()->state) cache_lookup(*running_.back());  // before any plan counts its tokens
  }
}

void Scheduler::drop_cancelled() {
  for (size_t i = 0; i < running_.size();) {
    if (running_[i]->cancelled()) {
      finish(*running_[i], FinishReason::cancelled, nullptr);
      running_.erase(running_.begin() + static_cast<long>(i));
    } else {
      ++i;
    }
  }
  for (size_t i = 0; i < waiting_.size();) {
    if (waiting_[i]->cancelled()) {
      finish(*waiting_[i], FinishReason::cancelled, nullptr);
      waiting_.erase(waiting_.begin() + static_cast<long>(i));
    } else {
      ++i;
    }
  }
}

std::optional<PlannedStep> Scheduler::plan_next() {
  drop_cancelled();
  admit_waiting();
  // Memory held by the prompt cache gives way to running work: evict and plan again while the plan is cut
  // short.
  const Sequence* suspect = nullptr;  // the first whose last step failed with a model error
  for (auto& s : running_)
    if (s->error_attempts > 0 && !suspect) suspect = s.get();
  for (;;) {
    bool constrained = false;
    std::optional<PlannedStep> plan;
    if (suspect) plan = plan_once(constrained, suspect);
    if (!plan) plan = plan_once(constrained, nullptr);  // no suspect, or it cannot move now
    if (!constrained || cache_.empty()) return plan;
    cache_evict_one();
  }
}

std::optional<PlannedStep> Scheduler::plan_once(bool& constrained, const Sequence* alone) {
  PlannedStep plan;
  std::vector<StepShapeItem> shape;
  int64_t growth = 0, tokens = 0;
  // Decode tokens first, so one long prompt never stalls the others' streams.
  for (auto& seq : running_) {
    if ((alone && seq.get() != alone) || seq->remaining() != 1 || tokens >= step_token_cap_) continue;
    shape.push_back(shape_of(*seq, 1));
    int64_t g = growth_bytes(*seq, 1);
    if (!fits(shape, growth + g)) {
      shape.pop_back();
      constrained = true;
      continue;
    }
    growth += g;
    ++tokens;
    plan.items.push_back({seq->id, 1});
  }
  // Then prefill chunks, oldest sequence first, each the largest that fits (binary search: bytes grow with
  // n).
  for (auto& seq : running_) {
    if ((alone && seq.get() != alone) || seq->remaining() <= 1) continue;
    int64_t n_max = std::min(seq->remaining(), step_token_cap_ - tokens);
    n_max = std::min(n_max, config_.prefill_chunk_size);
    // A model whose states cannot be cut back keeps checkpoints in the prompt (chunk ends, the request's
    // positions, and one token short of the end: the same prompt again, or any prompt that extends it, starts
    // there). The chunk stops at the next such position; the last prompt token then goes with the decode
    // tokens.
    if (checkpoints_prompts()) n_max = std::min(n_max, next_checkpoint(*seq) - seq->in_state());
    if (n_max <= 0) break;
    auto try_n = [&](int64_t n) {
      shape.push_back(shape_of(*seq, n));
      bool ok = fits(shape, growth + growth_bytes(*seq, n));
      shape.pop_back();
      return ok;
    };
    int64_t best = 0;
    if (try_n(n_max)) {
      best = n_max;
    } else {
      int64_t lo = 0, hi = n_max;  // fits(lo) (or lo == 0), !fits(hi)
      while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        (try_n(mid) ? lo : hi) = mid;
      }
      best = lo;
      constrained = true;
      if (best > 0) ++stats_.shrunk_steps;
    }
    if (best == 0) {
      if (!seq->state) ++stats_.deferred;
      continue;
    }
    shape.push_back(shape_of(*seq, best));
    growth += growth_bytes(*seq, best);
    tokens += best;
    plan.items.push_back({seq->id, best});
  }
  if (plan.items.empty()) return std::nullopt;
  plan.planned_transient = model_.step_transient_bytes(shape);
  plan.planned_growth = growth;
  return plan;
}

bool Scheduler::step() {
  try {
    const bool worked = step_or_reclaim();
    last_unexpected_.clear();
    return worked;
  } catch (const std::exception& e) {
    // Outside any one step's sequences (run_planned handles its own): the same failure twice in a row ends
    // every running request with it, instead of repeating forever.
    spdlog::error("scheduler step failed: {}", e.what());
    if (last_unexpected_ != e.what()) {
      last_unexpected_ = e.what();
      return true;
    }
    last_unexpected_.clear();
    const Error err = as_error(e);
    for (auto& s : running_) finish(*s, FinishReason::error, &err);
    running_.clear();
    return true;
  }
}

bool Scheduler::step_or_reclaim() {
  std::optional<PlannedStep> plan = plan_next();
  if (plan) {
    run_planned(*plan);
    return true;
  }
  if (running_.empty() && waiting_.empty()) return false;
  // Nothing fits. Reclaim memory held elsewhere (the prompt cache); else preempt the least-advanced of
  // several sequences holding state; else the one sequence that cannot move even alone fails, with a
  // retryable error.
  if (cache_evict_one() > 0) return true;
  int64_t dropped = 0;  // running sequences' prompt checkpoints
  for (auto& s : running_)
    if (s->state) dropped += model_.drop_checkpoints(*s->state);
  if (dropped > 0) return true;
  int holders = 0;
  for (auto& s : running_) holders += s->state ? 1 : 0;
  if (holders >= 2 && preempt_least_advanced(nullptr)) return true;
  auto stuck = std::find_if(running_.begin(), running_.end(), [](auto& s) { return s->state != nullptr; });
  if (stuck == running_.end()) stuck = running_.begin();
  Error err(
      ErrorCode::out_of_memory,
      fmt::format("not enough memory to continue: the sequence holds {} tokens, {} bytes are in use of a "
                  "{}-byte limit; retry later or with a shorter conversation",
                  (*stuck)->in_state(), pool_.in_use(), pool_.limit()));
  ++stats_.failed_memory;
  finish_running(**stuck, FinishReason::error, &err);
  return true;
}

void Scheduler::run_until_idle() {
  while (step()) {
  }
}

bool Scheduler::preempt_least_advanced(const Sequence* keep) {
  // Preempt the least-advanced sequence that holds state (fewest tokens in state), other than `keep`.
  Sequence* victim = nullptr;
  for (auto& s : running_) {
    if (s.get() == keep || !s->state) continue;
    if (!victim || s->in_state() < victim->in_state()) victim = s.get();
  }
  if (!victim) return false;
  preempt(*victim);
  return true;
}

void Scheduler::preempt(Sequence& seq) {
  ++stats_.preemptions;
  seq.state.reset();  // re-prefilled from its tokens later
  auto it = std::find_if(running_.begin(), running_.end(), [&](auto& p) { return p.get() == &seq; });
  waiting_.push_front(std::move(*it));
  running_.erase(it);
}

void Scheduler::finish(Sequence& seq, FinishReason reason, const Error* error) {
  seq.state.reset();
  if (seq.request.sink) seq.request.sink->on_finish(reason, error);
  seq.request.sink.reset();
}

void Scheduler::finish_running(Sequence& seq, FinishReason reason, const Error* error) {
  auto it = std::find_if(running_.begin(), running_.end(), [&](auto& p) { return p.get() == &seq; });
  finish(seq, reason, error);
  running_.erase(it);
}

void Scheduler::run_planned(const PlannedStep& plan) {
  const std::vector<Sequence*> seqs = sequences_of(plan);
  std::vector<StepItem> items;
  int64_t before_states = 0, before = 0;
  Tensor logits;
  try {
    if (!prepare_items(plan, seqs, items, before_states)) return;
    before = pool_.in_use();
    pool_.mark_peak();
    logits = model_.forward(items);
  } catch (const std::exception& e) {
    const Error err = as_error(e);
    if (err.code() == ErrorCode::out_of_memory)
      on_memory_failure(seqs, err);
    else
      on_step_error(seqs, err);
    return;
  }
  ++stats_.steps;
  int64_t after_states = 0;
  for (Sequence* s : seqs) after_states += s->state->bytes();
  record_step_memory(plan, before, after_states - before_states);
  StepEndings endings;
  deliver(seqs, items, logits, endings);
  logits = Tensor();
  if (checkpoints_prompts()) checkpoint_prompts(seqs);
  end_sequences(endings);
  update_cache_stats();
}

std::vector<Scheduler::Sequence*> Scheduler::sequences_of(const PlannedStep& plan) const {
  std::vector<Sequence*> seqs;
  for (const auto& item : plan.items) {
    auto it = std::find_if(running_.begin(), running_.end(), [&](auto& p) { return p->id == item.seq_id; });
    seqs.push_back(it->get());
  }
  return seqs;
}

bool Scheduler::prepare_items(const PlannedStep& plan, const std::vector<Sequence*>& seqs,
                              std::vector<StepItem>& items, int64_t& state_bytes) {
  try {
    for (Sequence* s : seqs)
      if (!s->state) s->state = model_.new_state(capacity_for(s->request));
  } catch (const Error& e) {
    if (e.code() != ErrorCode::out_of_memory) throw;
    on_memory_failure(seqs, e);
    return false;
  }
  for (size_t i = 0; i < seqs.size(); ++i) {
    Sequence& s = *seqs[i];
    const int64_t n = plan.items[i].n_tokens, start = s.in_state();
    StepItem item;
    item.state = s.state.get();
    item.tokens = std::span<const int32_t>(s.tokens.data() + start, static_cast<size_t>(n));
    item.n_logits = (start + n == static_cast<int64_t>(s.tokens.size())) ? 1 : 0;
    item.cancelled = s.request.cancelled.get();
    items.push_back(item);
    state_bytes += s.state->bytes();
  }
  return true;
}

void Scheduler::on_memory_failure(const std::vector<Sequence*>& seqs, const Error& e) {
  ++stats_.failed_steps;
  step_token_cap_ = std::max<int64_t>(1, step_token_cap_ / 2);
  steps_since_failure_ = 0;
  bool survives = model_.state_survives_failed_step();
  for (Sequence* s : seqs) {
    ++s->failed_attempts;
    // A recurrent state updated in place is unusable now; its newest checkpoint (a copy) is not.
    if (!survives && s->state && !model_.restore_checkpoint(*s->state)) s->state.reset();
  }
  spdlog::warn("step of {} sequences failed ({}); retrying with at most {} tokens", seqs.size(), e.what(),
               step_token_cap_);
  // Fail alone, with a retryable error, every sequence that has failed too often; reclaim for the others.
  for (size_t i = 0; i < running_.size();) {
    Sequence& s = *running_[i];
    if (s.failed_attempts >= config_.max_failed_attempts) {
      Error err(ErrorCode::out_of_memory, fmt::format("not enough memory after {} attempts ({}); retry later",
                                                      s.failed_attempts, e.what()));
      ++stats_.failed_memory;
      finish(s, FinishReason::error, &err);
      running_.erase(running_.begin() + static_cast<long>(i));
    } else {
      ++i;
    }
  }
  cache_evict_one();
}

// Cancelled (every item: the next plan drops them), or a model error (any exception but out_of_memory). The
// states are put back as after a memory failure. A sequence ends with the error at its kErrorAttempts-th
// such failure; until then plan_next runs it alone, so that a deterministic error ends its own request only.
void Scheduler::on_step_error(const std::vector<Sequence*>& seqs, const Error& e) {
  const bool survives = model_.state_survives_failed_step();
  if (e.code() == ErrorCode::cancelled) {
    for (Sequence* s : seqs)
      if (!survives) s->state.reset();
    return;
  }
  spdlog::error("step of {} sequences failed: {}", seqs.size(), e.what());
  for (Sequence* s : seqs) {
    if (!survives && s->state && !model_.restore_checkpoint(*s->state)) s->state.reset();
    if (++s->error_attempts >= kErrorAttempts) finish_running(*s, FinishReason::error, &e);
  }
}

void Scheduler::record_step_memory(const PlannedStep& plan, int64_t before, int64_t state_growth) {
  // The cap grows back slowly: a size that just failed is not tried again at once (a recurrent sequence loses
  // its state with every failed step, so retrying that size at once could repeat forever).
  const int64_t full_cap = std::max<int64_t>(config_.prefill_chunk_size, config_.n_slots);
  if (step_token_cap_ < full_cap && ++steps_since_failure_ >= kStepsBeforeCapGrows) {
    step_token_cap_ = std::min(full_cap, 2 * step_token_cap_);
    steps_since_failure_ = 0;
  }
  int64_t measured = pool_.peak() - before - state_growth;
  stats_.last_planned_transient = plan.planned_transient;
  stats_.last_measured_transient = measured;
  if (plan.planned_transient > 0)
    stats_.max_measured_over_planned_permille =
        std::max(stats_.max_measured_over_planned_permille, 1000 * measured / plan.planned_transient);
  if (measured > plan.planned_transient) {
    ++stats_.plan_exceeded;
    spdlog::error("bug: step used {} transient bytes, planned {}", measured, plan.planned_transient);
  }
}

// One logits row per item that asked for one, in item order. The choosers that prepare() a row have it
// sampled on the model's backend, all in one ops::sample_rows (only the chosen tokens cross to the host);
// the others choose from the host rows (host_logits, downloaded only when one of them needs it).
void Scheduler::deliver(const std::vector<Sequence*>& seqs, const std::vector<StepItem>& items,
                        const Tensor& logits, StepEndings& endings) {
  const int64_t vocab = model_.vocab_size();
  Backend* const be = model_.sampling_backend();
  struct Wanted {
    Sequence* seq;
    int64_t row;       // logits row
    int64_t prepared;  // index into `rows`, or −1: chosen on the host
  };
  std::vector<Wanted> wanted;
  std::vector<ops::RowSampling> rows;
  // The chooser's own pool tensors (sampling workspace) are outside the step's plan: a failure ends the
  // request (all the step's prepared requests, for a failure of the batch), not the step.
  auto fail = [&](Sequence& s, const std::exception& e) {
    spdlog::warn("choosing a token failed ({}); that request ends", e.what());
    Error err = as_error(e);
    if (err.code() == ErrorCode::out_of_memory) ++stats_.failed_memory;
    endings.failed.emplace_back(&s, std::move(err));
  };
  int64_t row = 0;
  for (size_t i = 0; i < seqs.size(); ++i) {
    Sequence& s = *seqs[i];
    if (s.in_state() > s.best_in_state) {  // progress, not a redo of what a failed step threw away
      s.best_in_state = s.in_state();
      s.failed_attempts = 0;
      s.error_attempts = 0;
    }
    if (!s.started) {
      s.started = true;
      if (s.request.sink) s.request.sink->on_started(s.cached_tokens);
    }
    if (items[i].n_logits == 0) {
      if (s.request.sink) s.request.sink->on_prefill(s.in_state(), s.n_prompt);
      continue;
    }
    const int64_t r = row++;
    if (s.cancelled()) continue;
    Wanted w{&s, r, -1};
    if (be) {
      try {
        ops::RowSampling rs;
        if (s.request.chooser->prepare(s.tokens, rs)) {
          rs.row = r;
          ops::check_row_sampling(rs, vocab);  // a bad row fails its request alone
          w.prepared = static_cast<int64_t>(rows.size());
          rows.push_back(rs);
        }
      } catch (const std::exception& e) {
        fail(s, e);
        continue;
      }
    }
    wanted.push_back(w);
  }

  std::vector<GeneratedToken> sampled(rows.size());
  std::optional<Error> batch_error;
  if (!rows.empty()) {
    try {
      ops::sample_rows(*be, logits, rows, sampled);
    } catch (const std::exception& e) {
      batch_error = as_error(e);
    }
  }
  std::span<const float> all;
  for (const Wanted& w : wanted)
    if (w.prepared < 0) {
      all = model_.host_logits(logits, logits_host_);
      break;
    }

  for (const Wanted& w : wanted) {
    Sequence& s = *w.seq;
    GeneratedToken tok;
    if (w.prepared >= 0) {
      if (batch_error) {
        fail(s, *batch_error);
        continue;
      }
      tok = std::move(sampled[static_cast<size_t>(w.prepared)]);
    } else {
      std::span<const float> r = all.subspan(static_cast<size_t>(w.row * vocab), static_cast<size_t>(vocab));
      try {
        tok = s.request.chooser->choose(r, s.tokens);
      } catch (const std::exception& e) {
        fail(s, e);
        continue;
      }
    }
    s.tokens.push_back(tok.id);
    ++s.n_generated;
    bool go_on = s.request.sink ? s.request.sink->on_token(tok) : true;
    bool is_stop = std::find(s.request.stop_tokens.begin(), s.request.stop_tokens.end(), tok.id) !=
                   s.request.stop_tokens.end();
    if (!go_on || is_stop)
      endings.done.emplace_back(&s, FinishReason::stop);
    else if (s.n_generated >= s.request.max_new_tokens ||
             static_cast<int64_t>(s.tokens.size()) >= config_.ctx_size)
      endings.done.emplace_back(&s, FinishReason::length);
  }
}

// Checkpoints inside the prompt (a chunk's end, or a position plan_once stopped the chunk at) for a model
// whose state cannot be cut back: the prompt cache can then reuse this state up to there.
void Scheduler::checkpoint_prompts(const std::vector<Sequence*>& seqs) {
  for (Sequence* sp : seqs) {
    Sequence& s = *sp;
    if (!s.state || s.cancelled() || s.n_generated != 0 || s.in_state() >= s.n_prompt) continue;
    try {
      model_.checkpoint_state(*s.state);
    } catch (const std::exception& e) {  // no room (or no way) for a checkpoint: go on without it
      if (as_error(e).code() != ErrorCode::out_of_memory)
        spdlog::error("prompt checkpoint failed: {}", e.what());
    }
  }
}

void Scheduler::end_sequences(StepEndings& endings) {
  for (auto& [s, e] : endings.failed) finish_running(*s, FinishReason::error, &e);
  for (auto& [s, reason] : endings.done) {
    if (config_.prompt_cache_entries > 0 && s->state) {
      const int64_t n = s->in_state();
      cache_.insert(std::vector<int32_t>(s->tokens.begin(), s->tokens.begin() + n), std::move(s->state));
    }
    finish_running(*s, reason, nullptr);
  }
}

void Scheduler::cache_lookup(Sequence& seq) {
  if (cache_.empty()) return;
  std::unique_ptr<SequenceState> state = cache_.take(seq.tokens, capacity_for(seq.request));
  if (state) {
    seq.cached_tokens = state->tokens();
    seq.state = std::move(state);
    ++stats_.prompt_cache_hits;
    stats_.prompt_cache_tokens += seq.cached_tokens;
  }
  update_cache_stats();
}

int64_t Scheduler::next_checkpoint(const Sequence& seq) const {
  const int64_t at = seq.in_state();
  int64_t next = seq.n_prompt - 1;
  for (int64_t p : seq.request.checkpoints)
    if (p > at && p < next) next = p;
  return next > at ? next : std::numeric_limits<int64_t>::max() / 2;
}

int64_t Scheduler::cache_evict_one() {
  const int64_t freed = cache_.evict_one();
  update_cache_stats();
  return freed;
}

void Scheduler::update_cache_stats() {
  stats_.prompt_cache_entries = cache_.entries();
  stats_.prompt_cache_bytes = cache_.bytes();
  stats_.prompt_cache_evictions = cache_.evictions();
}

}  // namespace keel
