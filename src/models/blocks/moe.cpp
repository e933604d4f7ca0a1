#include "models/blocks/moe.h"

namespace keel::models {

MoeBlock::MoeBlock(ops::MoeWeights weights, const ops::MoeParams& params)
    : w_(std::move(weights)), p_(params) {
  const bool swiglu = p_.activation == ops::MoeActivation::swiglu;
  shape_.H = w_.router.dim(1);
  shape_.E = w_.router.dim(0);
  shape_.top_k = p_.top_k;
  shape_.I = w_.up.empty() ? 0 : w_.up[0].dim(0);
  shape_.Is = w_.shared_up.defined() ? w_.shared_up.dim(0) : 0;
  shape_.swiglu = swiglu;
  shape_.shared_gate = w_.shared_expert_gate.defined();
  shape_.router_bias = w_.router_bias.defined();
  shape_.router_dtype = w_.router.dtype();
  shape_.weight_dtype = w_.up.empty() ? DType::f32 : w_.up[0].dtype();
  shape_.shared_dtype = w_.shared_up.defined() ? w_.shared_up.dtype() : DType::f32;
}

void MoeBlock::forward(const StepContext& ctx, size_t, const Tensor& x, Tensor& out) const {
  ops::moe(*ctx.be, x, w_, p_, out);
}

int64_t MoeBlock::transient_bytes(const StepShape& s) const {
  ops::MoeShape shape = shape_;
  shape.T = s.T;
  return ops::moe_workspace_bytes(shape, s.n_threads);
}

}  // namespace keel::models
