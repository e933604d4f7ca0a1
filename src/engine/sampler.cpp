#include "engine/sampler.h"

namespace keel {

namespace {

class Sampler final : public TokenChooser {
 public:
  Sampler(Backend& be, const SamplerConfig& c) : be_(be), config_(c), rng_(c.seed) {}

  bool prepare(std::span<const int32_t> history, ops::RowSampling& row) override {
    row.params = config_.params;
    // The RNG contract (ops/sampling.h): one uniform per token drawn at temperature > 0, none for greedy.
    row.uniform = config_.params.temperature > 0 ? rng_.uniform() : 0.0;
    row.top_logprobs = config_.top_logprobs;
    row.logit_bias = config_.logit_bias;
    // The penalties are the history's only reader: without them none of it crosses to the device.
    const ops::SamplingParams& p = config_.params;
    const bool penalized =
        p.repetition_penalty != 1.0f || p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f;
    row.history = penalized ? history : std::span<const int32_t>();
    return true;
  }

  GeneratedToken choose(std::span<const float> logits, std::span<const int32_t> history) override {
    ops::RowSampling row;
    prepare(history, row);
    row.row = 0;
    const Tensor t = Tensor::borrow(const_cast<float*>(logits.data()), DType::f32,
                                    {1, static_cast<int64_t>(logits.size())});
    GeneratedToken out;
    ops::sample_rows(be_, t, {&row, 1}, {&out, 1});
    return out;
  }

 private:
  Backend& be_;
  SamplerConfig config_;
  ops::SamplerRng rng_;
};

}  // namespace

std::unique_ptr<TokenChooser> make_sampler(Backend& be, const SamplerConfig& config) {
  return std::make_unique<Sampler>(be, config);
}

}  // namespace keel
