// Host-side sampling over rows of logits in host memory (the CPU and reference backends' sample_rows, and
// ops::sample): penalties, top-k, top-p, min-p, temperature, the draw. Candidates are (logit, id); ties in
// any ordering break toward the lower id, so results are reproducible. In keel_backend (the CPU backend
// runs it); ops/sampling.cpp calls it too.
#pragma once
#include <cstdint>

#include "backend/kernel_args.h"

namespace keel::sampling_host {

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

// The draw over cand[0, count) (filter_candidates' survivors, in the order it left them): the first
// candidate whose running sum of weights at `temperature` (max_logit: their best) exceeds uniform · total;
// the last one when rounding leaves none.
int32_t draw(const Candidate* cand, int64_t count, float temperature, double uniform);

// SampleRowsArgs (kernel_args.h) row by row on the calling thread, every pointer in host memory.
// `workspace`: sample_rows_workspace(a) bytes (4-byte aligned): candidates V × 8, the biased row V × 4
// (when n_bias > 0), the sorted history max_history × 4, the top_logprobs heap max_top × 8.
void sample_rows(const SampleRowsArgs& a, void* workspace);
int64_t sample_rows_workspace(const SampleRowsArgs& a);

}  // namespace keel::sampling_host
