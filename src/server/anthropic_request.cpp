#include "server/anthropic_request.h"

#include <cmath>
#include <limits>
#include <map>

#include "chat/parsers/json_tool_calls.h"

namespace keel::server {

namespace {

constexpr size_t kMaxStopSequences = 16;

[[noreturn]] void wrong_type(const std::string& param, const char* expected, const Json& got) {
  throw_invalid(param, "{}: expected {}, got {}", param, expected, json_kind_name(got));
}

[[noreturn]] void unsupported(const std::string& param, std::string message) {
  throw ApiError(400, "unsupported", std::move(message), param);
}

// The field's value, or nullptr when absent or null.
const Json* field(const Json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string string_field(const Json& obj, const char* name, const std::string& param, bool required) {
  const Json* v = field(obj, name);
  if (!v) {
    if (required) throw_invalid(param, "{}: Field required", param);
    return {};
  }
  if (!v->is_string()) wrong_type(param, "a string", *v);
  return v->get<std::string>();
}

std::optional<double> number_field(const Json& obj, const char* name, double lo, double hi) {
  const Json* v = field(obj, name);
  if (!v) return std::nullopt;
  if (!v->is_number()) wrong_type(name, "a number", *v);
  double x = v->get<double>();
  if (!std::isfinite(x) || x < lo || x > hi)
    throw_invalid(name, "{}: must be between {} and {}, got {}", name, lo, hi, x);
  return x;
}

std::optional<int64_t> integer_field(const Json& obj, const char* name, const std::string& param,
                                     int64_t lo) {
  const Json* v = field(obj, name);
  if (!v) return std::nullopt;
  int64_t x = 0;
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    x = std::numeric_limits<int64_t>::max();
  } else if (v->is_number_integer()) {
    x = v->get<int64_t>();
  } else if (v->is_number_float() && std::trunc(v->get<double>()) == v->get<double>() &&
             std::fabs(v->get<double>()) < 9.0e15) {
    x = static_cast<int64_t>(v->get<double>());
  } else {
    wrong_type(param, "an integer", *v);
  }
  if (x < lo) throw_invalid(param, "{}: must be at least {}, got {}", param, lo, x);
  return x;
}

const std::string& block_type(const Json& block, const std::string& param) {
  if (!block.is_object()) wrong_type(param, "an object (a content block)", block);
  const Json* type = field(block, "type");
  if (!type || !type->is_string()) throw_invalid(param + ".type", "{}.type: Field required", param);
  return type->get_ref<const std::string&>();
}

[[noreturn]] void refuse_block(const std::string& param, const std::string& type) {
  if (type == "image" || type == "document")
    unsupported(param + ".type",
                fmt::format("{}.type: '{}' blocks are not supported: the model served here takes text only",
                            param, type));
  unsupported(param + ".type",
              fmt::format("{}.type: content block type '{}' is not supported here", param, type));
}

// A text block's text.
std::string block_text(const Json& block, const std::string& param) {
  return string_field(block, "text", param + ".text", true);
}

// System text: a string, or text blocks (the billing-header block dropped); texts joined by blank lines.
void append_system(const Json& content, const std::string& param, std::vector<std::string>& into) {
  if (content.is_string()) {
    if (!content.get_ref<const std::string&>().starts_with(kBillingHeaderPrefix))
      into.push_back(content.get<std::string>());
    return;
  }
  if (!content.is_array()) wrong_type(param, "a string or an array of text blocks", content);
  for (size_t j = 0; j < content.size(); ++j) {
    std::string p = fmt::format("{}.{}", param, j);
    const std::string& type = block_type(content[j], p);
    if (type != "text") refuse_block(p, type);
    std::string text = block_text(content[j], p);
    if (text.starts_with(kBillingHeaderPrefix)) continue;
    into.push_back(std::move(text));
  }
}

// A tool_result's content: a string, or text blocks joined by newlines.
std::string tool_result_text(const Json& block, const std::string& param) {
  const Json* content = field(block, "content");
  if (!content) return {};
  if (content->is_string()) return content->get<std::string>();
  if (!content->is_array()) wrong_type(param + ".content", "a string or an array of blocks", *content);
  std::string text;
  for (size_t k = 0; k < content->size(); ++k) {
    std::string p = fmt::format("{}.content.{}", param, k);
    const std::string& type = block_type((*content)[k], p);
    if (type != "text") refuse_block(p, type);
    if (k > 0) text += '\n';
    text += block_text((*content)[k], p);
  }
  return text;
}

class MessageBuilder {
 public:
  void user(const Json& m, const std::string& p) {
    const Json* content = field(m, "content");
    if (!content) throw_invalid(p + ".content", "{}.content: Field required", p);
    if (content->is_string()) {
      out_.push_back(Json{{"role", "user"}, {"content", *content}});
      return;
    }
    if (!content->is_array()) wrong_type(p + ".content", "a string or an array of content blocks", *content);
    std::string text;
    bool have_text = false;
    auto flush_text = [&] {
      if (have_text) out_.push_back(Json{{"role", "user"}, {"content", text}});
      text.clear();
      have_text = false;
    };
    for (size_t j = 0; j < content->size(); ++j) {
      std::string b = fmt::format("{}.content.{}", p, j);
      const Json& block = (*content)[j];
      const std::string& type = block_type(block, b);
      if (type == "text") {
        if (have_text) text += '\n';
        text += block_text(block, b);
        have_text = true;
      } else if (type == "tool_result") {
        flush_text();
        std::string id = string_field(block, "tool_use_id", b + ".tool_use_id", true);
        Json tool{{"role", "tool"}, {"tool_call_id", id}, {"content", tool_result_text(block, b)}};
        if (auto it = tool_names_.find(id); it != tool_names_.end()) tool["name"] = it->second;
        if (const Json* err = field(block, "is_error")) {
          if (!err->is_boolean()) wrong_type(b + ".is_error", "a boolean", *err);
          if (err->get<bool>()) tool["is_error"] = true;
        }
        out_.push_back(std::move(tool));
      } else {
        refuse_block(b, type);
      }
    }
    flush_text();
  }

