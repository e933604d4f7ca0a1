// The interface between a model (src/models/<model_type>.cpp) and the engine. A model states its memory
// before it is used — persistent state per sequence and per token, and the transient bytes of any step — and
// runs steps of any mix of prefill chunks and decode tokens. The engine's scheduler alone decides what runs;
// a model never keeps memory it did not declare.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace keel {

class Backend;

// A sequence's persistent state (KV cache rows, conv/SSM/DeltaNet states), owned by the engine, allocated
// from the model's pool. Opaque to the engine beyond these questions.
class SequenceState {
 public:
  virtual ~SequenceState() = default;
  // Tokens whose effect is in the state.
  virtual int64_t tokens() const = 0;
  // Bytes this state holds in the pool now, its checkpoints included.
  virtual int64_t bytes() const = 0;
  // Of bytes(), those of checkpoints (Model::checkpoint_state): not part of state_bytes(tokens, capacity).
  virtual int64_t checkpoint_bytes() const { return 0; }
  // Tokens this state can hold (its KV rows); the engine reuses a cached state only for a sequence that fits.
  virtual int64_t capacity() const { return std::numeric_limits<int64_t>::max(); }
};

// One sequence's share of a step: `tokens` continue the sequence at position state->tokens().
struct StepItem {
  SequenceState* state = nullptr;
  std::span<const int32_t> tokens;
  // Logits wanted for the last `n_logits` of these tokens (0 for a prefill chunk that is not the prompt's
  // end; 1 for decode and the prompt's last chunk; more for prompt logprobs / perplexity).
  int64_t n_logits = 1;
  // The request's cancel flag. The model checks it between layers and throws Error(cancelled) when every item
  // of the step is cancelled (a step shared with live sequences runs to its end; the engine drops the rest).
  const std::atomic<bool>* cancelled = nullptr;
};

// The shape of a step, all the planner needs: per item (n_tokens, tokens already in state, n_logits).
struct StepShapeItem {
  int64_t n_tokens = 0;
  int64_t past_tokens = 0;
  int64_t n_logits = 0;
};

class Model {
 public:
  virtual ~Model() = default;
  virtual const std::string& model_type() const = 0;
  virtual int64_t vocab_size() const = 0;     // logits per row (the config's vocab, padding included)
  virtual int64_t context_limit() const = 0;  // max_position_embeddings or equivalent; 0 when unbounded

  // Persistent state of one sequence created for `capacity` tokens and holding `tokens` of them, bytes:
  // per-sequence parts (SSM/conv/DeltaNet) plus per-token parts (KV rows). A model that allocates its KV for
  // the whole capacity up front returns the same number for every `tokens`; one that grows returns it per
  // token, rounded up to its allocation granularity.
  virtual int64_t state_bytes(int64_t tokens, int64_t capacity) const = 0;
  // Transient bytes the model allocates from its pool while running a step of this shape (activations, op
  // workspaces, logits). Closed form; the pool's measured peak over the step must not exceed it.
  virtual int64_t step_transient_bytes(std::span<const StepShapeItem> step) const = 0;

  // An empty state (0 tokens) for a sequence of at most `capacity` tokens, from the pool. Throws
  // Error(out_of_memory) when the pool refuses.
  virtual std::unique_ptr<SequenceState> new_state(int64_t capacity) = 0;
  // Runs one step and returns the logits: f32 [sum(n_logits), vocab_size()], rows in item order, allocated
  // from the pool (part of the step's planned transient; the caller drops it after sampling). Throws
  // Error(out_of_memory) when an allocation is refused: then a state whose sequence took part may be
  // partially updated and must be discarded (see state_survives_failed_step).
  virtual Tensor forward(std::span<const StepItem> step) = 0;
  // The rows of forward()'s logits as host floats: the tensor itself when the host can read it in place,
  // else a copy in `buffer` (a device's logits cross to the host here, once per step).
  virtual std::span<const float> host_logits(const Tensor& logits, std::vector<float>& buffer) const {
    (void)buffer;
    return {logits.ptr<float>(), static_cast<size_t>(logits.numel())};
  }
  // The backend that holds forward()'s logits and samples them (ops::sample_rows: the step's prepared rows
  // are sampled there, and only the chosen tokens cross to the host); nullptr when the model has none (test
  // fakes), and then every token is chosen on the host from host_logits(). Owned by the model's loader.
  virtual Backend* sampling_backend() const { return nullptr; }
  // True when a failed step leaves every state as it was (pure-attention models: rows past tokens() are
  // ignored, and tokens() advances only after the last allocation of the step has succeeded). False for
  // recurrent layers updated in place: the engine then re-prefills the sequences of a failed step.
  virtual bool state_survives_failed_step() const = 0;

  // For the prompt cache. A deep copy of `state` (same tokens, no checkpoints) from the pool, for `capacity`
  // tokens (0: the same capacity; else at least state.tokens()); nullptr when this model cannot copy its
  // states. Throws Error(out_of_memory) when the pool refuses.
  virtual std::unique_ptr<SequenceState> copy_state(const SequenceState& state, int64_t capacity = 0) {
    (void)state, (void)capacity;
    return nullptr;
  }
  // Whether truncate_state can cut states back (attention-only models); recurrent layers cannot.
  virtual bool can_truncate_states() const { return false; }
  // Cuts the state back to its first `tokens` tokens (KV rows past them are forgotten). Returns false,
  // leaving the state unchanged, when it cannot be cut there (recurrent layers keep no history: only back to
  // a checkpoint).
  virtual bool truncate_state(SequenceState& state, int64_t tokens) {
    (void)state, (void)tokens;
    return false;
  }
  // Checkpoints, for models whose states cannot be cut back anywhere: keeps a copy of what cannot be cut back
  // (conv and recurrent states) at the state's current tokens(), from the pool and counted in its bytes(), so
  // that truncate_state can return there later. A state keeps its newest few. Returns false when the model
  // needs or has none; throws Error(out_of_memory) when the pool refuses (the state is unchanged).
  virtual bool checkpoint_state(SequenceState& state) {
    (void)state;
    return false;
  }
  // The largest n ≤ `tokens` that truncate_state(state, n) accepts; 0 when there is none.
  virtual int64_t truncation_point(const SequenceState& state, int64_t tokens) const {
    if (can_truncate_states()) return std::min(tokens, state.tokens());
    return tokens >= state.tokens() ? state.tokens() : 0;
  }
  // After a failed step left a recurrent state half-updated: puts it back to its newest checkpoint (states
  // and tokens()). Returns false, leaving it as it is, when it has none.
  virtual bool restore_checkpoint(SequenceState& state) {
    (void)state;
    return false;
  }
  // Frees the state's checkpoints (memory pressure); the bytes freed.
  virtual int64_t drop_checkpoints(SequenceState& state) {
    (void)state;
    return 0;
  }
};

}  // namespace keel
