// A few hundred small templates (oracle/jinja_cases.txt) covering the engine's corners — whitespace control,
// scoping, loops, macros, Python arithmetic and printing, filters, tests, methods, errors — rendered by keel
// and by Python's jinja2 (oracle/jinja_oracle.py, run now) and compared: same output, or both raising (with
// the same message for raise_exception).
#include <gtest/gtest.h>

#include "chat/jinja/errors.h"
#include "chat/jinja/template.h"
#include "oracle/oracle.h"

using namespace keel;
using namespace keel::chat;
namespace oracle = keel::chat::test_oracle;

namespace {

std::vector<std::string> split_cases(const std::string& text) {
  std::vector<std::string> out;
  const std::string sep = "\n====\n";
  size_t pos = 0;
  while (true) {
    size_t next = text.find(sep, pos);
    out.push_back(text.substr(pos, next == std::string::npos ? std::string::npos : next - pos));
    if (next == std::string::npos) break;
    pos = next + sep.size();
  }
  return out;
}

// keel's result in the oracle's shape.
Json keel_render(const std::string& source, const Json& context) {
  jinja::RenderOptions options;
  options.now = oracle::pinned_now();
  try {
    jinja::Template tmpl(source);
    return {{"ok", true}, {"output", tmpl.render(context, options)}};
  } catch (const jinja::TemplateRaisedError& e) {
    return {{"ok", false}, {"raised", true}, {"error", e.what()}};
  } catch (const jinja::TemplateError& e) {
    return {{"ok", false}, {"raised", false}, {"error", e.what()}};
  }
}

TEST(JinjaCases, RenderLikeJinja2) {
  std::string text = oracle::read_file(oracle::oracle_dir() + "/jinja_cases.txt");
  std::vector<std::string> blocks = split_cases(text);
  ASSERT_GT(blocks.size(), 100u);
  // The first block: comment lines, then the context as JSON.
  std::string header = blocks[0];
  Json context = Json::parse(header.substr(header.find('{')));
  std::vector<std::string> cases(blocks.begin() + 1, blocks.end());
  std::vector<Json> jobs;
  for (const auto& c : cases) jobs.push_back({{"template", c}, {"context", context}});
  std::vector<Json> expected = oracle::oracle_batch(jobs);
  ASSERT_EQ(expected.size(), cases.size());
  int rendered = 0, raised = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i + 1) + ": " + cases[i]);
    const Json& want = expected[i];
    Json got = keel_render(cases[i], context);
    if (got["ok"] != want["ok"]) {
      ADD_FAILURE() << "jinja2: " << want.dump() << "\nkeel:   " << got.dump();
      continue;
    }
    if (want["ok"].get<bool>()) {
      EXPECT_EQ(got["output"].get<std::string>(), want["output"].get<std::string>());
      ++rendered;
    } else {
      EXPECT_EQ(got["raised"], want["raised"]) << "jinja2: " << want.dump() << "\nkeel:   " << got.dump();
      if (want["raised"].get<bool>()) {
        EXPECT_EQ(got["error"], want["error"]);
      }
      ++raised;
    }
  }
  // The set must exercise both paths.
  EXPECT_GT(rendered, 100);
  EXPECT_GT(raised, 20);
}

}  // namespace
