// A model's chat template: where it comes from, what context it is rendered with, and how tool-call arguments
// are shaped before rendering.
//
// Source, first found: a template file given explicitly (`--chat-template FILE`), the model folder's
// `chat_template.jinja`, then `chat_template` in `tokenizer_config.json` — a string, or a list of
// {"name", "template"} where "tool_use" is used when tools are given (any list, as transformers: `tools is
// not None`) and "default" otherwise. Special tokens (bos, eos, and unk/pad/sep/cls/mask when set) come from
// tokenizer_config.json, as strings or {"content": ...} objects.
//
// Context, as transformers' apply_chat_template builds it: messages, tools (null when none are given),
// documents (null unless given), add_generation_prompt, the special tokens, then the caller's extra keyword
// arguments (enable_thinking, reasoning_effort, ...), which may override any of those.
//
// Tool-call arguments. The OpenAI API sends `tool_calls[i].function.arguments` as a JSON *string*; templates
// written for transformers expect an *object* (they iterate `arguments|items` or print `arguments|tojson`),
// while a few concatenate the string (DeepSeek V3.1) and fail on an object. keel decides per template, once,
// at load: it renders a probe conversation with the arguments as an object and as a string, and prefers the
// object unless the object form raises or prints a Python repr (`{'k': ...}`) where JSON was meant. When the
// template wants objects, the server calls normalize_tool_call_arguments() (prepare_messages() does both),
// which parses each string that holds a JSON object into that object, keeping key order; any other string
// (invalid JSON, an array, a number) is left as it is, so a model's own malformed call can still be shown
// back to it.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "chat/jinja/template.h"
#include "chat/messages.h"

namespace keel::chat {

// Assistant messages' tool_calls[].function.arguments: a string holding a JSON object becomes that object.
Json normalize_tool_call_arguments(const Json& messages);

struct ChatInputs {
  Json messages = Json::array();
  Json tools;  // an array, or null for none
  bool add_generation_prompt = true;
  Json extra = Json::object();  // extra template keyword arguments
};

class ChatTemplate {
 public:
  // `tool_use_source`: a second template used when tools are given (the "tool_use" entry of a template list).
  ChatTemplate(std::string source, std::string bos_token, std::string eos_token,
               std::optional<std::string> tool_use_source = std::nullopt,
               Json other_special_tokens = Json::object());

  // From a model folder (needs only tokenizer_config.json, or chat_template.jinja), or with `template_file`
  // overriding the template. Throws Error(invalid_file) naming the file for a missing or malformed source.
  static ChatTemplate from_model_dir(const std::string& dir, const std::string& template_file = "");

  // The prompt. Throws jinja::TemplateRaisedError when the template rejects the conversation (its message),
  // and jinja::TemplateError for anything else jinja2 would raise.
  std::string render(const ChatInputs& inputs, const jinja::RenderOptions& options = {}) const;
  Json context(const ChatInputs& inputs) const;

  // Whether tool-call arguments should be objects for this template (decided at construction, see above).
  bool wants_object_arguments() const { return wants_object_arguments_; }
  // `messages` with arguments normalized when the template wants objects, unchanged otherwise.
  Json prepare_messages(const Json& messages) const;

  // Every text the template writes from elsewhere than the request: its sources and the special tokens it is
  // given (SpecialTextShield keeps its placeholders out of them).
  const std::vector<std::string>& own_texts() const { return own_texts_; }

  const std::string& bos_token() const { return bos_token_; }
  const std::string& eos_token() const { return eos_token_; }

 private:
  bool probe_object_arguments() const;

  jinja::Template template_;
  std::optional<jinja::Template> tool_use_template_;
  std::string bos_token_, eos_token_;
  Json other_special_tokens_;  // {"pad_token": "...", ...}: only those the config sets
  bool wants_object_arguments_ = false;
  std::vector<std::string> own_texts_;
};

}  // namespace keel::chat
