// Anthropic Messages request bodies → the template's messages, one field at a time: what is accepted and
// mapped (system string or blocks, role "system" messages folded in, text / thinking / tool_use / tool_result
// blocks, tools' input_schema, tool_choice auto / none, thinking → enable_thinking, sampling,
// stop_sequences), what is ignored (the billing-header block, redacted_thinking, metadata,
// context_management, output_config, cache_control), and what is refused with a 400 naming the field (image /
// document blocks, server tools, tool_choice any / tool, out-of-range numbers, wrong types). The expected
// values are written out by hand.
#include "server/anthropic_request.h"

#include <gtest/gtest.h>

using namespace keel;
using namespace keel::server;

namespace {

AnthropicRequest parse(const char* body) {
  return parse_anthropic_request(Json::parse(body));
}

// The ApiError a body is refused with.
ApiError refusal(const char* body) {
  try {
    parse(body);
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << body;
  return ApiError(0, "", "");
}

}  // namespace

TEST(AnthropicRequest, SystemBlocksAndSystemMessagesBecomeOneSystemMessage) {
  AnthropicRequest r = parse(R"({
    "model": "claude-sonnet-4-5", "max_tokens": 32000,
    "system": [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.328; cch=1a2b3;"},
               {"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}},
               {"type": "text", "text": "Be brief."}],
    "messages": [{"role": "system", "content": "Environment: linux"},
                 {"role": "user", "content": [{"type": "text", "text": "hi",
                                               "cache_control": {"type": "ephemeral"}}]}]
  })");
  EXPECT_EQ(r.model, "claude-sonnet-4-5");
  EXPECT_EQ(r.chat.model, "");  // any name is served
  Json want = Json::parse(R"([
    {"role": "system", "content": "You are Claude Code.\n\nBe brief.\n\nEnvironment: linux"},
    {"role": "user", "content": "hi"}])");
  EXPECT_EQ(r.chat.messages, want) << r.chat.messages.dump();
  EXPECT_EQ(r.chat.gen.max_tokens, 32000);
  EXPECT_FALSE(r.chat.gen.stream);

  AnthropicRequest s = parse(R"({"system": "plain", "messages": [{"role": "user", "content": "hi"}]})");
  EXPECT_EQ(s.chat.messages[0], Json::parse(R"({"role": "system", "content": "plain"})"));
  AnthropicRequest none = parse(R"({"messages": [{"role": "user", "content": "hi"}]})");
  EXPECT_EQ(none.chat.messages, Json::parse(R"([{"role": "user", "content": "hi"}])"));
}

