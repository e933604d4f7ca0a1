#include "server/completion_handler.h"

#include <spdlog/spdlog.h>

#include "chat/parsers/json_tool_calls.h"
#include "server/anthropic_request.h"
#include "server/anthropic_response.h"
#include "server/connection.h"
#include "server/openai_response.h"

namespace keel::server {

void send_error(http::Response& res, const ApiError& error) {
  res.status = error.status();
  if (error.retry_after_seconds() > 0)
    res.set_header("Retry-After", std::to_string(error.retry_after_seconds()));
  res.set_content(chat::dump_json(error.to_json()), "application/json");
}

void send_anthropic_error(http::Response& res, const ApiError& error) {
  res.status = error.status();
  if (error.retry_after_seconds() > 0)
    res.set_header("Retry-After", std::to_string(error.retry_after_seconds()));
  res.set_content(chat::dump_json(anthropic_error_json(error)), "application/json");
}

bool is_anthropic_path(const std::string& path) {
  return path == "/v1/messages" || path.starts_with("/v1/messages/") || path == "/messages" ||
         path.starts_with("/messages/");
}

namespace {

using Update = GenerationSink::Update;

// Adds `u` (what is new) to `into` (everything heard and not yet handled).
void merge(Update& into, Update&& u) {
  into.started = into.started || u.started;
  if (u.started) into.cached_tokens = u.cached_tokens;
  into.prefill_done = std::max(into.prefill_done, u.prefill_done);
  into.prefill_total = std::max(into.prefill_total, u.prefill_total);
  into.queue_position = u.queue_position;
  into.text += u.text;
  for (auto& t : u.tokens) into.tokens.push_back(std::move(t));
  if (u.finished) {
    into.finished = true;
    into.reason = u.reason;
    into.stop_sequence = std::move(u.stop_sequence);
    if (u.error) into.error = std::move(u.error);
  }
}

// How a successful generation ended, for the writer's last bytes.
struct Outcome {
  FinishReason reason = FinishReason::stop;
  const chat::FinalMessage* message = nullptr;  // chat: the parser's final message
  const std::string* text = nullptr;            // non-stream: the whole output text
  std::span<const GeneratedToken> tokens;       // non-stream: every token
  int64_t prompt_tokens = 0, cached_tokens = 0, generated_tokens = 0;
  std::string stop_sequence;  // the stop string that ended the output, if one did
};

// A dialect's bytes for one response; the request life (Responder, run) is shared.
class ResponseWriter {
 public:
  virtual ~ResponseWriter() = default;
  virtual const char* content_type() const = 0;
  // Right after the headers (the OpenAI role chunk, Anthropic's message_start); may be empty.
  virtual std::string start(int64_t prompt_tokens, int64_t cached_tokens) = 0;
  // Streaming only: what is new (parser events for chat, raw text for completions, and its tokens).
  virtual std::string delta(std::span<const chat::OutputEvent> events, const std::string& text,
                            std::span<const GeneratedToken> tokens) = 0;
  // Nothing was written for a while: a comment, a ping event, or whitespace before a JSON body.
  virtual std::string keepalive(int64_t prefill_done, int64_t prefill_total) const = 0;
  // The finish reason as the dialect names it (metrics, log), and the last chunks or the whole body.
  virtual const char* finish_reason(const Outcome& o) const = 0;
  virtual std::string finish(const Outcome& o) = 0;
  // After the headers: the error event (or error body).
  virtual std::string failure(const ApiError& e) const = 0;
};

class OpenAiWriter final : public ResponseWriter {
 public:
  OpenAiWriter(const ModelContext& model, ResponseFormatter::Kind kind, const GenerationOptions& gen)
      : kind_(kind),
        gen_(gen),
        fmt_(kind, model.model_id, *model.tokenizer, gen.logprobs, gen.top_logprobs) {}

