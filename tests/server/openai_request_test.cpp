// Request validation against the OpenAI API reference's rules: every malformed field is a 400 naming it
// (`param`), unsupported features are refused rather than ignored, and valid bodies come out typed. The
// expected values are written from the API reference (platform.openai.com/docs/api-reference/chat/create),
// not from keel.
#include "server/openai_request.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace keel::server;

namespace {

Json body(const char* text) {
  return Json::parse(text);
}

// The ApiError a chat body raises (fails the test when it raises none).
ApiError chat_error(const char* text) {
  try {
    parse_chat_request(body(text));
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for " << text;
  return ApiError(0, "", "");
}

ApiError completion_error(const char* text) {
  try {
    parse_completion_request(body(text));
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for " << text;
  return ApiError(0, "", "");
}

}  // namespace

TEST(ChatRequest, MinimalBodyTakesDefaults) {
  ChatRequest r = parse_chat_request(body(R"({"messages": [{"role": "user", "content": "hi"}]})"));
  EXPECT_EQ(r.model, "");
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0]["content"], "hi");
  EXPECT_TRUE(r.tools.is_null());
  EXPECT_FALSE(r.parse_tool_calls);
  EXPECT_FALSE(r.gen.stream);
  EXPECT_FALSE(r.gen.max_tokens.has_value());
  EXPECT_FALSE(r.gen.temperature.has_value());
  EXPECT_TRUE(r.gen.stop.empty());
}

TEST(ChatRequest, EveryFieldIsRead) {
  ChatRequest r = parse_chat_request(body(R"({
    "model": "repro", "messages": [{"role": "developer", "content": "be brief"},
                                   {"role": "user", "content": [{"type": "text", "text": "a"},
                                                                {"type": "text", "text": "b"}]}],
    "temperature": 0.5, "top_p": 0.9, "top_k": 40, "min_p": 0.05, "presence_penalty": 1.5,
    "frequency_penalty": -0.5, "repetition_penalty": 1.1, "seed": -3, "stop": ["x", "", "yz"],
    "max_completion_tokens": 12, "logprobs": true, "top_logprobs": 3, "stream": true,
    "stream_options": {"include_usage": true}, "chat_template_kwargs": {"enable_thinking": false},
    "n": 1, "user": "ignored", "parallel_tool_calls": true, "response_format": {"type": "text"}})"));
  EXPECT_EQ(r.model, "repro");
  EXPECT_EQ(r.messages[0]["role"], "system");  // developer is the system role under its newer name
  EXPECT_EQ(r.messages[1]["content"], "a\nb");
  EXPECT_FLOAT_EQ(*r.gen.temperature, 0.5f);
  EXPECT_FLOAT_EQ(*r.gen.top_p, 0.9f);
  EXPECT_EQ(*r.gen.top_k, 40);
  EXPECT_FLOAT_EQ(*r.gen.min_p, 0.05f);
  EXPECT_FLOAT_EQ(r.gen.presence_penalty, 1.5f);
  EXPECT_FLOAT_EQ(r.gen.frequency_penalty, -0.5f);
  EXPECT_FLOAT_EQ(*r.gen.repetition_penalty, 1.1f);
  EXPECT_EQ(*r.gen.seed, static_cast<uint64_t>(-3));
  EXPECT_EQ(r.gen.stop, (std::vector<std::string>{"x", "yz"}));
  EXPECT_EQ(*r.gen.max_tokens, 12);
  EXPECT_TRUE(r.gen.logprobs);
  EXPECT_EQ(r.gen.top_logprobs, 3);
  EXPECT_TRUE(r.gen.stream);
  EXPECT_TRUE(r.gen.include_usage);
  EXPECT_EQ(r.template_kwargs["enable_thinking"], false);
}

