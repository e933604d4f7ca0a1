// fuzz-libs: keel_core keel_chat
// fuzz-sources: src/server/openai_request.cpp src/server/api_error.cpp

// libFuzzer target: a request body → parse_json_body → parse_chat_request and parse_completion_request (the
// OpenAI request parser, src/server/openai_request.cpp, compiled into the target with the fuzz flags). An
// ApiError (a 400) is the only acceptable failure; anything else — a crash, a sanitizer report, another
// exception escaping — is a bug. A parsed chat request's messages are also run through the template-side
// copies (normalize_tool_call_arguments), where string-held JSON is parsed again.
#include <cstddef>
#include <cstdint>
#include <string>

#include "chat/chat_template.h"
#include "server/openai_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string body(reinterpret_cast<const char*>(data), size);
  keel::server::Json j;
  try {
    j = keel::server::parse_json_body(body);
  } catch (const keel::server::ApiError&) {
    return 0;
  }
  try {
    keel::server::ChatRequest r = keel::server::parse_chat_request(j);
    (void)keel::chat::normalize_tool_call_arguments(r.messages).dump();
  } catch (const keel::server::ApiError&) {
  }
  try {
    (void)keel::server::parse_completion_request(j);
  } catch (const keel::server::ApiError&) {
  }
  return 0;
}
