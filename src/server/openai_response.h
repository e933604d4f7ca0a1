// OpenAI response bodies: chat.completion, chat.completion.chunk, text_completion (stream and not), usage and
// logprobs. Pure formatting: text, parser events and tokens in, JSON out.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "chat/parsers/output_parser.h"
#include "engine/request.h"
#include "server/api_error.h"
#include "tokenizer/tokenizer.h"

namespace keel::server {

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;  // of prompt_tokens, reused from the prompt cache
  Json to_json() const;
};

// "stop" | "length" | "tool_calls"; a cancelled or failed request has no finish reason (it ends otherwise).
const char* openai_finish_reason(FinishReason reason, bool has_tool_calls);

// Random ids: "chatcmpl-" / "cmpl-" + 24 alphanumerics.
std::string new_response_id(const char* prefix);

class ResponseFormatter {
 public:
  enum class Kind { chat, text };
  // `tokenizer` shows tokens in logprobs; `top_logprobs` alternatives per token.
  ResponseFormatter(Kind kind, std::string model, const tokenizer::Tokenizer& tokenizer, bool logprobs,
                    int top_logprobs);

  // Streaming chat: the first chunk (role), one chunk per batch of parser events (with the logprobs of the
  // tokens generated meanwhile), the last chunk (finish_reason), and the usage chunk (choices: []).
  // `usage_null`: stream_options.include_usage was set, so every chunk carries "usage": null.
  Json chat_role_chunk(bool usage_null) const;
  std::optional<Json> chat_delta_chunk(std::span<const chat::OutputEvent> events,
                                       std::span<const GeneratedToken> tokens, bool usage_null) const;
  Json chat_finish_chunk(const char* finish_reason, bool usage_null) const;
  Json usage_chunk(const Usage& usage) const;
  Json chat_completion(const chat::FinalMessage& message, const char* finish_reason,
                       std::span<const GeneratedToken> tokens, const Usage& usage) const;

  // Text completions: a chunk per text delta; the final body.
  Json text_chunk(const std::string& text, std::span<const GeneratedToken> tokens, const char* finish_reason,
                  bool usage_null) const;
  Json text_completion(const std::string& text, const char* finish_reason,
                       std::span<const GeneratedToken> tokens, const Usage& usage) const;

  // Chat logprobs: {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}, ...]}.
  Json chat_logprobs(std::span<const GeneratedToken> tokens) const;
  // Legacy completions logprobs: {"tokens", "token_logprobs", "top_logprobs", "text_offset"}.
  Json text_logprobs(std::span<const GeneratedToken> tokens, size_t text_offset) const;

 private:
  Json envelope(const char* object) const;
  std::string token_text(int32_t id) const;

  Kind kind_;
  std::string id_, model_;
  int64_t created_;
  const tokenizer::Tokenizer& tokenizer_;
  bool logprobs_;
  int top_logprobs_;
};

// "data: <json>\n\n"
std::string sse_event(const Json& body);

}  // namespace keel::server
