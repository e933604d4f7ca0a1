#include "ops/sampling.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "ops/op_check.h"
#include "ops/rows.h"
#include "ops/sampling_host.h"

namespace keel::ops {

namespace {

void check_params(const SamplingParams& p) {
  auto bad = [](const char* what, double v) {
    throw_error(ErrorCode::invalid_argument, "sampling: {} = {} is out of range", what, v);
  };
  if (!(p.temperature >= 0.0f) || std::isinf(p.temperature)) bad("temperature", p.temperature);
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) bad("top_p", p.top_p);
  if (!(p.min_p >= 0.0f && p.min_p <= 1.0f)) bad("min_p", p.min_p);
  if (!(p.repetition_penalty > 0.0f) || std::isinf(p.repetition_penalty))
    bad("repetition_penalty", p.repetition_penalty);
  if (!std::isfinite(p.presence_penalty)) bad("presence_penalty", p.presence_penalty);
  if (!std::isfinite(p.frequency_penalty)) bad("frequency_penalty", p.frequency_penalty);
}

// The surviving candidates of one row, in pool memory that lives as long as this object.
struct Filtered {
  Tensor cand_storage, history_storage;
  const host::Candidate* cand = nullptr;
  int64_t count = 0;
  float max_logit = 0;
  double total = 0;  // Σ weights at the temperature
  float temperature = 1;
};

Filtered filter(Backend& be, const Tensor& logits, const SamplingParams& p,
                std::span<const int32_t> history) {
  check_contiguous("sample", "logits", logits, {DType::f32}, {kAnyDim});
  check_params(p);
  require_support(be, Op::sampling, DType::f32, "sample");
  if (!be.host_addressable())  // the filters run on the host over host memory (ops/sampling_host.h)
    throw_error(ErrorCode::unsupported, "{}: runs on the host; {} holds its tensors on a device", "sample",
                be.name());
  const int64_t V = logits.dim(0), H = static_cast<int64_t>(history.size());
  if (V == 0) throw_error(ErrorCode::invalid_argument, "sample: empty logits");
  for (int64_t i = 0; i < H; ++i)
    if (history[i] < 0 || history[i] >= V)
      throw_error(ErrorCode::invalid_argument,
                  "sample: history token {} at {} is outside the vocabulary of {}", history[i], i, V);
  Filtered f;
  f.cand_storage = Tensor::empty(be.pool(), DType::u8, {V * 8}, "sampling candidates");
  if (H > 0) {
    f.history_storage = Tensor::empty(be.pool(), DType::i32, {H}, "sampling history (sorted)");
    std::memcpy(f.history_storage.data(), history.data(), static_cast<size_t>(H) * 4);
  }
  auto* cand = f.cand_storage.ptr<host::Candidate>();
  host::SamplerConfig c{
      p.temperature,      p.top_k, p.top_p, p.min_p, p.repetition_penalty, p.presence_penalty,
      p.frequency_penalty};
  bool sorted = false;
  f.count = host::filter_candidates(logits.ptr<const float>(), V,
                                    H ? f.history_storage.ptr<int32_t>() : nullptr, H, c, cand, &sorted);
  f.cand = cand;
  f.temperature = p.temperature > 0 ? p.temperature : 1.0f;
  f.max_logit = std::min_element(cand, cand + f.count, host::better)->logit;
  for (int64_t i = 0; i < f.count; ++i)
    f.total += host::candidate_weight(cand[i], f.max_logit, f.temperature);
  return f;
}

}  // namespace

void argmax(Backend& be, const Tensor& logits, Tensor& out) {
  check_tensor("argmax", "logits", logits, {DType::f32}, {kAnyDim, kAnyDim});
  const int64_t rows = logits.dim(0), V = logits.dim(1);
  if (V == 0) throw_error(ErrorCode::invalid_argument, "argmax: empty rows");
  check_contiguous("argmax", "out", out, {DType::i32}, {rows});
  require_support(be, Op::sampling, DType::f32, "argmax");
  be.argmax(ArgmaxArgs{static_cast<const char*>(logits.data()), logits.stride_bytes(0), rows, V,
                       out.ptr<int32_t>()});
}

int64_t top_k_workspace_bytes(int64_t k) {
  return k * 8;
}

void top_k(Backend& be, const Tensor& logits, int64_t k, Tensor& values, Tensor& indices) {
  check_tensor("top_k", "logits", logits, {DType::f32}, {kAnyDim, kAnyDim});
  const int64_t rows = logits.dim(0), V = logits.dim(1);
  if (k < 1 || k > V) throw_error(ErrorCode::invalid_argument, "top_k: k = {} with {} logits per row", k, V);
  check_tensor("top_k", "values", values, {DType::f32}, {rows, k});
  check_tensor("top_k", "indices", indices, {DType::i32}, {rows, k});
  require_support(be, Op::sampling, DType::f32, "top_k");
  if (!be.host_addressable())  // the filters run on the host over host memory (ops/sampling_host.h)
    throw_error(ErrorCode::unsupported, "{}: runs on the host; {} holds its tensors on a device", "top_k",
                be.name());
  Tensor heap = Tensor::empty(be.pool(), DType::u8, {k * 8}, "top_k heap");
  auto* h = heap.ptr<host::Candidate>();
  for (int64_t r = 0; r < rows; ++r) {
    host::top_k_row(row_f32(logits, r), V, k, h);
    for (int64_t i = 0; i < k; ++i) {
      static_cast<float*>(values.at(r, i))[0] = h[i].logit;
      static_cast<int32_t*>(indices.at(r, i))[0] = h[i].id;
    }
  }
}

int64_t sample_workspace_bytes(int64_t vocab, int64_t history_len) {
  return vocab * 8 + history_len * 4;
}

int32_t sample(Backend& be, const Tensor& logits, const SamplingParams& p, std::span<const int32_t> history,
               SamplerRng& rng) {
  Filtered f = filter(be, logits, p, history);
  if (f.count == 1) return f.cand[0].id;
  const double target = rng.uniform() * f.total;
  double cum = 0;
  for (int64_t i = 0; i < f.count; ++i) {
    cum += host::candidate_weight(f.cand[i], f.max_logit, f.temperature);
    if (target < cum) return f.cand[i].id;
  }
  return f.cand[f.count - 1].id;  // target within rounding of the total
}

void sampling_distribution(Backend& be, const Tensor& logits, const SamplingParams& p,
                           std::span<const int32_t> history, Tensor& probs) {
  Filtered f = filter(be, logits, p, history);
  check_contiguous("sampling_distribution", "probs", probs, {DType::f32}, {logits.dim(0)});
  float* out = probs.ptr<float>();
  std::fill(out, out + probs.dim(0), 0.0f);
  for (int64_t i = 0; i < f.count; ++i)
    out[f.cand[i].id] =
        static_cast<float>(host::candidate_weight(f.cand[i], f.max_logit, f.temperature) / f.total);
}

}  // namespace keel::ops
