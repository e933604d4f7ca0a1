// Host-side sampling over one row of logits in host memory (CPU and reference backends): penalties, top-k,
// top-p, min-p, temperature, the draw. Candidates are (logit, id); ties in any ordering break toward the
// lower id, so results are reproducible.
#pragma once
#include <cstdint>
#include <random>

namespace keel::ops::host {

struct Candidate {
  float logit;
  int32_t id;
};

// Ordering for "best first": higher logit, then lower id.
inline bool better(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

struct SamplerConfig {
  float temperature = 1.0f;
  int32_t top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.0f;
  float repetition_penalty = 1.0f;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
};

// The k best of n logits, best first, into heap[0, k) (k ≤ n).
void top_k_row(const float* logits, int64_t n, int64_t k, Candidate* heap);

// Runs the filters in llama.cpp's order — penalties (over the sorted `history`, which is clobbered: caller's
// scratch), top-k, top-p, min-p — and returns how many candidates survive at the front of `cand` (filled here
// from the n logits). Temperature ≤ 0 keeps only the best one. Afterwards cand[0, count) hold the penalized
// logits, best first when sorted (`*sorted` says whether they are).
int64_t filter_candidates(const float* logits, int64_t n, int32_t* history, int64_t history_len,
                          const SamplerConfig& c, Candidate* cand, bool* sorted);

// Unnormalized probability of a candidate at `temperature`, in double: exp((l − max_logit) / temperature).
double candidate_weight(const Candidate& c, float max_logit, float temperature);

}  // namespace keel::ops::host
