// OutputParser rules that the public suites do not pin down (output_parser.h): what is held back and when it
// is released, malformed and unterminated calls, ids, the message's JSON, parameter typing edge cases.
#include <gtest/gtest.h>

#include "chat/parsers/output_parser.h"
#include "core/error.h"

using namespace keel::chat;

namespace {

// Feeds pieces and keeps what a client would have seen so far.
struct Stream {
  explicit Stream(ToolSyntax tools, ReasoningStart reasoning = ReasoningStart::disabled,
                  Json request_tools = {}) {
    ParserOptions o;
    o.tools = tools;
    o.reasoning = reasoning;
    o.schemas = ToolSchemas(request_tools);
    o.id_seed = 7;
    parser.emplace(std::move(o));
  }
  Stream& feed(std::string_view text) {
    take(parser->feed(text));
    return *this;
  }
  Stream& finish() {
    take(parser->finish());
    return *this;
  }
  void take(std::vector<OutputEvent> batch) {
    for (OutputEvent& e : batch) {
      if (e.kind == OutputEvent::Kind::content) content += e.text;
      if (e.kind == OutputEvent::Kind::reasoning) reasoning += e.text;
      events.push_back(std::move(e));
    }
  }
  const FinalMessage& message() const { return parser->message(); }

  std::optional<OutputParser> parser;
  std::string content, reasoning;
  std::vector<OutputEvent> events;
};

Json weather_tools() {
  return Json::parse(R"([{"type": "function", "function": {"name": "get_current_weather", "parameters":
      {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}])");
}

}  // namespace

TEST(ParserHoldBack, MarkerPrefixNeverReachesContent) {
  Stream s(ToolSyntax::hermes_json);
  s.feed("Sure <tool_");
  EXPECT_EQ(s.content, "Sure ");
  s.feed("ca");
  EXPECT_EQ(s.content, "Sure ");
  s.feed("ll>\n{\"name\": \"f\", ");
  EXPECT_EQ(s.content, "Sure ");
  s.feed("\"arguments\": {}}\n</tool_call>");
  EXPECT_EQ(s.content, "Sure ");
  s.finish();
  ASSERT_EQ(s.message().tool_calls.size(), 1u);
  EXPECT_EQ(s.message().tool_calls[0].name, "f");
}

TEST(ParserHoldBack, ReleasedAsSoonAsItCannotBeAMarker) {
  Stream s(ToolSyntax::qwen3_xml);
  s.feed("a <tool_");
  EXPECT_EQ(s.content, "a ");
  s.feed("s");  // "<tool_s" starts no marker
  EXPECT_EQ(s.content, "a <tool_s");
  s.feed(" and <");
  EXPECT_EQ(s.content, "a <tool_s and ");
  s.feed("b");
  EXPECT_EQ(s.content, "a <tool_s and <b");
  s.feed("<funct");  // a bare <function= is a marker in the XML syntax
  EXPECT_EQ(s.content, "a <tool_s and <b");
  s.feed("ional");
  EXPECT_EQ(s.content, "a <tool_s and <b<functional");
}

TEST(ParserHoldBack, PlainTextIsNeverHeld) {
  const std::string text = "Plain text, no markers: 3 > 2 and x = y.";
  Stream s(ToolSyntax::qwen3_xml, ReasoningStart::optional);
  for (size_t i = 0; i < text.size(); ++i) {
    s.feed(text.substr(i, 1));
    EXPECT_EQ(s.content, text.substr(0, i + 1));
  }
}

TEST(ParserHoldBack, UndecidedPrefixIsFlushedAtFinish) {
  Stream s(ToolSyntax::hermes_json);
  s.feed("Hello <tool_ca").finish();
  EXPECT_EQ(s.message().content, "Hello <tool_ca");
  EXPECT_FALSE(s.message().has_tool_calls());
  Stream r(ToolSyntax::none, ReasoningStart::open);
  r.feed("thinking </thi").finish();
  EXPECT_EQ(r.message().reasoning_content, "thinking </thi");
}

