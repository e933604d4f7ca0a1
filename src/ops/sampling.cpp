#include "ops/sampling.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/sampling_host.h"
#include "core/error.h"
#include "ops/op_check.h"
#include "ops/rows.h"

namespace keel::ops {

namespace host = sampling_host;

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
  if (!be.host_addressable())  // the filters run on the host over host memory (backend/sampling_host.h)
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
  if (!be.host_addressable())  // the filters run on the host over host memory (backend/sampling_host.h)
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
  if (!(p.temperature > 0)) return f.cand[0].id;  // greedy: no draw
  return host::draw(f.cand, f.count, p.temperature, rng.uniform());
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

void check_row_sampling(const RowSampling& r, int64_t vocab) {
  check_params(r.params);
  if (!(r.uniform >= 0.0 && r.uniform < 1.0))
    throw_error(ErrorCode::invalid_argument, "sample_rows: uniform {} is outside [0, 1)", r.uniform);
  if (r.top_logprobs < 0)
    throw_error(ErrorCode::invalid_argument, "sample_rows: top_logprobs = {} is negative", r.top_logprobs);
  for (size_t i = 0; i < r.history.size(); ++i)
    if (r.history[i] < 0 || r.history[i] >= vocab)
      throw_error(ErrorCode::invalid_argument,
                  "sample: history token {} at {} is outside the vocabulary of {}", r.history[i], i, vocab);
}

namespace {

// The sizes (and flags) of a sample_rows call; pointers unset. Layout of the uploaded rows buffer: the
// descriptors [n], then history i32 [n_history], bias ids i32 [n_bias], bias values f32 [n_bias]; of the
// results buffer: ids i32 [n], logprobs f32 [n], top ids i32 [n, max_top], top logprobs f32 [n, max_top].
SampleRowsArgs sizes_of(int64_t vocab, std::span<const RowSampling> rows) {
  SampleRowsArgs a;
  a.V = vocab;
  a.n = static_cast<int64_t>(rows.size());
  for (const RowSampling& r : rows) {
    const int64_t H = static_cast<int64_t>(r.history.size());
    a.n_history += H;
    a.n_bias += static_cast<int64_t>(r.logit_bias.size());
    a.max_history = std::max(a.max_history, H);
    a.max_top = std::max<int64_t>(a.max_top, std::min<int64_t>(r.top_logprobs, vocab));
    const SamplingParams& p = r.params;
    if (H > 0 && (p.repetition_penalty != 1.0f || p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f))
      a.any_penalty = true;
    if (p.temperature > 0 && ((p.top_k > 0 && p.top_k < vocab) || p.top_p < 1.0f)) a.any_truncation = true;
  }
  return a;
}

int64_t rows_buffer_bytes(const SampleRowsArgs& a) {
  return a.n * static_cast<int64_t>(sizeof(SampleRowDesc)) + a.n_history * 4 + a.n_bias * 8;
}
int64_t results_bytes(const SampleRowsArgs& a) {
  return a.n * 8 + a.n * a.max_top * 8;
}

}  // namespace

int64_t sample_rows_bytes(const Backend& be, int64_t vocab, std::span<const RowSampling> rows) {
  if (rows.empty()) return 0;
  const SampleRowsArgs a = sizes_of(vocab, rows);
  return rows_buffer_bytes(a) + results_bytes(a) + be.sample_rows_workspace(a);
}

void sample_rows(Backend& be, const Tensor& logits, std::span<const RowSampling> rows,
                 std::span<SampledToken> out) {
  check_tensor("sample_rows", "logits", logits, {DType::f32}, {kAnyDim, kAnyDim});
  require_support(be, Op::sampling, DType::f32, "sample_rows");
  const int64_t L = logits.dim(0), V = logits.dim(1);
  if (V == 0) throw_error(ErrorCode::invalid_argument, "sample_rows: empty rows");
  if (rows.size() != out.size())
    throw_error(ErrorCode::invalid_argument, "sample_rows: {} rows but {} results", rows.size(), out.size());
  for (const RowSampling& r : rows) {
    if (r.row < 0 || r.row >= L)
      throw_error(ErrorCode::invalid_argument, "sample_rows: row {} of {} logits rows", r.row, L);
    check_row_sampling(r, V);
  }
  if (rows.empty()) return;
  SampleRowsArgs a = sizes_of(V, rows);
  a.logits = static_cast<const char*>(logits.data());
  a.row_bytes = logits.stride_bytes(0);
  a.rows_in = L;

  // The rows' descriptors, histories and biases, packed on the host and uploaded at once.
  std::vector<char> host(static_cast<size_t>(rows_buffer_bytes(a)));
  auto* desc = reinterpret_cast<SampleRowDesc*>(host.data());
  auto* hist = reinterpret_cast<int32_t*>(host.data() + a.n * static_cast<int64_t>(sizeof(SampleRowDesc)));
  auto* bias_ids = hist + a.n_history;
  auto* bias_values = reinterpret_cast<float*>(bias_ids + a.n_bias);
  int64_t h = 0, b = 0;
  for (int64_t i = 0; i < a.n; ++i) {
    const RowSampling& r = rows[static_cast<size_t>(i)];
    SampleRowDesc d;
    d.row = r.row;
    d.uniform = r.uniform;
    d.temperature = r.params.temperature;
    d.top_p = r.params.top_p;
    d.min_p = r.params.min_p;
    d.repetition_penalty = r.params.repetition_penalty;
    d.presence_penalty = r.params.presence_penalty;
    d.frequency_penalty = r.params.frequency_penalty;
    d.top_k = r.params.top_k;
    d.top_logprobs = static_cast<int32_t>(std::min<int64_t>(r.top_logprobs, V));
    d.history_begin = h;
    d.history_count = static_cast<int64_t>(r.history.size());
    for (int32_t t : r.history) hist[h++] = t;
    d.bias_begin = b;
    d.bias_count = static_cast<int64_t>(r.logit_bias.size());
    for (const auto& [id, bias] : r.logit_bias) {
      bias_ids[b] = id;
      bias_values[b++] = bias;
    }
    std::memcpy(&desc[i], &d, sizeof d);
  }
  Tensor up = Tensor::empty(be.pool(), DType::u8, {rows_buffer_bytes(a)}, "sampling rows");
  be.upload(host.data(), rows_buffer_bytes(a), up);
  char* base = static_cast<char*>(up.data());
  a.rows = reinterpret_cast<const SampleRowDesc*>(base);
  a.history = reinterpret_cast<const int32_t*>(base + a.n * static_cast<int64_t>(sizeof(SampleRowDesc)));
  a.bias_ids = a.history + a.n_history;
  a.bias_values = reinterpret_cast<const float*>(a.bias_ids + a.n_bias);

  Tensor res = Tensor::empty(be.pool(), DType::u8, {results_bytes(a)}, "sampling results");
  char* rb = static_cast<char*>(res.data());
  a.ids = reinterpret_cast<int32_t*>(rb);
  a.logprobs = reinterpret_cast<float*>(rb + a.n * 4);
  a.top_ids = reinterpret_cast<int32_t*>(rb + a.n * 8);
  a.top_logprobs = reinterpret_cast<float*>(rb + a.n * 8 + a.n * a.max_top * 4);
  be.sample_rows(a);

  std::vector<char> got(static_cast<size_t>(results_bytes(a)));  // the step's one download
  be.download(res, got.data(), results_bytes(a));
  const auto* ids = reinterpret_cast<const int32_t*>(got.data());
  const auto* lps = reinterpret_cast<const float*>(got.data() + a.n * 4);
  const auto* top_ids = reinterpret_cast<const int32_t*>(got.data() + a.n * 8);
  const auto* top_lps = reinterpret_cast<const float*>(got.data() + a.n * 8 + a.n * a.max_top * 4);
  for (int64_t i = 0; i < a.n; ++i) {
    SampledToken& t = out[static_cast<size_t>(i)];
    t.id = ids[i];
    t.logprob = lps[i];
    t.top.clear();
    const int64_t k = std::min<int64_t>(rows[static_cast<size_t>(i)].top_logprobs, V);
    for (int64_t j = 0; j < k; ++j)
      t.top.emplace_back(top_ids[i * a.max_top + j], top_lps[i * a.max_top + j]);
  }
}

}  // namespace keel::ops
