#include "server/openai_request.h"

#include <cmath>
#include <limits>

#include "core/json_depth.h"

namespace keel::server {

namespace {

constexpr int kMaxTopLogprobs = 20;
constexpr size_t kMaxStopStrings = 16;

[[noreturn]] void wrong_type(const std::string& param, const char* expected, const Json& got) {
  throw_invalid(param, "invalid type for '{}': expected {}, got {}", param, expected, json_kind_name(got));
}

// The field's value, or nullptr when it is absent or null (OpenAI treats an explicit null as "not given").
const Json* field(const Json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<double> number_field(const Json& obj, const char* name, double lo, double hi) {
  const Json* v = field(obj, name);
  if (!v) return std::nullopt;
  if (!v->is_number()) wrong_type(name, "a number", *v);
  double x = v->get<double>();
  if (!std::isfinite(x) || x < lo || x > hi)
    throw_invalid(name, "'{}' must be between {} and {}, got {}", name, lo, hi, x);
  return x;
}

// An integer (a float with no fraction counts, as JavaScript clients send 5.0 as 5).
std::optional<int64_t> integer_field(const Json& obj, const char* name, int64_t lo, int64_t hi) {
  const Json* v = field(obj, name);
  if (!v) return std::nullopt;
  int64_t x = 0;
  if (v->is_number_integer()) {
    if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(hi))
      throw_invalid(name, "'{}' must be between {} and {}", name, lo, hi);
    x = v->get<int64_t>();
  } else if (v->is_number_float() && std::trunc(v->get<double>()) == v->get<double>() &&
             std::fabs(v->get<double>()) < 9.0e15) {
    x = static_cast<int64_t>(v->get<double>());
  } else {
    wrong_type(name, "an integer", *v);
  }
  if (x < lo || x > hi) throw_invalid(name, "'{}' must be between {} and {}, got {}", name, lo, hi, x);
  return x;
}

std::optional<bool> bool_field(const Json& obj, const char* name) {
  const Json* v = field(obj, name);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) wrong_type(name, "a boolean", *v);
  return v->get<bool>();
}

std::string model_field(const Json& body) {
  const Json* v = field(body, "model");
  if (!v) return {};
  if (!v->is_string()) wrong_type("model", "a string", *v);
  return v->get<std::string>();
}

void check_n(const Json& body) {
  std::optional<int64_t> n = integer_field(body, "n", 1, std::numeric_limits<int32_t>::max());
  if (n && *n > 1)
    throw ApiError(400, "unsupported", "n > 1 (several choices per request) is not supported; send n = 1",
                   "n");
  std::optional<int64_t> best_of = integer_field(body, "best_of", 1, std::numeric_limits<int32_t>::max());
  if (best_of && *best_of > 1)
    throw ApiError(400, "unsupported",
                   "best_of > 1 (several candidates per request) is not supported; send best_of = 1",
                   "best_of");
}

constexpr double kMaxLogitBias = 100;
constexpr size_t kMaxLogitBiasEntries = 1 << 16;

// A token id written as a JSON object key ("50256") or a number: a non-negative integer below 2^31.
std::optional<int32_t> token_id_text(std::string_view s) {
  if (s.empty() || s.size() > 10) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  if (v > std::numeric_limits<int32_t>::max()) return std::nullopt;
  return static_cast<int32_t>(v);
}

// OpenAI's {"50256": -100} and llama-server's [[50256, -100], ...] (false there also bans).
std::vector<std::pair<int32_t, float>> parse_logit_bias(const Json& body) {
  std::vector<std::pair<int32_t, float>> out;
  const Json* lb = field(body, "logit_bias");
  if (!lb) return out;
  auto bias_of = [](const Json& v, const std::string& param) -> float {
    if (v.is_boolean() && !v.get<bool>()) return -static_cast<float>(kMaxLogitBias);
    if (!v.is_number()) wrong_type(param, "a number", v);
    double x = v.get<double>();
    if (!std::isfinite(x) || x < -kMaxLogitBias || x > kMaxLogitBias)
      throw_invalid(param, "'{}' must be between -100 and 100, got {}", param, x);
    return static_cast<float>(x);
  };
  if (lb->size() > kMaxLogitBiasEntries)
    throw_invalid("logit_bias", "'logit_bias' may hold at most {} entries, got {}", kMaxLogitBiasEntries,
                  lb->size());
  if (lb->is_object()) {
    for (const auto& [key, v] : lb->items()) {
      std::string param = fmt::format("logit_bias.{}", key.substr(0, 40));
      std::optional<int32_t> id = token_id_text(key);
      if (!id)
        throw_invalid(param, "'logit_bias' keys must be token ids (non-negative integers), got '{}'",
                      key.substr(0, 40));
      out.emplace_back(*id, bias_of(v, param));
    }
  } else if (lb->is_array()) {
    for (size_t i = 0; i < lb->size(); ++i) {
      std::string param = fmt::format("logit_bias[{}]", i);
      const Json& e = (*lb)[i];
      if (!e.is_array() || e.size() != 2 || !e[0].is_number_integer() || e[0].get<int64_t>() < 0 ||
          e[0].get<int64_t>() > std::numeric_limits<int32_t>::max())
        throw_invalid(param, "'{}' must be a pair [token id, bias]", param);
      out.emplace_back(e[0].get<int32_t>(), bias_of(e[1], param));
    }
  } else {
    wrong_type("logit_bias", "an object of token id → bias", *lb);
  }
  return out;
}

GenerationOptions parse_generation(const Json& body, bool chat) {
  GenerationOptions g;
  if (auto x = number_field(body, "temperature", 0, 100)) g.temperature = static_cast<float>(*x);
  if (auto x = number_field(body, "top_p", 0, 1)) {
    if (*x <= 0) throw_invalid("top_p", "'top_p' must be greater than 0 and at most 1, got {}", *x);
    g.top_p = static_cast<float>(*x);
  }
  if (auto x = integer_field(body, "top_k", -1, std::numeric_limits<int32_t>::max()))
    g.top_k = static_cast<int32_t>(std::max<int64_t>(*x, 0));
  if (auto x = number_field(body, "min_p", 0, 1)) g.min_p = static_cast<float>(*x);
  if (auto x = number_field(body, "repetition_penalty", 0, 100)) {
    if (*x <= 0)
      throw_invalid("repetition_penalty", "'repetition_penalty' must be greater than 0, got {}", *x);
    g.repetition_penalty = static_cast<float>(*x);
  }
  if (auto x = number_field(body, "presence_penalty", -2, 2)) g.presence_penalty = static_cast<float>(*x);
  if (auto x = number_field(body, "frequency_penalty", -2, 2)) g.frequency_penalty = static_cast<float>(*x);
  if (auto x = integer_field(body, "seed", std::numeric_limits<int64_t>::min(),
                             std::numeric_limits<int64_t>::max()))
    g.seed = static_cast<uint64_t>(*x);
  g.logit_bias = parse_logit_bias(body);

  // max_completion_tokens is the newer name; max_tokens the older one. −1 means "until the context ends"
  // (llama-server's n_predict convention).
  for (const char* name : {"max_tokens", "max_completion_tokens"}) {
    if (auto x = integer_field(body, name, -1, std::numeric_limits<int64_t>::max())) {
      if (*x == 0) throw_invalid(name, "'{}' must be at least 1", name);
      if (*x > 0) g.max_tokens = *x;
    }
  }
  if (!chat) {
    if (auto x = integer_field(body, "n_predict", -1, std::numeric_limits<int64_t>::max()); x && *x > 0)
      g.max_tokens = *x;
  }

  if (const Json* stop = field(body, "stop")) {
    auto add = [&](const Json& s, const std::string& param) {
      if (!s.is_string()) wrong_type(param, "a string", s);
      if (!s.get_ref<const std::string&>().empty()) g.stop.push_back(s.get<std::string>());
    };
    if (stop->is_string()) {
      add(*stop, "stop");
    } else if (stop->is_array()) {
      if (stop->size() > kMaxStopStrings)
        throw_invalid("stop", "'stop' may hold at most {} strings, got {}", kMaxStopStrings, stop->size());
      for (size_t i = 0; i < stop->size(); ++i) add((*stop)[i], fmt::format("stop[{}]", i));
    } else {
      wrong_type("stop", "a string or an array of strings", *stop);
    }
  }

  g.stream = bool_field(body, "stream").value_or(false);
  if (const Json* so = field(body, "stream_options")) {
    if (!so->is_object()) wrong_type("stream_options", "an object", *so);
    if (const Json* iu = field(*so, "include_usage")) {
      if (!iu->is_boolean()) wrong_type("stream_options.include_usage", "a boolean", *iu);
      g.include_usage = iu->get<bool>();
    }
  }

  if (chat) {
    g.logprobs = bool_field(body, "logprobs").value_or(false);
    if (auto k = integer_field(body, "top_logprobs", 0, kMaxTopLogprobs)) {
      if (!g.logprobs && *k > 0) throw_invalid("top_logprobs", "'top_logprobs' needs 'logprobs' set to true");
      g.top_logprobs = static_cast<int>(*k);
    }
  } else if (const Json* lp = field(body, "logprobs")) {
    // The legacy completions API: logprobs is the number of alternatives (0..5); true/false are accepted too.
    if (lp->is_boolean()) {
      g.logprobs = lp->get<bool>();
    } else {
      auto k = integer_field(body, "logprobs", 0, kMaxTopLogprobs);
      g.logprobs = true;
      g.top_logprobs = static_cast<int>(*k);
    }
  }
  return g;
}

// A message's content as the template sees it: a string. Text parts are joined with newlines (as vLLM does);
// other part types are refused, since keel's models take text only.
Json normalize_content(const Json& content, const std::string& param, bool allow_null) {
  if (content.is_null()) {
    if (!allow_null) throw_invalid(param, "'{}' is required", param);
    return "";
  }
  if (content.is_string()) return content;
  if (!content.is_array()) wrong_type(param, "a string or an array of content parts", content);
  std::string text;
  for (size_t j = 0; j < content.size(); ++j) {
    const Json& part = content[j];
    std::string p = fmt::format("{}[{}]", param, j);
    if (!part.is_object()) wrong_type(p, "an object", part);
    const Json* type = field(part, "type");
    if (!type || !type->is_string())
      throw_invalid(p + ".type", "'{}.type' must be a string such as \"text\"", p);
    if (*type != "text")
      throw ApiError(
          400, "unsupported",
          fmt::format("'{}.type': content part type '{}' is not supported: this server takes text only", p,
                      type->get<std::string>()),
          p + ".type");
    const Json* t = field(part, "text");
    if (!t || !t->is_string()) throw_invalid(p + ".text", "'{}.text' must be a string", p);
    if (j > 0) text += '\n';
    text += t->get<std::string>();
  }
  return text;
}

void check_tool_calls(const Json& calls, const std::string& param) {
  if (!calls.is_array()) wrong_type(param, "an array", calls);
  for (size_t k = 0; k < calls.size(); ++k) {
    std::string p = fmt::format("{}[{}]", param, k);
    const Json& c = calls[k];
    if (!c.is_object()) wrong_type(p, "an object", c);
    const Json* fn = field(c, "function");
    if (!fn || !fn->is_object()) throw_invalid(p + ".function", "'{}.function' must be an object", p);
    const Json* name = field(*fn, "name");
    if (!name || !name->is_string())
      throw_invalid(p + ".function.name", "'{}.function.name' must be a string", p);
    const Json* args = field(*fn, "arguments");
    if (args && !args->is_string() && !args->is_object())
      wrong_type(p + ".function.arguments", "a string (or an object)", *args);
  }
}

Json parse_messages(const Json& body) {
  const Json* messages = field(body, "messages");
  if (!messages) throw_invalid("messages", "'messages' is required");
  if (!messages->is_array()) wrong_type("messages", "an array", *messages);
  if (messages->empty()) throw_invalid("messages", "'messages' must hold at least one message");
  Json out = Json::array();
  for (size_t i = 0; i < messages->size(); ++i) {
    std::string p = fmt::format("messages[{}]", i);
    const Json& m = (*messages)[i];
    if (!m.is_object()) wrong_type(p, "an object", m);
    const Json* role = field(m, "role");
    if (!role || !role->is_string()) throw_invalid(p + ".role", "'{}.role' must be a string", p);
    std::string r = role->get<std::string>();
    if (r == "developer") r = "system";  // newer OpenAI clients' name for the system message
    if (r != "system" && r != "user" && r != "assistant" && r != "tool" && r != "function")
      throw_invalid(p + ".role",
                    "'{}.role' must be one of system, developer, user, assistant, tool; got '{}'", p, r);
    Json msg = m;  // other fields (name, tool_call_id, reasoning_content, ...) reach the template unchanged
    msg["role"] = r;
    bool has_calls = r == "assistant" && field(m, "tool_calls");
    if (has_calls) check_tool_calls(m["tool_calls"], p + ".tool_calls");
    auto it = m.find("content");
    msg["content"] = normalize_content(it == m.end() ? Json() : *it, p + ".content", r == "assistant");
    if (const Json* rc = field(m, "reasoning_content"); rc && !rc->is_string())
      wrong_type(p + ".reasoning_content", "a string", *rc);
    out.push_back(std::move(msg));
  }
  return out;
}

Json parse_tools(const Json& body) {
  const Json* tools = field(body, "tools");
  if (!tools) return Json();
  if (!tools->is_array()) wrong_type("tools", "an array", *tools);
  for (size_t i = 0; i < tools->size(); ++i) {
    std::string p = fmt::format("tools[{}]", i);
    const Json& t = (*tools)[i];
    if (!t.is_object()) wrong_type(p, "an object", t);
    const Json* type = field(t, "type");
    if (type && *type != "function")
      throw ApiError(400, "unsupported", fmt::format("'{}.type' must be \"function\"", p), p + ".type");
    const Json* fn = field(t, "function");
    if (!fn || !fn->is_object()) throw_invalid(p + ".function", "'{}.function' must be an object", p);
    const Json* name = field(*fn, "name");
    if (!name || !name->is_string() || name->get_ref<const std::string&>().empty())
      throw_invalid(p + ".function.name", "'{}.function.name' must be a non-empty string", p);
    if (const Json* params = field(*fn, "parameters"); params && !params->is_object())
      wrong_type(p + ".function.parameters", "an object (a JSON Schema)", *params);
  }
  return tools->empty() ? Json() : *tools;
}

// tool_choice: "auto" and "none"; "required" and {"type": "function", "function": {"name"}} force a call
// (ChatRequest::force_tool_call), of a tool the request lists.
void parse_tool_choice(const Json& body, ChatRequest& r) {
  const bool have_tools = !r.tools.is_null();
  r.parse_tool_calls = have_tools;
  const Json* choice = field(body, "tool_choice");
  if (!choice) return;
  if (choice->is_string()) {
    const std::string& c = choice->get_ref<const std::string&>();
    if (c == "auto") return;
    if (c == "none") {
      r.parse_tool_calls = false;
      return;
    }
    if (c == "required") {
      if (!have_tools) throw_invalid("tool_choice", "tool_choice \"required\" needs 'tools'");
      r.force_tool_call = true;
      return;
    }
    throw_invalid("tool_choice",
                  "'tool_choice' must be \"auto\", \"none\", \"required\" or a function, got '{}'", c);
  }
  if (choice->is_object()) {
    const Json* fn = field(*choice, "function");
    const Json* name = fn && fn->is_object() ? field(*fn, "name") : nullptr;
    if (!name || !name->is_string())
      throw_invalid("tool_choice.function.name",
                    "tool_choice: {{\"type\": \"function\", \"function\": "
                    "{{\"name\": ...}}}} needs the function's name");
    const std::string& n = name->get_ref<const std::string&>();
    bool listed = false;
    if (have_tools)
      for (const Json& t : r.tools) listed = listed || t["function"]["name"] == n;
    if (!listed)
      throw_invalid("tool_choice.function.name", "tool_choice names '{}', which is not among the tools", n);
    r.force_tool_call = true;
    r.forced_tool = n;
    return;
  }
  wrong_type("tool_choice", "a string or an object", *choice);
}

void check_response_format(const Json& body) {
  const Json* rf = field(body, "response_format");
  if (!rf) return;
  if (!rf->is_object()) wrong_type("response_format", "an object", *rf);
  const Json* type = field(*rf, "type");
  if (!type || !type->is_string())
    throw_invalid("response_format.type", "'response_format.type' must be a string");
  if (*type == "text") return;
  if (*type == "json_object" || *type == "json_schema")
    throw ApiError(
        400, "unsupported",
        fmt::format("response_format \"{}\" needs constrained decoding, which keel does not have yet",
                    type->get<std::string>()),
        "response_format");
  throw_invalid("response_format.type", "'response_format.type' must be text, json_object or json_schema");
}

void check_object_body(const Json& body) {
  if (!body.is_object())
    throw_invalid("body", "the request body must be a JSON object, got {}", json_kind_name(body));
}

}  // namespace

