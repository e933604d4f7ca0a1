// Every chat template in ../shared/fixtures/chat-templates x every scenario in oracle/scenarios.json,
// rendered by keel and by Python's jinja2 (oracle/render_fixtures.py, run now), compared byte for byte. Where
// jinja2 raises, keel must raise too; where the template itself raises (raise_exception), with the same
// message. Tool-call scenarios run twice: arguments as the JSON strings the OpenAI API sends, and normalized
// to objects (keel's normalize_tool_call_arguments against the oracle's own json.loads). Also checks keel's
// per-template choice of argument form against the oracle's.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "chat/chat_template.h"
#include "chat/jinja/errors.h"
#include "oracle/oracle.h"

using namespace keel;
using namespace keel::chat;
namespace oracle = keel::chat::test_oracle;

namespace {

std::vector<std::string> fixture_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(oracle::fixtures_dir(), ec)) {
    if (entry.path().extension() == ".jinja") names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

const Json& scenarios() {
  static const Json s = Json::parse(oracle::read_file(oracle::oracle_dir() + "/scenarios.json"));
  return s;
}

const Json* find_scenario(const std::string& name) {
  for (const auto& s : scenarios()["scenarios"]) {
    if (s["name"] == name) return &s;
  }
  return nullptr;
}

class TemplateFixture : public ::testing::TestWithParam<std::string> {};

TEST(TemplateFixtures, AllThirtyOnePresent) {
  EXPECT_EQ(fixture_names().size(), 31u) << oracle::fixtures_dir();
}

TEST_P(TemplateFixture, RendersLikeJinja2) {
  const std::string name = GetParam();
  std::string out = oracle::scratch_path("fixture_expected");
  ASSERT_EQ(oracle::run(std::string(oracle::kPython) + " " + oracle::oracle_dir() + "/render_fixtures.py " +
                        oracle::fixtures_dir() + " " + oracle::oracle_dir() + "/scenarios.json " + out + " " +
                        name),
            0);
  Json expected = Json::parse(oracle::read_file(out)).at(name);
  std::remove(out.c_str());

  ChatTemplate tmpl(oracle::read_file(oracle::fixtures_dir() + "/" + name), scenarios()["bos_token"],
                    scenarios()["eos_token"]);
  EXPECT_EQ(tmpl.wants_object_arguments(), expected["wants_object_arguments"].get<bool>());

  jinja::RenderOptions options;
  options.now = oracle::pinned_now();
  int compared = 0;
  for (const auto& [key, want] : expected["results"].items()) {
    SCOPED_TRACE(name + " / " + key);
    std::string scenario_name = key.substr(0, key.find('/'));
    bool normalized = key.substr(key.find('/') + 1) == "normalized";
    const Json* s = find_scenario(scenario_name);
    ASSERT_NE(s, nullptr);
    ChatInputs inputs;
    inputs.messages = normalized ? normalize_tool_call_arguments((*s)["messages"]) : (*s)["messages"];
    inputs.tools = s->value("tools", Json());
    inputs.add_generation_prompt = s->value("add_generation_prompt", true);
    inputs.extra = s->value("kwargs", Json::object());
    ++compared;
    if (want["ok"].get<bool>()) {
      try {
        EXPECT_EQ(tmpl.render(inputs, options), want["output"].get<std::string>());
      } catch (const std::exception& e) {
        ADD_FAILURE() << "keel raised where jinja2 rendered: " << e.what();
      }
    } else if (want["raised"].get<bool>()) {
      try {
        tmpl.render(inputs, options);
        ADD_FAILURE() << "keel rendered where the template raised: " << want["error"];
      } catch (const jinja::TemplateRaisedError& e) {
        EXPECT_EQ(std::string(e.what()), want["error"].get<std::string>());
      } catch (const std::exception& e) {
        ADD_FAILURE() << "keel raised another error: " << e.what() << " where the template raised "
                      << want["error"];
      }
    } else {
      EXPECT_THROW(tmpl.render(inputs, options), jinja::TemplateError)
          << "jinja2 raised " << want["type"] << ": " << want["error"];
    }
  }
  EXPECT_GE(compared, static_cast<int>(scenarios()["scenarios"].size()));
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param.substr(0, info.param.size() - 6);  // without ".jinja"
  for (char& c : n) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return n;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TemplateFixture, ::testing::ValuesIn(fixture_names()), test_name);

}  // namespace