TEST(ParserHoldBack, ThinkTagSplitAnywhere) {
  Stream s(ToolSyntax::none, ReasoningStart::optional);
  s.feed("<thi");
  EXPECT_TRUE(s.events.empty());
  s.feed("nk>\nI think");
  EXPECT_EQ(s.reasoning, "I think");
  s.feed(" more \n");  // trailing whitespace of reasoning waits: it is dropped if </think> follows
  EXPECT_EQ(s.reasoning, "I think more");
  s.feed("</th");
  EXPECT_EQ(s.reasoning, "I think more");
  s.feed("ink>\n\nAnswer");
  EXPECT_EQ(s.reasoning, "I think more");
  EXPECT_EQ(s.content, "Answer");
}

TEST(ParserHoldBack, ReasoningWhitespaceIsKeptInside) {
  Stream s(ToolSyntax::none, ReasoningStart::open);
  s.feed("abc \n");
  EXPECT_EQ(s.reasoning, "abc");
  s.feed("def");
  EXPECT_EQ(s.reasoning, "abc \ndef");
}

TEST(ParserReasoning, OnlyFirstBlockAndOnlyAtTheStart) {
  Stream a(ToolSyntax::none, ReasoningStart::optional);
  a.feed("<think>a</think>b<think>c</think>").finish();
  EXPECT_EQ(a.message().reasoning_content, "a");
  EXPECT_EQ(a.message().content, "b<think>c</think>");
  Stream b(ToolSyntax::none, ReasoningStart::optional);
  b.feed("Hi <think>x</think>").finish();
  EXPECT_EQ(b.message().reasoning_content, "");
  EXPECT_EQ(b.message().content, "Hi <think>x</think>");
  Stream c(ToolSyntax::none, ReasoningStart::disabled);
  c.feed("<think>x</think>y").finish();
  EXPECT_EQ(c.message().content, "<think>x</think>y");
}

TEST(ParserReasoning, NemotronToolCallEndsOpenReasoning) {
  Stream s(ToolSyntax::nemotron_json, ReasoningStart::open);
  s.feed(
       "Need the weather.\n<TOOLCALL>[{\"name\": \"get_weather\", \"arguments\": {\"city\": "
       "\"Tokyo\"}}]</TOOLCALL>")
      .finish();
  EXPECT_EQ(s.message().reasoning_content, "Need the weather.");
  EXPECT_EQ(s.message().content, "");
  ASSERT_EQ(s.message().tool_calls.size(), 1u);
  EXPECT_EQ(Json::parse(s.message().tool_calls[0].arguments), Json::parse(R"({"city": "Tokyo"})"));
}

TEST(ParserMalformed, UnterminatedJsonCallBecomesContent) {
  const std::string text = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": [1, 2";
  Stream s(ToolSyntax::hermes_json);
  s.feed(text).finish();
  EXPECT_EQ(s.message().content, text);
  EXPECT_FALSE(s.message().has_tool_calls());
  EXPECT_TRUE(s.message().error.empty());
}

TEST(ParserMalformed, JsonStringMayContainTheEndTag) {
  Stream s(ToolSyntax::hermes_json);
  s.feed(R"(<tool_call>{"name": "f", "arguments": {"s": "a</tool_call>b"}}</tool_call>)").finish();
  ASSERT_EQ(s.message().tool_calls.size(), 1u);
  EXPECT_EQ(Json::parse(s.message().tool_calls[0].arguments)["s"], "a</tool_call>b");
}

TEST(ParserMalformed, JsonWithoutNameIsContent) {
  const std::string text = R"(<tool_call>{"arguments": {}}</tool_call> after)";
  Stream s(ToolSyntax::hermes_json);
  s.feed(text).finish();
  EXPECT_EQ(s.message().content, text);
  EXPECT_FALSE(s.message().has_tool_calls());
}

