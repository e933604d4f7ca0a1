// A fake model for the scheduler simulator: configurable byte sizes, real pool allocations (so failure
// injection and limits are real), a recurrent state (a running hash of every token fed) updated in place in
// the middle of the forward pass, and a next token that is a pure function of all tokens so far. The expected
// output of any request is therefore computable without the scheduler (expected_output), whatever the
// chunking or preemption.
#pragma once
#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/pool.h"
#include "core/tensor.h"
#include "engine/request.h"
#include "models/model.h"

namespace keel::testing {

struct FakeSizes {
  int64_t per_sequence = 4096;     // bytes of fixed state (the "SSM state")
  int64_t per_token = 64;          // bytes of KV per token
  int64_t block_tokens = 16;       // KV allocation granularity
  int64_t fixed_transient = 1024;  // bytes per step regardless of size
  int64_t act_per_token = 512;     // activation bytes per step token
  int64_t vocab = 37;
  int layers = 3;  // the state is updated in layer 1; allocations happen in every layer
  bool recurrent = true;
  double use_fraction = 1.0;  // share of the planned activation bytes forward really allocates
};

inline uint64_t mix(uint64_t h, int32_t token) {
  h ^= static_cast<uint64_t>(token) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

class FakeState final : public SequenceState {
 public:
  int64_t tokens() const override { return tokens_; }
  int64_t bytes() const override {
    int64_t b = fixed_.bytes();
    for (const auto& a : blocks_) b += a.bytes();
    return b + checkpoint_bytes();
  }
  int64_t checkpoint_bytes() const override {
    int64_t b = 0;
    for (const auto& c : checkpoints_) b += c.copy.bytes();
    return b;
  }
  struct Checkpoint {
    int64_t tokens = 0;
    uint64_t hash = 1;
    Allocation copy;  // what a real model would copy: the per-sequence part
  };
  int64_t tokens_ = 0;
  uint64_t hash_ = 1;
  std::vector<uint64_t> history_;  // hash after each token (lets a non-recurrent fake be cut back)
  Allocation fixed_;
  std::vector<Allocation> blocks_;
  std::vector<Checkpoint> checkpoints_;  // recurrent fake: ascending tokens, the newest 8
};

class FakeModel final : public Model {
 public:
  FakeModel(MemoryPool& pool, FakeSizes sizes) : pool_(pool), s_(sizes) {}
  const std::string& model_type() const override { return type_; }
  int64_t vocab_size() const override { return s_.vocab; }
  int64_t context_limit() const override { return 0; }
  // Set: the scheduler samples the prepared rows on this (host) backend, as on a real model; null: every
  // token is chosen on the host through TokenChooser::choose.
  Backend* sampling_be = nullptr;
  Backend* sampling_backend() const override { return sampling_be; }

  int64_t state_bytes(int64_t tokens, int64_t) const override {
    int64_t blocks = (tokens + s_.block_tokens - 1) / s_.block_tokens;
    return s_.per_sequence + blocks * s_.block_tokens * s_.per_token;
  }
  int64_t step_transient_bytes(std::span<const StepShapeItem> step) const override {
    int64_t n = 0, logits = 0;
    for (const auto& it : step) {
      n += it.n_tokens;
      logits += it.n_logits;
    }
    return s_.fixed_transient + s_.act_per_token * n + logits * s_.vocab * 4;
  }
  // As a real model: a capacity below one token is the caller's bug.
  std::unique_ptr<SequenceState> new_state(int64_t capacity) override {
    if (capacity < 1)
      throw_error(ErrorCode::invalid_argument, "new_state: capacity {} (must be ≥ 1)", capacity);
    capacities.push_back(capacity);
    auto st = std::make_unique<FakeState>();
    st->fixed_ = pool_.allocate(s_.per_sequence, "fake sequence state");
    return st;
  }
  bool state_survives_failed_step() const override { return !s_.recurrent; }

  bool can_truncate_states() const override { return !s_.recurrent; }
  bool truncate_state(SequenceState& state, int64_t tokens) override {
    auto& st = static_cast<FakeState&>(state);
    if (tokens == st.tokens_) return true;
    if (tokens < 0 || tokens > st.tokens_) return false;
    if (s_.recurrent) {
      auto c = std::find_if(st.checkpoints_.begin(), st.checkpoints_.end(),
                            [&](const FakeState::Checkpoint& k) { return k.tokens == tokens; });
      if (c == st.checkpoints_.end()) return false;
      st.hash_ = c->hash;
      while (st.checkpoints_.back().tokens > tokens) st.checkpoints_.pop_back();
    } else {
      st.hash_ = tokens ? st.history_[static_cast<size_t>(tokens) - 1] : 1;
    }
    st.history_.resize(static_cast<size_t>(tokens));
    st.tokens_ = tokens;
    return true;
  }
  bool checkpoint_state(SequenceState& state) override {
    if (!s_.recurrent) return false;
    auto& st = static_cast<FakeState&>(state);
    if (!st.checkpoints_.empty() && st.checkpoints_.back().tokens == st.tokens_) return true;
    FakeState::Checkpoint c{st.tokens_, st.hash_, pool_.allocate(s_.per_sequence, "fake checkpoint")};
    st.checkpoints_.push_back(std::move(c));
    if (st.checkpoints_.size() > 8) st.checkpoints_.erase(st.checkpoints_.begin());
    ++checkpoints;
    return true;
  }
  int64_t truncation_point(const SequenceState& state, int64_t tokens) const override {
    const auto& st = static_cast<const FakeState&>(state);
    if (tokens >= st.tokens_) return st.tokens_;
    if (!s_.recurrent) return std::max<int64_t>(tokens, 0);
    int64_t best = 0;
    for (const auto& c : st.checkpoints_)
      if (c.tokens <= tokens) best = c.tokens;
    return best;
  }
  bool restore_checkpoint(SequenceState& state) override {
    auto& st = static_cast<FakeState&>(state);
    if (st.checkpoints_.empty() || st.checkpoints_.back().tokens > st.tokens_) return false;
    st.tokens_ = st.checkpoints_.back().tokens;
    st.hash_ = st.checkpoints_.back().hash;
    st.history_.resize(static_cast<size_t>(st.tokens_));
    ++restores;
    return true;
  }
  int64_t restores = 0;
  int64_t drop_checkpoints(SequenceState& state) override {
    auto& st = static_cast<FakeState&>(state);
    int64_t freed = 0;
    for (const auto& c : st.checkpoints_) freed += c.copy.bytes();
    st.checkpoints_.clear();
    return freed;
  }
  int64_t checkpoints = 0;

  std::vector<int64_t> capacities;  // of every new_state, in order

  // A step holding `poison` anywhere in an item's tokens throws std::runtime_error (not an Error): a model
  // bug that repeats on every retry. poisoned_steps counts those steps.
  std::optional<int32_t> poison;
  int64_t poisoned_steps = 0;

  Tensor forward(std::span<const StepItem> step) override {
    for (const auto& it : step)
      if (poison && std::find(it.tokens.begin(), it.tokens.end(), *poison) != it.tokens.end()) {
        ++poisoned_steps;
        throw std::runtime_error("fake: poisoned token");
      }
    int64_t n = 0, n_logits = 0;
    for (const auto& it : step) {
      n += static_cast<int64_t>(it.tokens.size());
      n_logits += it.n_logits;
    }
    // State growth first: KV blocks for the new tokens.
    for (const auto& it : step) {
      auto* st = static_cast<FakeState*>(it.state);
      int64_t need = st->tokens_ + static_cast<int64_t>(it.tokens.size());
      while (static_cast<int64_t>(st->blocks_.size()) * s_.block_tokens < need)
        st->blocks_.push_back(pool_.allocate(s_.block_tokens * s_.per_token, "fake kv block"));
    }
    Allocation fixed = pool_.allocate(s_.fixed_transient, "fake step scratch");
    note();
    int64_t act = static_cast<int64_t>(static_cast<double>(s_.act_per_token * n) * s_.use_fraction);
    Allocation a, b;  // the last layer's activations stay alive while the logits are computed
    for (int layer = 0; layer < s_.layers; ++layer) {
      a.reset();
      b.reset();
      a = pool_.allocate(act / 2, "fake activation a");
      b = pool_.allocate(act - act / 2, "fake activation b");
      note();
      bool all_cancelled = true;
      for (const auto& it : step) all_cancelled = all_cancelled && it.cancelled && it.cancelled->load();
      if (all_cancelled) throw_error(ErrorCode::cancelled, "cancelled");
      if (layer == 1 && s_.recurrent) update(step);
    }
    Tensor logits = Tensor::empty(pool_, DType::f32, {n_logits, s_.vocab}, "fake logits");
    note();
    if (!s_.recurrent) update(step);  // a state that survives failures advances only once nothing can fail
    int64_t row = 0;
    for (const auto& it : step) {
      if (it.n_logits == 0) continue;
      auto* st = static_cast<FakeState*>(it.state);
      float* r = logits.ptr<float>() + row++ * s_.vocab;
      for (int64_t v = 0; v < s_.vocab; ++v) r[v] = 0.f;
      r[next_token(st->hash_, s_.vocab)] = 5.f;
    }
    return logits;
  }

  static int32_t next_token(uint64_t hash, int64_t vocab) {
    return static_cast<int32_t>((hash >> 17) % vocab);
  }

  // The tokens a request must produce: greedy over the hash chain, until a stop token, max_new or the context
  // end.
  static std::vector<int32_t> expected_output(const std::vector<int32_t>& prompt, int64_t max_new,
                                              const std::vector<int32_t>& stops, int64_t ctx, int64_t vocab) {
    uint64_t h = 1;
    for (int32_t t : prompt) h = mix(h, t);
    std::vector<int32_t> out;
    int64_t total = static_cast<int64_t>(prompt.size());
    while (true) {
      int32_t t = next_token(h, vocab);
      out.push_back(t);
      ++total;
      if (std::find(stops.begin(), stops.end(), t) != stops.end()) break;
      if (static_cast<int64_t>(out.size()) >= max_new || total >= ctx) break;
      h = mix(h, t);
    }
    return out;
  }

  int64_t max_in_use_seen = 0;

 private:
  void update(std::span<const StepItem> step) {
    for (const auto& it : step) {
      auto* st = static_cast<FakeState*>(it.state);
      for (int32_t t : it.tokens) {
        st->hash_ = mix(st->hash_, t);
        st->history_.push_back(st->hash_);
      }
      st->tokens_ += static_cast<int64_t>(it.tokens.size());
    }
  }
  void note() { max_in_use_seen = std::max(max_in_use_seen, pool_.in_use()); }
  MemoryPool& pool_;
  FakeSizes s_;
  std::string type_ = "fake";
};

// Greedy chooser: argmax of the row.
class GreedyChooser final : public TokenChooser {
 public:
  GeneratedToken choose(std::span<const float> logits, std::span<const int32_t>) override {
    GeneratedToken t;
    t.id = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    return t;
  }
};

// Records what the engine said to one request.
class RecordingSink final : public RequestSink {
 public:
  bool on_token(const GeneratedToken& t) override {
    tokens.push_back(t.id);
    return true;
  }
  void on_finish(FinishReason r, const Error* e) override {
    ++finishes;
    reason = r;
    if (e) {
      error_code = e->code();
      error_message = e->what();
    }
  }
  std::vector<int32_t> tokens;
  int finishes = 0;
  FinishReason reason = FinishReason::error;
  std::optional<ErrorCode> error_code;
  std::string error_message;
};

}  // namespace keel::testing
