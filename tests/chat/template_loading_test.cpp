// Where a chat template comes from (tokenizer_config.json as a string or a {name, template} list,
// chat_template.jinja, an explicit file), bos/eos tokens as strings or {"content": ...} objects, the argument
// normalization against the oracle's own (json.loads), and `keel render` end to end against jinja2.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "chat/chat_template.h"
#include "chat/jinja/errors.h"
#include "oracle/oracle.h"

using namespace keel;
using namespace keel::chat;
namespace oracle = keel::chat::test_oracle;
namespace fs = std::filesystem;

namespace {

// A scratch model folder, removed afterwards.
struct ModelDir {
  ModelDir() : path(oracle::scratch_path("model_dir")) { fs::create_directories(path); }
  ~ModelDir() { fs::remove_all(path); }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(fs::path(path) / name, std::ios::binary) << text;
  }
  std::string path;
};

std::string render(const ChatTemplate& t, Json tools = Json()) {
  ChatInputs in;
  in.messages = Json::array({{{"role", "user"}, {"content", "hi"}}});
  in.tools = std::move(tools);
  return t.render(in);
}

TEST(TemplateLoading, StringTemplateAndTokenForms) {
  ModelDir dir;
  Json config = {{"chat_template",
                  "A{{ bos_token }}|{{ eos_token }}|{{ messages[0].content }}|{{ pad_token }}|"
                  "{{ unk_token is defined }}"},
                 {"bos_token", "<s>"},
                 {"eos_token", {{"content", "</s>"}, {"lstrip", false}, {"special", true}}},
                 {"pad_token", {{"content", "<pad>"}}},
                 {"unk_token", nullptr}};
  dir.write("tokenizer_config.json", config.dump());
  ChatTemplate t = ChatTemplate::from_model_dir(dir.path);
  EXPECT_EQ(t.bos_token(), config["bos_token"].get<std::string>());
  EXPECT_EQ(t.eos_token(), config["eos_token"]["content"].get<std::string>());
  EXPECT_EQ(render(t), "A" + config["bos_token"].get<std::string>() + "|" +
                           config["eos_token"]["content"].get<std::string>() + "|hi|" +
                           config["pad_token"]["content"].get<std::string>() + "|False");
}

TEST(TemplateLoading, NamedTemplateListPicksToolUseWithTools) {
  ModelDir dir;
  dir.write(
      "tokenizer_config.json",
      Json({{"chat_template", Json::array({{{"name", "default"}, {"template", "default"}},
                                           {{"name", "tool_use"}, {"template", "tools:{{ tools|length }}"}},
                                           {{"name", "rag"}, {"template", "rag"}}})},
            {"eos_token", nullptr}})
          .dump());
  ChatTemplate t = ChatTemplate::from_model_dir(dir.path);
  EXPECT_EQ(render(t), "default");
  EXPECT_EQ(render(t, Json::array({Json::object(), Json::object()})), "tools:2");
  EXPECT_EQ(render(t, Json::array()), "tools:0");  // transformers: any tools list, even empty, picks tool_use
  EXPECT_EQ(t.eos_token(), "");
}

TEST(TemplateLoading, SourcesInOrderOfPrecedence) {
  ModelDir dir;
  dir.write("tokenizer_config.json", Json({{"chat_template", "from-config"}}).dump());
  EXPECT_EQ(render(ChatTemplate::from_model_dir(dir.path)), "from-config");
  dir.write("chat_template.jinja", "from-jinja-file\n");  // one trailing newline dropped, as jinja2 does
  EXPECT_EQ(render(ChatTemplate::from_model_dir(dir.path)), "from-jinja-file");
  dir.write("explicit.jinja", "explicit");
  EXPECT_EQ(render(ChatTemplate::from_model_dir(dir.path, dir.path + "/explicit.jinja")), "explicit");
}

