#include "models/blocks/moe.h"

namespace keel::models {

MoeBlock::MoeBlock(ops::MoeWeights weights, const ops::MoeParams& params)
    : w_(std::move(weights)), p_(params) {
  const bool swiglu = p_.activation == ops::MoeActivation::swiglu;
  shape_.H = w_.router.cols();
  shape_.E = w_.router.rows();
  shape_.top_k = p_.top_k;
  shape_.I = w_.up.empty() ? 0 : w_.up[0].rows();
  shape_.Is = w_.shared_up.defined() ? w_.shared_up.rows() : 0;
  shape_.swiglu = swiglu;
  shape_.shared_gate = w_.shared_expert_gate.defined();
  shape_.router_bias = w_.router_bias.defined();
  shape_.router_dtype = w_.router;
  shape_.weight_dtype = w_.up.empty() ? WeightFormat(DType::f32) : WeightFormat(w_.up[0]);
  shape_.shared_dtype = w_.shared_up.defined() ? WeightFormat(w_.shared_up) : WeightFormat(DType::f32);
  if (!w_.down.empty()) shape_.down_dtype = WeightFormat(w_.down[0]);
  if (w_.shared_down.defined()) shape_.shared_down_dtype = WeightFormat(w_.shared_down);
  if (w_.shared_expert_gate.defined()) shape_.shared_expert_gate_dtype = WeightFormat(w_.shared_expert_gate);
}

void MoeBlock::forward(const StepContext& ctx, size_t, const Tensor& x, Tensor& out) const {
  ops::moe(*ctx.be, x, w_, p_, out);
}

int64_t MoeBlock::transient_bytes(const StepShape& s) const {
  ops::MoeShape shape = shape_;
  shape.T = s.T;
  return ops::moe_workspace_bytes(*s.be, shape);
}

}  // namespace keel::models