  void assistant(const Json& m, const std::string& p) {
    const Json* content = field(m, "content");
    Json msg{{"role", "assistant"}, {"content", ""}};
    if (!content) {
      out_.push_back(std::move(msg));
      return;
    }
    if (content->is_string()) {
      msg["content"] = *content;
      out_.push_back(std::move(msg));
      return;
    }
    if (!content->is_array()) wrong_type(p + ".content", "a string or an array of content blocks", *content);
    std::string text, reasoning;
    Json calls = Json::array();
    for (size_t j = 0; j < content->size(); ++j) {
      std::string b = fmt::format("{}.content.{}", p, j);
      const Json& block = (*content)[j];
      const std::string& type = block_type(block, b);
      if (type == "text") {
        if (!text.empty()) text += '\n';
        text += block_text(block, b);
      } else if (type == "thinking") {
        if (!reasoning.empty()) reasoning += '\n';
        reasoning += string_field(block, "thinking", b + ".thinking", true);
      } else if (type == "redacted_thinking") {
        continue;  // encrypted by Anthropic's servers: nothing a local template can show
      } else if (type == "tool_use") {
        std::string id = string_field(block, "id", b + ".id", true);
        std::string name = string_field(block, "name", b + ".name", true);
        const Json* input = field(block, "input");
        if (input && !input->is_object()) wrong_type(b + ".input", "an object", *input);
        tool_names_[id] = name;
        calls.push_back(
            Json{{"id", id},
                 {"type", "function"},
                 {"function",
                  Json{{"name", name}, {"arguments", chat::dump_json(input ? *input : Json::object())}}}});
      } else {
        refuse_block(b, type);
      }
    }
    msg["content"] = text;
    if (!reasoning.empty()) msg["reasoning_content"] = reasoning;
    if (!calls.empty()) msg["tool_calls"] = std::move(calls);
    out_.push_back(std::move(msg));
  }

