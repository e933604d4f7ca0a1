// The TokenChooser the CLI and the server give a request: ops::sample (penalties → top-k → top-p → min-p →
// temperature, llama.cpp's order; temperature 0 is greedy) with the request's seeded RNG.
// Reported logprobs are the model's own (log-softmax of the raw logits, as vLLM's default "raw_logprobs"),
// for the chosen token and the `top_logprobs` best alternatives.
#pragma once
#include <cstdint>
#include <memory>

#include "backend/backend.h"
#include "engine/request.h"
#include "ops/sampling.h"

namespace keel {

struct SamplerConfig {
  ops::SamplingParams params;  // temperature 0: greedy
  uint64_t seed = 0;
  int top_logprobs = 0;  // alternatives reported per token
};

// `be` runs the sampling ops (its pool holds their small workspaces) and must outlive the chooser.
std::unique_ptr<TokenChooser> make_sampler(Backend& be, const SamplerConfig& config);

}  // namespace keel