  const char* content_type() const override { return gen_.stream ? "text/event-stream" : "application/json"; }
  std::string start(int64_t, int64_t) override {
    if (!gen_.stream || kind_ != ResponseFormatter::Kind::chat) return {};
    return sse_event(fmt_.chat_role_chunk(usage_null()));
  }
  std::string delta(std::span<const chat::OutputEvent> events, const std::string& text,
                    std::span<const GeneratedToken> tokens) override {
    if (kind_ == ResponseFormatter::Kind::chat) {
      auto chunk = fmt_.chat_delta_chunk(events, tokens, usage_null());
      return chunk ? sse_event(*chunk) : std::string();
    }
    if (text.empty() && !(gen_.logprobs && !tokens.empty())) return {};
    return sse_event(fmt_.text_chunk(text, tokens, nullptr, usage_null()));
  }
  std::string keepalive(int64_t done, int64_t total) const override {
    if (!gen_.stream) return " ";  // whitespace before a JSON body is still valid JSON
    if (total > 0) return fmt::format(": prefill {}/{}\n\n", done, total);
    return ": keep-alive\n\n";
  }
  const char* finish_reason(const Outcome& o) const override {
    return openai_finish_reason(o.reason, o.message && o.message->has_tool_calls());
  }
  std::string finish(const Outcome& o) override {
    const char* reason = finish_reason(o);
    Usage usage{o.prompt_tokens, o.generated_tokens, o.cached_tokens};
    if (!gen_.stream) {
      Json body = kind_ == ResponseFormatter::Kind::chat
                      ? fmt_.chat_completion(*o.message, reason, o.tokens, usage)
                      : fmt_.text_completion(*o.text, reason, o.tokens, usage);
      return chat::dump_json(body);
    }
    std::string tail =
        sse_event(kind_ == ResponseFormatter::Kind::chat ? fmt_.chat_finish_chunk(reason, usage_null())
                                                         : fmt_.text_chunk("", {}, reason, usage_null()));
    if (gen_.include_usage) tail += sse_event(fmt_.usage_chunk(usage));
    tail += "data: [DONE]\n\n";
    return tail;
  }
  std::string failure(const ApiError& e) const override {
    return gen_.stream ? sse_event(e.to_json()) : chat::dump_json(e.to_json());
  }

 private:
  bool usage_null() const { return gen_.stream && gen_.include_usage; }

  ResponseFormatter::Kind kind_;
  GenerationOptions gen_;
  ResponseFormatter fmt_;
};

class AnthropicWriter final : public ResponseWriter {
 public:
  AnthropicWriter(const ModelContext& model, const std::string& requested_model, const GenerationOptions& gen)
      : gen_(gen),
        context_tokens_(model.context_tokens),
        stream_(new_response_id("msg_"), requested_model.empty() ? model.model_id : requested_model) {}

  const char* content_type() const override { return gen_.stream ? "text/event-stream" : "application/json"; }
  std::string start(int64_t prompt_tokens, int64_t cached_tokens) override {
    if (!gen_.stream) return {};
    return anthropic_sse(stream_.message_start(AnthropicUsage{prompt_tokens, cached_tokens, 0}));
  }
  std::string delta(std::span<const chat::OutputEvent> events, const std::string&,
                    std::span<const GeneratedToken>) override {
    std::string out;
    for (const Json& e : stream_.feed(events)) out += anthropic_sse(e);
    return out;
  }
  std::string keepalive(int64_t, int64_t) const override {
    return gen_.stream ? anthropic_sse(Json{{"type", "ping"}}) : " ";
  }
  const char* finish_reason(const Outcome& o) const override {
    // max_tokens unset means "until the context ends"; otherwise the context ended first when it is full.
    bool context_full = !gen_.max_tokens || o.prompt_tokens + o.generated_tokens >= context_tokens_;
    return anthropic_stop_reason(o.reason, o.message->has_tool_calls(), !o.stop_sequence.empty(),
                                 context_full);
  }
  std::string finish(const Outcome& o) override {
    const char* reason = finish_reason(o);
    AnthropicUsage usage{o.prompt_tokens, o.cached_tokens, o.generated_tokens};
    if (!gen_.stream) return chat::dump_json(stream_.message(*o.message, reason, o.stop_sequence, usage));
    std::string out;
    for (const Json& e : stream_.finish(reason, o.stop_sequence, usage)) out += anthropic_sse(e);
    return out;
  }
  std::string failure(const ApiError& e) const override {
    Json body = anthropic_error_json(e);
    return gen_.stream ? anthropic_sse(body) : chat::dump_json(body);
  }

