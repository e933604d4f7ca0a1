// Elementwise activations, softmax and the elementwise add/mul the models need. All f32, any rank 1–4 with a
// contiguous last dimension; outputs have the inputs' shape and may be the same tensor as an input (in
// place). No workspace. Results do not depend on T or the thread split.
#pragma once
#include <cstdint>

#include "backend/backend.h"
#include "core/tensor.h"

namespace keel::ops {

// silu, sigmoid, relu2, gelu_erf, gelu_tanh, softplus (backend/kernel_args.h states each formula).
using keel::Activation;

// out = f(x).
void activation(Backend& be, const Tensor& x, Tensor& out, Activation f);
// out = f(gate) · up, e.g. SwiGLU: silu(gate_proj(x)) · up_proj(x).
void activation_mul(Backend& be, const Tensor& gate, const Tensor& up, Tensor& out, Activation f);
// out = softmax of x over its last dimension (max-subtracted).
void softmax(Backend& be, const Tensor& x, Tensor& out);
// out = a + b, out = a · b (same shapes).
void add(Backend& be, const Tensor& a, const Tensor& b, Tensor& out);
void mul(Backend& be, const Tensor& a, const Tensor& b, Tensor& out);

constexpr int64_t activation_workspace_bytes() {
  return 0;
}
constexpr int64_t softmax_workspace_bytes() {
  return 0;
}

}  // namespace keel::ops
