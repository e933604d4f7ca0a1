#include "models/scoring.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace keel::models {

void score_document(Model& model, std::span<const int32_t> doc, const ScoreOptions& opt, Scores& out) {
  const int64_t body = opt.bos ? opt.ctx - 1 : opt.ctx;  // document tokens per window
  if (body < 1 || (!opt.bos && opt.ctx < 2) || opt.chunk < 1)
    throw_error(ErrorCode::invalid_argument, "perplexity: window of {} tokens{} and chunks of {}", opt.ctx,
                opt.bos ? " (BOS included)" : "", opt.chunk);
  const int64_t V = model.vocab_size(), n_doc = static_cast<int64_t>(doc.size());
  std::vector<int32_t> window;
  std::vector<float> host;  // the logits when they live on a device
  for (int64_t start = 0; start < n_doc; start += body) {
    window.clear();
    if (opt.bos) window.push_back(*opt.bos);
    window.insert(window.end(), doc.begin() + start, doc.begin() + std::min(n_doc, start + body));
    const int64_t W = static_cast<int64_t>(window.size());
    if (W < 2) break;  // a lone token without BOS predicts nothing
    auto state = model.new_state(W);
    // Position p predicts window[p + 1]; the last position predicts nothing.
    for (int64_t b = 0; b < W - 1; b += opt.chunk) {
      const int64_t n = std::min(opt.chunk, W - 1 - b);
      StepItem item{state.get(), std::span<const int32_t>(window.data() + b, static_cast<size_t>(n)), n,
                    nullptr};
      Tensor logits = model.forward({&item, 1});
      const float* rows = model.host_logits(logits, host).data();
      for (int64_t r = 0; r < n; ++r) {
        const float* x = rows + r * V;
        const int64_t best = std::max_element(x, x + V) - x;
        double s = 0;
        for (int64_t i = 0; i < V; ++i) s += std::exp(double(x[i]) - double(x[best]));
        const double lse = double(x[best]) + std::log(s);
        out.nll.push_back(lse - double(x[window[static_cast<size_t>(b + r + 1)]]));
        out.argmax.push_back(static_cast<int32_t>(best));
      }
    }
  }
}

}  // namespace keel::models