 private:
  GenerationOptions gen_;
  int64_t context_tokens_;
  AnthropicStream stream_;
};

// One admitted request, from the response headers to its end. Lives in the content provider, on the handler's
// thread; the engine reaches it only through the sink.
class Responder {
 public:
  Responder(const HandlerEnv& env, std::unique_ptr<ResponseWriter> writer, const char* endpoint, bool stream,
            std::optional<chat::ParserOptions> parser, int64_t prompt_tokens, Submitted submitted,
            std::shared_ptr<const ClientConnection> conn, Update first)
      : env_(env),
        writer_(std::move(writer)),
        endpoint_(endpoint),
        stream_(stream),
        prompt_tokens_(prompt_tokens),
        submitted_(std::move(submitted)),
        conn_(std::move(conn)),
        carry_(std::move(first)) {
    if (parser) parser_.emplace(std::move(*parser));
  }

  ~Responder() {
    // Whatever ended this response (the client, a failed write, the server stopping), the engine stops too.
    submitted_.cancelled->store(true);
  }

  // The streamed body: runs until the generation ends or the client goes away.
  bool provide(http::BodyWriter& out) {
    out_ = &out;
    Update pending = std::move(carry_);
    if (!write(writer_->start(prompt_tokens_, pending.cached_tokens))) return client_gone();
    for (;;) {
      bool finished = pending.finished;
      if (!handle(pending)) return client_gone();
      if (finished) break;
      auto now = Clock::now();
      auto deadline =
          std::min(now + env_.options.poll_interval, last_write_ + env_.options.keepalive_interval);
      pending = submitted_.sink->wait(deadline);
      if (env_.stopping.load()) submitted_.cancelled->store(true);  // on_finish(cancelled) follows shortly
      if (!pending.finished && Clock::now() - last_write_ >= env_.options.keepalive_interval) {
        if (!write(writer_->keepalive(pending.prefill_done, pending.prefill_total))) return client_gone();
      }
      if (!pending.finished && conn_->closed()) return client_gone();
      // A FIN may be a half-close (the client still reads) or a hang-up: one keep-alive tells them apart,
      // since a closed peer answers it with a reset that closed() sees at the next poll.
      if (!pending.finished && !probed_half_close_ && conn_->half_closed()) {
        probed_half_close_ = true;
        if (!write(writer_->keepalive(pending.prefill_done, pending.prefill_total))) return client_gone();
      }
    }
    return true;
  }

 private:
  bool write(const std::string& s) {
    if (s.empty()) return true;
    last_write_ = Clock::now();
    return out_->write(s);
  }

  bool client_gone() {
    submitted_.cancelled->store(true);
    if (!recorded_) {
      env_.metrics.count_request(endpoint_, "cancelled");
      recorded_ = true;
    }
    return false;
  }

  // Handles what is new: text through the parser, chunks out; at the end, the final chunk or body.
  bool handle(Update& u) {
    if (u.started) cached_tokens_ = u.cached_tokens;
    std::vector<chat::OutputEvent> events;
    if (parser_ && !u.text.empty()) events = parser_->feed(u.text);
    if (u.finished && parser_) {
      auto last = parser_->finish();
      events.insert(events.end(), std::make_move_iterator(last.begin()), std::make_move_iterator(last.end()));
    }
    if (!stream_) {
      text_ += u.text;
      tokens_.insert(tokens_.end(), u.tokens.begin(), u.tokens.end());
    } else if (!write(writer_->delta(events, u.text, u.tokens))) {
      return false;
    }
    if (!u.finished) return true;
    return finish(u);
  }

