// One generation request between the engine thread and the HTTP thread that answers it. The engine calls the
// RequestSink methods; the sink turns tokens into text there (detokenize, drop end-of-generation and hidden
// special tokens, hold back and cut stop strings, so a matched stop string stops the request at once) and
// queues the result. The HTTP thread takes what is new with wait(), with a deadline so it can send
// keep-alives and notice a client that went away. Owned jointly (shared_ptr) by the request and the HTTP
// handler: either may go first.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/request.h"
#include "server/stop_matcher.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"

namespace keel::server {

using Clock = std::chrono::steady_clock;

struct TextOptions {
  const tokenizer::Tokenizer* tokenizer = nullptr;
  std::vector<std::string> stop_strings;
  std::vector<int32_t> stop_tokens;  // end-of-generation ids: counted, never shown
  // Special tokens whose text is shown (the parser's markers when they are special tokens, e.g. <think>);
  // other special tokens are dropped from the text, as llama-server and vLLM do by default.
  std::vector<int32_t> shown_special_tokens;
};

class GenerationSink final : public RequestSink {
 public:
  explicit GenerationSink(TextOptions options);

  // What happened since the last take.
  struct Update {
    bool started = false;  // on_started has been heard (stays true)
    int64_t cached_tokens = 0;
    int64_t prefill_done = 0, prefill_total = 0;
    int64_t queue_position = -1;         // ≥ 0 while waiting for a slot or for memory
    std::string text;                    // new output text (stop strings cut)
    std::vector<GeneratedToken> tokens;  // tokens generated since the last take (logprobs)
    bool finished = false;
    FinishReason reason = FinishReason::stop;
    std::optional<Error> error;  // reason == error
    std::string stop_sequence;   // finished: the stop string that ended the output, if one did
  };

  // Blocks until something is new or `deadline` passes; returns (and clears) what is new.
  Update wait(Clock::time_point deadline);

  // Timing and counts (after finish, final).
  int64_t generated_tokens() const;
  std::optional<double> seconds_to_first_token() const;
  std::optional<double> decode_seconds() const;  // first token → finish

  void on_started(int64_t cached_tokens) override;
  void on_queued(int64_t position) override;
  void on_prefill(int64_t done, int64_t total) override;
  bool on_token(const GeneratedToken& token) override;
  void on_finish(FinishReason reason, const Error* error) override;

 private:
  bool shown(int32_t id) const;
  void push_text_locked(std::string text);

  TextOptions options_;
  tokenizer::StreamDecoder decoder_;  // engine thread only
  StopMatcher stop_;                  // engine thread only
  Clock::time_point created_ = Clock::now();

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  Update pending_;
  bool dirty_ = false;
  bool started_ = false, finished_ = false;
  int64_t generated_ = 0;
  std::optional<Clock::time_point> first_token_, finished_at_;
};

}  // namespace keel::server
