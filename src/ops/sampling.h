// Picking tokens from logits: argmax, top-k, and the sampler the server runs per sequence.
// sample() applies, in llama.cpp's order: penalties → top-k → top-p → min-p → temperature → draw.
//   repetition_penalty (HF): for each distinct token in `history`, a positive logit is divided by it, a
//                            negative one multiplied;
//   presence_penalty / frequency_penalty (OpenAI): logit −= presence·[count > 0] + frequency·count;
//   top_k: keep the k best (0: off); top_p: keep the shortest best-first prefix whose probability (softmax at
//   temperature 1 over what is left) reaches top_p, the crossing token included (1: off); min_p: keep tokens
//   with p ≥ min_p · p_max (0: off); temperature: divide the survivors' logits, draw from their softmax.
//   temperature 0 is greedy: the best logit after penalties (ties: the lowest id).
// Ties in every ordering break toward the lower token id. A draw is a pure function of (logits, params,
// history, uniform), so a seed reproduces a completion. The RNG contract: a token drawn with temperature > 0
// consumes exactly one uniform() of the request's SamplerRng (even when one candidate survives); a greedy
// token consumes none. sample() and sample_rows() follow it alike.
// argmax and sample_rows are backend kernels (sample_rows runs where the logits live: the CPU and reference
// backends run the host sampler of backend/sampling_host.h, CUDA its own kernels); top_k, sample and
// sampling_distribution run on the host over logits in host memory, on backends that answer
// supports(sampling) and host_addressable() (CPU, reference).
#pragma once
#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "core/tensor.h"

namespace keel::ops {

struct SamplingParams {
  float temperature = 1.0f;         // ≥ 0; 0: greedy
  int32_t top_k = 0;                // ≤ 0: off
  float top_p = 1.0f;               // (0, 1]; 1: off
  float min_p = 0.0f;               // [0, 1]; 0: off
  float repetition_penalty = 1.0f;  // > 0; 1: off
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
};

// Deterministic for a seed: std::mt19937_64, uniform doubles from its top 53 bits.
class SamplerRng {
 public:
  explicit SamplerRng(uint64_t seed) : gen_(seed) {}
  double uniform() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }  // [0, 1)

 private:
  std::mt19937_64 gen_;
};

// out[r] = index of the largest logit of row r (the first on ties). logits f32 [rows, V]; out i32 [rows].
void argmax(Backend& be, const Tensor& logits, Tensor& out);
// The k best logits of each row, best first: values f32 [rows, k], indices i32 [rows, k]. Workspace k × 8.
void top_k(Backend& be, const Tensor& logits, int64_t k, Tensor& values, Tensor& indices);
int64_t top_k_workspace_bytes(int64_t k);

// One token id drawn from logits f32 [V] (contiguous). history: the token ids the penalties count (the caller
// picks the window: the generated tokens, or prompt + generated as HF does).
int32_t sample(Backend& be, const Tensor& logits, const SamplingParams& p, std::span<const int32_t> history,
               SamplerRng& rng);
// The distribution sample() draws from, as probabilities f32 [V] (0 for filtered tokens); for tests and
// logprobs.
void sampling_distribution(Backend& be, const Tensor& logits, const SamplingParams& p,
                           std::span<const int32_t> history, Tensor& probs);
// Both take V × 8 (candidates) + history × 4 (a sorted copy) bytes from the pool.
int64_t sample_workspace_bytes(int64_t vocab, int64_t history_len);

// ---- batched sampling, on the backend that holds the logits
// One row to sample: what a request's chooser asks of the step's logits row `row`. The spans are the
// caller's (the chooser's bias, the sequence's tokens) and need only live through sample_rows().
struct RowSampling {
  int64_t row = 0;  // the logits row [0, L)
  SamplingParams params;
  double uniform = 0;        // [0, 1), drawn by the caller (SamplerRng::uniform) when temperature > 0
  int32_t top_logprobs = 0;  // alternatives wanted (≥ 0; more than V gives V)
  // Added to the row before the filters; a bias ≤ −100 bans the token (−inf); ids outside [0, V) are
  // ignored. The reported logprobs stay the raw row's.
  std::span<const std::pair<int32_t, float>> logit_bias;
  std::span<const int32_t> history;  // the tokens the penalties count; every id inside [0, V)
};

// What sample_rows gives per row: the chosen id, its logprob and the top_logprobs best alternatives (id,
// logprob; best first, ties lower id), log-softmax of the RAW row (vLLM's default "raw_logprobs").
struct SampledToken {
  int32_t id = 0;
  float logprob = 0;
  std::vector<std::pair<int32_t, float>> top;
};

// Throws Error(invalid_argument) naming what is wrong when `r` cannot be sampled from a row of `vocab` logits
// (parameters out of range, a history token outside the vocabulary, a negative top_logprobs, a uniform
// outside [0, 1)). sample_rows() checks every row this way; a caller checks each row first to fail only the
// bad one.
void check_row_sampling(const RowSampling& r, int64_t vocab);

// out[i] = the token of rows[i] from logits f32 [L, V] (rows contiguous; on `be`, any backend with the
// sample_rows kernel). The rows' parameters go up in one upload, the results come back in one download;
// rows may name the same logits row. Pool: sample_rows_bytes(be, V, rows) — the op's two small buffers plus
// the kernel's workspace (Backend::sample_rows_workspace).
void sample_rows(Backend& be, const Tensor& logits, std::span<const RowSampling> rows,
                 std::span<SampledToken> out);
int64_t sample_rows_bytes(const Backend& be, int64_t vocab, std::span<const RowSampling> rows);

}  // namespace keel::ops