  bool finish(const Update& u) {
    env_.metrics.record_generation(prompt_tokens_, cached_tokens_, submitted_.sink->generated_tokens(),
                                   submitted_.sink->seconds_to_first_token(),
                                   submitted_.sink->decode_seconds());
    recorded_ = true;
    if (u.reason == FinishReason::error || u.reason == FinishReason::cancelled) {
      ApiError e =
          u.error ? api_error_from(*u.error)
                  : ApiError(503, "server_shutting_down", "the server stopped before this request finished");
      env_.metrics.count_request(endpoint_, u.reason == FinishReason::error ? "error" : "cancelled");
      spdlog::warn("{} request failed after its headers were sent: {}", endpoint_, e.what());
      return write(writer_->failure(e));
    }
    Outcome o;
    o.reason = u.reason;
    o.message = parser_ ? &parser_->message() : nullptr;
    o.text = &text_;
    o.tokens = tokens_;
    o.prompt_tokens = prompt_tokens_;
    o.cached_tokens = cached_tokens_;
    o.generated_tokens = submitted_.sink->generated_tokens();
    o.stop_sequence = u.stop_sequence;
    const char* reason = writer_->finish_reason(o);
    env_.metrics.count_request(endpoint_, reason);
    spdlog::info("{} done: {}, {} prompt tokens ({} cached), {} generated, first token after {:.3f} s",
                 endpoint_, reason, prompt_tokens_, cached_tokens_, o.generated_tokens,
                 submitted_.sink->seconds_to_first_token().value_or(0.0));
    return write(writer_->finish(o));
  }