TEST(TemplateLoading, BadSourcesNameTheFile) {
  ModelDir dir;
  auto message_of = [&] {
    try {
      ChatTemplate::from_model_dir(dir.path);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  dir.write("tokenizer_config.json", "{\"bos_token\": \"<s>\"}");
  EXPECT_NE(message_of().find("no chat_template"), std::string::npos) << message_of();
  dir.write("tokenizer_config.json", "{not json");
  EXPECT_NE(message_of().find("tokenizer_config.json"), std::string::npos) << message_of();
  dir.write("tokenizer_config.json",
            Json({{"chat_template", Json::array({{{"name", "rag"}, {"template", "x"}}})}}).dump());
  EXPECT_NE(message_of().find("no \"default\""), std::string::npos) << message_of();
  dir.write("tokenizer_config.json", Json({{"chat_template", "{% if %}"}}).dump());
  EXPECT_THROW(ChatTemplate::from_model_dir(dir.path), jinja::TemplateError);
  EXPECT_THROW(ChatTemplate::from_model_dir(dir.path + "/missing"), Error);
}

// The normalization keel's server applies, against the oracle's independent one (json.loads, dicts only).
TEST(TemplateLoading, ArgumentNormalizationMatchesOracle) {
  auto call = [](Json arguments) {
    return Json{{"id", "c1"},
                {"type", "function"},
                {"function", {{"name", "f"}, {"arguments", std::move(arguments)}}}};
  };
  Json messages = Json::array({
      {{"role", "user"}, {"content", "x"}},
      {{"role", "assistant"},
       {"content", ""},
       {"tool_calls",
        Json::array({call("{\"b\": 1, \"a\": [true, null, 2.5], \"é\": \"ü\\n\"}"), call("{not json"),
                     call("[1, 2]"), call("42"), call(""), call(Json{{"k", "v"}}),
                     call("{\"nested\": {\"z\": {}, \"y\": \"{\\\"x\\\": 1}\"}}")})}},
      {{"role", "tool"}, {"tool_calls", Json::array({call("{\"a\": 1}")})}, {"content", "r"}},
      {{"role", "assistant"}, {"tool_calls", "not a list"}},
  });
  std::string in = oracle::scratch_path("normalize_in"), out = oracle::scratch_path("normalize_out");
  std::ofstream(in, std::ios::binary) << messages.dump();
  ASSERT_EQ(
      oracle::run(std::string(oracle::kPython) + " -c \"import json,sys; sys.path.insert(0, '" +
                  oracle::oracle_dir() + "'); from render_fixtures import normalize_arguments; " +
                  "json.dump(normalize_arguments(json.load(open(sys.argv[1]))), open(sys.argv[2], 'w'))\" " +
                  in + " " + out),
      0);
  Json expected = Json::parse(oracle::read_file(out));
  std::remove(in.c_str());
  std::remove(out.c_str());
  EXPECT_EQ(normalize_tool_call_arguments(messages), expected);  // ordered_json: key order counts
}

// The Qwen3 tokenizer_config.json in the fixtures carries the same template as
// chat-templates/Qwen-Qwen3-0.6B.jinja: keel loading it from the config must render what jinja2 renders from
// the .jinja file, with the config's tokens.
TEST(TemplateLoading, Qwen3ConfigRendersLikeJinja2) {
  std::string qwen3 = std::string(KEEL_SHARED_DIR) + "/fixtures/tokenizers/qwen3";
  ChatTemplate t = ChatTemplate::from_model_dir(qwen3);
  Json config = Json::parse(oracle::read_file(qwen3 + "/tokenizer_config.json"));
  EXPECT_EQ(t.eos_token(), config["eos_token"].is_string()
                               ? config["eos_token"].get<std::string>()
                               : config["eos_token"]["content"].get<std::string>());
  std::string source = oracle::read_file(oracle::fixtures_dir() + "/Qwen-Qwen3-0.6B.jinja");
  std::vector<ChatInputs> inputs(3);
  inputs[0].messages =
      Json::array({{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "2+2?"}}});
  inputs[1] = inputs[0];
  inputs[1].extra = {{"enable_thinking", false}};
  inputs[2].messages = Json::array({{{"role", "user"}, {"content", "2+2?"}},
                                    {{"role", "assistant"}, {"content", "<think>\nadd\n</think>\n\n4"}}});
  inputs[2].add_generation_prompt = false;
  std::vector<Json> jobs;
  for (const auto& in : inputs) jobs.push_back({{"template", source}, {"context", t.context(in)}});
  std::vector<Json> expected = oracle::oracle_batch(jobs);
  ASSERT_EQ(expected.size(), inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    ASSERT_TRUE(expected[i]["ok"].get<bool>()) << expected[i].dump();
    EXPECT_EQ(t.render(inputs[i]), expected[i]["output"].get<std::string>()) << "input " << i;
  }
}

// `keel render` end to end (skipped when the keel binary has not been built in this build folder).
TEST(TemplateLoading, KeelRenderCommand) {
  std::string keel = std::string(KEEL_BINARY_DIR) + "/keel";
  if (!fs::exists(keel)) GTEST_SKIP() << "build the keel target to run this test";
  std::string qwen3 = std::string(KEEL_SHARED_DIR) + "/fixtures/tokenizers/qwen3";
  ModelDir dir;
  Json messages = Json::array(
      {{{"role", "user"}, {"content", "Weather in Paris? ünï 👋"}},
       {{"role", "assistant"},
        {"content", ""},
        {"tool_calls",
         Json::array({{{"id", "c1"},
                       {"type", "function"},
                       {"function", {{"name", "get_weather"}, {"arguments", "{\"city\": \"Paris\"}"}}}}})}},
       {{"role", "tool"}, {"content", "18 C"}}});
  Json tools = Json::array({{{"type", "function"},
                             {"function", {{"name", "get_weather"}, {"parameters", {{"type", "object"}}}}}}});
  dir.write("messages.json", messages.dump());
  dir.write("tools.json", tools.dump());
  std::string out = dir.path + "/prompt.txt";
  ASSERT_EQ(
      oracle::run(keel + " render -m " + qwen3 + " --messages " + dir.path + "/messages.json --tools " +
                  dir.path + "/tools.json --kwargs '{\"enable_thinking\": false}' --no-generation-prompt > " +
                  out),
      0);
  // Expected: jinja2 with the context transformers builds, arguments normalized to an object (Qwen3 wants
  // them).
  ChatTemplate t = ChatTemplate::from_model_dir(qwen3);
  ASSERT_TRUE(t.wants_object_arguments());
  Json normalized = messages;
  normalized[1]["tool_calls"][0]["function"]["arguments"] = Json{{"city", "Paris"}};
  Json context = {{"messages", normalized},     {"tools", tools},
                  {"documents", nullptr},       {"add_generation_prompt", false},
                  {"bos_token", t.bos_token()}, {"eos_token", t.eos_token()},
                  {"enable_thinking", false}};
  std::vector<Json> expected = oracle::oracle_batch(
      {{{"template", oracle::read_file(oracle::fixtures_dir() + "/Qwen-Qwen3-0.6B.jinja")},
        {"context", context}}});
  ASSERT_EQ(expected.size(), 1u);
  EXPECT_EQ(oracle::read_file(out), expected[0]["output"].get<std::string>());
}

}  // namespace