TEST(ChatRequest, ToolsAndToolChoice) {
  const char* tools =
      R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}])";
  ChatRequest r = parse_chat_request(body(
      (std::string(R"({"messages": [{"role": "user", "content": "x"}], "tools": )") + tools + "}").c_str()));
  EXPECT_TRUE(r.parse_tool_calls);
  EXPECT_EQ(r.tools.size(), 1u);
  r = parse_chat_request(body((std::string(R"({"messages": [{"role": "user", "content": "x"}], "tools": )") +
                               tools + R"(, "tool_choice": "none"})")
                                  .c_str()));
  EXPECT_FALSE(r.parse_tool_calls);
  EXPECT_EQ(r.tools.size(), 1u);  // the template still sees them; the output is not parsed for calls

  // "required" and a named function force a call (the model's turn begins with its opening).
  r = parse_chat_request(body((std::string(R"({"messages": [{"role": "user", "content": "x"}], "tools": )") +
                               tools + R"(, "tool_choice": "required"})")
                                  .c_str()));
  EXPECT_TRUE(r.parse_tool_calls);
  EXPECT_TRUE(r.force_tool_call);
  EXPECT_EQ(r.forced_tool, "");
  r = parse_chat_request(body((std::string(R"({"messages": [{"role": "user", "content": "x"}], "tools": )") +
                               tools + R"(, "tool_choice": {"type": "function", "function": {"name": "f"}}})")
                                  .c_str()));
  EXPECT_TRUE(r.force_tool_call);
  EXPECT_EQ(r.forced_tool, "f");
  ApiError e = chat_error(R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "required"})");
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.param(), "tool_choice");  // no tools to call
  e = chat_error((std::string(R"({"messages": [{"role": "user", "content": "x"}], "tools": )") + tools +
                  R"(, "tool_choice": {"type": "function", "function": {"name": "g"}}})")
                     .c_str());
  EXPECT_EQ(e.param(), "tool_choice.function.name");
  EXPECT_NE(std::string(e.what()).find("'g'"), std::string::npos) << e.what();
  e = chat_error(R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]})");
  EXPECT_EQ(e.param(), "tools[0].function");
  e = chat_error(R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"function": {"name": 3}}]})");
  EXPECT_EQ(e.param(), "tools[0].function.name");
}

TEST(ChatRequest, AssistantToolCallHistoryPassesThrough) {
  ChatRequest r = parse_chat_request(body(R"({"messages": [
      {"role": "user", "content": "weather?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "get", "arguments": "{\"city\": \"Paris\"}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "sunny"}]})"));
  EXPECT_EQ(r.messages[1]["content"], "");  // null content of a tool-calling turn reaches templates as ""
  EXPECT_EQ(r.messages[1]["tool_calls"][0]["function"]["arguments"], "{\"city\": \"Paris\"}");
  EXPECT_EQ(r.messages[2]["tool_call_id"], "c1");
}

TEST(ChatRequest, ErrorsNameTheField) {
  struct Case {
    const char* body;
    const char* param;
  };
  const Case cases[] = {
      {R"({})", "messages"},
      {R"({"messages": "hi"})", "messages"},
      {R"({"messages": []})", "messages"},
      {R"({"messages": [3]})", "messages[0]"},
      {R"({"messages": [{"content": "x"}]})", "messages[0].role"},
      {R"({"messages": [{"role": "wizard", "content": "x"}]})", "messages[0].role"},
      {R"({"messages": [{"role": "user"}]})", "messages[0].content"},
      {R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]})",
       "messages[0].content[0].type"},
      {R"({"messages": [{"role": "user", "content": [{"type": "text"}]}]})", "messages[0].content[0].text"},
      {R"({"messages": [{"role": "assistant", "content": "", "tool_calls": [{"function": {}}]}]})",
       "messages[0].tool_calls[0].function.name"},
      {R"({"messages": [{"role": "user", "content": "x"}], "model": 7})", "model"},
      {R"({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"})", "temperature"},
      {R"({"messages": [{"role": "user", "content": "x"}], "temperature": -1})", "temperature"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_p": 0})", "top_p"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_p": 1.5})", "top_p"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_k": 2.5})", "top_k"},
      {R"({"messages": [{"role": "user", "content": "x"}], "min_p": 2})", "min_p"},
      {R"({"messages": [{"role": "user", "content": "x"}], "presence_penalty": 3})", "presence_penalty"},
      {R"({"messages": [{"role": "user", "content": "x"}], "repetition_penalty": 0})", "repetition_penalty"},
      {R"({"messages": [{"role": "user", "content": "x"}], "seed": "s"})", "seed"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0})", "max_tokens"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": -5})", "max_tokens"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_completion_tokens": "9"})",
       "max_completion_tokens"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stop": 1})", "stop"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stop": ["a", 2]})", "stop[1]"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stream": "yes"})", "stream"},
      {R"({"messages": [{"role": "user", "content": "x"}], "stream_options": {"include_usage": 1}})",
       "stream_options.include_usage"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logprobs": 1})", "logprobs"},
      {R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})", "top_logprobs"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true, "top_logprobs": 21})",
       "top_logprobs"},
      {R"({"messages": [{"role": "user", "content": "x"}], "n": 2})", "n"},
      {R"({"messages": [{"role": "user", "content": "x"}], "n": 0})", "n"},
      {R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_object"}})",
       "response_format"},
      {R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema",
          "json_schema": {"name": "a", "schema": {}}}})",
       "response_format"},
      {R"({"messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": []})",
       "chat_template_kwargs"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": 1})", "tool_choice"},
      {R"({"messages": [{"role": "user", "content": "x"}], "parallel_tool_calls": "no"})",
       "parallel_tool_calls"},
  };
  for (const Case& c : cases) {
    ApiError e = chat_error(c.body);
    EXPECT_EQ(e.status(), 400) << c.body;
    EXPECT_EQ(e.param(), c.param) << c.body << " → " << e.what();
    EXPECT_EQ(e.type(), "invalid_request_error") << c.body;
    // The message names the field too, so a user reading only the message finds it.
    std::string root = std::string(c.param).substr(0, std::string(c.param).find_first_of(".["));
    EXPECT_NE(std::string(e.what()).find(root), std::string::npos) << e.what();
  }
}

