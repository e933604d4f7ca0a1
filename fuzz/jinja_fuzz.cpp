// fuzz-libs: keel_core keel_chat

// libFuzzer target: arbitrary template text (and, after a NUL byte, an optional JSON context) -> parse ->
// render with tight limits. A keel::Error is the only acceptable failure: no crash, no sanitizer report, no
// hang (the render budget bounds work), no unbounded memory (string, list, output and nesting limits).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "chat/jinja/template.h"
#include "core/error.h"

namespace {

const keel::chat::Json& default_context() {
  static const keel::chat::Json ctx = keel::chat::Json::parse(R"({
    "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "Hi {{ x }} ünï 👋"},
                 {"role": "assistant", "content": "<think>r</think>ok", "reasoning_content": "r",
                  "tool_calls": [{"id": "c1", "type": "function",
                                  "function": {"name": "f", "arguments": {"a": [1, 2.5, null, true]}}}]},
                 {"role": "tool", "content": "{\"r\": 1}"}],
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
    "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>", "enable_thinking": false,
    "n": 3, "f": -1.5, "s": "a,b", "d": {"k": "v", "items": 1}, "l": [3, "x", [], {}]})");
  return ctx;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string_view source = input.substr(0, input.find('\0'));
  keel::chat::Json context = default_context();
  if (source.size() < input.size()) {
    keel::chat::Json parsed = keel::chat::Json::parse(input.substr(source.size() + 1), nullptr, false);
    if (parsed.is_object()) context = std::move(parsed);
  }
  keel::chat::jinja::RenderOptions options;
  options.limits.max_steps = 200'000;
  options.limits.max_output_bytes = 1 << 20;
  options.limits.max_list_items = 1 << 16;
  options.limits.max_call_depth = 64;
  std::tm now{};
  now.tm_year = 125;
  now.tm_mday = 7;
  options.now = now;
  try {
    keel::chat::jinja::Template tmpl(source);
    (void)tmpl.render(context, options);
  } catch (const keel::Error&) {
  }
  return 0;
}
