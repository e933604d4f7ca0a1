// keel render: print the prompt a model's chat template makes of a conversation.
//   keel render -m DIR --messages FILE [--tools FILE] [--kwargs JSON] [--no-generation-prompt]
//               [--chat-template FILE] [--raw-arguments] [--now "YYYY-MM-DD HH:MM:SS"]
// --jinja-batch FILE renders raw templates instead, one JSON line {"template", "context"} in, one JSON line
// {"ok", "output" | "error", "raised", "type"} out; tools/jinja_difffuzz.py drives it (date pinned by --now).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "chat/chat_template.h"
#include "chat/jinja/errors.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/json_depth.h"

namespace keel::cli {
namespace {

struct RenderArgs {
  std::string model, messages, tools, kwargs, chat_template, batch, now;
  bool no_generation_prompt = false, raw_arguments = false;
};

chat::Json read_json_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_error(ErrorCode::invalid_argument, "{} file {}: cannot open", what, path);
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  if (json_too_deep(text))
    throw_error(ErrorCode::invalid_argument, "{} file {}: JSON nests deeper than {} levels", what, path,
                kMaxJsonDepth);
  chat::Json j = chat::Json::parse(text, nullptr, false);
  if (j.is_discarded()) throw_error(ErrorCode::invalid_argument, "{} file {}: not valid JSON", what, path);
  return j;
}

std::optional<std::tm> parse_now(const std::string& text) {
  if (text.empty()) return std::nullopt;
  std::tm tm{};
  int n = std::sscanf(text.c_str(), "%d-%d-%d %d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                      &tm.tm_min, &tm.tm_sec);
  if (n != 3 && n != 6)
    throw_error(ErrorCode::invalid_argument, "--now {}: expected \"YYYY-MM-DD[ HH:MM:SS]\"", text);
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  tm.tm_isdst = -1;
  std::tm copy = tm;
  std::mktime(&copy);  // fills in the weekday and day of the year
  tm.tm_wday = copy.tm_wday;
  tm.tm_yday = copy.tm_yday;
  return tm;
}

void run_batch(const RenderArgs& args, const chat::jinja::RenderOptions& options) {
  std::ifstream in(args.batch, std::ios::binary);
  if (!in) throw_error(ErrorCode::invalid_argument, "--jinja-batch {}: cannot open", args.batch);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    chat::Json result;
    try {
      chat::Json job = chat::Json::parse(line);
      chat::jinja::Template tmpl(job.at("template").get<std::string>());
      result = {{"ok", true}, {"output", tmpl.render(job.at("context"), options)}};
    } catch (const chat::jinja::TemplateRaisedError& e) {
      result = {{"ok", false}, {"raised", true}, {"type", "TemplateError"}, {"error", e.what()}};
    } catch (const chat::jinja::TemplateError& e) {
      result = {{"ok", false}, {"raised", false}, {"type", e.python_type()}, {"error", e.message()}};
    } catch (const std::exception& e) {
      result = {{"ok", false}, {"raised", false}, {"type", "keel"}, {"error", e.what()}};
    }
    std::cout << result.dump(-1, ' ', false, chat::Json::error_handler_t::replace) << '\n';
  }
  std::cout.flush();
}

void run_render(const RenderArgs& args) {
  chat::jinja::RenderOptions options;
  options.now = parse_now(args.now);
  if (!args.batch.empty()) return run_batch(args, options);
  if (args.model.empty() && args.chat_template.empty()) {
    throw_error(ErrorCode::invalid_argument, "render: give -m DIR (a folder with tokenizer_config.json)");
  }
  if (args.messages.empty()) throw_error(ErrorCode::invalid_argument, "render: give --messages FILE");
  chat::ChatTemplate tmpl = chat::ChatTemplate::from_model_dir(args.model, args.chat_template);

  chat::ChatInputs inputs;
  chat::Json messages = read_json_file(args.messages, "--messages");
  if (messages.is_object() && messages.contains("messages")) {  // an OpenAI request body
    if (messages.contains("tools")) inputs.tools = messages["tools"];
    messages = messages["messages"];
  }
  if (!messages.is_array())
    throw_error(ErrorCode::invalid_argument, "--messages {}: expected a JSON array", args.messages);
  inputs.messages = args.raw_arguments ? messages : tmpl.prepare_messages(messages);
  if (!args.tools.empty()) inputs.tools = read_json_file(args.tools, "--tools");
  if (!inputs.tools.is_null() && !inputs.tools.is_array()) {
    throw_error(ErrorCode::invalid_argument, "--tools: expected a JSON array");
  }
  if (!args.kwargs.empty()) {
    inputs.extra = json_too_deep(args.kwargs) ? chat::Json() : chat::Json::parse(args.kwargs, nullptr, false);
    if (!inputs.extra.is_object())
      throw_error(ErrorCode::invalid_argument, "--kwargs {}: expected a JSON object", args.kwargs);
  }
  inputs.add_generation_prompt = !args.no_generation_prompt;
  std::string prompt = tmpl.render(inputs, options);
  std::fwrite(prompt.data(), 1, prompt.size(), stdout);
  std::fflush(stdout);
}

}  // namespace

void add_render_command(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("render", "Print the prompt a model's chat template makes of a conversation");
  auto args = std::make_shared<RenderArgs>();
  cmd->add_option("-m,--model", args->model,
                  "Model folder (only tokenizer_config.json / chat_template.jinja are read)");
  cmd->add_option("--messages", args->messages, "JSON file: an array of messages, or an OpenAI request body");
  cmd->add_option("--tools", args->tools, "JSON file: an array of OpenAI tools");
  cmd->add_option("--kwargs", args->kwargs,
                  "Extra template variables as a JSON object, e.g. '{\"enable_thinking\":false}'");
  cmd->add_flag("--no-generation-prompt", args->no_generation_prompt,
                "Render with add_generation_prompt=false");
  cmd->add_option("--chat-template", args->chat_template,
                  "A Jinja template file to use instead of the model's");
  cmd->add_flag("--raw-arguments", args->raw_arguments,
                "Pass tool-call arguments as given (no JSON-string-to-object normalization)");
  cmd->add_option("--now", args->now, "Pin strftime_now's clock: \"YYYY-MM-DD[ HH:MM:SS]\"");
  cmd->add_option("--jinja-batch", args->batch, "Test mode: render the raw templates of a JSON-lines file");
  cmd->callback([args] { run_render(*args); });
}

}  // namespace keel::cli
