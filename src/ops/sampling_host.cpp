#include "ops/sampling_host.h"

#include <algorithm>
#include <cmath>

namespace keel::ops::host {

void top_k_row(const float* logits, int64_t n, int64_t k, Candidate* heap) {
  // heap[0, size) is a heap whose top is the worst kept candidate.
  int64_t size = 0;
  for (int64_t i = 0; i < n; ++i) {
    Candidate c{logits[i], static_cast<int32_t>(i)};
    if (size < k) {
      heap[size++] = c;
      std::push_heap(heap, heap + size, better);
    } else if (better(c, heap[0])) {
      std::pop_heap(heap, heap + size, better);
      heap[size - 1] = c;
      std::push_heap(heap, heap + size, better);
    }
  }
  std::sort_heap(heap, heap + size, better);
}

double candidate_weight(const Candidate& c, float max_logit, float temperature) {
  return std::exp((static_cast<double>(c.logit) - max_logit) / temperature);
}

namespace {

// Penalties on cand (still indexed by id): HF repetition penalty (divide positive logits, multiply the
// others) once per distinct token, then OpenAI presence (once) and frequency (per occurrence).
void apply_penalties(Candidate* cand, int32_t* history, int64_t len, const SamplerConfig& c) {
  if (len == 0 || (c.repetition_penalty == 1.0f && c.presence_penalty == 0.0f && c.frequency_penalty == 0.0f))
    return;
  std::sort(history, history + len);
  for (int64_t i = 0; i < len;) {
    int64_t j = i;
    while (j < len && history[j] == history[i]) ++j;
    float& l = cand[history[i]].logit;
    if (c.repetition_penalty != 1.0f) l = l > 0 ? l / c.repetition_penalty : l * c.repetition_penalty;
    l -= c.presence_penalty + c.frequency_penalty * static_cast<float>(j - i);
    i = j;
  }
}

}  // namespace

int64_t filter_candidates(const float* logits, int64_t n, int32_t* history, int64_t history_len,
                          const SamplerConfig& c, Candidate* cand, bool* sorted) {
  for (int64_t i = 0; i < n; ++i) cand[i] = {logits[i], static_cast<int32_t>(i)};
  apply_penalties(cand, history, history_len, c);
  *sorted = false;
  int64_t count = n;
  if (c.temperature <= 0.0f) {  // greedy
    cand[0] = *std::min_element(cand, cand + n, better);
    *sorted = true;
    return 1;
  }
  if (c.top_k > 0 && c.top_k < count) {
    std::nth_element(cand, cand + c.top_k, cand + count, better);
    count = c.top_k;
    std::sort(cand, cand + count, better);
    *sorted = true;
  }
  if (c.top_p < 1.0f) {
    // Softmax at temperature 1 over the survivors; keep the shortest best-first prefix whose mass reaches
    // top_p (the token that crosses it included). Sort only as far as needed: 64, 256, ... best.
    const float max_logit = std::min_element(cand, cand + count, better)->logit;
    double total = 0;
    for (int64_t i = 0; i < count; ++i) total += candidate_weight(cand[i], max_logit, 1.0f);
    int64_t keep = count;
    for (int64_t m = 64;; m *= 4) {
      const int64_t head = std::min(m, count);
      if (!*sorted) std::partial_sort(cand, cand + head, cand + count, better);
      double cum = 0;
      for (int64_t i = 0; i < head; ++i) {
        cum += candidate_weight(cand[i], max_logit, 1.0f) / total;
        if (cum >= c.top_p) {
          keep = i + 1;
          break;
        }
      }
      if (keep < count || head == count) break;
    }
    count = keep;
    *sorted = true;  // the kept prefix lies within the sorted head
  }
  if (c.min_p > 0.0f) {
    // Keep p ≥ min_p · p_max, i.e. e^{l − l_max} ≥ min_p (temperature 1, as llama.cpp compares logits).
    const float max_logit = std::min_element(cand, cand + count, better)->logit;
    int64_t kept = 0;
    for (int64_t i = 0; i < count; ++i)
      if (candidate_weight(cand[i], max_logit, 1.0f) >= c.min_p) cand[kept++] = cand[i];
    count = kept;
  }
  return count;
}

}  // namespace keel::ops::host
