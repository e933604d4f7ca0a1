#include "server/openai_response.h"

#include <chrono>
#include <random>

#include "chat/parsers/json_tool_calls.h"

namespace keel::server {

Json Usage::to_json() const {
  return Json{{"prompt_tokens", prompt_tokens},
              {"completion_tokens", completion_tokens},
              {"total_tokens", prompt_tokens + completion_tokens},
              {"prompt_tokens_details", Json{{"cached_tokens", cached_tokens}}}};
}

const char* openai_finish_reason(FinishReason reason, bool has_tool_calls) {
  if (has_tool_calls && (reason == FinishReason::stop || reason == FinishReason::length)) return "tool_calls";
  return reason == FinishReason::length ? "length" : "stop";
}

std::string new_response_id(const char* prefix) {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 rng(std::random_device{}());
  std::string id = prefix;
  for (int i = 0; i < 24; ++i) id += kAlphabet[rng() % (sizeof(kAlphabet) - 1)];
  return id;
}

std::string sse_event(const Json& body) {
  return "data: " + chat::dump_json(body) + "\n\n";
}

ResponseFormatter::ResponseFormatter(Kind kind, std::string model, const tokenizer::Tokenizer& tokenizer,
                                     bool logprobs, int top_logprobs)
    : kind_(kind),
      id_(new_response_id(kind == Kind::chat ? "chatcmpl-" : "cmpl-")),
      model_(std::move(model)),
      created_(std::chrono::duration_cast<std::chrono::seconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count()),
      tokenizer_(tokenizer),
      logprobs_(logprobs),
      top_logprobs_(top_logprobs) {}

Json ResponseFormatter::envelope(const char* object) const {
  return Json{{"id", id_},
              {"object", object},
              {"created", created_},
              {"model", model_},
              {"system_fingerprint", "keel"}};
}

std::string ResponseFormatter::token_text(int32_t id) const {
  std::vector<tokenizer::TokenId> one{id};
  return tokenizer_.decode(one);
}

Json ResponseFormatter::chat_logprobs(std::span<const GeneratedToken> tokens) const {
  auto entry = [&](int32_t id, float logprob) {
    std::string text = token_text(id);
    Json bytes = Json::array();
    for (unsigned char c : text) bytes.push_back(static_cast<int>(c));
    return Json{{"token", text}, {"logprob", logprob}, {"bytes", std::move(bytes)}};
  };
  Json content = Json::array();
  for (const GeneratedToken& t : tokens) {
    Json e = entry(t.id, t.logprob);
    Json top = Json::array();
    for (size_t k = 0; k < t.top.size() && static_cast<int>(k) < top_logprobs_; ++k)
      top.push_back(entry(t.top[k].first, t.top[k].second));
    e["top_logprobs"] = std::move(top);
    content.push_back(std::move(e));
  }
  return Json{{"content", std::move(content)}, {"refusal", nullptr}};
}

Json ResponseFormatter::text_logprobs(std::span<const GeneratedToken> tokens, size_t text_offset) const {
  Json toks = Json::array(), lps = Json::array(), tops = Json::array(), offsets = Json::array();
  for (const GeneratedToken& t : tokens) {
    std::string text = token_text(t.id);
    toks.push_back(text);
    lps.push_back(t.logprob);
    Json top = Json::object();
    for (size_t k = 0; k < t.top.size() && static_cast<int>(k) < top_logprobs_; ++k)
      top[token_text(t.top[k].first)] = t.top[k].second;
    tops.push_back(std::move(top));
    offsets.push_back(text_offset);
    text_offset += text.size();
  }
  return Json{{"tokens", std::move(toks)},
              {"token_logprobs", std::move(lps)},
              {"top_logprobs", std::move(tops)},
              {"text_offset", std::move(offsets)}};
}

Json ResponseFormatter::chat_role_chunk(bool usage_null) const {
  Json c = envelope("chat.completion.chunk");
  c["choices"] = Json::array({Json{{"index", 0},
                                   {"delta", Json{{"role", "assistant"}, {"content", ""}}},
                                   {"logprobs", nullptr},
                                   {"finish_reason", nullptr}}});
  if (usage_null) c["usage"] = nullptr;
  return c;
}

std::optional<Json> ResponseFormatter::chat_delta_chunk(std::span<const chat::OutputEvent> events,
                                                        std::span<const GeneratedToken> tokens,
                                                        bool usage_null) const {
  bool with_logprobs = logprobs_ && !tokens.empty();
  if (events.empty() && !with_logprobs) return std::nullopt;
  Json delta = Json::object();
  std::string content, reasoning;
  Json calls = Json::array();
  for (const chat::OutputEvent& e : events) {
    switch (e.kind) {
      case chat::OutputEvent::Kind::content:
        content += e.text;
        break;
      case chat::OutputEvent::Kind::reasoning:
        reasoning += e.text;
        break;
      case chat::OutputEvent::Kind::tool_call_begin:
        calls.push_back(Json{{"index", e.tool_index},
                             {"id", e.id},
                             {"type", "function"},
                             {"function", Json{{"name", e.name}, {"arguments", ""}}}});
        break;
      case chat::OutputEvent::Kind::tool_call_arguments:
        // Merge into the begin entry of the same call in this chunk, when there is one.
        if (!calls.empty() && calls.back()["index"] == e.tool_index) {
          calls.back()["function"]["arguments"] =
              calls.back()["function"]["arguments"].get<std::string>() + e.text;
        } else {
          calls.push_back(Json{{"index", e.tool_index}, {"function", Json{{"arguments", e.text}}}});
        }
        break;
    }
  }
  if (!reasoning.empty()) delta["reasoning_content"] = reasoning;
  if (!content.empty()) delta["content"] = content;
  if (!calls.empty()) delta["tool_calls"] = std::move(calls);
  Json c = envelope("chat.completion.chunk");
  c["choices"] = Json::array({Json{{"index", 0},
                                   {"delta", std::move(delta)},
                                   {"logprobs", with_logprobs ? chat_logprobs(tokens) : Json()},
                                   {"finish_reason", nullptr}}});
  if (usage_null) c["usage"] = nullptr;
  return c;
}

Json ResponseFormatter::chat_finish_chunk(const char* finish_reason, bool usage_null) const {
  Json c = envelope("chat.completion.chunk");
  c["choices"] = Json::array({Json{
      {"index", 0}, {"delta", Json::object()}, {"logprobs", nullptr}, {"finish_reason", finish_reason}}});
  if (usage_null) c["usage"] = nullptr;
  return c;
}

Json ResponseFormatter::usage_chunk(const Usage& usage) const {
  Json c = envelope(kind_ == Kind::chat ? "chat.completion.chunk" : "text_completion");
  c["choices"] = Json::array();
  c["usage"] = usage.to_json();
  return c;
}

Json ResponseFormatter::chat_completion(const chat::FinalMessage& message, const char* finish_reason,
                                        std::span<const GeneratedToken> tokens, const Usage& usage) const {
  Json c = envelope("chat.completion");
  c["choices"] = Json::array({Json{{"index", 0},
                                   {"message", message.to_json()},
                                   {"logprobs", logprobs_ ? chat_logprobs(tokens) : Json()},
                                   {"finish_reason", finish_reason}}});
  c["usage"] = usage.to_json();
  return c;
}

Json ResponseFormatter::text_chunk(const std::string& text, std::span<const GeneratedToken> tokens,
                                   const char* finish_reason, bool usage_null) const {
  Json c = envelope("text_completion");
  c["choices"] =
      Json::array({Json{{"index", 0},
                        {"text", text},
                        {"logprobs", logprobs_ && !tokens.empty() ? text_logprobs(tokens, 0) : Json()},
                        {"finish_reason", finish_reason ? Json(finish_reason) : Json()}}});
  if (usage_null) c["usage"] = nullptr;
  return c;
}

Json ResponseFormatter::text_completion(const std::string& text, const char* finish_reason,
                                        std::span<const GeneratedToken> tokens, const Usage& usage) const {
  Json c = envelope("text_completion");
  c["choices"] = Json::array({Json{{"index", 0},
                                   {"text", text},
                                   {"logprobs", logprobs_ ? text_logprobs(tokens, 0) : Json()},
                                   {"finish_reason", finish_reason}}});
  c["usage"] = usage.to_json();
  return c;
}

}  // namespace keel::server
