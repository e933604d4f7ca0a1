#include "chat/chat_template.h"

#include <filesystem>

#include "chat/jinja/errors.h"
#include "core/error.h"
#include "core/json_depth.h"
#include "core/text_file.h"

namespace keel::chat {
namespace {

// Templates are kilobytes; tokenizer_config.json may also list many added tokens.
constexpr int64_t kMaxTemplateFileBytes = 64 << 20;

std::string read_file(const std::string& path) {
  return read_regular_file(path, kMaxTemplateFileBytes);
}

// Whether anything (even a dangling or looping symlink, which then fails to read with its reason) is there;
// never throws, unlike fs::exists on a symlink loop.
bool present(const std::string& path) {
  std::error_code ec;
  return std::filesystem::symlink_status(path, ec).type() != std::filesystem::file_type::not_found;
}

// "bos_token": "<s>" or "bos_token": {"content": "<s>", ...}; absent or null: "".
std::string special_token(const Json& config, const char* name, const std::string& path) {
  auto it = config.find(name);
  if (it == config.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
    return (*it)["content"].get<std::string>();
  }
  throw_error(ErrorCode::invalid_file, "{}: {} must be a string or an object with a \"content\" string", path,
              name);
}

Json probe_messages(bool object_arguments) {
  Json arguments = Json::object({{"keel_probe_arg", "keel_probe_value"}});
  Json call = {
      {"id", "keelprobe"},
      {"type", "function"},
      {"function",
       {{"name", "keel_probe_tool"}, {"arguments", object_arguments ? arguments : Json(arguments.dump())}}}};
  return Json::array({
      {{"role", "user"}, {"content", "Use the tool."}},
      {{"role", "assistant"}, {"content", ""}, {"tool_calls", Json::array({call})}},
      {{"role", "tool"}, {"tool_call_id", "keelprobe"}, {"name", "keel_probe_tool"}, {"content", "ok"}},
  });
}

Json probe_tools() {
  Json params = {{"type", "object"},
                 {"properties", {{"keel_probe_arg", {{"type", "string"}, {"description", "a probe"}}}}},
                 {"required", Json::array({"keel_probe_arg"})}};
  return Json::array(
      {{{"type", "function"},
        {"function", {{"name", "keel_probe_tool"}, {"description", "A probe."}, {"parameters", params}}}}});
}

}  // namespace

Json normalize_tool_call_arguments(const Json& messages) {
  Json out = messages;
  if (!out.is_array()) return out;
  for (auto& message : out) {
    if (!message.is_object() || message.value("role", Json()) != "assistant") continue;
    auto calls = message.find("tool_calls");
    if (calls == message.end() || !calls->is_array()) continue;
    for (auto& call : *calls) {
      if (!call.is_object()) continue;
      auto function = call.find("function");
      if (function == call.end() || !function->is_object()) continue;
      auto arguments = function->find("arguments");
      if (arguments == function->end() || !arguments->is_string()) continue;
      if (json_too_deep(arguments->get_ref<const std::string&>())) continue;  // stays a string
      Json parsed = Json::parse(arguments->get<std::string>(), nullptr, /*allow_exceptions=*/false);
      if (parsed.is_object()) *arguments = std::move(parsed);
    }
  }
  return out;
}

ChatTemplate::ChatTemplate(std::string source, std::string bos_token, std::string eos_token,
                           std::optional<std::string> tool_use_source, Json other_special_tokens)
    : template_(source),
      bos_token_(std::move(bos_token)),
      eos_token_(std::move(eos_token)),
      other_special_tokens_(std::move(other_special_tokens)) {
  if (tool_use_source) tool_use_template_.emplace(*tool_use_source);
  own_texts_ = {source, bos_token_, eos_token_};
  if (tool_use_source) own_texts_.push_back(*tool_use_source);
  for (const auto& [k, v] : other_special_tokens_.items())
    if (v.is_string()) own_texts_.push_back(v.get<std::string>());
  wants_object_arguments_ = probe_object_arguments();
}

ChatTemplate ChatTemplate::from_model_dir(const std::string& dir, const std::string& template_file) {
  namespace fs = std::filesystem;
  std::string config_path = (fs::path(dir) / "tokenizer_config.json").string();
  Json config = Json::object();
  if (present(config_path)) {
    std::string text = read_file(config_path);
    if (json_too_deep(text))
      throw_error(ErrorCode::invalid_file, "{}: JSON nests deeper than {} levels", config_path,
                  kMaxJsonDepth);
    config = Json::parse(text, nullptr, false);
    if (config.is_discarded() || !config.is_object()) {
      throw_error(ErrorCode::invalid_file, "{}: not a JSON object", config_path);
    }
  }
  std::string bos = special_token(config, "bos_token", config_path);
  std::string eos = special_token(config, "eos_token", config_path);
  Json others = Json::object();
  for (const char* name : {"unk_token", "pad_token", "sep_token", "cls_token", "mask_token"}) {
    if (config.contains(name) && !config[name].is_null())
      others[name] = special_token(config, name, config_path);
  }
  if (!template_file.empty()) return ChatTemplate(read_file(template_file), bos, eos, std::nullopt, others);
  std::string jinja_path = (fs::path(dir) / "chat_template.jinja").string();
  if (present(jinja_path)) return ChatTemplate(read_file(jinja_path), bos, eos, std::nullopt, others);

  auto it = config.find("chat_template");
  if (it == config.end() || it->is_null()) {
    throw_error(ErrorCode::invalid_file, "{}: no chat_template (and no {})", config_path, jinja_path);
  }
  if (it->is_string()) return ChatTemplate(it->get<std::string>(), bos, eos, std::nullopt, others);
  if (!it->is_array())
    throw_error(ErrorCode::invalid_file, "{}: chat_template must be a string or a list", config_path);
  std::optional<std::string> default_source, tool_use_source;
  for (const auto& entry : *it) {
    if (!entry.is_object() || !entry.contains("name") || !entry.contains("template") ||
        !entry["name"].is_string() || !entry["template"].is_string()) {
      throw_error(ErrorCode::invalid_file,
                  "{}: each chat_template entry needs a \"name\" and a \"template\" string", config_path);
    }
    std::string name = entry["name"].get<std::string>();
    if (name == "default") default_source = entry["template"].get<std::string>();
    if (name == "tool_use") tool_use_source = entry["template"].get<std::string>();
  }
  if (!default_source) {
    throw_error(ErrorCode::invalid_file, "{}: the chat_template list has no \"default\" entry", config_path);
  }
  return ChatTemplate(*default_source, bos, eos, tool_use_source, others);
}

Json ChatTemplate::context(const ChatInputs& inputs) const {
  Json ctx = Json::object();
  ctx["messages"] = inputs.messages;
  ctx["tools"] = inputs.tools.is_array() ? inputs.tools : Json();
  ctx["documents"] = Json();
  ctx["add_generation_prompt"] = inputs.add_generation_prompt;
  ctx["bos_token"] = bos_token_;
  ctx["eos_token"] = eos_token_;
  for (const auto& [k, v] : other_special_tokens_.items()) ctx[k] = v;
  if (inputs.extra.is_object()) {
    for (const auto& [k, v] : inputs.extra.items()) ctx[k] = v;
  }
  return ctx;
}

std::string ChatTemplate::render(const ChatInputs& inputs, const jinja::RenderOptions& options) const {
  bool tools = inputs.tools.is_array();  // transformers: `tools is not None`, so an empty list counts
  const jinja::Template& t = tools && tool_use_template_ ? *tool_use_template_ : template_;
  return t.render(context(inputs), options);
}

Json ChatTemplate::prepare_messages(const Json& messages) const {
  return wants_object_arguments_ ? normalize_tool_call_arguments(messages) : messages;
}

bool ChatTemplate::probe_object_arguments() const {
  ChatInputs inputs;
  inputs.messages = probe_messages(true);
  inputs.tools = probe_tools();
  inputs.add_generation_prompt = true;
  try {
    std::string out = render(inputs);
    return out.find("keel_probe_value") != std::string::npos &&
           out.find("'keel_probe_arg'") == std::string::npos;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace keel::chat