TEST(ChatRequest, ErrorJsonHasTheOpenAIShape) {
  ApiError e = chat_error(R"({"messages": [{"role": "user", "content": "x"}], "n": 3})");
  Json j = e.to_json();
  ASSERT_TRUE(j.contains("error"));
  EXPECT_EQ(j["error"]["param"], "n");
  EXPECT_TRUE(j["error"]["message"].is_string());
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_TRUE(j["error"].contains("code"));
}

TEST(ChatRequest, MaxTokensMinusOneMeansUntilTheContextEnds) {
  ChatRequest r =
      parse_chat_request(body(R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": -1})"));
  EXPECT_FALSE(r.gen.max_tokens.has_value());
  r = parse_chat_request(body(R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 32000})"));
  EXPECT_EQ(*r.gen.max_tokens, 32000);  // larger than any context here: not an error
  r = parse_chat_request(body(R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 7.0})"));
  EXPECT_EQ(*r.gen.max_tokens, 7);  // JavaScript numbers
}

TEST(JsonBody, MalformedAndHostileBodies) {
  for (const char* text : {"", "{", "{\"messages\": [}", "nul", "{\"a\": \"\xff\"}"}) {
    try {
      parse_json_body(text);
      ADD_FAILURE() << "accepted " << text;
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400);
      EXPECT_EQ(e.param(), "body");
    }
  }
  std::string deep(100000, '[');
  try {
    parse_json_body(deep);
    ADD_FAILURE() << "accepted deep nesting";
  } catch (const ApiError& e) {
    EXPECT_NE(std::string(e.what()).find("deeper"), std::string::npos);
  }
  // Brackets inside strings do not count as nesting.
  std::string quoted = "{\"a\": \"" + std::string(1000, '[') + "\"}";
  EXPECT_EQ(parse_json_body(quoted)["a"].get<std::string>().size(), 1000u);
  ApiError e = chat_error("[1, 2]");
  EXPECT_EQ(e.param(), "body");
}

