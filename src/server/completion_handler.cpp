#include "server/completion_handler.h"

#include <spdlog/spdlog.h>

#include "chat/parsers/json_tool_calls.h"
#include "server/connection.h"
#include "server/openai_response.h"

namespace keel::server {

void send_error(httplib::Response& res, const ApiError& error) {
  res.status = error.status();
  if (error.retry_after_seconds() > 0)
    res.set_header("Retry-After", std::to_string(error.retry_after_seconds()));
  res.set_content(chat::dump_json(error.to_json()), "application/json");
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
    if (u.error) into.error = std::move(u.error);
  }
}

// One admitted request, from the response headers to its end. Lives in the content provider, on the handler's
// thread; the engine reaches it only through the sink.
class Responder {
 public:
  Responder(const HandlerEnv& env, ResponseFormatter::Kind kind, const char* endpoint,
            const GenerationOptions& gen, std::optional<chat::ParserOptions> parser, int64_t prompt_tokens,
            Submitted submitted, std::shared_ptr<ClientConnection> conn, Update first)
      : env_(env),
        kind_(kind),
        endpoint_(endpoint),
        gen_(gen),
        fmt_(kind, env.model.model_id, *env.model.tokenizer, gen.logprobs, gen.top_logprobs),
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

  // The content provider: runs until the generation ends or the client goes away.
  bool provide(httplib::DataSink& out) {
    out_ = &out;
    if (gen_.stream && kind_ == ResponseFormatter::Kind::chat &&
        !write(sse_event(fmt_.chat_role_chunk(usage_null()))))
      return client_gone();
    Update pending = std::move(carry_);
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
        if (!write(keepalive(pending))) return client_gone();
      }
      if (!pending.finished && conn_->closed()) return client_gone();
      // A FIN may be a half-close (the client still reads) or a hang-up: one keep-alive tells them apart,
      // since a closed peer answers it with a reset that closed() sees at the next poll.
      if (!pending.finished && !probed_half_close_ && conn_->half_closed()) {
        probed_half_close_ = true;
        if (!write(keepalive(pending))) return client_gone();
      }
    }
    out.done();
    return true;
  }

 private:
  bool usage_null() const { return gen_.stream && gen_.include_usage; }

  bool write(const std::string& s) {
    last_write_ = Clock::now();
    return out_->write(s.data(), s.size());
  }

  std::string keepalive(const Update& u) const {
    if (!gen_.stream) return " ";  // whitespace before a JSON body is still valid JSON
    if (u.prefill_total > 0) return fmt::format(": prefill {}/{}\n\n", u.prefill_done, u.prefill_total);
    return ": keep-alive\n\n";
  }

  bool client_gone() {
    submitted_.cancelled->store(true);
    if (!recorded_) {
      env_.metrics.count_request(endpoint_, "cancelled");
      recorded_ = true;
    }
    return false;
  }

  Usage usage() const { return Usage{prompt_tokens_, submitted_.sink->generated_tokens(), cached_tokens_}; }

  // Handles what is new: text through the parser, chunks out; at the end, the final chunk or body.
  bool handle(Update& u) {
    if (u.started) cached_tokens_ = u.cached_tokens;
    std::vector<chat::OutputEvent> events;
    if (parser_ && !u.text.empty()) events = parser_->feed(u.text);
    if (u.finished && parser_) {
      auto last = parser_->finish();
      events.insert(events.end(), std::make_move_iterator(last.begin()), std::make_move_iterator(last.end()));
    }
    if (!gen_.stream) {
      text_ += u.text;
      tokens_.insert(tokens_.end(), u.tokens.begin(), u.tokens.end());
    } else if (kind_ == ResponseFormatter::Kind::chat) {
      if (auto chunk = fmt_.chat_delta_chunk(events, u.tokens, usage_null()))
        if (!write(sse_event(*chunk))) return false;
    } else if (!u.text.empty() || (gen_.logprobs && !u.tokens.empty())) {
      if (!write(sse_event(fmt_.text_chunk(u.text, u.tokens, nullptr, usage_null())))) return false;
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
      return write(gen_.stream ? sse_event(e.to_json()) : chat::dump_json(e.to_json()));
    }
    bool calls = parser_ && parser_->message().has_tool_calls();
    const char* reason = openai_finish_reason(u.reason, calls);
    env_.metrics.count_request(endpoint_, reason);
    spdlog::info("{} done: {}, {} prompt tokens ({} cached), {} generated, first token after {:.3f} s",
                 endpoint_, reason, prompt_tokens_, cached_tokens_, submitted_.sink->generated_tokens(),
                 submitted_.sink->seconds_to_first_token().value_or(0.0));
    if (!gen_.stream) {
      Json body = kind_ == ResponseFormatter::Kind::chat
                      ? fmt_.chat_completion(parser_->message(), reason, tokens_, usage())
                      : fmt_.text_completion(text_, reason, tokens_, usage());
      return write(chat::dump_json(body));
    }
    std::string tail =
        sse_event(kind_ == ResponseFormatter::Kind::chat ? fmt_.chat_finish_chunk(reason, usage_null())
                                                         : fmt_.text_chunk("", {}, reason, usage_null()));
    if (gen_.include_usage) tail += sse_event(fmt_.usage_chunk(usage()));
    tail += "data: [DONE]\n\n";
    return write(tail);
  }

  HandlerEnv env_;  // references to what outlives every response (the server, the model)
  ResponseFormatter::Kind kind_;
  std::string endpoint_;
  GenerationOptions gen_;
  ResponseFormatter fmt_;
  std::optional<chat::OutputParser> parser_;
  int64_t prompt_tokens_;
  Submitted submitted_;
  std::shared_ptr<ClientConnection> conn_;
  bool probed_half_close_ = false;
  Update carry_;
  httplib::DataSink* out_ = nullptr;
  Clock::time_point last_write_ = Clock::now();
  int64_t cached_tokens_ = 0;
  std::string text_;                    // non-stream: the whole output
  std::vector<GeneratedToken> tokens_;  // non-stream: every token, for logprobs
  bool recorded_ = false;
};

