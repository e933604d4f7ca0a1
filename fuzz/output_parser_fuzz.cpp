// fuzz-libs: keel_core keel_chat

// libFuzzer target: generated text → OutputParser (tool calls and reasoning, src/chat/parsers/). The first
// byte picks the tool syntax and where the output starts relative to <think>; the second how the text is cut
// into deltas (a model's tokens arrive in pieces). The parser must never throw or crash, and the events it
// returns must add up to its final message (checked here: content and reasoning text).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "chat/parsers/output_parser.h"

namespace {

const keel::chat::Json& tools() {
  static const keel::chat::Json t = keel::chat::Json::parse(R"([{"type": "function", "function": {
      "name": "get_weather", "parameters": {"type": "object", "properties": {
      "city": {"type": "string"}, "days": {"type": "integer"}, "hourly": {"type": "boolean"},
      "where": {"type": "object"}, "list": {"type": "array"}, "t": {"type": ["number", "null"]}}}}}])");
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace keel::chat;
  if (size < 2) return 0;
  const uint8_t mode = data[0], cut = data[1];
  std::string_view text(reinterpret_cast<const char*>(data) + 2, size - 2);
  OutputFormat format;
  format.tools = static_cast<ToolSyntax>(mode % 4);
  format.think_tags = (mode / 4) % 2 == 1;
  static constexpr std::string_view kPrompts[] = {
      "<|im_start|>assistant\n", "<|im_start|>assistant\n<think>\n", "<think>\n\n</think>\n\n"};
  ParserOptions options =
      make_parser_options(format, kPrompts[(mode / 8) % 3], tools(), (mode / 32) % 2 == 0);
  options.id_seed = 1;
  OutputParser parser(std::move(options));
  std::string content, reasoning;
  auto take = [&](const std::vector<OutputEvent>& events) {
    for (const OutputEvent& e : events) {
      if (e.kind == OutputEvent::Kind::content) content += e.text;
      if (e.kind == OutputEvent::Kind::reasoning) reasoning += e.text;
    }
  };
  // Deltas of 1 + (cut % 16) bytes, moved back to a UTF-8 boundary (the parser takes whole characters).
  const size_t step = 1 + cut % 16;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = std::min(text.size(), pos + step);
    while (end < text.size() && end > pos + 1 && (static_cast<uint8_t>(text[end]) & 0xC0) == 0x80) --end;
    take(parser.feed(text.substr(pos, end - pos)));
    pos = end;
  }
  take(parser.finish());
  const FinalMessage& m = parser.message();
  if (m.content != content || m.reasoning_content != reasoning) std::abort();
  return 0;
}