Json parse_json_body(const std::string& body) {
  if (body.empty()) throw_invalid("body", "the request body is empty; send a JSON object");
  if (json_too_deep(body))
    throw_invalid("body", "the request body nests deeper than {} levels", kMaxJsonDepth);
  try {
    return Json::parse(body);
  } catch (const Json::exception& e) {  // parse_error, and out_of_range for a number such as 1e999
    throw_invalid("body", "the request body is not valid JSON: {}", e.what());
  }
}

ChatRequest parse_chat_request(const Json& body) {
  check_object_body(body);
  ChatRequest r;
  r.model = model_field(body);
  check_n(body);
  r.messages = parse_messages(body);
  r.tools = parse_tools(body);
  parse_tool_choice(body, r);
  bool_field(body, "parallel_tool_calls");  // accepted (type-checked): the parsers return every call written
  check_response_format(body);
  if (const Json* kw = field(body, "chat_template_kwargs")) {
    if (!kw->is_object()) wrong_type("chat_template_kwargs", "an object", *kw);
    r.template_kwargs = *kw;
  }
  r.gen = parse_generation(body, true);
  return r;
}

CompletionRequest parse_completion_request(const Json& body) {
  check_object_body(body);
  CompletionRequest r;
  r.model = model_field(body);
  check_n(body);
  if (const Json* echo = field(body, "echo"); echo && (!echo->is_boolean() || echo->get<bool>()))
    throw ApiError(400, "unsupported", "echo is not supported", "echo");
  if (const Json* suffix = field(body, "suffix");
      suffix && !(suffix->is_string() && suffix->get<std::string>().empty()))
    throw ApiError(400, "unsupported", "suffix (insertion) is not supported", "suffix");
  const Json* prompt = field(body, "prompt");
  if (!prompt) throw_invalid("prompt", "'prompt' is required");
  if (prompt->is_string()) {
    r.prompt = prompt->get<std::string>();
  } else if (prompt->is_array()) {
    // ["text"] (one prompt), or [id, id, ...] (one prompt as token ids); several prompts would be n > 1.
    if (prompt->size() == 1 && (*prompt)[0].is_string()) {
      r.prompt = (*prompt)[0].get<std::string>();
    } else if (!prompt->empty() && (*prompt)[0].is_number()) {
      std::vector<int32_t> ids;
      for (size_t i = 0; i < prompt->size(); ++i) {
        const Json& id = (*prompt)[i];
        if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
            id.get<int64_t>() > std::numeric_limits<int32_t>::max())
          throw_invalid(fmt::format("prompt[{}]", i),
                        "'prompt[{}]' must be a token id (a non-negative integer)", i);
        ids.push_back(id.get<int32_t>());
      }
      r.prompt_tokens = std::move(ids);
    } else if (prompt->empty()) {
      throw_invalid("prompt", "'prompt' must not be empty");
    } else {
      throw ApiError(400, "unsupported", "several prompts in one request are not supported; send one",
                     "prompt");
    }
  } else {
    wrong_type("prompt", "a string or an array of token ids", *prompt);
  }
  r.gen = parse_generation(body, false);
  return r;
}

}  // namespace keel::server