// The common path of both endpoints, once the request is prepared.
void run(const httplib::Request& req, httplib::Response& res, const HandlerEnv& env,
         ResponseFormatter::Kind kind, const char* endpoint, const GenerationOptions& gen,
         PreparedPrompt prompt, const char* prompt_param) {
  int64_t prompt_tokens = static_cast<int64_t>(prompt.tokens.size());
  std::optional<chat::ParserOptions> parser = std::move(prompt.parser);
  Submitted submitted = submit_generation(env.model, prompt, gen, prompt_param);  // 400 before any work
  spdlog::info("{} from {}:{}: prompt {} tokens, max_tokens {}, {}", endpoint, req.remote_addr,
               req.remote_port, prompt_tokens, gen.max_tokens ? std::to_string(*gen.max_tokens) : "-",
               gen.stream ? "stream" : "json");
  auto conn =
      std::make_shared<ClientConnection>(req.remote_addr, req.remote_port, req.local_addr, req.local_port);

  // Before any header: wait until the request holds a slot and its first step ran, or fails (503 / 400).
  Update heard;
  while (!heard.started && !heard.finished) {
    merge(heard, submitted.sink->wait(Clock::now() + env.options.poll_interval));
    if (env.stopping.load()) submitted.cancelled->store(true);
    if (!heard.started && !heard.finished && conn->closed()) {
      submitted.cancelled->store(true);
      env.metrics.count_request(endpoint, "cancelled");
      res.status = 499;  // nginx's "client closed request"; nobody reads it
      return;
    }
  }
  if (heard.finished && (heard.reason == FinishReason::error || !heard.started)) {
    ApiError e = heard.error ? api_error_from(*heard.error)
                             : ApiError(503, "server_shutting_down", "the server is stopping");
    env.metrics.count_request(endpoint, e.code());
    send_error(res, e);
    return;
  }

  auto responder = std::make_shared<Responder>(env, kind, endpoint, gen, std::move(parser), prompt_tokens,
                                               std::move(submitted), std::move(conn), std::move(heard));
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");  // proxies must not hold back the stream
  res.set_chunked_content_provider(
      gen.stream ? "text/event-stream" : "application/json",
      [responder](size_t, httplib::DataSink& out) { return responder->provide(out); }, [responder](bool) {});
}

}  // namespace

void handle_chat_completions(const httplib::Request& req, httplib::Response& res, const HandlerEnv& env) {
  ChatRequest request = parse_chat_request(parse_json_body(req.body));
  PreparedPrompt prompt = prepare_chat(env.model, request);
  run(req, res, env, ResponseFormatter::Kind::chat, "chat", request.gen, std::move(prompt), "messages");
}

void handle_completions(const httplib::Request& req, httplib::Response& res, const HandlerEnv& env) {
  CompletionRequest request = parse_completion_request(parse_json_body(req.body));
  PreparedPrompt prompt = prepare_completion(env.model, request);
  run(req, res, env, ResponseFormatter::Kind::text, "completions", request.gen, std::move(prompt), "prompt");
}

}  // namespace keel::server
