#include "backend/sampling_host.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace keel::sampling_host {

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
    // None passes only when the weights are NaN (every logit −inf, e.g. all banned, or an infinite best):
    // the first candidate stays, so there is always one to draw.
    count = kept > 0 ? kept : 1;
  }
  return count;
}

int32_t draw(const Candidate* cand, int64_t count, float temperature, double uniform) {
  const float max_logit = std::min_element(cand, cand + count, better)->logit;
  double total = 0;
  for (int64_t i = 0; i < count; ++i) total += candidate_weight(cand[i], max_logit, temperature);
  const double target = uniform * total;
  double cum = 0;
  for (int64_t i = 0; i < count; ++i) {
    cum += candidate_weight(cand[i], max_logit, temperature);
    if (target < cum) return cand[i].id;
  }
  return cand[count - 1].id;  // target within rounding of the total
}

int64_t sample_rows_workspace(const SampleRowsArgs& a) {
  return a.V * 8 + (a.n_bias > 0 ? a.V * 4 : 0) + a.max_history * 4 + a.max_top * 8;
}

void sample_rows(const SampleRowsArgs& a, void* workspace) {
  char* ws = static_cast<char*>(workspace);
  auto* cand = reinterpret_cast<Candidate*>(ws);
  float* biased = a.n_bias > 0 ? reinterpret_cast<float*>(ws + a.V * 8) : nullptr;
  auto* history = reinterpret_cast<int32_t*>(ws + a.V * 8 + (a.n_bias > 0 ? a.V * 4 : 0));
  auto* heap = reinterpret_cast<Candidate*>(reinterpret_cast<char*>(history) + a.max_history * 4);
  const int64_t V = a.V;
  for (int64_t r = 0; r < a.n; ++r) {
    const SampleRowDesc& d = a.rows[r];
    const auto* raw = reinterpret_cast<const float*>(a.logits + d.row * a.row_bytes);
    const float* src = raw;
    if (d.bias_count > 0) {  // logit_bias on a copy; −100 bans (−inf), ids outside the vocabulary ignored
      std::memcpy(biased, raw, static_cast<size_t>(V) * 4);
      for (int64_t b = d.bias_begin; b < d.bias_begin + d.bias_count; ++b) {
        const int32_t id = a.bias_ids[b];
        const float bias = a.bias_values[b];
        if (id < 0 || id >= V) continue;
        biased[id] = bias <= -100.0f ? -std::numeric_limits<float>::infinity() : biased[id] + bias;
      }
      src = biased;
    }
    if (d.history_count > 0)
      std::memcpy(history, a.history + d.history_begin, static_cast<size_t>(d.history_count) * 4);
    const SamplerConfig c{
        d.temperature,      d.top_k, d.top_p, d.min_p, d.repetition_penalty, d.presence_penalty,
        d.frequency_penalty};
    bool sorted = false;
    const int64_t count = filter_candidates(src, V, history, d.history_count, c, cand, &sorted);
    const int32_t id = d.temperature > 0 ? draw(cand, count, d.temperature, d.uniform) : cand[0].id;
    // log-sum-exp of the raw row, in double
    const double m = *std::max_element(raw, raw + V);
    double s = 0;
    for (int64_t i = 0; i < V; ++i) s += std::exp(double(raw[i]) - m);
    const double lse = m + std::log(s);
    a.ids[r] = id;
    a.logprobs[r] = static_cast<float>(double(raw[id]) - lse);
    const int64_t k = std::min<int64_t>(d.top_logprobs, V);
    if (k > 0) {
      top_k_row(raw, V, k, heap);
      for (int64_t i = 0; i < k; ++i) {
        a.top_ids[r * a.max_top + i] = heap[i].id;
        a.top_logprobs[r * a.max_top + i] = static_cast<float>(double(heap[i].logit) - lse);
      }
    }
  }
}

}  // namespace keel::sampling_host
