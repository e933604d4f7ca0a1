// JSON held in strings is bounded like a request body (issue 15, item 1): an assistant message whose
// tool_calls[].function.arguments string holds 300,000 nested arrays crashed the server (SIGSEGV) when the
// parsed value was copied into the template context. Every JSON that keel parses from a string (tool-call
// arguments, the output parsers' JSON, schemas) is checked for nesting first (core/json_depth.h).
#include <gtest/gtest.h>

#include <string>

#include "chat/chat_template.h"
#include "chat/parsers/json_tool_calls.h"
#include "core/json_depth.h"

using namespace keel;
using namespace keel::chat;

namespace {

std::string nested_arrays(size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

Json assistant_with_arguments(const std::string& arguments) {
  Json call = {{"id", "c1"}, {"type", "function"}, {"function", {{"name", "f"}, {"arguments", arguments}}}};
  return Json::array({Json{{"role", "user"}, {"content", "go"}},
                      Json{{"role", "assistant"}, {"content", ""}, {"tool_calls", Json::array({call})}}});
}

}  // namespace

TEST(JsonBounds, DepthScanIgnoresStringsAndFindsTheFirstTooDeepBracket) {
  EXPECT_FALSE(json_too_deep(nested_arrays(kMaxJsonDepth)));
  EXPECT_EQ(json_too_deep_at(nested_arrays(kMaxJsonDepth + 1)), static_cast<size_t>(kMaxJsonDepth));
  // Brackets inside strings (escaped quotes included) are text.
  EXPECT_FALSE(json_too_deep("[\"" + std::string(1000, '[') + "\\\"" + std::string(1000, '{') + "\"]"));
  EXPECT_TRUE(json_too_deep("{\"a\": \"\\\\\"" + std::string(300, '[')));
}

TEST(JsonBounds, DeeplyNestedArgumentsStringStaysAStringAndCopiesSafely) {
  const std::string deep = "{\"a\": " + nested_arrays(300000) + "}";
  Json messages = assistant_with_arguments(deep);
  Json out = normalize_tool_call_arguments(messages);  // crashed here (or on the copies after) before
  const Json& args = out[1]["tool_calls"][0]["function"]["arguments"];
  ASSERT_TRUE(args.is_string());
  EXPECT_EQ(args.get<std::string>(), deep);
  Json copy = out;  // the template context copies it again
  EXPECT_EQ(copy.dump().size(), out.dump().size());
  // Within the bound, an object is still parsed into an object.
  Json ok = normalize_tool_call_arguments(assistant_with_arguments("{\"a\": " + nested_arrays(100) + "}"));
  EXPECT_TRUE(ok[1]["tool_calls"][0]["function"]["arguments"].is_object());
}

TEST(JsonBounds, OutputParserRefusesTooDeepJsonInsteadOfWalkingIt) {
  std::vector<JsonToolCall> calls;
  EXPECT_FALSE(
      read_json_tool_calls("{\"name\": \"f\", \"arguments\": " + nested_arrays(300000) + "}", calls));
  // arguments written as a string holding JSON (decoded once when it is an object), far too deep: kept as
  // text
  ASSERT_TRUE(read_json_tool_calls(
      Json{{"name", "f"}, {"arguments", "{\"x\": " + nested_arrays(300000) + "}"}}.dump(), calls));
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].name, "f");
  EXPECT_TRUE(calls[0].arguments.starts_with("\"{\\\"x\\\": [[[")) << calls[0].arguments.substr(0, 40);
}