TEST(AnthropicRequest, AssistantBlocksAndToolResultsMapToTheTemplatesMessages) {
  AnthropicRequest r = parse(R"({"messages": [
    {"role": "user", "content": "weather?"},
    {"role": "assistant", "content": [
      {"type": "thinking", "thinking": "I should call it.", "signature": "sig"},
      {"type": "redacted_thinking", "data": "opaque"},
      {"type": "text", "text": "Let me look."},
      {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris", "days": 3}}]},
    {"role": "user", "content": [
      {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"},
      {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": true,
       "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
      {"type": "text", "text": "thanks"}]}]})");
  Json want = Json::parse(R"([
    {"role": "user", "content": "weather?"},
    {"role": "assistant", "content": "Let me look.", "reasoning_content": "I should call it.",
     "tool_calls": [{"id": "toolu_1", "type": "function",
                     "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\",\"days\":3}"}}]},
    {"role": "tool", "tool_call_id": "toolu_1", "content": "sunny", "name": "get_weather"},
    {"role": "tool", "tool_call_id": "toolu_1", "content": "a\nb", "name": "get_weather", "is_error": true},
    {"role": "user", "content": "thanks"}])");
  EXPECT_EQ(r.chat.messages, want) << r.chat.messages.dump(1);
}

TEST(AnthropicRequest, ToolsToolChoiceThinkingAndSampling) {
  AnthropicRequest r =
      parse(R"({"max_tokens": 5, "stream": true, "temperature": 0.5, "top_p": 0.9, "top_k": 40,
    "stop_sequences": ["END", ""], "thinking": {"type": "enabled", "budget_tokens": 1024},
    "metadata": {"user_id": "u"}, "context_management": {"edits": []}, "output_config": {"effort": "high"},
    "tools": [{"name": "Bash", "description": "Run a command",
               "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}],
    "tool_choice": {"type": "auto", "disable_parallel_tool_use": true},
    "messages": [{"role": "user", "content": "hi"}]})");
  Json want_tools = Json::parse(R"([{"type": "function", "function": {"name": "Bash",
    "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
    "description": "Run a command"}}])");
  EXPECT_EQ(r.chat.tools, want_tools);
  EXPECT_TRUE(r.chat.parse_tool_calls);
  EXPECT_EQ(r.chat.template_kwargs, Json::parse(R"({"enable_thinking": true})"));
  EXPECT_TRUE(r.chat.gen.stream);
  EXPECT_FLOAT_EQ(*r.chat.gen.temperature, 0.5f);
  EXPECT_FLOAT_EQ(*r.chat.gen.top_p, 0.9f);
  EXPECT_EQ(*r.chat.gen.top_k, 40);
  EXPECT_EQ(r.chat.gen.stop, std::vector<std::string>{"END"});
  EXPECT_EQ(r.chat.gen.max_tokens, 5);

  EXPECT_EQ(parse(R"({"thinking": {"type": "adaptive"}, "messages": [{"role": "user", "content": "x"}]})")
                .chat.template_kwargs["enable_thinking"],
            true);
  EXPECT_EQ(parse(R"({"thinking": {"type": "disabled"}, "messages": [{"role": "user", "content": "x"}]})")
                .chat.template_kwargs["enable_thinking"],
            false);
  AnthropicRequest off = parse(R"({"tools": [{"name": "t", "input_schema": {"type": "object"}}],
    "tool_choice": {"type": "none"}, "messages": [{"role": "user", "content": "x"}]})");
  EXPECT_FALSE(off.chat.parse_tool_calls);
  EXPECT_FALSE(off.chat.tools.is_null());  // the template still shows them
  EXPECT_TRUE(parse(R"({"tools": [], "messages": [{"role": "user", "content": "x"}]})").chat.tools.is_null());

  // count_tokens bodies carry no generation fields; their absence is fine.
  AnthropicRequest count =
      parse_anthropic_request(Json::parse(R"({"messages": [{"role": "user", "content": "x"}]})"), true);
  EXPECT_FALSE(count.chat.gen.max_tokens.has_value());
}

TEST(AnthropicRequest, ToolChoiceAnyAndToolForceACall) {
  const std::string tools =
      R"("tools": [{"name": "t", "input_schema": {}}, {"name": "u", "input_schema": {}}],
      "messages": [{"role": "user", "content": "x"}])";
  AnthropicRequest any =
      parse_anthropic_request(Json::parse("{" + tools + R"(, "tool_choice": {"type": "any"}})"));
  EXPECT_TRUE(any.chat.parse_tool_calls);
  EXPECT_TRUE(any.chat.force_tool_call);
  EXPECT_EQ(any.chat.forced_tool, "");
  AnthropicRequest named = parse_anthropic_request(
      Json::parse("{" + tools + R"(, "tool_choice": {"type": "tool", "name": "u"}})"));
  EXPECT_TRUE(named.chat.force_tool_call);
  EXPECT_EQ(named.chat.forced_tool, "u");
  AnthropicRequest none =
      parse_anthropic_request(Json::parse("{" + tools + R"(, "tool_choice": {"type": "none"}})"));
  EXPECT_FALSE(none.chat.parse_tool_calls);
  EXPECT_FALSE(none.chat.force_tool_call);
}

