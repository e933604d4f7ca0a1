// Plain float64 reference of ops::moe_route and ops::moe: sorts and loops, no grouping of tokens.
#pragma once
#include <cstdint>
#include <vector>

namespace keel::ref {

struct MoeConfig {
  bool sigmoid_grouped = false;  // nemotron_h router (else qwen3_5_moe softmax router)
  bool swiglu = true;            // silu(gate)·up experts (else relu² up/down)
  int64_t top_k = 1, n_group = 1, topk_group = 1;
  bool norm_topk_prob = true;
  double scaling = 1.0;
};

struct MoeRouting {
  std::vector<int64_t> indices;  // [T, top_k], best first
  std::vector<double> weights;   // [T, top_k]
  // [T]: the smallest gap between a kept and a dropped candidate (group or expert) at any selection step; a
  // float computation may choose differently where this is below its rounding.
  std::vector<double> margin;
};

// logits [T, E]; bias [E] or empty.
MoeRouting moe_route(const MoeConfig& c, int64_t T, int64_t E, const std::vector<double>& logits,
                     const std::vector<double>& bias);

struct MoeWeightsRef {
  int64_t E = 0, I = 0, Is = 0;                     // Is = 0: no shared expert
  std::vector<double> router, bias;                 // [E, H], [E] or empty
  std::vector<std::vector<double>> up, gate, down;  // E × [I, H], [I, H], [H, I]
  std::vector<double> shared_up, shared_gate, shared_down,
      shared_expert_gate;  // [Is,H] [Is,H] [H,Is] [H] or empty
};

// x [T, H] → out [T, H]; `routing` receives the routing the reference used.
std::vector<double> moe(const MoeConfig& c, int64_t T, int64_t H, const MoeWeightsRef& w,
                        const std::vector<double>& x, MoeRouting* routing);

}  // namespace keel::ref
