// Random cases for ops::sample_rows (tests/ops/sampling_test.cpp, tests/backend/cuda_sampling_test.cpp): rows
// of logits with ties and −inf entries, and per row random parameters, histories, logit_bias entries (bans,
// boosts, ids outside the vocabulary), top_logprobs and uniforms.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "ops/sampling.h"

namespace keel::testing {

struct RowsCase {
  int64_t L = 0, V = 0;
  std::vector<float> logits;    // [L, V], row-major
  std::vector<uint64_t> seeds;  // per row: rows[i].uniform is SamplerRng(seeds[i])'s first draw (0 if greedy)
  std::vector<std::vector<int32_t>> histories;
  std::vector<std::vector<std::pair<int32_t, float>>> biases;
  std::vector<ops::RowSampling> rows;  // spans into histories / biases: the case is not copied
};

// n rows over L logits rows of V. ties: logits on a grid of 0.25 (many equal values); else continuous.
inline std::unique_ptr<RowsCase> random_rows_case(std::mt19937_64& g, int64_t L, int64_t V, int64_t n,
                                                  bool ties) {
  auto c = std::make_unique<RowsCase>();
  c->L = L;
  c->V = V;
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  auto pick = [&](auto... v) {
    const double opts[] = {static_cast<double>(v)...};
    return opts[g() % sizeof...(v)];
  };
  c->logits.resize(static_cast<size_t>(L * V));
  for (int64_t i = 0; i < L * V; ++i) {
    float x = normal(g);
    if (ties) x = std::round(x * 4.0f) / 4.0f;
    if (V > 4 && unit(g) < 0.01) x = -std::numeric_limits<float>::infinity();
    c->logits[static_cast<size_t>(i)] = x;
  }
  for (int64_t r = 0; r < L; ++r)
    c->logits[static_cast<size_t>(r * V + static_cast<int64_t>(g() % V))] = 9.0f;
  c->histories.resize(static_cast<size_t>(n));
  c->biases.resize(static_cast<size_t>(n));
  c->seeds.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    ops::RowSampling row;
    row.row = static_cast<int64_t>(g() % L);
    ops::SamplingParams& p = row.params;
    p.temperature = static_cast<float>(pick(0.0, 0.5, 1.0, 1.7));
    p.top_k = static_cast<int32_t>(pick(0, 0, 1, 5, 40, V));
    p.top_p = static_cast<float>(pick(1.0, 1.0, 0.95, 0.5, 0.1));
    p.min_p = static_cast<float>(pick(0.0, 0.0, 0.05, 0.3));
    p.repetition_penalty = static_cast<float>(pick(1.0, 1.0, 1.3, 0.8));
    p.presence_penalty = static_cast<float>(pick(0.0, 0.0, 0.5, -0.5));
    p.frequency_penalty = static_cast<float>(pick(0.0, 0.0, 0.2));
    auto& h = c->histories[static_cast<size_t>(i)];
    const int64_t H = static_cast<int64_t>(g() % 3 == 0 ? 0 : g() % 40);
    for (int64_t j = 0; j < H; ++j) h.push_back(static_cast<int32_t>(g() % std::min<int64_t>(V, 50)));
    auto& b = c->biases[static_cast<size_t>(i)];
    const int nb = static_cast<int>(g() % 4);
    for (int j = 0; j < nb; ++j) {
      const int32_t id = g() % 8 == 0 ? static_cast<int32_t>(V + 3) : static_cast<int32_t>(g() % V);
      b.emplace_back(id, static_cast<float>(pick(-100.0, 5.0, -2.5, 100.0)));
    }
    row.top_logprobs = static_cast<int32_t>(pick(0, 0, 1, 5, 20));
    c->seeds[static_cast<size_t>(i)] = g();
    row.uniform = p.temperature > 0 ? ops::SamplerRng(c->seeds[static_cast<size_t>(i)]).uniform() : 0.0;
    row.history = h;
    row.logit_bias = b;
    c->rows.push_back(row);
  }
  return c;
}

}  // namespace keel::testing
