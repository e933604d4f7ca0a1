// Feed-forward block. Gated (llama, qwen3: down(act(gate(x)) ⊙ up(x))) or plain (nemotron_h:
// down(act(up(x))), relu² with no gate projection), biases per the config's mlp_bias.
#pragma once
#include <cstdint>
#include <string_view>

#include "models/blocks/block.h"
#include "models/weights.h"
#include "ops/activation.h"

namespace keel::models {

// transformers' ACT2FN names the models use → the op; Error(unsupported) naming `where` otherwise.
ops::Activation activation_from_name(std::string_view name, std::string_view where);

struct MlpWeights {
  Linear gate;  // [I, d]; undefined w for a plain MLP
  Linear up;    // [I, d]
  Linear down;  // [d, I]
};

// Binds gate_proj (when `gated`), up_proj and down_proj under `w`'s prefix.
MlpWeights bind_mlp(const WeightBinder& w, int64_t hidden, int64_t intermediate, bool gated, bool bias);

class MlpBlock final : public Block {
 public:
  MlpBlock(MlpWeights weights, ops::Activation act);
  void forward(const StepContext& ctx, size_t slot, const Tensor& x, Tensor& out) const override;
  int64_t transient_bytes(const StepShape& s) const override;

 private:
  bool gated() const { return w_.gate.w.defined() && w_.gate.w.data.numel() > 0; }
  MlpWeights w_;
  ops::Activation act_;
};

}  // namespace keel::models