  HandlerEnv env_;  // references to what outlives every response (the server, the model)
  std::unique_ptr<ResponseWriter> writer_;
  std::string endpoint_;
  bool stream_;
  std::optional<chat::OutputParser> parser_;
  int64_t prompt_tokens_;
  Submitted submitted_;
  std::shared_ptr<const ClientConnection> conn_;
  bool probed_half_close_ = false;
  Update carry_;
  http::BodyWriter* out_ = nullptr;
  Clock::time_point last_write_ = Clock::now();
  int64_t cached_tokens_ = 0;
  std::string text_;                    // non-stream: the whole output
  std::vector<GeneratedToken> tokens_;  // non-stream: every token, for logprobs
  bool recorded_ = false;
};

// Submits the prepared request and waits, before any header, until it holds a slot and its first step ran
// (or it failed: 503 / 400 as real status codes). Returns what was heard, or nullopt when the response is
// already decided (an error sent, or the client gone).
std::optional<Update> admit(http::Response& res, const HandlerEnv& env, const char* endpoint,
                            Submitted& submitted, const ClientConnection& conn, ErrorSender send) {
  Update heard;
  while (!heard.started && !heard.finished) {
    merge(heard, submitted.sink->wait(Clock::now() + env.options.poll_interval));
    if (env.stopping.load()) submitted.cancelled->store(true);
    if (!heard.started && !heard.finished && conn.closed()) {
      submitted.cancelled->store(true);
      env.metrics.count_request(endpoint, "cancelled");
      res.status = 499;  // nginx's "client closed request"; nobody reads it
      return std::nullopt;
    }
  }
  if (heard.finished && (heard.reason == FinishReason::error || !heard.started)) {
    ApiError e = heard.error ? api_error_from(*heard.error)
                             : ApiError(503, "server_shutting_down", "the server is stopping");
    env.metrics.count_request(endpoint, e.code());
    send(res, e);
    return std::nullopt;
  }
  return heard;
}

// The request life both dialects share, once the request is prepared: submit, admit, then stream or answer
// through `writer`.
void run(const http::Request& req, http::Response& res, const HandlerEnv& env,
         std::unique_ptr<ResponseWriter> writer, const char* endpoint, const GenerationOptions& gen,
         PreparedPrompt prompt, const char* prompt_param, ErrorSender send) {
  int64_t prompt_tokens = static_cast<int64_t>(prompt.tokens.size());
  std::optional<chat::ParserOptions> parser = std::move(prompt.parser);
  Submitted submitted = submit_generation(env.model, prompt, gen, prompt_param);  // 400 before any work
  spdlog::info("{} from {}:{}: prompt {} tokens, max_tokens {}, {}", endpoint, req.remote_addr,
               req.remote_port, prompt_tokens, gen.max_tokens ? std::to_string(*gen.max_tokens) : "-",
               gen.stream ? "stream" : "json");
  std::shared_ptr<const ClientConnection> conn = req.connection;
  std::optional<Update> heard = admit(res, env, endpoint, submitted, *conn, send);
  if (!heard) return;
  const char* content_type = writer->content_type();
  auto responder =
      std::make_shared<Responder>(env, std::move(writer), endpoint, gen.stream, std::move(parser),
                                  prompt_tokens, std::move(submitted), std::move(conn), std::move(*heard));
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");  // proxies must not hold back the stream
  res.set_stream(content_type, [responder](http::BodyWriter& out) { return responder->provide(out); });
}

}  // namespace

void handle_chat_completions(const http::Request& req, http::Response& res, const HandlerEnv& env) {
  RequestHold hold(env.model, static_cast<int64_t>(req.body.size()));
  ChatRequest request = parse_chat_request(parse_json_body(req.body));
  PreparedPrompt prompt = prepare_chat(env.model, request);
  hold.prepared(static_cast<int64_t>(prompt.tokens.size()));
  run(req, res, env, std::make_unique<OpenAiWriter>(env.model, ResponseFormatter::Kind::chat, request.gen),
      "chat", request.gen, std::move(prompt), "messages", send_error);
}

void handle_completions(const http::Request& req, http::Response& res, const HandlerEnv& env) {
  RequestHold hold(env.model, static_cast<int64_t>(req.body.size()));
  CompletionRequest request = parse_completion_request(parse_json_body(req.body));
  PreparedPrompt prompt = prepare_completion(env.model, request);
  hold.prepared(static_cast<int64_t>(prompt.tokens.size()));
  run(req, res, env, std::make_unique<OpenAiWriter>(env.model, ResponseFormatter::Kind::text, request.gen),
      "completions", request.gen, std::move(prompt), "prompt", send_error);
}

void handle_messages(const http::Request& req, http::Response& res, const HandlerEnv& env) {
  RequestHold hold(env.model, static_cast<int64_t>(req.body.size()));
  AnthropicRequest request = parse_anthropic_request(parse_json_body(req.body));
  PreparedPrompt prompt = prepare_chat(env.model, request.chat);
  hold.prepared(static_cast<int64_t>(prompt.tokens.size()));
  const auto n = static_cast<int64_t>(prompt.tokens.size());
  // The context must hold the prompt and one generated token; Claude Code compacts on exactly this message.
  if (n + 1 > env.model.context_tokens) throw prompt_too_long(n, env.model.context_tokens - 1);
  try {
    run(req, res, env, std::make_unique<AnthropicWriter>(env.model, request.model, request.chat.gen),
        "messages", request.chat.gen, std::move(prompt), "messages", send_anthropic_error);
  } catch (const ApiError& e) {
    if (e.code() != "context_length_exceeded") throw;
    // The memory limit, not the context, refused it: still a prompt too long for this server.
    throw ApiError(400, e.code(), fmt::format("prompt is too long: {}", e.what()), "messages");
  }
}

void handle_count_tokens(const http::Request& req, http::Response& res, const HandlerEnv& env) {
  RequestHold hold(env.model, static_cast<int64_t>(req.body.size()));
  AnthropicRequest request = parse_anthropic_request(parse_json_body(req.body), /*count_tokens=*/true);
  PreparedPrompt prompt = prepare_chat(env.model, request.chat);
  hold.prepared(static_cast<int64_t>(prompt.tokens.size()));
  env.metrics.count_request("count_tokens", "ok");
  res.set_content(chat::dump_json(Json{{"input_tokens", static_cast<int64_t>(prompt.tokens.size())}}),
                  "application/json");
}

}  // namespace keel::server