TEST(CompletionRequest, PromptForms) {
  CompletionRequest r =
      parse_completion_request(body(R"({"prompt": "Once upon", "max_tokens": 5, "logprobs": 2})"));
  EXPECT_EQ(r.prompt, "Once upon");
  EXPECT_EQ(*r.gen.max_tokens, 5);
  EXPECT_TRUE(r.gen.logprobs);
  EXPECT_EQ(r.gen.top_logprobs, 2);
  r = parse_completion_request(body(R"({"prompt": ["one"]})"));
  EXPECT_EQ(r.prompt, "one");
  r = parse_completion_request(body(R"({"prompt": [5, 6, 7]})"));
  EXPECT_EQ(*r.prompt_tokens, (std::vector<int32_t>{5, 6, 7}));

  EXPECT_EQ(completion_error(R"({})").param(), "prompt");
  EXPECT_EQ(completion_error(R"({"prompt": 3})").param(), "prompt");
  EXPECT_EQ(completion_error(R"({"prompt": ["a", "b"]})").param(), "prompt");
  EXPECT_EQ(completion_error(R"({"prompt": [1, -2]})").param(), "prompt[1]");
  EXPECT_EQ(completion_error(R"({"prompt": "x", "echo": true})").param(), "echo");
  EXPECT_EQ(completion_error(R"({"prompt": "x", "n": 4})").param(), "n");
  EXPECT_EQ(completion_error(R"({"prompt": "x", "logprobs": 50})").param(), "logprobs");
}

// logit_bias (OpenAI's object and llama-server's pairs; −100..100) and best_of (issue 15, item 9); max_tokens
// up to 2^63 − 1 is accepted here and capped at the context when submitted (item 2).
TEST(ChatRequest, LogitBiasBestOfAndHugeMaxTokens) {
  ChatRequest r = parse_chat_request(
      body(R"({"messages": [{"role": "user", "content": "x"}], "logit_bias": {"50256": -100, "11": 2.5},
               "best_of": 1, "max_tokens": 9223372036854775807})"));
  std::vector<std::pair<int32_t, float>> want = {{11, 2.5f}, {50256, -100.0f}};
  std::sort(r.gen.logit_bias.begin(), r.gen.logit_bias.end());
  EXPECT_EQ(r.gen.logit_bias, want);
  EXPECT_EQ(r.gen.max_tokens, INT64_MAX);
  CompletionRequest c =
      parse_completion_request(body(R"({"prompt": "x", "logit_bias": [[5, -3], [6, false]]})"));
  EXPECT_EQ(c.gen.logit_bias, (std::vector<std::pair<int32_t, float>>{{5, -3.0f}, {6, -100.0f}}));
  EXPECT_EQ(
      chat_error(R"({"messages": [{"role": "user", "content": "x"}], "logit_bias": {"5": 100.5}})").param(),
      "logit_bias.5");
  EXPECT_EQ(
      chat_error(R"({"messages": [{"role": "user", "content": "x"}], "logit_bias": {"-5": 1}})").param(),
      "logit_bias.-5");
  EXPECT_EQ(
      chat_error(R"({"messages": [{"role": "user", "content": "x"}], "logit_bias": {"5": null}})").param(),
      "logit_bias.5");
  EXPECT_EQ(chat_error(R"({"messages": [{"role": "user", "content": "x"}], "logit_bias": [1, 2]})").param(),
            "logit_bias[0]");
  ApiError b = completion_error(R"({"prompt": "x", "best_of": 3})");
  EXPECT_EQ(b.status(), 400);
  EXPECT_EQ(b.param(), "best_of");
  EXPECT_EQ(chat_error(R"({"messages": [{"role": "user", "content": "x"}], "best_of": 0})").param(),
            "best_of");
}

// A body is bounded in nesting even where the nesting hides in a string that keel parses later (item 1): the
// body itself is shallow, so it parses; the tool-call arguments string is checked when it is parsed.
TEST(JsonBody, NestingInsideStringsIsNotTheBodysButIsBoundedLater) {
  std::string deep = std::string(300000, '[') + std::string(300000, ']');
  Json j =
      parse_json_body(Json{{"messages", Json::array({Json{{"role", "user"}, {"content", deep}}})}}.dump());
  EXPECT_EQ(j["messages"][0]["content"], deep);
  EXPECT_THROW(parse_json_body(deep), ApiError);
  // Found by openai_request_fuzz: a number beyond double's range is nlohmann's out_of_range, not parse_error.
  EXPECT_THROW(parse_json_body(R"({"messages": [], "temperature": 1e999})"), ApiError);
}
