// Random outputs built from marker pieces, JSON and XML fragments, whitespace and multi-byte text, in every
// tool syntax and reasoning start. Oracle: the unsplit run. Any splitting must give the same final message,
// the events must add up to it, and every completed call's arguments must be valid JSON. Also: nothing
// throws.
#include <gtest/gtest.h>

#include <random>

#include "chat/parsers/output_parser.h"

using namespace keel::chat;

namespace {

const char* const kPieces[] = {
    "<tool_call>",
    "</tool_call>",
    "<tool_",
    "<function=f>",
    "<function=get>",
    "<function=",
    "</function>",
    "<parameter=a>",
    "<parameter=b>",
    "</parameter>",
    "<parameter=",
    "<TOOLCALL>",
    "</TOOLCALL>",
    "<TOOL",
    "<think>",
    "</think>",
    "<th",
    "</th",
    "{\"name\": \"f\", \"arguments\": {\"x\": 1}}",
    "{\"name\": \"g\"}",
    "[{\"name\": \"h\", \"arguments\": \"{}\"}]",
    "{",
    "}",
    "[",
    "]",
    "\"",
    "\\",
    ":",
    ",",
    "\n",
    "\n\n",
    " ",
    "\t",
    "hello",
    "42",
    "true",
    "null",
    "None",
    "x < y",
    "格",
    "é",
    "🙂",
    "<",
    ">",
    "=",
};

std::string random_output(std::mt19937& rng) {
  std::uniform_int_distribution<size_t> piece(0, std::size(kPieces) - 1);
  std::uniform_int_distribution<int> count(0, 24);
  std::string s;
  for (int n = count(rng); n > 0; --n) s += kPieces[piece(rng)];
  return s;
}

bool utf8_boundary(const std::string& s, size_t pos) {
  return pos == 0 || pos >= s.size() || (static_cast<unsigned char>(s[pos]) & 0xC0) != 0x80;
}

struct Outcome {
  std::string content, reasoning;
  std::map<int, std::string> arguments;
  Json message;
};

Outcome run(const ParserOptions& options, const std::string& text, const std::vector<size_t>& cuts) {
  OutputParser parser(options);
  Outcome out;
  auto take = [&](const std::vector<OutputEvent>& events) {
    for (const OutputEvent& e : events) {
      if (e.kind == OutputEvent::Kind::content) out.content += e.text;
      if (e.kind == OutputEvent::Kind::reasoning) out.reasoning += e.text;
      if (e.kind == OutputEvent::Kind::tool_call_arguments) out.arguments[e.tool_index] += e.text;
    }
  };
  size_t start = 0;
  for (size_t cut : cuts) {
    take(parser.feed(text.substr(start, cut - start)));
    start = cut;
  }
  take(parser.feed(text.substr(start)));
  take(parser.finish());
  const FinalMessage& m = parser.message();
  out.message = m.to_json();
  out.message["error"] = m.error;
  out.message["content_text"] = m.content;
  EXPECT_EQ(out.content, m.content) << text;
  EXPECT_EQ(out.reasoning, m.reasoning_content) << text;
  for (const ToolCall& c : m.tool_calls) {
    EXPECT_FALSE(Json::parse(c.arguments, nullptr, false).is_discarded()) << c.arguments << " from " << text;
  }
  if (m.error.empty()) {
    EXPECT_EQ(out.arguments.size(), m.tool_calls.size()) << text;
    for (size_t i = 0; i < m.tool_calls.size(); ++i)
      EXPECT_EQ(out.arguments[static_cast<int>(i)], m.tool_calls[i].arguments);
  }
  return out;
}

}  // namespace

TEST(ParserRandomOutputs, AnySplitGivesTheUnsplitResult) {
  std::mt19937 rng(20240601);
  Json tools = Json::parse(R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
      "properties": {"a": {"type": "integer"}, "b": {"type": ["string", "null"]}}}}}])");
  int failures = 0;
  for (int i = 0; i < 3000 && failures < 5; ++i) {
    ParserOptions options;
    options.tools = static_cast<ToolSyntax>(i % 4);
    options.reasoning = static_cast<ReasoningStart>((i / 4) % 3);
    options.schemas = ToolSchemas(tools);
    options.id_seed = 3;
    std::string text = random_output(rng);
    Outcome whole = run(options, text, {});
    std::vector<std::vector<size_t>> splittings;
    std::vector<size_t> every;
    for (size_t p = 1; p < text.size(); ++p) {
      if (utf8_boundary(text, p)) every.push_back(p);
    }
    splittings.push_back(every);
    for (int r = 0; r < 3 && text.size() > 1; ++r) {
      std::vector<size_t> cuts;
      for (size_t p : every) {
        if (rng() % 5 == 0) cuts.push_back(p);
      }
      splittings.push_back(cuts);
    }
    for (const auto& cuts : splittings) {
      Outcome split = run(options, text, cuts);
      if (split.message != whole.message) {
        ADD_FAILURE() << "syntax " << tool_syntax_name(options.tools) << ", reasoning "
                      << reasoning_start_name(options.reasoning) << ", text " << Json(text).dump()
                      << "\nwhole: " << whole.message.dump() << "\nsplit: " << split.message.dump();
        ++failures;
        break;
      }
    }
  }
}
