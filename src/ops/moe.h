// Mixture-of-experts block: router, top-k, experts grouped by token, shared expert. Two families:
//
// nemotron_h (MoeRouter::sigmoid_grouped, MoeActivation::relu2), NemotronHMoE.route_tokens_to_experts:
//   s = sigmoid(logits) (fp32); choice = s + e_score_correction_bias; each of n_group groups scores the sum
//   of its two best choices; the topk_group best groups stay; top_k experts by choice among them; weights are
//   the UNBIASED s of the chosen experts, divided by (their sum + 1e-20) when norm_topk_prob, ×
//   routed_scaling_factor. Experts and shared expert: down(relu(up(x))²).
// qwen3_5_moe (MoeRouter::softmax_topk, MoeActivation::swiglu), Qwen3_5MoeTopKRouter + SparseMoeBlock:
//   p = softmax(logits) (fp32); top_k by p; weights p / Σ_k p — always renormalized (the reference has no
//   norm_topk_prob switch; the flag is ignored here). Experts: down(silu(gate(x)) ⊙ up(x)); the shared
//   expert's output is scaled by sigmoid(shared_expert_gate(x)).
// out = Σ_k weight_k · expert_k(x) + shared(x), experts summed in ascending expert index.
//
// Tokens are grouped by expert within the step on the backend (Backend::moe_group: for each expert, the
// (token, slot) pairs that chose it, tokens ascending), each expert matrix of every expert is one backend
// call over its grouped rows (Backend::grouped_matmul: one launch per matrix per layer on a device), and
// Backend::moe_combine adds each token's k outputs into out. Nothing crosses to the host. Batch invariant on
// the CPU: a token's output depends only on its own row (matmul is row-invariant; its experts are summed in
// a fixed order). Variants with
// moe_latent_size compose moe_route + moe_experts around their latent projections.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "backend/backend.h"
#include "core/tensor.h"
#include "core/weight.h"

namespace keel::ops {

enum class MoeRouter { sigmoid_grouped, softmax_topk };
enum class MoeActivation { relu2, swiglu };

struct MoeParams {
  MoeRouter router = MoeRouter::softmax_topk;
  MoeActivation activation = MoeActivation::swiglu;
  int64_t top_k = 1;                    // num_experts_per_tok
  int64_t n_group = 1, topk_group = 1;  // sigmoid_grouped only
  bool norm_topk_prob = true;           // sigmoid_grouped only
  float routed_scaling_factor = 1.0f;   // sigmoid_grouped only
};

// Matrices are Weights (core/weight.h: dense f32/bf16/f16 as stored, or packed) in HF layout [out, in]. Fused
// 3-D expert tensors [E, out, in] pass as per-expert views (w.select(e); a fused gate_up [E, 2I, H] as
// .slice_rows(0, I) and .slice_rows(I, I)). Every expert's up and gate share one format, every down one
// (possibly another); each shared-expert matrix and the router may have its own.
struct MoeWeights {
  Weight router;             // [E, H] gate.weight
  Tensor router_bias;        // [E] e_score_correction_bias (f32/bf16/f16) or undefined
  std::vector<Weight> up;    // E × [I, H]
  std::vector<Weight> gate;  // E × [I, H] for swiglu, empty for relu2
  std::vector<Weight> down;  // E × [H, I]
  Weight shared_up, shared_gate,
      shared_down;            // [Is, H], [Is, H] (swiglu), [H, Is]; undefined: no shared expert
  Weight shared_expert_gate;  // [1, H] or undefined (qwen3_5_moe's sigmoid gate)
};

// Router only: logits [T, E] f32 → expert indices [T, top_k] i32 and weights [T, top_k] f32 (per the family).
// Slots in descending selection score (ties: lower expert index). Workspace: the bias widened to f32.
void moe_route(Backend& be, const Tensor& logits, const Tensor& router_bias, const MoeParams& p,
               Tensor& indices, Tensor& weights);

// Experts only: out[T, H] += Σ_k weights[t,k] · expert_{indices[t,k]}(x[t]) (out is accumulated into, not
// reset).
void moe_experts(Backend& be, const Tensor& x, const Tensor& indices, const Tensor& weights,
                 const MoeWeights& w, MoeActivation activation, Tensor& out);

// The whole block: x [T, H] f32 → out [T, H] f32 (written).
void moe(Backend& be, const Tensor& x, const MoeWeights& w, const MoeParams& p, Tensor& out);

// Sizes the plans need; `weight_dtype` is the experts' format (router and shared expert: router_dtype,
// shared_dtype).
struct MoeShape {
  int64_t T = 0, H = 0, E = 0, top_k = 1, I = 0, Is = 0;  // Is = 0: no shared expert
  bool swiglu = true, shared_gate = false, router_bias = false;
  WeightFormat router_dtype = DType::f32, weight_dtype = DType::f32, shared_dtype = DType::f32;
  // Where a role's format differs from weight_dtype (experts' down_proj) or shared_dtype (the shared expert's
  // down_proj, its sigmoid gate) — MLX folders quantize only matrices whose input is a multiple of the group
  // size, and per-module entries give others their own width: nullopt = the same.
  std::optional<WeightFormat> down_dtype, shared_down_dtype, shared_expert_gate_dtype;
};

// Bytes moe_experts / moe take from the pool, exactly in the worst case of the routing (every matmul's panel
// workspace counted for T rows; the pool measures less when no expert gets enough tokens to widen panels).
// The largest single allocations are the grouped rows, R = T·top_k: hidden [R, (1 + swiglu)·I] and expert
// outputs [R, H] floats; the total is bounded by R × ((1 + swiglu)·I + H) floats plus the routing arrays and
// the grouped matmuls' workspace (backend's: a gather of T rows on the host), independent of the prompt.
// All three ask `be` (the backend's matmul and routing workspace).
int64_t moe_route_workspace_bytes(const Backend& be, int64_t T, int64_t E, bool router_bias);
int64_t moe_experts_workspace_bytes(const Backend& be, const MoeShape& s);
int64_t moe_workspace_bytes(const Backend& be, const MoeShape& s);

}  // namespace keel::ops
