#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace keel {

namespace {

class Sampler final : public TokenChooser {
 public:
  Sampler(Backend& be, const SamplerConfig& c) : be_(be), config_(c), rng_(c.seed) {}

  GeneratedToken choose(std::span<const float> logits, std::span<const int32_t> history) override {
    const int64_t V = static_cast<int64_t>(logits.size());
    Tensor row = Tensor::borrow(const_cast<float*>(logits.data()), DType::f32, {V});
    GeneratedToken out;
    if (config_.logit_bias.empty()) {
      out.id = ops::sample(be_, row, config_.params, history, rng_);
    } else {
      biased_.assign(logits.begin(), logits.end());
      for (const auto& [id, bias] : config_.logit_bias) {
        if (id < 0 || id >= V) continue;
        biased_[static_cast<size_t>(id)] = bias <= -100.0f ? -std::numeric_limits<float>::infinity()
                                                           : biased_[static_cast<size_t>(id)] + bias;
      }
      Tensor b = Tensor::borrow(biased_.data(), DType::f32, {V});
      out.id = ops::sample(be_, b, config_.params, history, rng_);
    }
    // log-sum-exp of the raw logits, in double
    const double m = *std::max_element(logits.begin(), logits.end());
    double s = 0;
    for (float x : logits) s += std::exp(double(x) - m);
    const double lse = m + std::log(s);
    out.logprob = static_cast<float>(double(logits[static_cast<size_t>(out.id)]) - lse);
    const int64_t k = std::min<int64_t>(config_.top_logprobs, V);
    if (k > 0) {
      Tensor logits2 = row.reshape({1, V});
      Tensor values = Tensor::empty(be_.pool(), DType::f32, {1, k}, "top logprobs values");
      Tensor ids = Tensor::empty(be_.pool(), DType::i32, {1, k}, "top logprobs ids");
      ops::top_k(be_, logits2, k, values, ids);
      for (int64_t i = 0; i < k; ++i)
        out.top.emplace_back(ids.ptr<int32_t>()[i], static_cast<float>(double(values.ptr<float>()[i]) - lse));
    }
    return out;
  }

 private:
  Backend& be_;
  SamplerConfig config_;
  ops::SamplerRng rng_;
  std::vector<float> biased_;  // [V]: the row with logit_bias added, when there is one
};

}  // namespace

std::unique_ptr<TokenChooser> make_sampler(Backend& be, const SamplerConfig& config) {
  return std::make_unique<Sampler>(be, config);
}

}  // namespace keel
