// Parser cases taken from public parser test suites (tests/chat/data/parsers/PROVENANCE.md), each fed to the
// OutputParser whole, at every split point, one character at a time and in random multi-splits. Every run
// must give the expected message, and the streamed events must add up to the final message.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "chat/parsers/output_parser.h"

using namespace keel::chat;

namespace {

const std::string kDataDir = std::string(KEEL_SOURCE_DIR) + "/tests/chat/data/parsers/";

Json load_json(const std::string& name) {
  std::ifstream in(kDataDir + name, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + kDataDir + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return Json::parse(ss.str());
}

struct StreamedCall {
  std::string id, name, arguments;
};

// What a client reading the events would have, plus the parser's final message.
struct Run {
  std::string content, reasoning;
  std::map<int, StreamedCall> calls;
  FinalMessage message;
  std::string protocol_error;  // events out of order (arguments before begin, begin twice)
};

void apply_events(const std::vector<OutputEvent>& events, Run& run) {
  for (const OutputEvent& e : events) {
    switch (e.kind) {
      case OutputEvent::Kind::content:
        run.content += e.text;
        break;
      case OutputEvent::Kind::reasoning:
        run.reasoning += e.text;
        break;
      case OutputEvent::Kind::tool_call_begin:
        if (run.calls.count(e.tool_index)) run.protocol_error = "tool_call_begin twice for one index";
        run.calls[e.tool_index] = {e.id, e.name, ""};
        break;
      case OutputEvent::Kind::tool_call_arguments:
        if (!run.calls.count(e.tool_index)) run.protocol_error = "arguments before tool_call_begin";
        run.calls[e.tool_index].arguments += e.text;
        break;
    }
  }
}

Run run_pieces(const ParserOptions& options, const std::vector<std::string>& pieces) {
  OutputParser parser(options);
  Run run;
  for (const std::string& piece : pieces) apply_events(parser.feed(piece), run);
  apply_events(parser.finish(), run);
  run.message = parser.message();
  return run;
}

Json parse_or_string(const std::string& text) {
  Json v = Json::parse(text, nullptr, false);
  return v.is_discarded() ? Json("<not JSON: " + text + ">") : v;
}

// Empty when `run` matches `expected` and its events add up to its final message; else what differs.
std::string check(const Run& run, const Json& expected) {
  const FinalMessage& m = run.message;
  std::ostringstream err;
  if (!run.protocol_error.empty()) err << run.protocol_error << "\n";
  if (m.content != expected["content"].get<std::string>()) err << "content: '" << m.content << "'\n";
  if (m.reasoning_content != expected["reasoning_content"].get<std::string>()) {
    err << "reasoning_content: '" << m.reasoning_content << "'\n";
  }
  if (m.error.empty() == expected["error"].get<bool>()) err << "error: '" << m.error << "'\n";
  const Json& calls = expected["tool_calls"];
  if (m.tool_calls.size() != calls.size()) {
    err << m.tool_calls.size() << " tool calls, expected " << calls.size() << "\n";
  } else {
    for (size_t i = 0; i < calls.size(); ++i) {
      const ToolCall& c = m.tool_calls[i];
      if (c.name != calls[i]["name"].get<std::string>()) err << "call " << i << " name '" << c.name << "'\n";
      if (parse_or_string(c.arguments) != calls[i]["arguments"])
        err << "call " << i << " arguments " << c.arguments << "\n";
      if (c.id.size() != 29 || !c.id.starts_with("call_")) err << "call " << i << " id '" << c.id << "'\n";
    }
  }
  // The stream adds up to the final message.
  if (run.content != m.content) err << "content events '" << run.content << "' != final content\n";
  if (run.reasoning != m.reasoning_content)
    err << "reasoning events '" << run.reasoning << "' != final reasoning\n";
  if (m.error.empty()) {
    if (run.calls.size() != m.tool_calls.size()) err << run.calls.size() << " calls streamed\n";
    for (size_t i = 0; i < m.tool_calls.size() && run.calls.count(static_cast<int>(i)); ++i) {
      const StreamedCall& s = run.calls.at(static_cast<int>(i));
      const ToolCall& c = m.tool_calls[i];
      if (s.id != c.id || s.name != c.name) err << "streamed call " << i << " id/name differ\n";
      if (Json::parse(s.arguments, nullptr, false) != Json::parse(c.arguments, nullptr, false) ||
          Json::parse(s.arguments, nullptr, false).is_discarded()) {
        err << "streamed arguments of call " << i << " '" << s.arguments << "'\n";
      }
    }
  }
  return err.str();
}

bool utf8_boundary(const std::string& s, size_t pos) {
  return pos == 0 || pos >= s.size() || (static_cast<unsigned char>(s[pos]) & 0xC0) != 0x80;
}

std::vector<std::string> split_at(const std::string& s, std::vector<size_t> cuts) {
  std::vector<std::string> pieces;
  size_t start = 0;
  for (size_t cut : cuts) {
    pieces.push_back(s.substr(start, cut - start));
    start = cut;
  }
  pieces.push_back(s.substr(start));
  return pieces;
}

// Runs one data file: every case under every splitting. Returns the number of runs.
size_t run_file(const std::string& file) {
  Json tools = load_json("tools.json");
  Json data = load_json(file);
  std::mt19937 rng(1234);
  size_t runs = 0;
  EXPECT_FALSE(data["cases"].empty());
  for (const Json& c : data["cases"]) {
    std::string name = c["name"];
    ParserOptions options;
    options.tools = tool_syntax_from_name(c["syntax"].get<std::string>());
    options.reasoning = reasoning_start_from_name(c["reasoning"].get<std::string>());
    Json request_tools = Json::array();
    for (const Json& t : c["tools"]) request_tools.push_back(tools.at(t.get<std::string>()));
    options.schemas = ToolSchemas(request_tools);
    options.id_seed = 42;
    const std::string output = c["output"];
    const Json& expected = c["expected"];

    std::vector<std::pair<std::string, std::vector<std::string>>> splittings;
    splittings.push_back({"whole", {output}});
    std::vector<std::string> chars;
    for (size_t i = 0; i < output.size();) {
      size_t j = i + 1;
      while (!utf8_boundary(output, j)) ++j;
      chars.push_back(output.substr(i, j - i));
      i = j;
    }
    splittings.push_back({"one character at a time", chars});
    for (size_t cut = 1; cut < output.size(); ++cut) {
      if (utf8_boundary(output, cut))
        splittings.push_back({"split at " + std::to_string(cut), split_at(output, {cut})});
    }
    for (int r = 0; r < 30 && output.size() > 2; ++r) {
      std::vector<size_t> cuts;
      std::uniform_int_distribution<size_t> pos(1, output.size() - 1);
      for (int k = std::uniform_int_distribution<int>(2, 8)(rng); k > 0; --k) {
        size_t p = pos(rng);
        if (utf8_boundary(output, p)) cuts.push_back(p);
      }
      std::sort(cuts.begin(), cuts.end());
      cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
      std::string desc = "random split at";
      for (size_t p : cuts) desc += " " + std::to_string(p);
      splittings.push_back({desc, split_at(output, cuts)});
    }

    Run reference = run_pieces(options, splittings.front().second);
    for (const auto& [desc, pieces] : splittings) {
      Run run = run_pieces(options, pieces);
      ++runs;
      std::string problem = check(run, expected);
      if (problem.empty() && run.message.to_json() != reference.message.to_json()) {
        problem = "final message differs from the unsplit run: " + run.message.to_json().dump();
      }
      if (!problem.empty()) {
        ADD_FAILURE() << file << " case '" << name << "' (" << c["source"].get<std::string>() << "), " << desc
                      << ":\n"
                      << problem;
        break;  // one report per case
      }
    }
  }
  return runs;
}

}  // namespace

TEST(ParserCases, HermesJson) {
  EXPECT_GT(run_file("hermes_json.json"), 0u);
}
TEST(ParserCases, Qwen3Xml) {
  EXPECT_GT(run_file("qwen3_xml.json"), 0u);
}
TEST(ParserCases, NemotronJson) {
  EXPECT_GT(run_file("nemotron_json.json"), 0u);
}
TEST(ParserCases, Reasoning) {
  EXPECT_GT(run_file("reasoning.json"), 0u);
}