  Json take(std::vector<std::string> system) {
    Json all = Json::array();
    if (!system.empty()) {
      std::string joined;
      for (size_t i = 0; i < system.size(); ++i) joined += (i ? "\n\n" : "") + system[i];
      all.push_back(Json{{"role", "system"}, {"content", joined}});
    }
    for (auto& m : out_) all.push_back(std::move(m));
    return all;
  }

 private:
  Json out_ = Json::array();
  std::map<std::string, std::string> tool_names_;  // tool_use id → name, for the tool messages
};

Json parse_tools(const Json& body) {
  const Json* tools = field(body, "tools");
  if (!tools) return Json();
  if (!tools->is_array()) wrong_type("tools", "an array", *tools);
  Json out = Json::array();
  for (size_t i = 0; i < tools->size(); ++i) {
    std::string p = fmt::format("tools.{}", i);
    const Json& t = (*tools)[i];
    if (!t.is_object()) wrong_type(p, "an object", t);
    if (const Json* type = field(t, "type"); type && *type != "custom")
      unsupported(p + ".type",
                  fmt::format("{}.type: server tool '{}' is not available here; send custom tools "
                              "(name, description, input_schema)",
                              p, type->is_string() ? type->get<std::string>() : chat::dump_json(*type)));
    std::string name = string_field(t, "name", p + ".name", true);
    if (name.empty()) throw_invalid(p + ".name", "{}.name: must not be empty", p);
    const Json* schema = field(t, "input_schema");
    if (!schema) throw_invalid(p + ".input_schema", "{}.input_schema: Field required", p);
    if (!schema->is_object()) wrong_type(p + ".input_schema", "an object (a JSON Schema)", *schema);
    Json fn{{"name", name}, {"parameters", *schema}};
    std::string description = string_field(t, "description", p + ".description", false);
    if (!description.empty()) fn["description"] = description;
    out.push_back(Json{{"type", "function"}, {"function", std::move(fn)}});
  }
  return out.empty() ? Json() : out;
}

// tool_choice: auto (the default) and none; any and {type: tool, name} force a call
// (ChatRequest::force_tool_call), of a tool the request lists.
void parse_tool_choice(const Json& body, ChatRequest& r) {
  const bool have_tools = !r.tools.is_null();
  r.parse_tool_calls = have_tools;
  const Json* choice = field(body, "tool_choice");
  if (!choice) return;
  if (!choice->is_object()) wrong_type("tool_choice", "an object", *choice);
  std::string type = string_field(*choice, "type", "tool_choice.type", true);
  if (const Json* d = field(*choice, "disable_parallel_tool_use"); d && !d->is_boolean())
    wrong_type("tool_choice.disable_parallel_tool_use", "a boolean", *d);
  if (type == "auto") return;
  if (type == "none") {
    r.parse_tool_calls = false;
    return;
  }
  if (type == "any" || type == "tool") {
    if (!have_tools) throw_invalid("tool_choice.type", "tool_choice.type: '{}' needs 'tools'", type);
    r.force_tool_call = true;
    if (type == "tool") {
      r.forced_tool = string_field(*choice, "name", "tool_choice.name", true);
      bool listed = false;
      for (const Json& t : r.tools) listed = listed || t["function"]["name"] == r.forced_tool;
      if (!listed)
        throw_invalid("tool_choice.name", "tool_choice.name: '{}' is not among the tools", r.forced_tool);
    }
    return;
  }
  throw_invalid("tool_choice.type", "tool_choice.type: must be auto, any, tool or none, got '{}'", type);
}

// thinking: enabled / adaptive → the template's enable_thinking true; disabled → false.
void parse_thinking(const Json& body, Json& kwargs) {
  const Json* thinking = field(body, "thinking");
  if (!thinking) return;
  if (!thinking->is_object()) wrong_type("thinking", "an object", *thinking);
  std::string type = string_field(*thinking, "type", "thinking.type", true);
  if (type == "enabled") {
    integer_field(*thinking, "budget_tokens", "thinking.budget_tokens", 0);  // accepted; not enforced
    kwargs["enable_thinking"] = true;
  } else if (type == "adaptive") {
    kwargs["enable_thinking"] = true;
  } else if (type == "disabled") {
    kwargs["enable_thinking"] = false;
  } else {
    throw_invalid("thinking.type", "thinking.type: must be enabled, adaptive or disabled, got '{}'", type);
  }
}

GenerationOptions parse_generation(const Json& body) {
  GenerationOptions g;
  if (auto x = integer_field(body, "max_tokens", "max_tokens", 1)) g.max_tokens = *x;
  if (auto x = number_field(body, "temperature", 0, 1)) g.temperature = static_cast<float>(*x);
  if (auto x = number_field(body, "top_p", 0, 1)) {
    if (*x <= 0) throw_invalid("top_p", "top_p: must be greater than 0 and at most 1, got {}", *x);
    g.top_p = static_cast<float>(*x);
  }
  if (auto x = integer_field(body, "top_k", "top_k", 0))
    g.top_k = static_cast<int32_t>(std::min<int64_t>(*x, std::numeric_limits<int32_t>::max()));
  if (const Json* stops = field(body, "stop_sequences")) {
    if (!stops->is_array()) wrong_type("stop_sequences", "an array of strings", *stops);
    if (stops->size() > kMaxStopSequences)
      throw_invalid("stop_sequences", "stop_sequences: at most {} strings, got {}", kMaxStopSequences,
                    stops->size());
    for (size_t i = 0; i < stops->size(); ++i) {
      const Json& s = (*stops)[i];
      if (!s.is_string()) wrong_type(fmt::format("stop_sequences.{}", i), "a string", s);
      if (!s.get_ref<const std::string&>().empty()) g.stop.push_back(s.get<std::string>());
    }
  }
  if (const Json* s = field(body, "stream")) {
    if (!s->is_boolean()) wrong_type("stream", "a boolean", *s);
    g.stream = s->get<bool>();
  }
  return g;
}

}  // namespace

AnthropicRequest parse_anthropic_request(const Json& body, bool count_tokens) {
  if (!body.is_object())
    throw_invalid("body", "the request body must be a JSON object, got {}", json_kind_name(body));
  AnthropicRequest r;
  r.model = string_field(body, "model", "model", false);

  std::vector<std::string> system;
  if (const Json* s = field(body, "system")) append_system(*s, "system", system);
  const Json* messages = field(body, "messages");
  if (!messages) throw_invalid("messages", "messages: Field required");
  if (!messages->is_array()) wrong_type("messages", "an array", *messages);
  if (messages->empty()) throw_invalid("messages", "messages: at least one message is required");
  MessageBuilder builder;
  for (size_t i = 0; i < messages->size(); ++i) {
    std::string p = fmt::format("messages.{}", i);
    const Json& m = (*messages)[i];
    if (!m.is_object()) wrong_type(p, "an object", m);
    std::string role = string_field(m, "role", p + ".role", true);
    if (role == "user") {
      builder.user(m, p);
    } else if (role == "assistant") {
      builder.assistant(m, p);
    } else if (role == "system") {
      const Json* content = field(m, "content");
      if (!content) throw_invalid(p + ".content", "{}.content: Field required", p);
      append_system(*content, p + ".content", system);
    } else {
      throw_invalid(p + ".role", "{}.role: must be user, assistant or system, got '{}'", p, role);
    }
  }
  r.chat.messages = builder.take(std::move(system));
  r.chat.tools = parse_tools(body);
  parse_tool_choice(body, r.chat);
  parse_thinking(body, r.chat.template_kwargs);
  if (!count_tokens) r.chat.gen = parse_generation(body);
  return r;
}

}  // namespace keel::server
