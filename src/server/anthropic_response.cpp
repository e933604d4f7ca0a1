#include "server/anthropic_response.h"

#include "chat/parsers/json_tool_calls.h"

namespace keel::server {

Json AnthropicUsage::to_json() const {
  return Json{{"input_tokens", prompt_tokens - cached_tokens},
              {"cache_creation_input_tokens", 0},
              {"cache_read_input_tokens", cached_tokens},
              {"output_tokens", output_tokens}};
}

const char* anthropic_stop_reason(FinishReason reason, bool has_tool_calls, bool stop_sequence,
                                  bool context_full) {
  if (has_tool_calls && (reason == FinishReason::stop || reason == FinishReason::length)) return "tool_use";
  if (reason == FinishReason::length) return context_full ? "model_context_window_exceeded" : "max_tokens";
  return stop_sequence ? "stop_sequence" : "end_turn";
}

Json anthropic_error_json(const ApiError& error) {
  const int s = error.status();
  const char* type = "api_error";
  if (s == 401)
    type = "authentication_error";
  else if (s == 403)
    type = "permission_error";
  else if (s == 404)
    type = "not_found_error";
  else if (s == 413)
    type = "request_too_large";
  else if (s == 429)
    type = "rate_limit_error";
  else if (s == 503 || s == 529)
    type = "overloaded_error";
  else if (s >= 400 && s < 500)
    type = "invalid_request_error";
  return Json{{"type", "error"}, {"error", Json{{"type", type}, {"message", error.what()}}}};
}

ApiError prompt_too_long(int64_t prompt_tokens, int64_t max_prompt_tokens) {
  return ApiError(400, "context_length_exceeded",
                  fmt::format("prompt is too long: {} tokens > {} maximum", prompt_tokens, max_prompt_tokens),
                  "messages");
}

std::string anthropic_sse(const Json& event) {
  return "event: " + event.at("type").get<std::string>() + "\ndata: " + chat::dump_json(event) + "\n\n";
}

AnthropicStream::AnthropicStream(std::string id, std::string model)
    : id_(std::move(id)), model_(std::move(model)) {}

Json AnthropicStream::message_start(const AnthropicUsage& usage) const {
  Json message{{"id", id_},
               {"type", "message"},
               {"role", "assistant"},
               {"model", model_},
               {"content", Json::array()},
               {"stop_reason", nullptr},
               {"stop_sequence", nullptr},
               {"usage", usage.to_json()}};
  return Json{{"type", "message_start"}, {"message", std::move(message)}};
}

void AnthropicStream::open(Block kind, Json content_block, std::vector<Json>& out) {
  close(out);
  open_ = kind;
  out.push_back(Json{
      {"type", "content_block_start"}, {"index", next_index_}, {"content_block", std::move(content_block)}});
}

void AnthropicStream::close(std::vector<Json>& out) {
  if (open_ == Block::none) return;
  out.push_back(Json{{"type", "content_block_stop"}, {"index", next_index_}});
  ++next_index_;
  open_ = Block::none;
  open_tool_ = -1;
}

std::vector<Json> AnthropicStream::feed(std::span<const chat::OutputEvent> events) {
  std::vector<Json> out;
  auto delta = [&](Json d) {
    out.push_back(Json{{"type", "content_block_delta"}, {"index", next_index_}, {"delta", std::move(d)}});
  };
  for (const chat::OutputEvent& e : events) {
    switch (e.kind) {
      case chat::OutputEvent::Kind::reasoning:
        if (open_ != Block::thinking)
          open(Block::thinking, Json{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}, out);
        delta(Json{{"type", "thinking_delta"}, {"thinking", e.text}});
        break;
      case chat::OutputEvent::Kind::content:
        if (open_ != Block::text) open(Block::text, Json{{"type", "text"}, {"text", ""}}, out);
        delta(Json{{"type", "text_delta"}, {"text", e.text}});
        break;
      case chat::OutputEvent::Kind::tool_call_begin:
        open(Block::tool_use,
             Json{{"type", "tool_use"}, {"id", e.id}, {"name", e.name}, {"input", Json::object()}}, out);
        open_tool_ = e.tool_index;
        break;
      case chat::OutputEvent::Kind::tool_call_arguments:
        if (open_ != Block::tool_use || open_tool_ != e.tool_index) break;  // a call never announced
        delta(Json{{"type", "input_json_delta"}, {"partial_json", e.text}});
        break;
    }
  }
  return out;
}

std::vector<Json> AnthropicStream::finish(const char* stop_reason, const std::string& stop_sequence,
                                          const AnthropicUsage& usage) {
  std::vector<Json> out;
  close(out);
  out.push_back(Json{{"type", "message_delta"},
                     {"delta", Json{{"stop_reason", stop_reason},
                                    {"stop_sequence", stop_sequence.empty() ? Json() : Json(stop_sequence)}}},
                     {"usage", usage.to_json()}});
  out.push_back(Json{{"type", "message_stop"}});
  return out;
}

Json AnthropicStream::message(const chat::FinalMessage& m, const char* stop_reason,
                              const std::string& stop_sequence, const AnthropicUsage& usage) const {
  Json content = Json::array();
  if (!m.reasoning_content.empty())
    content.push_back(Json{{"type", "thinking"}, {"thinking", m.reasoning_content}, {"signature", ""}});
  if (!m.content.empty()) content.push_back(Json{{"type", "text"}, {"text", m.content}});
  for (const chat::ToolCall& call : m.tool_calls) {
    Json input = Json::parse(call.arguments, nullptr, /*allow_exceptions=*/false);
    if (!input.is_object()) input = Json::object();  // the parser completes objects; anything else is lost
    content.push_back(Json{{"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", input}});
  }
  return Json{{"id", id_},
              {"type", "message"},
              {"role", "assistant"},
              {"model", model_},
              {"content", std::move(content)},
              {"stop_reason", stop_reason},
              {"stop_sequence", stop_sequence.empty() ? Json() : Json(stop_sequence)},
              {"usage", usage.to_json()}};
}

}  // namespace keel::server
