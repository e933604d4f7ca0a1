// Anthropic streaming events, checked against the event grammar of the Messages streaming spec at every split
// of the model's output (two pieces split at each byte, and one byte at a time): message_start first;
// per block content_block_start, deltas of the block's own kind (text_delta, thinking_delta,
// input_json_delta), content_block_stop, with indices 0, 1, 2, ... in order; then message_delta and
// message_stop. The blocks the events build are the ones written out by hand here, and the same as the
// non-streaming body. Also the stop reasons, usage and the error shape.
#include <gtest/gtest.h>

#include "chat/parsers/output_parser.h"
#include "server/anthropic_response.h"
#include "server/api_error.h"

using namespace keel;
using namespace keel::server;

namespace {

struct Block {
  std::string type;  // text | thinking | tool_use
  std::string text;  // text, thinking, or the tool's input JSON text
  std::string name;  // tool_use
  bool operator==(const Block&) const = default;
};

// Checks the grammar (ADD_FAILURE on the first violation) and returns the blocks the events build.
std::vector<Block> check_events(const std::vector<Json>& ev, const std::string& context) {
  std::vector<Block> blocks;
  auto fail = [&](size_t i, const std::string& why) {
    ADD_FAILURE() << context << ": event " << i << " " << (i < ev.size() ? ev[i].dump() : "<end>") << ": "
                  << why;
    return blocks;
  };
  if (ev.empty() || ev[0]["type"] != "message_start") return fail(0, "the first event must be message_start");
  const Json& m = ev[0]["message"];
  if (m["content"] != Json::array() || !m["stop_reason"].is_null() || m["role"] != "assistant" ||
      m["type"] != "message")
    return fail(0, "message_start carries an empty assistant message");
  bool open = false;
  size_t i = 1;
  for (; i < ev.size(); ++i) {
    const std::string type = ev[i]["type"];
    if (type == "ping") continue;
    if (type == "content_block_start") {
      if (open) return fail(i, "a block starts before the previous one stopped");
      if (ev[i]["index"] != blocks.size()) return fail(i, "block indices count from 0 in order");
      const Json& cb = ev[i]["content_block"];
      Block b{cb["type"], "", ""};
      if (b.type == "text" && cb["text"] != "") return fail(i, "a text block starts empty");
      if (b.type == "thinking" && cb["thinking"] != "") return fail(i, "a thinking block starts empty");
      if (b.type == "tool_use") {
        if (!cb["id"].is_string() || cb["id"] == "" || cb["input"] != Json::object())
          return fail(i, "tool_use starts with an id and empty input");
        b.name = cb["name"];
      } else if (b.type != "text" && b.type != "thinking") {
        return fail(i, "unknown block type");
      }
      blocks.push_back(b);
      open = true;
    } else if (type == "content_block_delta") {
      if (!open || ev[i]["index"] != blocks.size() - 1) return fail(i, "a delta outside its open block");
      const Json& d = ev[i]["delta"];
      Block& b = blocks.back();
      if (b.type == "text" && d["type"] == "text_delta")
        b.text += d["text"].get<std::string>();
      else if (b.type == "thinking" && d["type"] == "thinking_delta")
        b.text += d["thinking"].get<std::string>();
      else if (b.type == "thinking" && d["type"] == "signature_delta")
        continue;
      else if (b.type == "tool_use" && d["type"] == "input_json_delta")
        b.text += d["partial_json"].get<std::string>();
      else
        return fail(i, "the delta's kind does not match its block");
    } else if (type == "content_block_stop") {
      if (!open || ev[i]["index"] != blocks.size() - 1) return fail(i, "a stop without its open block");
      open = false;
    } else if (type == "message_delta") {
      break;
    } else {
      return fail(i, "unexpected event");
    }
  }
  if (open) return fail(i, "a block is still open at message_delta");
  if (i >= ev.size() || ev[i]["type"] != "message_delta")
    return fail(i, "message_delta must follow the blocks");
  if (!ev[i]["delta"]["stop_reason"].is_string() || !ev[i]["usage"]["output_tokens"].is_number())
    return fail(i, "message_delta carries stop_reason and usage");
  if (i + 2 != ev.size() || ev[i + 1]["type"] != "message_stop") return fail(i + 1, "message_stop ends it");
  return blocks;
}

struct Case {
  const char* name;
  chat::ToolSyntax tools;
  chat::ReasoningStart reasoning;
  std::string output;
  std::vector<Block> want;
  const char* stop_reason;
};

std::vector<Case> cases() {
  using chat::ReasoningStart;
  using chat::ToolSyntax;
  return {
      {"text",
       ToolSyntax::hermes_json,
       ReasoningStart::optional,
       "Hello there, no tools.",
       {{"text", "Hello there, no tools.", ""}},
       "end_turn"},
      {"thinking_text_tool",
       ToolSyntax::hermes_json,
       ReasoningStart::optional,
       "<think>\nI reason.\n</think>\n\nLet me check.<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
       "{\"city\": \"Paris\", \"days\": 3}}\n</tool_call>",
       {{"thinking", "I reason.", ""},
        {"text", "Let me check.", ""},
        {"tool_use", R"({"city":"Paris","days":3})", "get_weather"}},
       "tool_use"},
      {"two_calls",
       ToolSyntax::hermes_json,
       ReasoningStart::disabled,
       "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n</tool_call>\n<tool_call>\n{\"name\": "
       "\"b\", "
       "\"arguments\": {}}\n</tool_call>",
       {{"tool_use", R"({"x":1})", "a"}, {"tool_use", "{}", "b"}},
       "tool_use"},
      {"xml_open_reasoning",
       ToolSyntax::qwen3_xml,
       ReasoningStart::open,
       "Think first.\n</think>\n\n<tool_call>\n<function=Bash>\n<parameter=command>\nls -la\n</parameter>\n"
       "</function>\n</tool_call>",
       {{"thinking", "Think first.", ""}, {"tool_use", R"({"command": "ls -la"})", "Bash"}},
       "tool_use"},
  };
}

struct Output {
  std::vector<Json> events;
  Json body;  // the non-streaming message for the same output
};

Output run(const Case& c, const std::vector<std::string>& pieces) {
  chat::ParserOptions o;
  o.tools = c.tools;
  o.reasoning = c.reasoning;
  o.id_seed = 1;
  chat::OutputParser parser(o);
  AnthropicStream stream("msg_test", "m");
  AnthropicUsage usage{100, 40, 0};
  Output r;
  r.events.push_back(stream.message_start(usage));
  r.events.push_back(Json{{"type", "ping"}});  // as during a prefill
  for (const std::string& p : pieces)
    for (Json& e : stream.feed(parser.feed(p))) r.events.push_back(std::move(e));
  for (Json& e : stream.feed(parser.finish())) r.events.push_back(std::move(e));
  usage.output_tokens = 9;
  bool calls = parser.message().has_tool_calls();
  const char* reason = anthropic_stop_reason(FinishReason::stop, calls, false, false);
  for (Json& e : stream.finish(reason, "", usage)) r.events.push_back(std::move(e));
  r.body = stream.message(parser.message(), reason, "", usage);
  return r;
}

// The non-streaming body's blocks, in the same form.
std::vector<Block> body_blocks(const Json& body) {
  std::vector<Block> out;
  for (const Json& b : body["content"]) {
    if (b["type"] == "text") out.push_back({"text", b["text"], ""});
    if (b["type"] == "thinking") out.push_back({"thinking", b["thinking"], ""});
    if (b["type"] == "tool_use") out.push_back({"tool_use", b["input"].dump(), b["name"]});
  }
  return out;
}

// Tool inputs compare as JSON values (the stream carries the model's text, the body the parsed object).
void expect_blocks(const std::vector<Block>& got, const std::vector<Block>& want, const std::string& ctx) {
  ASSERT_EQ(got.size(), want.size()) << ctx;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].type, want[i].type) << ctx << " block " << i;
    EXPECT_EQ(got[i].name, want[i].name) << ctx << " block " << i;
    if (want[i].type == "tool_use")
      EXPECT_EQ(Json::parse(got[i].text), Json::parse(want[i].text)) << ctx << " block " << i;
    else
      EXPECT_EQ(got[i].text, want[i].text) << ctx << " block " << i;
  }
}

}  // namespace

