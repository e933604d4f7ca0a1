// DecoderModel: the Model every model_type builds. A model file binds its weights and composes blocks into
// layers; this class runs them eagerly with explicit lifetimes:
//
//   hidden [T, d] = embed(tokens of every item, concatenated)
//   for each layer, for each residual part:  hidden += block(rms_norm(hidden) · w)      (intermediates freed
//   here) logits [L, V] = lm_head(rms_norm(rows of hidden that need logits) · w_final)       (L = Σ n_logits,
//   never T×V)
//
// and states its memory up front: state_bytes = Σ blocks' cache bytes for the capacity (KV for the whole
// capacity at new_state); step_transient_bytes replays forward()'s allocations in order (MemPlan).
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/weight.h"
#include "models/blocks/block.h"
#include "models/blocks/rope.h"
#include "models/model.h"
#include "ops/norm.h"

namespace keel::models {

// hidden += block(rms_norm(hidden) · norm)
struct Residual {
  Tensor norm;  // [d]
  std::unique_ptr<Block> block;
};

struct DecoderLayer {
  std::vector<Residual> parts;  // nemotron_h: one (its mixer); llama/qwen: attention, then MLP
};

struct DecoderSpec {
  std::string model_type;
  int64_t hidden = 0;
  int64_t vocab = 0;          // rows of embed and lm_head (padding included)
  int64_t context_limit = 0;  // max_position_embeddings; 0: unbounded
  ops::RmsNormParams norm;    // every RMSNorm of the residual stream (eps, w or 1 + w)
  Weight embed;               // [vocab, d]
  Tensor final_norm;          // [d]
  Weight lm_head;             // [vocab, d]; the embedding itself when tied
  std::optional<RopeTable> rope;
};

// A sequence's state: one LayerCache per residual part (empty for stateless blocks), from the pool.
// Models with recurrent layers may keep checkpoints: copies of every conv and recurrent state at an earlier
// token count (ascending), so the state can be cut back there (KV rows past it are simply forgotten).
class DecoderState final : public SequenceState {
 public:
  int64_t tokens() const override { return tokens_; }
  int64_t bytes() const override { return bytes_ + checkpoint_bytes_; }
  int64_t checkpoint_bytes() const override { return checkpoint_bytes_; }
  int64_t capacity() const override { return capacity_; }

 private:
  friend class DecoderModel;
  struct Checkpoint {
    int64_t tokens = 0;
    int64_t bytes = 0;
    std::vector<Tensor> conv, recurrent;  // per residual part; undefined where the part has none
  };
  int64_t tokens_ = 0;
  int64_t bytes_ = 0;
  int64_t capacity_ = 0;
  std::vector<LayerCache> caches;
  std::vector<Checkpoint> checkpoints_;
  int64_t checkpoint_bytes_ = 0;
};

class DecoderModel final : public Model {
 public:
  DecoderModel(Backend& be, DecoderSpec spec, std::vector<DecoderLayer> layers);

  const std::string& model_type() const override { return spec_.model_type; }
  int64_t vocab_size() const override { return spec_.vocab; }
  int64_t context_limit() const override { return spec_.context_limit; }
  int64_t state_bytes(int64_t tokens, int64_t capacity) const override;
  int64_t step_transient_bytes(std::span<const StepShapeItem> step) const override;
  std::unique_ptr<SequenceState> new_state(int64_t capacity) override;
  Tensor forward(std::span<const StepItem> step) override;
  bool state_survives_failed_step() const override { return !recurrent_; }
  std::unique_ptr<SequenceState> copy_state(const SequenceState& state, int64_t capacity) override;
  bool can_truncate_states() const override { return !recurrent_; }
  bool truncate_state(SequenceState& state, int64_t tokens) override;
  bool checkpoint_state(SequenceState& state) override;
  int64_t truncation_point(const SequenceState& state, int64_t tokens) const override;
  int64_t drop_checkpoints(SequenceState& state) override;
  bool restore_checkpoint(SequenceState& state) override;
  static constexpr size_t kMaxCheckpoints = 8;  // per state, the newest kept

  std::span<const float> host_logits(const Tensor& logits, std::vector<float>& buffer) const override;
  int64_t num_layers() const { return static_cast<int64_t>(layers_.size()); }
  Backend& backend() const { return be_; }
  // The model's backend, on every device: a GPU samples its own logits rows (only the chosen tokens cross).
  Backend* sampling_backend() const override;
  // Test hook: called with the residual stream [T, d] after the embedding (index 0) and after layer i (i +
  // 1).
  void set_hidden_observer(std::function<void(int64_t, const Tensor&)> fn) { observer_ = std::move(fn); }

 private:
  void restore_to(DecoderState& st, size_t checkpoint);
  void copy_contents(const Tensor& from, Tensor& to);
  Backend& be_;
  DecoderSpec spec_;
  std::vector<DecoderLayer> layers_;
  size_t n_parts_ = 0;
  bool recurrent_ = false;
  std::function<void(int64_t, const Tensor&)> observer_;
};

}  // namespace keel::models
