// Anthropic Messages API request bodies (POST /v1/messages, /v1/messages/count_tokens) → the ChatRequest the
// OpenAI dialect builds, so both dialects share one chat template, one output parser and one engine path.
// What is accepted, mapped, ignored and refused is listed in docs/ANTHROPIC.md; in short:
//   - `system` (a string or text blocks) and `role: "system"` messages inside `messages` become one leading
//     system message (their texts joined by blank lines, in order), since most templates allow one;
//   - a system text block starting with "x-anthropic-billing-header:" is dropped: Claude Code changes it per
//     request, and it would otherwise break the prompt cache at the first token;
//   - content blocks: `text` → content, `thinking` → reasoning_content, `redacted_thinking` → dropped
//   (opaque),
//     `tool_use` → tool_calls, `tool_result` → a "tool" message; `image`, `document` and other kinds → 400;
//   - `tools[].input_schema` → function parameters; `tool_choice` auto / none; any / tool force a call (the
//     model's turn begins with the call's opening, ChatRequest::force_tool_call); `thinking` → the template's
//     `enable_thinking`;
//   - unknown fields (`metadata`, `context_management`, `output_config`, `cache_control`, ...) are ignored.
// Errors are ApiError naming the field; the HTTP layer writes them in Anthropic's error shape.
#pragma once
#include <string>

#include "server/openai_request.h"

namespace keel::server {

// The first system block Claude Code sends; per-request noise for the prompt cache.
inline constexpr std::string_view kBillingHeaderPrefix = "x-anthropic-billing-header:";

struct AnthropicRequest {
  ChatRequest chat;   // chat.model is left empty: any model name is served by the one model (see the docs)
  std::string model;  // the name the client asked for, echoed in the response
};

// `count_tokens`: the body of /v1/messages/count_tokens (no max_tokens, no sampling, no stream).
AnthropicRequest parse_anthropic_request(const Json& body, bool count_tokens = false);

}  // namespace keel::server