TEST(AnthropicStream, EventGrammarAndBlocksAtEverySplit) {
  for (const Case& c : cases()) {
    const std::string& s = c.output;
    std::vector<std::vector<std::string>> splits;
    for (size_t i = 0; i <= s.size(); ++i) splits.push_back({s.substr(0, i), s.substr(i)});
    std::vector<std::string> bytes;
    for (char ch : s) bytes.emplace_back(1, ch);
    splits.push_back(bytes);
    for (size_t k = 0; k < splits.size(); ++k) {
      std::string ctx =
          std::string(c.name) + (k + 1 < splits.size() ? " split at " + std::to_string(k) : " byte by byte");
      Output r = run(c, splits[k]);
      std::vector<Block> blocks = check_events(r.events, ctx);
      expect_blocks(blocks, c.want, ctx);
      expect_blocks(body_blocks(r.body), c.want, ctx + " (body)");
      EXPECT_EQ(r.events[r.events.size() - 2]["delta"]["stop_reason"], c.stop_reason) << ctx;
      EXPECT_EQ(r.body["stop_reason"], c.stop_reason) << ctx;
      if (::testing::Test::HasFailure()) return;  // one broken split is enough to read
    }
  }
}

TEST(AnthropicStream, UsageCountsUncachedInputAsInputTokens) {
  AnthropicUsage u{120, 100, 7};
  EXPECT_EQ(u.to_json(), Json::parse(R"({"input_tokens": 20, "cache_creation_input_tokens": 0,
                                         "cache_read_input_tokens": 100, "output_tokens": 7})"));
}

