#include "chat/parsers/output_format.h"

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace keel::chat {

namespace {

bool contains(std::string_view text, std::string_view needle) {
  return text.find(needle) != std::string_view::npos;
}

std::string_view trim_trailing_whitespace(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

}  // namespace

OutputFormat detect_output_format(std::string_view template_text) {
  OutputFormat format;
  format.think_tags = contains(template_text, "</think>");  // DeepSeek-R1 templates only name the closing tag
  bool tool_call_tag = contains(template_text, "<tool_call>");
  if (tool_call_tag && contains(template_text, "<function=") && contains(template_text, "<parameter=")) {
    format.tools = ToolSyntax::qwen3_xml;
  } else if (contains(template_text, "<arg_key>")) {
    format.tools = ToolSyntax::none;  // GLM: <tool_call>NAME<arg_key>..., a syntax keel does not parse
  } else if (contains(template_text, "<TOOLCALL>")) {
    format.tools = ToolSyntax::nemotron_json;
  } else if (tool_call_tag) {
    format.tools = ToolSyntax::hermes_json;
  }
  return format;
}

ReasoningStart reasoning_start_from_prompt(const OutputFormat& format, std::string_view rendered_prompt) {
  std::string_view tail = trim_trailing_whitespace(rendered_prompt);
  if (tail.ends_with("</think>")) return ReasoningStart::disabled;
  if (tail.ends_with("<think>")) return ReasoningStart::open;
  return format.think_tags ? ReasoningStart::optional : ReasoningStart::disabled;
}

std::string forced_tool_call_prefix(ToolSyntax syntax, std::string_view name, bool inside_reasoning) {
  std::string call;
  // The name as the model writes it: a JSON string in the JSON syntaxes (the templates use tojson), bare
  // in <function=NAME>.
  const std::string json_name = nlohmann::json(std::string(name)).dump();
  switch (syntax) {
    case ToolSyntax::none:
      return "";
    case ToolSyntax::hermes_json:
      call = name.empty() ? "<tool_call>\n" : "<tool_call>\n{\"name\": " + json_name + ", \"arguments\": ";
      break;
    case ToolSyntax::qwen3_xml:
      call = name.empty() ? "<tool_call>\n" : "<tool_call>\n<function=" + std::string(name) + ">\n";
      break;
    case ToolSyntax::nemotron_json:
      call = name.empty() ? "<TOOLCALL>[" : "<TOOLCALL>[{\"name\": " + json_name + ", \"arguments\": ";
      break;
  }
  return inside_reasoning ? "</think>\n\n" + call : call;
}

const char* tool_syntax_name(ToolSyntax syntax) {
  switch (syntax) {
    case ToolSyntax::none:
      return "none";
    case ToolSyntax::hermes_json:
      return "hermes_json";
    case ToolSyntax::qwen3_xml:
      return "qwen3_xml";
    case ToolSyntax::nemotron_json:
      return "nemotron_json";
  }
  return "?";
}

const char* reasoning_start_name(ReasoningStart start) {
  switch (start) {
    case ReasoningStart::disabled:
      return "disabled";
    case ReasoningStart::optional:
      return "optional";
    case ReasoningStart::open:
      return "open";
  }
  return "?";
}

ToolSyntax tool_syntax_from_name(std::string_view name) {
  for (ToolSyntax s :
       {ToolSyntax::none, ToolSyntax::hermes_json, ToolSyntax::qwen3_xml, ToolSyntax::nemotron_json}) {
    if (name == tool_syntax_name(s)) return s;
  }
  throw_error(ErrorCode::invalid_argument,
              "unknown tool-call syntax '{}' (expected none, hermes_json, qwen3_xml or nemotron_json)", name);
}

ReasoningStart reasoning_start_from_name(std::string_view name) {
  for (ReasoningStart r : {ReasoningStart::disabled, ReasoningStart::optional, ReasoningStart::open}) {
    if (name == reasoning_start_name(r)) return r;
  }
  throw_error(ErrorCode::invalid_argument,
              "unknown reasoning start '{}' (expected disabled, optional or open)", name);
}

}  // namespace keel::chat
