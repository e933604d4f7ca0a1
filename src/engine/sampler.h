// The TokenChooser the CLI and the server give a request: ops::sample_rows (logit_bias, then penalties →
// top-k → top-p → min-p → temperature, llama.cpp's order; temperature 0 is greedy) with the request's seeded
// RNG, one uniform per sampled token. prepare() hands the row to the scheduler, which samples it on the
// model's backend (a device samples its own logits); choose() samples a host row on `be`.
// Reported logprobs are the model's own (log-softmax of the raw logits, as vLLM's default "raw_logprobs"),
// for the chosen token and the `top_logprobs` best alternatives.
#pragma once
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "engine/request.h"
#include "ops/sampling.h"

namespace keel {

struct SamplerConfig {
  ops::SamplingParams params;  // temperature 0: greedy
  uint64_t seed = 0;
  int top_logprobs = 0;  // alternatives reported per token
  // Added to the logits row before sampling (token id, bias in [−100, 100]); −100 bans the token (its logit
  // becomes −inf). Reported logprobs stay the model's own. Ids must be inside the vocabulary.
  std::vector<std::pair<int32_t, float>> logit_bias;
};

// `be` (host-addressable: CPU) samples the rows given to choose() (its pool holds their workspace) and must
// outlive the chooser; rows the scheduler samples through prepare() run on the model's backend instead.
std::unique_ptr<TokenChooser> make_sampler(Backend& be, const SamplerConfig& config);

}  // namespace keel