TEST(AnthropicStream, StopReasons) {
  EXPECT_STREQ(anthropic_stop_reason(FinishReason::stop, false, false, false), "end_turn");
  EXPECT_STREQ(anthropic_stop_reason(FinishReason::stop, false, true, false), "stop_sequence");
  EXPECT_STREQ(anthropic_stop_reason(FinishReason::stop, true, false, false), "tool_use");
  EXPECT_STREQ(anthropic_stop_reason(FinishReason::length, false, false, false), "max_tokens");
  EXPECT_STREQ(anthropic_stop_reason(FinishReason::length, false, false, true),
               "model_context_window_exceeded");
}

TEST(AnthropicStream, ErrorShapeAndTypeByStatus) {
  const std::pair<int, const char*> cases[] = {{400, "invalid_request_error"}, {401, "authentication_error"},
                                               {403, "permission_error"},      {404, "not_found_error"},
                                               {413, "request_too_large"},     {429, "rate_limit_error"},
                                               {431, "invalid_request_error"}, {500, "api_error"},
                                               {503, "overloaded_error"},      {529, "overloaded_error"}};
  for (auto [status, type] : cases) {
    Json j = anthropic_error_json(ApiError(status, "c", "what happened"));
    EXPECT_EQ(j, Json({{"type", "error"}, {"error", {{"type", type}, {"message", "what happened"}}}}))
        << status;
  }
  ApiError e = prompt_too_long(5000, 4095);
  EXPECT_STREQ(e.what(), "prompt is too long: 5000 tokens > 4095 maximum");
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(anthropic_sse(Json{{"type", "ping"}}), "event: ping\ndata: {\"type\":\"ping\"}\n\n");
}
