// detect_output_format() on the real chat templates in ../shared/fixtures/chat-templates, and
// reasoning_start_from_prompt() on generation prompts rendered from them by Python jinja2
// (tests/chat/data/parsers/generation_prompts.json, made by render_generation_prompts.py).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include "chat/parsers/output_format.h"
#include "chat/parsers/output_parser.h"
#include "core/error.h"

using namespace keel::chat;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string read_template(const std::string& name) {
  return read_file(std::string(KEEL_SHARED_DIR) + "/fixtures/chat-templates/" + name + ".jinja");
}

}  // namespace

TEST(ParserDetectOutputFormat, RealTemplates) {
  struct Expect {
    const char* name;
    ToolSyntax tools;
    bool think_tags;
  };
  const Expect expected[] = {
      {"Qwen-Qwen3-0.6B", ToolSyntax::hermes_json, true},
      {"Qwen3-Coder", ToolSyntax::qwen3_xml, false},
      {"Qwen3.5-4B", ToolSyntax::qwen3_xml, true},
      {"NVIDIA-Nemotron-Nano-v2", ToolSyntax::nemotron_json, true},
      {"NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", ToolSyntax::qwen3_xml, true},
      {"NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.crlf-as-first-committed", ToolSyntax::qwen3_xml, true},
      {"Qwen-Qwen2.5-7B-Instruct", ToolSyntax::hermes_json, false},
      {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use", ToolSyntax::hermes_json, false},
      {"vllm-tool_chat_template_nemotron_json", ToolSyntax::nemotron_json, true},
      {"vllm-tool_chat_template_nemotron_nano_v2", ToolSyntax::nemotron_json, true},
      // Syntaxes keel does not parse: no tool parsing rather than a wrong one.
      {"GLM-4.6", ToolSyntax::none, true},              // <tool_call>NAME<arg_key>...
      {"ByteDance-Seed-OSS", ToolSyntax::none, false},  // <seed:tool_call><function=...>
      {"MiniMax-M2", ToolSyntax::none, true},           // <minimax:tool_call><invoke ...>
      {"meta-llama-Llama-3.1-8B-Instruct", ToolSyntax::none, false},
      {"mistralai-Mistral-Nemo-Instruct-2407", ToolSyntax::none, false},
      {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", ToolSyntax::none, true},
  };
  for (const Expect& e : expected) {
    OutputFormat f = detect_output_format(read_template(e.name));
    EXPECT_EQ(tool_syntax_name(f.tools), std::string(tool_syntax_name(e.tools))) << e.name;
    EXPECT_EQ(f.think_tags, e.think_tags) << e.name;
  }
}

TEST(ParserReasoningStart, FromRenderedGenerationPrompts) {
  // What the template's generation prompt does with <think>, read from the templates: key is
  // (template, enable_thinking as -1 unset / 0 / 1, system message "/no_think" given).
  using Key = std::tuple<std::string, int, bool>;
  const ReasoningStart open = ReasoningStart::open, optional = ReasoningStart::optional,
                       disabled = ReasoningStart::disabled;
  std::map<Key, ReasoningStart> expected;
  auto set = [&](const std::string& t, ReasoningStart unset, ReasoningStart on, ReasoningStart off,
                 ReasoningStart no_think) {
    expected[{t, -1, false}] = unset;
    expected[{t, 1, false}] = on;
    expected[{t, 0, false}] = off;
    expected[{t, -1, true}] = no_think;
  };
  set("Qwen-Qwen3-0.6B", optional, optional, disabled, optional);  // the model writes <think> itself
  set("Qwen3-Coder", disabled, disabled, disabled, disabled);
  set("Qwen3.5-4B", open, open, disabled, open);
  set("NVIDIA-Nemotron-Nano-v2", open, open, open, disabled);  // switched by /no_think, not enable_thinking
  set("NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", open, open, disabled, open);
  set("Qwen-Qwen2.5-7B-Instruct", disabled, disabled, disabled, disabled);
  set("NousResearch-Hermes-3-Llama-3.1-8B-tool_use", disabled, disabled, disabled, disabled);
  set("vllm-tool_chat_template_nemotron_json", open, open, open, disabled);
  set("vllm-tool_chat_template_nemotron_nano_v2", open, open, open, disabled);

  Json data = Json::parse(
      read_file(std::string(KEEL_SOURCE_DIR) + "/tests/chat/data/parsers/generation_prompts.json"));
  size_t checked = 0;
  for (const Json& p : data["prompts"]) {
    std::string name = p["template"];
    int thinking = p["enable_thinking"].is_null() ? -1 : p["enable_thinking"].get<bool>() ? 1 : 0;
    Key key{name, thinking, !p["system"].is_null()};
    ASSERT_TRUE(expected.count(key)) << name << " " << thinking;
    OutputFormat format = detect_output_format(read_template(name));
    ReasoningStart got = reasoning_start_from_prompt(format, p["prompt_tail"].get<std::string>());
    EXPECT_EQ(reasoning_start_name(got), std::string(reasoning_start_name(expected[key])))
        << name << " enable_thinking=" << thinking << " prompt tail: " << p["prompt_tail"];
    ++checked;
  }
  EXPECT_EQ(checked, expected.size());
}

TEST(ParserOptions, FromRequest) {
  OutputFormat qwen35{ToolSyntax::qwen3_xml, true};
  Json tools = Json::parse(R"([{"type": "function", "function": {"name": "f", "parameters":
      {"type": "object", "properties": {"n": {"type": "integer"}}}}}])");
  ParserOptions o = make_parser_options(qwen35, "<|im_start|>assistant\n<think>\n", tools, true);
  EXPECT_EQ(o.tools, ToolSyntax::qwen3_xml);
  EXPECT_EQ(o.reasoning, ReasoningStart::open);
  EXPECT_EQ(o.schemas.param_types("f", "n"), unsigned{param_integer});
  // tool_choice "none", or no tools in the request: no tool parsing.
  EXPECT_EQ(make_parser_options(qwen35, "", tools, false).tools, ToolSyntax::none);
  EXPECT_EQ(make_parser_options(qwen35, "", Json::array(), true).tools, ToolSyntax::none);
  EXPECT_EQ(make_parser_options(qwen35, "<think>\n\n</think>\n\n", tools, true).reasoning,
            ReasoningStart::disabled);
}

TEST(ParserOptions, NamesRoundTripAndUnknownNamesAreErrors) {
  for (ToolSyntax s :
       {ToolSyntax::none, ToolSyntax::hermes_json, ToolSyntax::qwen3_xml, ToolSyntax::nemotron_json}) {
    EXPECT_EQ(tool_syntax_from_name(tool_syntax_name(s)), s);
  }
  EXPECT_THROW(tool_syntax_from_name("xml"), keel::Error);
  EXPECT_THROW(reasoning_start_from_name("on"), keel::Error);
}
