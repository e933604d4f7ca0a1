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

namespace keel {

enum class FinishReason { stop, length, cancelled, error };
const char* finish_reason_name(FinishReason r);

struct GeneratedToken {
  int32_t id = 0;
  float logprob = 0;                           // log p(id) under the distribution it was drawn from
  std::vector<std::pair<int32_t, float>> top;  // top_logprobs alternatives (id, logprob), when asked
};

// Chooses the next token from one logits row and owns the request's sampler state (RNG, penalties).
class TokenChooser {
 public:
  virtual ~TokenChooser() = default;
  // logits: vocab floats; history: every token of the sequence so far (prompt + generated).
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