TEST(ParserMalformed, XmlCutInsideValueIsAnErrorAfterTheAnnouncement) {
  Stream s(ToolSyntax::qwen3_xml, ReasoningStart::disabled, weather_tools());
  s.feed("<tool_call>\n<function=get_current_weather>\n<parameter=city>\nDal");
  ASSERT_GE(s.events.size(), 2u);  // announced as soon as the first <parameter= arrived
  EXPECT_EQ(s.events[0].kind, OutputEvent::Kind::tool_call_begin);
  EXPECT_EQ(s.events[0].name, "get_current_weather");
  EXPECT_EQ(s.events[1].kind, OutputEvent::Kind::tool_call_arguments);
  EXPECT_EQ(s.events[1].text, "{");
  s.finish();
  EXPECT_NE(s.message().error.find("city"), std::string::npos) << s.message().error;
  EXPECT_FALSE(s.message().has_tool_calls());
  EXPECT_EQ(s.message().content, "");
}

TEST(ParserMalformed, XmlBadParameterNameSkipsTheBlockAndParsingGoesOn) {
  Stream s(ToolSyntax::qwen3_xml);
  s.feed("<tool_call>\n<function=f>\n<parameter=a\nb</parameter>\n</function>\n</tool_call>\nDone.").finish();
  EXPECT_FALSE(s.message().error.empty());
  EXPECT_FALSE(s.message().has_tool_calls());
  EXPECT_EQ(s.message().content, "Done.");
}

TEST(ParserMalformed, XmlWithAllParametersClosedButNoEndTagIsComplete) {
  Stream s(ToolSyntax::qwen3_xml, ReasoningStart::disabled, weather_tools());
  s.feed("<tool_call>\n<function=get_current_weather>\n<parameter=days>\n3\n</parameter>\n").finish();
  EXPECT_TRUE(s.message().error.empty());
  ASSERT_EQ(s.message().tool_calls.size(), 1u);
  EXPECT_EQ(Json::parse(s.message().tool_calls[0].arguments), Json::parse(R"({"days": 3})"));
}

TEST(ParserMalformed, BareFunctionTagInProseIsContent) {
  const std::string text = "Write <function=name> then the parameters.";
  Stream s(ToolSyntax::qwen3_xml);
  s.feed(text).finish();
  EXPECT_EQ(s.message().content, text);
  EXPECT_FALSE(s.message().has_tool_calls());
}

TEST(ParserXmlValues, LiteralParameterCloseInsideAValue) {
  Stream s(ToolSyntax::qwen3_xml);
  s.feed(
       "<tool_call>\n<function=python>\n<parameter=code>\nprint('</parameter>')\nx = 1\n</parameter>\n"
       "</function>\n</tool_call>")
      .finish();
  ASSERT_EQ(s.message().tool_calls.size(), 1u);
  EXPECT_EQ(Json::parse(s.message().tool_calls[0].arguments)["code"], "print('</parameter>')\nx = 1");
}

TEST(ParserXmlValues, ArgumentsStreamOneParameterAtATime) {
  Stream s(ToolSyntax::qwen3_xml, ReasoningStart::disabled, weather_tools());
  const std::string text =
      "<tool_call>\n<function=get_current_weather>\n<parameter=city>\nDallas\n</parameter>\n"
      "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>";
  for (char c : text) s.feed(std::string(1, c));
  s.finish();
  std::vector<std::string> pieces;
  for (const OutputEvent& e : s.events) {
    if (e.kind == OutputEvent::Kind::tool_call_arguments) pieces.push_back(e.text);
  }
  // A </parameter> is confirmed by the tag after it, so the last value arrives together with "}".
  EXPECT_EQ(pieces, (std::vector<std::string>{"{", R"("city": "Dallas")", R"(, "days": 3})"}));
}

TEST(ParserSyntax, NoToolSyntaxLeavesCallsAsContent) {
  const std::string text = R"(<tool_call>{"name": "f", "arguments": {}}</tool_call>)";
  Stream s(ToolSyntax::none);
  s.feed(text).finish();
  EXPECT_EQ(s.message().content, text);
  EXPECT_FALSE(s.message().has_tool_calls());
}

