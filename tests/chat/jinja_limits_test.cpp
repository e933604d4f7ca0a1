// A template cannot hang the server, exhaust its memory or reach outside its context: runaway loops,
// recursion, huge strings, lists and outputs, deep nesting (in the template text and in the context) all end
// in an error within seconds, and the sandbox refuses what jinja2's ImmutableSandboxedEnvironment refuses.
#include <gtest/gtest.h>

#include <chrono>

#include "chat/jinja/errors.h"
#include "chat/jinja/template.h"

using namespace keel;
using namespace keel::chat;
using keel::chat::jinja::TemplateError;

namespace {

// Renders and returns the python_type of the error raised ("" when it rendered), checking it took under 20 s
// on a loaded 2-core machine (each case needs well under 3 s alone).
std::string error_type(const std::string& source, const Json& context = Json::object(),
                       const jinja::RenderOptions& options = {}) {
  auto start = std::chrono::steady_clock::now();
  std::string type;
  try {
    jinja::Template(source).render(context, options);
  } catch (const TemplateError& e) {
    type = e.python_type();
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 20.0) << source;
  return type;
}

TEST(JinjaLimits, RunawayLoopsStop) {
  EXPECT_EQ(error_type("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"),
            "LimitError");
  // Quadratic work without a visible loop nest: membership tests, sorting, comparing big lists.
  EXPECT_EQ(
      error_type(
          "{% set big = range(100000)|list %}{% for i in range(100000) %}{{ 99999 in big }}{% endfor %}"),
      "LimitError");
  EXPECT_EQ(
      error_type(
          "{% set big = range(100000)|list %}{% for i in range(100000) %}{{ big|sort|length }}{% endfor %}"),
      "LimitError");
  EXPECT_EQ(error_type(
                "{% set big = range(100000)|list %}{% for i in range(100000) %}{{ big == big }}{% endfor %}"),
            "LimitError");
}

TEST(JinjaLimits, StepLimitIsConfigurable) {
  const std::string source = "{% for i in range(2000) %}.{% endfor %}";
  jinja::RenderOptions tight;
  tight.limits.max_steps = 1000;
  EXPECT_EQ(error_type(source, Json::object(), tight), "LimitError");
  EXPECT_EQ(jinja::Template(source).render(Json::object()).size(), 2000u);
}

TEST(JinjaLimits, RecursionStops) {
  EXPECT_EQ(error_type("{% macro m(n) %}{{ m(n + 1) }}{% endmacro %}{{ m(0) }}"), "LimitError");
  EXPECT_EQ(error_type("{% for x in [1] recursive %}{{ loop([x]) }}{% endfor %}"), "LimitError");
  // Mutual recursion through a call block's caller.
  EXPECT_EQ(error_type("{% macro a() %}{% call a() %}x{% endcall %}{{ caller() }}{% endmacro %}{% call a() "
                       "%}y{% endcall %}"),
            "LimitError");
}

TEST(JinjaLimits, BigStringsAndOutputsStop) {
  EXPECT_EQ(error_type("{{ ('x' * 100000) * 100000 }}"), "LimitError");  // refused before allocating 10 GB
  EXPECT_EQ(error_type("{% set ns = namespace(s='xx') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s "
                       "%}{% endfor %}"),
            "LimitError");
  jinja::RenderOptions small;
  small.limits.max_output_bytes = 1 << 20;
  EXPECT_EQ(error_type("{% for i in range(100000) %}{{ 'x' * 100 }}{% endfor %}", Json::object(), small),
            "LimitError");
  EXPECT_EQ(error_type("{{ [1] * 100000 * 100000 }}"), "LimitError");
  // Widths and counts from the template are checked before anything is built.
  for (const char* source :
       {"{{ 'a'.center(1000000000) }}", "{{ 'a'|center(1000000000) }}", "{{ '7'.zfill(1000000000) }}",
        "{{ ('a' * 1000000).replace('a', 'b' * 1000) }}", "{{ ('a' * 1000000)|replace('a', 'b' * 1000) }}",
        "{{ ('x' * 60000000).join(['a'] * 100) }}", "{{ [1]|batch(1000000000000, 0)|list }}",
        "{{ [1]|slice(1000000000000)|list }}", "{{ 'a\nb'|indent(1000000000) }}",
        "{{ [1]|tojson(indent=1000000000) }}"}) {
    EXPECT_EQ(error_type(source), "LimitError") << source;
  }
  EXPECT_EQ(error_type("{{ range(1000000) }}"), "OverflowError");  // jinja2's sandbox refuses it too
}

TEST(JinjaLimits, DeepNestingIsAnError) {
  // Built by the template.
  EXPECT_EQ(
      error_type(
          "{% set ns = namespace(x=[]) %}{% for i in range(1000) %}{% set ns.x = [ns.x] %}{% endfor %}"),
      "RecursionError");
  // In the template text.
  EXPECT_EQ(error_type("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}"),
            "TemplateSyntaxError");
  std::string ifs;
  for (int i = 0; i < 3000; ++i) ifs += "{% if true %}";
  EXPECT_EQ(error_type(ifs), "TemplateSyntaxError");
  EXPECT_EQ(error_type("{{ " + std::string(5000, '[') + std::string(5000, ']') + " }}"),
            "TemplateSyntaxError");
  EXPECT_EQ(error_type("{{ " + std::string(3000, '-') + "1 }}"), "TemplateSyntaxError");
  // In the context.
  Json deep = Json::array();
  for (int i = 0; i < 5000; ++i) deep = Json::array({deep});
  EXPECT_EQ(error_type("{{ x|length }}", Json{{"x", deep}}), "RecursionError");
}

TEST(JinjaLimits, SandboxRefusesEscapes) {
  // Private attributes read as undefined; using them is a SecurityError (as in jinja2's sandbox).
  EXPECT_EQ(jinja::Template("[{{ ''.__class__ }}]").render(Json::object()), "[]");
  EXPECT_EQ(error_type("{{ ''.__class__.__mro__ }}"), "SecurityError");
  EXPECT_EQ(error_type("{{ x.append(1) }}", Json{{"x", Json::array()}}), "SecurityError");
  EXPECT_EQ(error_type("{{ d.update({'a': 1}) }}", Json{{"d", Json::object()}}), "SecurityError");
  // No file access: template loading tags are refused.
  for (const char* tag : {"{% include 'x.j2' %}", "{% import 'x.j2' as x %}", "{% extends 'x.j2' %}",
                          "{% from 'x.j2' import y %}"}) {
    EXPECT_EQ(error_type(tag), "Unsupported") << tag;
  }
}

}  // namespace
