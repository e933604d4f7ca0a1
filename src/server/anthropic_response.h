// Anthropic Messages API responses: the message body, the streaming events, stop reasons, usage and the error
// shape. Pure formatting: the output parser's events and the final message in, JSON out.
//
// Stream order (https://docs.anthropic.com/en/api/messages-streaming):
//   message_start, then per content block content_block_start, content_block_delta*, content_block_stop
//   (blocks numbered from 0 in order: thinking / text / tool_use), then message_delta (stop_reason,
//   stop_sequence, usage), message_stop. `ping` may come anywhere; after the headers a failure is one `error`
//   event, then the stream ends.
//
// Usage follows Anthropic's meaning: `input_tokens` are the prompt tokens *not* read from the cache, and
// `cache_read_input_tokens` those that were (their sum is the prompt); keel writes no cache entries a client
// pays for, so `cache_creation_input_tokens` is 0.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "chat/parsers/output_parser.h"
#include "engine/request.h"
#include "server/api_error.h"

namespace keel::server {

struct AnthropicUsage {
  int64_t prompt_tokens = 0;  // the whole prompt
  int64_t cached_tokens = 0;  // of prompt_tokens, from the prompt cache
  int64_t output_tokens = 0;
  Json to_json() const;  // {"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", ...}
};

// end_turn | max_tokens | stop_sequence | tool_use | model_context_window_exceeded. `context_full`: the
// generation stopped because the context ended (not at max_tokens).
const char* anthropic_stop_reason(FinishReason reason, bool has_tool_calls, bool stop_sequence,
                                  bool context_full);

// {"type": "error", "error": {"type", "message"}}; the type follows the status (400 invalid_request_error,
// 401 authentication_error, 403 permission_error, 404 not_found_error, 413 request_too_large, 429
// rate_limit_error, 503 / 529 overloaded_error, other 5xx api_error).
Json anthropic_error_json(const ApiError& error);
// The same error with Anthropic's wording where clients match on it: a prompt that does not fit is
// "prompt is too long: N tokens > M maximum" (Claude Code compacts its history on exactly this).
ApiError prompt_too_long(int64_t prompt_tokens, int64_t max_prompt_tokens);

// "event: <type>\ndata: <json>\n\n"
std::string anthropic_sse(const Json& event);

// One message's events, in order. Not thread-safe; one per response.
class AnthropicStream {
 public:
  AnthropicStream(std::string id, std::string model);

  Json message_start(const AnthropicUsage& usage) const;
  // The events for a batch of parser events: opens, extends and closes content blocks as the kind changes.
  std::vector<Json> feed(std::span<const chat::OutputEvent> events);
  // Closes the open block; message_delta and message_stop.
  std::vector<Json> finish(const char* stop_reason, const std::string& stop_sequence,
                           const AnthropicUsage& usage);

  // The non-streaming body: {"id", "type": "message", "role", "model", "content": [...], "stop_reason",
  // "stop_sequence", "usage"}.
  Json message(const chat::FinalMessage& message, const char* stop_reason, const std::string& stop_sequence,
               const AnthropicUsage& usage) const;

 private:
  enum class Block { none, thinking, text, tool_use };
  void open(Block kind, Json content_block, std::vector<Json>& out);
  void close(std::vector<Json>& out);

  std::string id_, model_;
  Block open_ = Block::none;
  int open_tool_ = -1;  // the parser's tool_index of the open tool_use block
  int next_index_ = 0;  // the next content block's index
};

}  // namespace keel::server
