// Mixture-of-experts block around ops::moe (router, top-k, experts grouped by token, shared expert): the
// model file binds the weights by its family's names and picks the router and activation (ops/moe.h has both
// families).
#pragma once
#include <cstdint>

#include "models/blocks/block.h"
#include "ops/moe.h"

namespace keel::models {

class MoeBlock final : public Block {
 public:
  MoeBlock(ops::MoeWeights weights, const ops::MoeParams& params);
  void forward(const StepContext& ctx, size_t slot, const Tensor& x, Tensor& out) const override;
  int64_t transient_bytes(const StepShape& s) const override;

 private:
  ops::MoeWeights w_;
  ops::MoeParams p_;
  ops::MoeShape shape_;  // T filled per step
};

}  // namespace keel::models
