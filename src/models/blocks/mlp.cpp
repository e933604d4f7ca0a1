#include "models/blocks/mlp.h"

#include "core/error.h"

namespace keel::models {

ops::Activation activation_from_name(std::string_view name, std::string_view where) {
  if (name == "silu" || name == "swish") return ops::Activation::silu;
  if (name == "relu2") return ops::Activation::relu2;
  if (name == "gelu") return ops::Activation::gelu_erf;
  if (name == "gelu_pytorch_tanh" || name == "gelu_new") return ops::Activation::gelu_tanh;
  throw_error(ErrorCode::unsupported,
              "{}: activation \"{}\" is not supported (silu, relu2, gelu, gelu_pytorch_tanh)", where, name);
}

MlpWeights bind_mlp(const WeightBinder& w, int64_t hidden, int64_t intermediate, bool gated, bool bias) {
  MlpWeights m;
  if (gated) m.gate = w.linear("gate_proj", intermediate, hidden, bias);
  m.up = w.linear("up_proj", intermediate, hidden, bias);
  m.down = w.linear("down_proj", hidden, intermediate, bias);
  return m;
}

MlpBlock::MlpBlock(MlpWeights weights, ops::Activation act) : w_(std::move(weights)), act_(act) {}

void MlpBlock::forward(const StepContext& ctx, size_t, const Tensor& x, Tensor& out) const {
  Backend& be = *ctx.be;
  const int64_t T = ctx.T, I = w_.up.out();
  Tensor h = Tensor::empty(ctx.pool(), DType::f32, {T, I}, gated() ? "mlp gate" : "mlp up");
  if (gated()) {
    linear(be, w_.gate, x, h);
    Tensor up = Tensor::empty(ctx.pool(), DType::f32, {T, I}, "mlp up");
    linear(be, w_.up, x, up);
    ops::activation_mul(be, h, up, h, act_);
  } else {
    linear(be, w_.up, x, h);
    ops::activation(be, h, h, act_);
  }
  linear(be, w_.down, h, out);
}

int64_t MlpBlock::transient_bytes(const StepShape& s) const {
  const int64_t hb = f32_bytes(s.T * w_.up.out());
  MemPlan m;
  m.alloc(hb);
  if (gated()) {
    m.workspace(linear_workspace_bytes(*s.be, w_.gate, s.T));
    m.alloc(hb);
    m.workspace(linear_workspace_bytes(*s.be, w_.up, s.T));
    m.free(hb);
  } else {
    m.workspace(linear_workspace_bytes(*s.be, w_.up, s.T));
  }
  m.workspace(linear_workspace_bytes(*s.be, w_.down, s.T));
  return m.peak();
}

}  // namespace keel::models
