// Teacher-forced scoring of a document (perplexity): the document is cut into consecutive windows, each run
// from a fresh sequence state, in steps of at most `chunk` tokens that ask for logits at every position.
//
// With a BOS id, each window is [bos] + the next (ctx − 1) document tokens, so every document token is scored
// exactly once (nll[i] = −log p(doc[i] | bos, the window's tokens before it)); this is how the default
// model's eval/valid_nll.json was made. Without one, windows are ctx document tokens and the first token of
// each window is context only (nll[i] = −log p(doc[i + 1] | window tokens ≤ i) for the scored positions).
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "models/model.h"

namespace keel::models {

struct ScoreOptions {
  int64_t ctx = 512;           // tokens per window, BOS included
  int64_t chunk = 512;         // tokens per forward step
  std::optional<int32_t> bos;  // prepended to every window
};

struct Scores {
  std::vector<double> nll;      // per scored token, in document order (nats)
  std::vector<int32_t> argmax;  // the model's most likely token at the position that scored nll[i]
};

// Appends the document's scores to `out`. Error(invalid_argument) for ctx < 2 (or < 1 without BOS), chunk
// < 1.
void score_document(Model& model, std::span<const int32_t> doc, const ScoreOptions& opt, Scores& out);

}  // namespace keel::models
