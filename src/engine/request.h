// A generation request as the engine sees it: token ids in, tokens out through a sink. The server (or a CLI
// command) builds it; the scheduler owns it from submit() until on_finish().
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "ops/sampling.h"

namespace keel {

enum class FinishReason { stop, length, cancelled, error };
const char* finish_reason_name(FinishReason r);

// A generated token: id, its logprob (the raw row's log-softmax) and the top_logprobs alternatives (id,
// logprob), when asked (ops/sampling.h).
using GeneratedToken = ops::SampledToken;

// Chooses the next token of one request and owns its sampler state (RNG, bias, penalties' parameters).
// Two ways, the scheduler picks: where the model samples on its backend (Model::sampling_backend), it calls
// prepare(), and a chooser that answers true has its row sampled there with the step's other rows in one
// ops::sample_rows (only the chosen tokens cross to the host); otherwise (a chooser that answers false, or a
// model without a backend) it calls choose() with the row in host memory.
class TokenChooser {
 public:
  virtual ~TokenChooser() = default;
  // Fills `row` (all but row.row, which the scheduler sets) for this token — parameters, logit_bias, the
  // history, and the one uniform drawn now when temperature > 0 — and returns true; false: this chooser
  // picks on the host (choose()). row's spans may point into the chooser and into `history`, which live
  // through the step. history: every token of the sequence so far (prompt + generated).
  virtual bool prepare(std::span<const int32_t> history, ops::RowSampling& row) {
    (void)history, (void)row;
    return false;
  }
  // logits: vocab floats in host memory; history as for prepare(). Consumes the RNG as prepare() would.
  virtual GeneratedToken choose(std::span<const float> logits, std::span<const int32_t> history) = 0;
};

// What the engine tells a request's owner. Called on the engine thread: quick, and never throws.
class RequestSink {
 public:
  virtual ~RequestSink() = default;
  // The request holds a slot and its state: the first step that fed it succeeded. `cached_tokens` of its
  // prompt came from the prompt cache. Before this, a request only waits; the server sends response headers
  // after it.
  virtual void on_started(int64_t cached_tokens) { (void)cached_tokens; }
  // The request waits for a slot or for memory; `position` requests are ahead of it (0: next).
  virtual void on_queued(int64_t position) { (void)position; }
  // A prefill chunk of the prompt went into the state (tokens done of total).
  virtual void on_prefill(int64_t done, int64_t total) { (void)done, (void)total; }
  // A generated token. Returning false stops the request (e.g. a stop string matched): it finishes with
  // `stop`.
  virtual bool on_token(const GeneratedToken& token) = 0;
  // Exactly once. error is set when reason == error (code out_of_memory: retryable; others are not).
  virtual void on_finish(FinishReason reason, const Error* error) = 0;
};

struct Request {
  std::vector<int32_t> prompt;
  int64_t max_new_tokens = 0;        // may exceed the context's room: generation stops at the end (length)
  std::vector<int32_t> stop_tokens;  // end-of-generation ids (eos); the stop token is reported, then stop
  // Prompt positions (ascending, e.g. where the last message starts) at which a model whose state cannot be
  // cut back keeps a checkpoint, so a later prompt that diverges after one reuses the state up to it. The
  // prompt's chunk ends and its last token but one are checkpoints too.
  std::vector<int64_t> checkpoints;
  std::unique_ptr<TokenChooser> chooser;
  std::shared_ptr<RequestSink> sink;
  // Set by the owner (client disconnect); the engine checks it between steps and the model between layers.
  std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
};

}  // namespace keel