TEST(AnthropicRequest, RefusalsNameTheField) {
  struct Case {
    const char* body;
    const char* param;
    const char* code;
  };
  const Case cases[] = {
      {R"([1])", "body", "invalid_value"},
      {R"({})", "messages", "invalid_value"},
      {R"({"messages": []})", "messages", "invalid_value"},
      {R"({"messages": [{"role": "tool", "content": "x"}]})", "messages.0.role", "invalid_value"},
      {R"({"messages": [{"role": "user"}]})", "messages.0.content", "invalid_value"},
      {R"({"messages": [{"role": "user", "content": 7}]})", "messages.0.content", "invalid_value"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]})",
       "messages.0.content.0.type", "unsupported"},
      {R"({"messages": [{"role": "user", "content": [{"type": "document", "source": {}}]}]})",
       "messages.0.content.0.type", "unsupported"},
      {R"({"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a",
           "content": [{"type": "image", "source": {}}]}]}]})",
       "messages.0.content.0.content.0.type", "unsupported"},
      {R"({"messages": [{"role": "user", "content": [{"type": "tool_result"}]}]})",
       "messages.0.content.0.tool_use_id", "invalid_value"},
      {R"({"messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "n",
           "input": [1]}]}]})",
       "messages.0.content.0.input", "invalid_value"},
      {R"({"messages": [{"role": "user", "content": [{"text": "no type"}]}]})", "messages.0.content.0.type",
       "invalid_value"},
      {R"({"system": [{"type": "image"}], "messages": [{"role": "user", "content": "x"}]})", "system.0.type",
       "unsupported"},
      {R"({"max_tokens": 0, "messages": [{"role": "user", "content": "x"}]})", "max_tokens", "invalid_value"},
      {R"({"max_tokens": "5", "messages": [{"role": "user", "content": "x"}]})", "max_tokens",
       "invalid_value"},
      {R"({"temperature": 1.5, "messages": [{"role": "user", "content": "x"}]})", "temperature",
       "invalid_value"},
      {R"({"top_p": 0, "messages": [{"role": "user", "content": "x"}]})", "top_p", "invalid_value"},
      {R"({"top_k": -1, "messages": [{"role": "user", "content": "x"}]})", "top_k", "invalid_value"},
      {R"({"stop_sequences": "END", "messages": [{"role": "user", "content": "x"}]})", "stop_sequences",
       "invalid_value"},
      {R"({"stop_sequences": [1], "messages": [{"role": "user", "content": "x"}]})", "stop_sequences.0",
       "invalid_value"},
      {R"({"stream": "yes", "messages": [{"role": "user", "content": "x"}]})", "stream", "invalid_value"},
      {R"({"tools": [{"type": "web_search_20250305", "name": "web_search"}],
           "messages": [{"role": "user", "content": "x"}]})",
       "tools.0.type", "unsupported"},
      {R"({"tools": [{"name": "t"}], "messages": [{"role": "user", "content": "x"}]})",
       "tools.0.input_schema", "invalid_value"},
      {R"({"tools": [{"name": "", "input_schema": {}}], "messages": [{"role": "user", "content": "x"}]})",
       "tools.0.name", "invalid_value"},
      {R"({"tool_choice": {"type": "any"}, "messages": [{"role": "user", "content": "x"}]})",
       "tool_choice.type", "invalid_value"},  // no tools to call
      {R"({"tools": [{"name": "t", "input_schema": {}}], "tool_choice": {"type": "tool", "name": "u"},
           "messages": [{"role": "user", "content": "x"}]})",
       "tool_choice.name", "invalid_value"},
      {R"({"tools": [{"name": "t", "input_schema": {}}], "tool_choice": {"type": "tool"},
           "messages": [{"role": "user", "content": "x"}]})",
       "tool_choice.name", "invalid_value"},
      {R"({"tool_choice": "auto", "messages": [{"role": "user", "content": "x"}]})", "tool_choice",
       "invalid_value"},
      {R"({"thinking": {"type": "sometimes"}, "messages": [{"role": "user", "content": "x"}]})",
       "thinking.type", "invalid_value"},
      {R"({"model": 3, "messages": [{"role": "user", "content": "x"}]})", "model", "invalid_value"},
  };
  for (const Case& c : cases) {
    ApiError e = refusal(c.body);
    EXPECT_EQ(e.status(), 400) << c.body;
    EXPECT_EQ(e.param(), c.param) << c.body << ": " << e.what();
    EXPECT_EQ(e.code(), c.code) << c.body << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find(c.param == std::string("body") ? "body" : c.param),
              std::string::npos)
        << "the message names the field: " << e.what();
  }
}
