// fuzz-libs: keel_core keel_chat
// fuzz-sources: src/server/anthropic_request.cpp src/server/openai_request.cpp src/server/api_error.cpp

// libFuzzer target: a request body → parse_json_body → parse_anthropic_request, as /v1/messages and
// /v1/messages/count_tokens read it (src/server/anthropic_request.cpp, compiled into the target with the fuzz
// flags). An ApiError (a 400) is the only acceptable failure; a crash, a sanitizer report or another
// exception escaping is a bug. A parsed request's messages also go through the template-side copies
// (normalize_tool_call_arguments), where tool inputs are serialized and parsed again.
#include <cstddef>
#include <cstdint>
#include <string>

#include "chat/chat_template.h"
#include "server/anthropic_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string body(reinterpret_cast<const char*>(data), size);
  keel::server::Json j;
  try {
    j = keel::server::parse_json_body(body);
  } catch (const keel::server::ApiError&) {
    return 0;
  }
  for (bool count_tokens : {false, true}) {
    try {
      keel::server::AnthropicRequest r = keel::server::parse_anthropic_request(j, count_tokens);
      (void)keel::chat::normalize_tool_call_arguments(r.chat.messages).dump();
    } catch (const keel::server::ApiError&) {
    }
  }
  return 0;
}