TEST(ParserIds, SeededDistinctAndWellFormed) {
  auto ids = [](std::optional<uint64_t> seed) {
    ParserOptions o;
    o.tools = ToolSyntax::hermes_json;
    o.id_seed = seed;
    OutputParser p(o);
    p.feed(R"(<tool_call>{"name": "a"}</tool_call><tool_call>{"name": "b"}</tool_call>)");
    p.finish();
    return std::vector<std::string>{p.message().tool_calls.at(0).id, p.message().tool_calls.at(1).id};
  };
  std::vector<std::string> a = ids(1), b = ids(1);
  EXPECT_EQ(a, b);
  EXPECT_NE(a[0], a[1]);
  EXPECT_NE(ids(2), a);
  for (const std::string& id : a) {
    EXPECT_EQ(id.size(), 29u);
    EXPECT_TRUE(id.starts_with("call_"));
    for (char c : id.substr(5)) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c))) << id;
  }
  EXPECT_NE(ids(std::nullopt), ids(std::nullopt));  // 62^24 ids: equal only by a broken generator
}

TEST(ParserMessage, OpenAIShape) {
  Stream s(ToolSyntax::hermes_json, ReasoningStart::optional);
  s.feed("<think>hmm</think><tool_call>{\"name\": \"f\", \"arguments\": {\"x\": 1}}</tool_call>").finish();
  Json m = s.message().to_json();
  EXPECT_EQ(m["role"], "assistant");
  EXPECT_TRUE(m["content"].is_null());
  EXPECT_EQ(m["reasoning_content"], "hmm");
  ASSERT_EQ(m["tool_calls"].size(), 1u);
  EXPECT_EQ(m["tool_calls"][0]["type"], "function");
  EXPECT_EQ(m["tool_calls"][0]["function"]["name"], "f");
  EXPECT_TRUE(m["tool_calls"][0]["function"]["arguments"].is_string());
  EXPECT_EQ(Json::parse(m["tool_calls"][0]["function"]["arguments"].get<std::string>()),
            Json::parse(R"({"x": 1})"));

  Stream t(ToolSyntax::none);
  t.feed("hi").finish();
  Json plain = t.message().to_json();
  EXPECT_EQ(plain["content"], "hi");
  EXPECT_FALSE(plain.contains("tool_calls"));
  EXPECT_FALSE(plain.contains("reasoning_content"));
}

TEST(ParserEvents, MergedWithinOneFeedAndFeedAfterFinishIsAnError) {
  ParserOptions o;
  OutputParser p(o);
  std::vector<OutputEvent> e = p.feed("Hello, world!");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].text, "Hello, world!");
  p.finish();
  EXPECT_THROW(p.feed("x"), keel::Error);
}

// vLLM's _convert_param_value (vllm/tool_parsers/qwen3coder_tool_parser.py) for the cases the data files do
// not cover: non-numbers in integer fields stay strings, Python booleans and None are understood, a
// string-only field keeps "null" as text; with no schema, JSON is parsed (keel's rule) and anything else
// stays a string.
TEST(ParserParamValues, ConversionEdges) {
  EXPECT_EQ(convert_param_value("abc", param_integer), Json("abc"));
  EXPECT_EQ(convert_param_value("True", param_boolean), Json(true));
  EXPECT_EQ(convert_param_value("False", param_boolean), Json(false));
  EXPECT_EQ(convert_param_value("5", param_number), Json(5));
  EXPECT_EQ(convert_param_value("None", param_integer | param_null), Json(nullptr));
  EXPECT_EQ(convert_param_value("null", param_string), Json("null"));
  EXPECT_EQ(convert_param_value("\"quoted\"", param_string),
            Json("\"quoted\""));  // string values stay raw text
  EXPECT_EQ(convert_param_value("[1, 2]", 0), Json::parse("[1, 2]"));
  EXPECT_EQ(convert_param_value("hello", 0), Json("hello"));
  EXPECT_EQ(param_types_of_schema(Json::parse(R"({"type": "float"})")), unsigned{param_number});
  EXPECT_EQ(param_types_of_schema(Json::parse(R"({"enum": ["a", "b"]})")), unsigned{param_string});
  EXPECT_EQ(param_types_of_schema(Json::parse(R"({"description": "no type"})")), 0u);
}
